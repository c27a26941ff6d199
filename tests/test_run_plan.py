"""The run plan (every job of a configuration, made once) and the bill `chorustic plan-run` prints from it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from chorustic import config as cc
from chorustic import resources as cr
from chorustic.bill import JOB_START_S, BillJob, Machine, bill_jobs, critical_path, make_bill, schedule
from chorustic.methods import discover
from chorustic.run_plan import RunPlan


@pytest.fixture(scope="module")
def paper():
    cfg = cc.load_config([])
    return RunPlan.from_config(cfg, discover())


def test_the_plan_holds_every_job_with_its_resources_and_fingerprint(paper):
    cfg = paper.cfg
    assert len(paper.datasets) == 158
    expected = [(m, d) for m in cfg["evaluate"] for d in cc.method_datasets(cfg, m)]
    assert paper.evaluation_jobs == expected
    for job in paper.jobs[::97]:
        plugin = paper.discovery.methods.get(job.plugin)
        assert job.resources == cr.evaluate_resources(cfg, job.method, job.dataset, plugin)
        assert job.fingerprint == paper.fingerprints[job.method]
    crop = paper.job("minirocket", "Crop")
    assert (crop.size.n_train, crop.size.n_test, crop.size.length, crop.size.n_contexts) == (7200, 16800, 46, 16)
    assert paper.job("chorustic", "Crop").size.length == 512  # resampled input
    assert paper.job("chorustic_no_calibration", "PEMS-SF").contexts == (
        {"protocol": "full", "family": "full", "budget": None, "seed": 0},)
    assert paper.pretrain_runs() == sorted(cfg["pretrain"])


def test_bill_jobs_follow_the_workflow_graph(paper):
    jobs = bill_jobs(paper, Machine(cores=16, gpus=1, mem_mb=128 * 1024))
    rules = {}
    for j in jobs:
        rules[j.rule] = rules.get(j.rule, 0) + 1
    assert rules == {"download": 158, "preprocess": 158, "contexts": 158, "pretrain": 4, "evaluate": 2588,
                     "aggregate": 1, "report": 1}
    by_name = {j.name: j for j in jobs}
    ev = by_name["evaluate/chorustic/Crop"]
    assert set(ev.deps) == {"contexts/Crop", "pretrain/chorustic"}
    assert by_name["evaluate/minirocket/Crop"].deps == ["contexts/Crop"]
    assert len(by_name["aggregate"].deps) == 2588
    # a GPU job uses the GPU when the machine has one, the CPU otherwise (and is slower there)
    cpu = {j.name: j for j in bill_jobs(paper, Machine(cores=16, gpus=0, mem_mb=128 * 1024))}
    assert ev.gpus == 0 or ev.seconds < cpu["evaluate/chorustic/Crop"].seconds
    assert by_name["evaluate/tabicl/Crop"].gpus == 1 and cpu["evaluate/tabicl/Crop"].gpus == 0
    assert by_name["pretrain/chorustic"].seconds < cpu["pretrain/chorustic"].seconds / 100


def test_a_jobs_cpu_hours_do_not_depend_on_the_cores_it_gets(paper):
    """A 4-thread job on a 2-core machine runs on 2 threads (Snakemake caps them): twice as long as on 4
    cores, the same CPU-hours (the cost model's one-thread CPU time, beside its once-per-job part)."""
    two = {j.name: j for j in bill_jobs(paper, Machine(cores=2, gpus=0, mem_mb=16 * 1024))}
    many = {j.name: j for j in bill_jobs(paper, Machine(cores=16, gpus=0, mem_mb=128 * 1024))}
    job = paper.job("multirocket_hydra", "HandOutlines")
    assert job.threads == 4 and two["evaluate/multirocket_hydra/HandOutlines"].cores == 2
    fixed = paper.discovery.methods.get(job.plugin).cost.time_job_s
    for bill, cores in ((two, 2), (many, 4)):
        j = bill["evaluate/multirocket_hydra/HandOutlines"]
        assert j.cores == cores
        assert j.cpu_hours * 3600 == pytest.approx(cores * (JOB_START_S + fixed) + job.estimate_s - fixed)


def test_wall_time_is_between_the_critical_path_and_the_serial_time():
    """A small graph: two datasets, each prepared then evaluated by two methods; one GPU job."""
    jobs = [BillJob("download", f"d{i}", "download", 1, 0, 100, 10.0) for i in range(2)]
    jobs += [BillJob("evaluate", f"e{i}{m}", m, 2, 0, 100, 100.0, deps=[f"d{i}"]) for i in range(2) for m in "ab"]
    jobs += [BillJob("evaluate", "g", "gpu", 1, 1, 100, 50.0, deps=["d0"])]
    jobs += [BillJob("aggregate", "agg", "aggregate", 1, 0, 100, 5.0, deps=[j.name for j in jobs[2:]])]
    cp, chain = critical_path(jobs)
    assert cp == 115.0 and [j.name for j in chain][0] in ("d0", "d1") and chain[-1].name == "agg"
    # 2 cores: the downloads side by side, then the 2-core evaluations one after another (longest remaining
    # path first), the GPU job (which also holds a core) after them, then the aggregate
    assert schedule(jobs, Machine(cores=2, gpus=1)) == 10 + 400 + 50 + 5
    assert schedule(jobs, Machine(cores=9, gpus=1)) == cp  # everything side by side: the critical path
    assert schedule(jobs, Machine(cores=8, gpus=1)) == 10 + 100 + 50 + 5  # the GPU job waits for a core
    assert schedule(jobs, Machine(cores=2, gpus=1), nodes=5) == cp


def test_the_bill_adds_up_and_a_cluster_is_never_slower(paper):
    ws = Machine(cores=16, gpus=1, mem_mb=128 * 1024)
    bill = make_bill(paper, ws, cluster_nodes=8)
    assert bill["jobs"] == 3068
    assert sum(r["jobs"] for r in bill["per_rule"].values()) == bill["jobs"]
    total = sum(r["cpu_hours"] + r["gpu_hours"] for r in bill["per_rule"].values())
    assert total == pytest.approx(bill["cpu_hours"] + bill["gpu_hours"])
    evaluate = bill["per_rule"]["evaluate"]
    assert sum(r["cpu_hours"] for r in bill["per_method"].values()) == pytest.approx(evaluate["cpu_hours"])
    assert bill["cluster"]["wall_hours"] <= bill["wall_hours"] + 1e-9
    assert bill["wall_hours"] >= bill["critical_path"]["hours"] - 1e-9
    assert bill["largest_job"]["mem_mb"] == max(
        [j.resources["mem_mb"] for j in paper.jobs] + [r["mem_mb"] for r in paper.pretrain_resources.values()])


def test_plan_run_prints_the_bill_of_a_profile(tmp_path):
    out = tmp_path / "bill.json"
    proc = subprocess.run([sys.executable, "-m", "chorustic", "plan-run", "--config", "config/demo.yaml",
                           "--cores", "2", "--gpus", "0", "--mem-gb", "8", "--nodes", "3", "--json", str(out)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    bill = json.loads(out.read_text())
    assert bill["profile"] == "demo" and bill["per_rule"]["evaluate"]["jobs"] == 30
    assert "critical path" in proc.stdout and "on 3 cluster node(s)" in proc.stdout
    assert bill["machine"]["cores"] == 2 and bill["per_rule"]["evaluate"]["gpu_hours"] == 0
