"""Job resources (chorustic.resources): what each job asks of the machine or the SLURM scheduler."""

from __future__ import annotations

import copy

import pandas as pd
import pytest

from chorustic import config as cc
from chorustic import resources as cr
from chorustic.methods import CostModel, discover
from chorustic.resources import JobSize

PAPER = cc.load_config()


@pytest.fixture(scope="module")
def methods():
    return discover().methods


def _cfg(**cluster):
    cfg = copy.deepcopy(PAPER)
    cfg["cluster"] = {**cfg["cluster"], **cluster}
    return cfg


def test_site_settings_left_out_when_unset():
    res = cr.site_resources(PAPER, mem_mb=1234, runtime=56, gpus=1)
    assert res == {"mem_mb": 1234, "runtime": 56, "local_gpus": 1}  # no partition, account or GPU request


def test_gpu_request_only_when_the_site_has_gpus():
    cpu_only = cr.site_resources(_cfg(partition="cpu", gpu_partition="gpu"), mem_mb=1, runtime=1, gpus=2)
    assert "gpu" not in cpu_only and "gres" not in cpu_only and cpu_only["slurm_partition"] == "cpu"
    assert cpu_only["local_gpus"] == 2
    gpus = cr.site_resources(_cfg(partition="cpu", gpu_partition="gpu", gpus=True, gpu_model="a100",
                                  gpu_constraint="a100|h100", constraint="avx2", account="p1"),
                             mem_mb=1, runtime=1, gpus=2)
    assert gpus == {"mem_mb": 1, "runtime": 1, "local_gpus": 2, "gpu": 2, "gpu_model": "a100", "tasks_per_gpu": 0,
                    "slurm_partition": "gpu", "slurm_account": "p1", "constraint": "a100|h100"}
    gres = cr.site_resources(_cfg(gpus=True, gpu_gres="gpu:a100"), mem_mb=1, runtime=1, gpus=4)
    assert gres["gres"] == "gpu:a100:4" and "gpu" not in gres
    cpu_job = cr.site_resources(_cfg(partition="cpu", gpus=True, constraint="avx2"), mem_mb=1, runtime=1, gpus=0)
    assert "gpu" not in cpu_job and cpu_job["slurm_partition"] == "cpu" and cpu_job["constraint"] == "avx2"


def test_site_limits_clamp_requests():
    res = cr.site_resources(_cfg(max_mem_mb=8000, max_runtime=120), mem_mb=32000, runtime=2880)
    assert res["mem_mb"] == 8000 and res["runtime"] == 120


def test_every_rule_has_memory_and_time():
    for rule in ("download", "preprocess", "contexts"):
        res = cr.rule_resources(PAPER, rule, "GunPoint")
        assert res["mem_mb"] > 0 and res["runtime"] >= cr.MIN_RUNTIME
    for rule in ("aggregate", "report"):
        res = cr.rule_resources(PAPER, rule)
        assert res["mem_mb"] > 0 and res["runtime"] >= cr.MIN_RUNTIME
    # preprocessing a large multivariate dataset needs more than a small one
    assert cr.rule_resources(PAPER, "preprocess", "FaceDetection")["mem_mb"] > \
        cr.rule_resources(PAPER, "preprocess", "GunPoint")["mem_mb"]
    # the InsectWingbeatSubset download fetches the full InsectWingbeat archive
    assert cr.rule_resources(PAPER, "download", "InsectWingbeatSubset")["runtime"] > \
        cr.rule_resources(PAPER, "download", "GunPoint")["runtime"]


def test_cost_model_terms():
    size = JobSize(n_train=100, n_test=50, n_channels=2, length=10, n_contexts=3)
    assert size.n_series == 150 and size.n_values == 3000
    m = CostModel(mem_base_mb=100, mem_bytes_per_value=2**20, mem_kb_per_series=1024, mem_bytes_per_pair=2**20,
                  time_job_s=5, time_base_s=1, time_ns_per_value=1e9 / 3000, time_ns_per_pair=1e9 / 30000,
                  time_ns_per_cell=1e9 / (100 * 50 * 2 * 10 * 4))
    mem, secs = m.estimate(size, band=4)
    # a query holds 1 MB of features and 100 x 1 MB of pairs: 10 queries fit the 1024 MB query budget, so
    # the context (100) and 10 queries are held at once
    assert m.query_chunk(size) == 10
    assert mem == pytest.approx(100 + 3000 + 110 + 100 * 110)
    assert secs == pytest.approx(5 + 3 * (1 + 1 + 1 + 1))


def test_evaluate_jobs_follow_the_dataset_with_the_plugin_as_ceiling(methods):
    from chorustic.methods import Method

    runs = [r for r in PAPER["evaluate"] if isinstance(methods[cc.method_entry(PAPER, r)["plugin"]], Method)]
    assert len(runs) >= 15
    for name in runs:
        plugin = methods[cc.method_entry(PAPER, name)["plugin"]]
        assert isinstance(plugin.cost, CostModel), name
        small = cr.evaluate_resources(PAPER, name, "GunPoint", plugin)
        large = cr.evaluate_resources(PAPER, name, "FaceDetection", plugin)
        assert small["mem_mb"] < large["mem_mb"] <= plugin.resources["mem_mb"], name
        assert small["runtime"] <= large["runtime"] <= plugin.resources["runtime"], name
        assert small["mem_mb"] <= plugin.resources["mem_mb"] / 2, name  # small datasets pack densely
        assert small["threads"] == plugin.resources["threads"]


def test_config_resources_replace_the_estimate(methods):
    cfg = copy.deepcopy(PAPER)
    cfg["methods"]["minirocket"]["resources"] = {"mem_mb": 3000, "runtime": 7, "threads": 2,
                                                 "partition": "short", "constraint": "avx512"}
    res = cr.evaluate_resources(cfg, "minirocket", "ElectricDevices", methods["minirocket"])
    assert (res["mem_mb"], res["runtime"], res["threads"]) == (3000, 7, 2)
    assert res["slurm_partition"] == "short" and res["constraint"] == "avx512"


def test_fewer_contexts_ask_for_less_time(methods):
    cfg = copy.deepcopy(PAPER)
    all_contexts = cr.evaluate_resources(cfg, "dtw_1nn", "Adiac", methods["dtw_1nn"])
    cfg["methods"]["dtw_1nn"]["protocols"] = ["full"]
    assert cr.n_contexts(cfg, ["full"]) == 1 and cr.n_contexts(PAPER) == 16
    assert cr.evaluate_resources(cfg, "dtw_1nn", "Adiac", methods["dtw_1nn"])["runtime"] < all_contexts["runtime"]


def test_dtw_window_shortens_the_estimate(methods):
    dtw = methods["dtw_1nn"]
    size = cr.job_size("HandOutlines", contexts=16)
    assert dtw.job_cost(size, window=0.1)[1] < dtw.job_cost(size, window=None)[1]


def test_reported_method_asks_for_little(methods):
    res = cr.evaluate_resources(PAPER, "tict", "GunPoint", methods["tict"])
    assert res["mem_mb"] <= 1000 and res["runtime"] == cr.MIN_RUNTIME


def test_pretrain_requests_n_gpus():
    cfg = copy.deepcopy(PAPER)
    assert cr.pretrain_gpus(cfg, "chorustic") == 1
    cfg["pretrain"]["chorustic"]["gpus"] = 4
    cfg["cluster"].update(gpus=True, gpu_partition="gpu")
    res = cr.pretrain_resources(cfg, "chorustic")
    assert cr.pretrain_gpus(cfg, "chorustic") == 4
    assert res["gpu"] == 4 and res["local_gpus"] == 4 and res["tasks_per_gpu"] == 0 and res["slurm_partition"] == "gpu"
    assert res["runtime"] == 24 * 60 and res["mem_mb"] > cr.pretrain_resources(PAPER, "chorustic")["mem_mb"]


def test_worker_limits_leave_room_for_the_job():
    mem, minutes = cr.worker_limits(2000, 30)
    assert mem == 2000 - cr.JOB_OVERHEAD_MB and minutes == 30 - cr.SCHEDULER_MARGIN_MIN


def test_cost_models_cover_the_demo_measurements(methods):
    """The committed demo results (examples/demo/results/accuracies.csv: peak memory and fit/predict times
    of every run, measured on 2 CPU cores) stay inside what the jobs ask for: memory within the job's
    worker limit, time within its time limit."""
    demo = cc.load_config([cc.REPO_ROOT / "config" / "demo.yaml"])
    acc = pd.read_csv(cc.REPO_ROOT / "examples" / "demo" / "results" / "accuracies.csv")
    acc = acc[acc.status == "ok"]
    assert len(acc) > 100
    for (method, dataset), runs in acc.groupby(["method", "dataset"]):
        plugin = methods[cc.method_entry(demo, method)["plugin"]]
        res = cr.evaluate_resources(demo, method, dataset, plugin)
        worker_mem, worker_min = cr.worker_limits(res["mem_mb"], res["runtime"])
        assert runs.peak_memory_mb.max() < worker_mem, (method, dataset, runs.peak_memory_mb.max(), res)
        assert (runs.fit_time_s.sum() + runs.predict_time_s.sum()) / 60 < worker_min, (method, dataset, res)
        # and not wildly more than measured: within 3x the peak plus the job's other processes (requests
        # are rounded up to 100 MB)
        assert res["mem_mb"] <= 3 * runs.peak_memory_mb.max() + cr.JOB_OVERHEAD_MB + 100, (method, dataset, res)


def test_site_example_is_a_valid_site_file(methods):
    site = cc.REPO_ROOT / "config" / "site.example.yaml"
    cfg = cc.load_config([site])  # merged over config.yaml and validated
    res = cr.evaluate_resources(cfg, "tabicl", "GunPoint", methods["tabicl"])
    assert res["mem_mb"] == 64000 and res["slurm_partition"] == "bigmem" and res["gpu"] == 1
    assert cr.evaluate_resources(cfg, "minirocket", "GunPoint", methods["minirocket"])["slurm_partition"] == "compute"
    assert cr.pretrain_resources(cfg, "chorustic")["gpu"] == 4
