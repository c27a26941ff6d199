"""Job resources (chorustic.resources): what each job asks of the machine or the SLURM scheduler."""

from __future__ import annotations

import copy
import dataclasses

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
                  time_ns_per_input_value=0,
                  time_job_s=5, time_base_s=1, time_ns_per_value=1e9 / 3000, time_ns_per_pair=1e9 / 30000,
                  time_ns_per_cell=1e9 / (100 * 50 * 2 * 10 * 4))
    mem, secs = m.estimate(size, band=4)
    # a query holds 1 MB of features and 100 x 1 MB of pairs: 10 queries fit the 1024 MB query budget, so
    # the context (100) and 10 queries are held at once
    assert m.query_chunk(size) == 10
    assert mem == pytest.approx(100 + 3000 + 110 + 100 * 110)
    assert secs == pytest.approx(5 + 3 * (1 + 1 + 1 + 1))


def test_a_method_that_loads_torch_asks_for_the_cuda_builds_libraries_where_that_build_runs(monkeypatch, methods):
    """The coefficients are fitted on torch's CPU build; the CUDA build (what ``pip install torch`` installs on
    Linux) holds TORCH_CUDA_BUILD_MB more in every job of a method that loads torch: with it not counted, tiny
    jobs of Mantis went past their memory limit. A method that does not load torch costs the same on both."""
    from chorustic.methods import cost

    size = JobSize(n_train=30, n_test=30, n_channels=1, length=512, n_contexts=16)
    base = CostModel(loads_torch=False, mem_base_mb=500, mem_bytes_per_value=12)
    torch_model = dataclasses.replace(base, loads_torch=True)
    monkeypatch.setenv("CHORUSTIC_TORCH_BUILD", "cpu")
    cpu = torch_model.estimate(size)[0]
    assert cpu == base.estimate(size)[0]
    monkeypatch.setenv("CHORUSTIC_TORCH_BUILD", "cuda")
    assert torch_model.estimate(size)[0] == pytest.approx(cpu + cost.TORCH_CUDA_BUILD_MB)
    assert base.estimate(size)[0] == cpu
    cfg = _cfg()
    on_cuda = {m: cr.evaluate_resources(cfg, cc.resolved_entry(cfg, m), "GunPoint", methods[m])["mem_mb"] for m in ("mantis_rf", "dtw_1nn")}
    monkeypatch.setenv("CHORUSTIC_TORCH_BUILD", "cpu")
    on_cpu = {m: cr.evaluate_resources(cfg, cc.resolved_entry(cfg, m), "GunPoint", methods[m])["mem_mb"] for m in ("mantis_rf", "dtw_1nn")}
    assert on_cuda["dtw_1nn"] == on_cpu["dtw_1nn"]
    assert on_cuda["mantis_rf"] >= on_cpu["mantis_rf"] + cost.TORCH_CUDA_BUILD_MB * cr.MEM_SAFETY - 100
    # unset: the installed build (a "+cpu" version is the CPU build)
    monkeypatch.delenv("CHORUSTIC_TORCH_BUILD")
    import importlib.metadata

    assert cost.torch_build() == ("cpu" if importlib.metadata.version("torch").endswith("+cpu") else "cuda")
    monkeypatch.setenv("CHORUSTIC_TORCH_BUILD", "rocm")
    with pytest.raises(ValueError, match="CHORUSTIC_TORCH_BUILD='rocm': expected 'cpu' or 'cuda'"):
        torch_model.estimate(size)


def test_cost_model_contexts_channels_and_per_job_terms():
    from chorustic.protocols.base import ContextSpec
    from chorustic.protocols.contexts import expected_train_size

    # each context is costed at its own training size; a skipped context (0 series) costs nothing
    size = JobSize(n_train=100, n_test=50, n_channels=20, length=10, context_train=(100, 30, 0))
    assert size.n_contexts == 3
    m = CostModel(mem_base_mb=0, mem_bytes_per_value=0, time_job_s=2, time_ns_per_input_value=1e9 / 30000,
                  time_base_s=1, time_ns_per_series_pair=1e6, time_ns_per_series=1e6, time_ns_per_value=0)
    _, secs = m.estimate(size)
    # per job: 2 s + the whole input (150 x 20 x 10 values) once; per context: 1 s, N series, n_train x N pairs
    assert secs == pytest.approx(2 + 1 + (1 + 150e-3 + 100 * 150e-3) + (1 + 80e-3 + 30 * 80e-3))
    # model_channels caps the channels of the time's terms, not of the memory (the input is held whole)
    per_value = CostModel(mem_base_mb=0, mem_bytes_per_value=2**20, time_job_s=0, time_base_s=0,
                          time_ns_per_input_value=0, time_ns_per_value=1e9, model_channels=4)
    one = JobSize(n_train=1, n_test=1, n_channels=20, length=1)
    assert per_value.estimate(one) == pytest.approx((40, 8))
    # ... and what a method does on every channel first (MiniRocket's sums per dilation) counts all 20 of them,
    # in every context: 16 contexts x 2 series x 20 channels at 1 s a value
    every = dataclasses.replace(per_value, time_ns_per_value=0, time_ns_per_channel_value=1e9)
    assert every.estimate(dataclasses.replace(one, context_train=(1,) * 16))[1] == pytest.approx(16 * 40)
    assert every.estimate(dataclasses.replace(one, n_channels=2))[1] == pytest.approx(4)
    # the protocols' expected context sizes: 5 shots of 4 classes, 20 % of each class, a class too small
    assert expected_train_size(ContextSpec("fixed5", "fixed_shot", 5, 0), 100, 4) == 20
    assert expected_train_size(ContextSpec("prop20", "proportional", 20, 0), 100, 4) == 20
    assert expected_train_size(ContextSpec("fixed10", "fixed_shot", 10, 0), 30, 4) == 0
    assert expected_train_size(ContextSpec("full", "full", None, 0), 30, 4) == 30


def test_cost_model_row_points_follow_every_series_of_a_call_unless_batched():
    """A convolution stack's per-time-point outputs: held for every series of one call (the context when
    fitting, a chunk of queries when predicting), so they count in the query chunk; a method that batches
    its rows (model_rows) holds at most that many whatever the chunk."""
    size = JobSize(n_train=1000, n_test=5000, n_channels=3, length=2048)
    whole = CostModel(mem_base_mb=0, mem_bytes_per_value=0, mem_bytes_per_row_point=2048)
    # a query costs 2048 B x 2048 points = 4 MB: 256 of them fit the 1024 MB query budget
    assert whole.query_chunk(size) == 256
    assert whole.estimate(size)[0] == pytest.approx((1000 + 256) * 4)
    batched = dataclasses.replace(whole, model_rows=256)
    assert batched.query_chunk(size) == 5000  # nothing else per query: one call
    assert batched.estimate(size)[0] == pytest.approx(256 * 4)
    # batches of at most 2**18 points: 128 series of this length
    assert dataclasses.replace(batched, model_row_points=2**18).estimate(size)[0] == pytest.approx(128 * 4)


def test_cost_model_forest_terms_follow_the_classes_of_each_context():
    """A forest grown to pure leaves splits at least once per extra class, over every column: a context
    of k series holds at most k classes; the registry's classes reach the job's size."""
    m = CostModel(time_job_s=0, time_ns_per_input_value=0, time_base_s=0, time_ns_per_value=0,
                  time_ns_per_column_class=1e9 / 1000)
    size = JobSize(n_train=100, n_test=50, n_channels=10, length=100, context_train=(100, 3), n_classes=7)
    # 1 ms per column (10 x 100) and extra class: 7 classes in the first context, 3 in the second
    assert m.estimate(size)[1] == pytest.approx(6 + 2)
    assert m.estimate(dataclasses.replace(size, n_classes=2))[1] == pytest.approx(1 + 1)
    # the splits of series that do not separate: n (1 - 1/classes) of them, each level visiting every series
    grown = CostModel(time_job_s=0, time_ns_per_input_value=0, time_base_s=0, time_ns_per_value=0,
                      time_ns_per_column_series=1e9 / 1000)
    one = JobSize(n_train=64, n_test=50, n_channels=10, length=100, n_classes=4)
    assert grown.estimate(one)[1] == pytest.approx(64 * (1 - 1 / 4) * 6)
    assert grown.estimate(dataclasses.replace(one, n_classes=2))[1] == pytest.approx(64 * (1 - 1 / 2) * 6)
    assert cr.job_size("PEMS-SF").n_classes == 7 and cr.job_size("FordA").n_classes == 2


def test_cost_model_counts_the_class_tree_passes_of_each_context():
    """An in-context learner decoding at most 10 classes per pass runs one pass per node of the class tree:
    60 classes, 7 passes (6 beyond the first, every query in each); a context of 12 series holds at most 12
    classes (3 passes); 10 classes or fewer, or no tree, none."""
    m = CostModel(time_job_s=0, time_ns_per_input_value=0, time_base_s=0, time_ns_per_value=0,
                  time_ns_per_tree_query=1e9 / 1000, tree_max_classes=10)
    size = JobSize(n_train=60, n_test=50, n_channels=1, length=100, context_train=(60, 12), n_classes=60)
    # 1 ms per query and extra pass: 6 x 50 in the first context, 2 x 50 in the second
    assert m.estimate(size)[1] == pytest.approx(0.3 + 0.1)
    assert m.estimate(dataclasses.replace(size, n_classes=10))[1] == 0
    assert dataclasses.replace(m, tree_max_classes=None).estimate(size)[1] == 0


def test_an_in_context_ensemble_runs_its_in_context_stage_once_per_distinct_member():
    """Label shifts beyond the context's classes repeat one (8 shifts of 2 classes: 2 runs), and a univariate
    series has one channel draw: the member terms follow shifts x draws of each context."""
    m = CostModel(time_job_s=0, time_ns_per_input_value=0, time_base_s=0, time_ns_per_value=0,
                  time_ns_per_member_series=1e9 / 1000, time_ns_per_member_pair=1e9 / 1e6,
                  ensemble_shifts=8, ensemble_draws=4)
    assert m.members(JobSize(n_train=100, n_test=50, n_channels=1, length=8, n_classes=2)) == 2
    assert m.members(JobSize(n_train=100, n_test=50, n_channels=2, length=8, n_classes=10)) == 32
    assert m.members(JobSize(n_train=5, n_test=50, n_channels=2, length=8, n_classes=10)) == 20  # 5 classes held
    assert CostModel().members(JobSize(n_train=100, n_test=50, n_channels=2, length=8, n_classes=10)) == 1
    size = JobSize(n_train=100, n_test=50, n_channels=3, length=8, n_classes=10, context_train=(100, 20))
    # 1 ms per series and member, 1 us per (context series, series) pair and member: 32 members each
    first = 32 * (150e-3 + 100 * 150e-6)
    second = 32 * (70e-3 + 20 * 70e-6)
    assert m.estimate(size)[1] == pytest.approx(first + second)
    assert m.estimate(dataclasses.replace(size, n_channels=1))[1] == pytest.approx((first + second) / 4)


def test_a_learner_that_runs_its_context_in_every_call_pays_it_once_per_query_chunk():
    """An in-context learner predicts a large test split in chunks that fit QUERY_MEMORY_MB, and each call
    runs the whole context again: its series, values, pairs and members count the context once per call."""
    from chorustic.methods.cost import QUERY_MEMORY_MB

    per_query_kb = QUERY_MEMORY_MB * 1024 / 40  # 40 queries a call: 100 queries take 3 calls
    m = CostModel(time_job_s=0, time_ns_per_input_value=0, time_base_s=0, time_ns_per_value=1e9 / 1e6,
                  time_ns_per_series=1e9 / 1000, time_ns_per_series_pair=1e9 / 1e6, mem_kb_per_series=per_query_kb,
                  context_per_call=True)
    size = JobSize(n_train=500, n_test=100, n_channels=2, length=10)
    assert m.query_chunk(size) == 40 and m.context_calls(size) == 3
    run = 3 * 500 + 100
    assert m.estimate(size)[1] == pytest.approx(run * 20e-6 + run * 1e-3 + 500 * run * 1e-6)
    once = dataclasses.replace(m, context_per_call=False)  # the fit did the context's work: one pass
    assert once.context_calls(size) == 1
    assert once.estimate(size)[1] == pytest.approx(600 * 20e-6 + 600 * 1e-3 + 500 * 600 * 1e-6)


def test_a_learner_that_chunks_its_own_queries_is_called_once_for_a_test_split_its_chunks_would_not_hold():
    """A method that computes on at most ``query_rows`` queries at once whatever the call (ChorusTIC's task
    level: 512 rows) holds per query of a call only ``mem_kb_per_query`` and the copies of its input: the harness
    gives it every query that fits QUERY_MEMORY_MB at that, so its context runs once where the per-series memory
    would have cut the split into calls; the per-series memory counts at most ``query_rows`` queries."""
    from chorustic.methods.cost import QUERY_MEMORY_MB

    per_series_kb = QUERY_MEMORY_MB * 1024 / 40  # 40 series of the working memory fill the query budget
    chunked = CostModel(mem_base_mb=0, mem_bytes_per_value=1024, mem_kb_per_series=per_series_kb, time_job_s=0,
                        time_ns_per_input_value=0, time_base_s=0, time_ns_per_value=0, time_ns_per_series=1e9,
                        context_per_call=True)
    size = JobSize(n_train=500, n_test=3000, n_channels=2, length=16)
    assert chunked.query_chunk(size) == 40 and chunked.context_calls(size) == 75
    own = dataclasses.replace(chunked, query_rows=32, mem_kb_per_query=300)
    # a query holds 300 KB until the call returns: 3,495 queries fit, all 3,000 of them
    assert own.query_chunk(size) == 3000 and own.context_calls(size) == 1
    assert own.estimate(size)[1] == pytest.approx(500 + 3000)  # the context's series once
    assert chunked.estimate(size)[1] == pytest.approx(75 * 500 + 3000)
    held = own.memory_terms(size)
    assert held[CostModel.MEMORY_COEFFICIENTS.index("mem_kb_per_series")] == pytest.approx((500 + 32) / 1024)
    assert own.estimate(size)[0] == pytest.approx(size.n_values / 1024 + (500 + 32) * per_series_kb / 1024
                                                  + 3000 * 300 / 1024)
    # more queries than fit: calls of 3,495 (the input's copies are the values' term, whatever the chunk)
    more = dataclasses.replace(size, n_test=10000)
    assert own.query_chunk(more) == 3495 and own.context_calls(more) == 3
    wide = dataclasses.replace(size, n_channels=256)
    assert own.query_chunk(wide) == 3000  # its 254 more channels of 16 values at 1 KB each, every series
    assert own.estimate(wide)[0] == pytest.approx(own.estimate(size)[0] + 3500 * 254 * 16 / 1024)
    # a method without query_rows keeps its model: the new term is 0
    assert chunked.memory_terms(size)[CostModel.MEMORY_COEFFICIENTS.index("mem_kb_per_query")] == 0


def test_channel_encodings_set_what_a_series_costs_in_channels_but_not_what_its_input_holds():
    """ChorusTIC's signal level encodes what its RSSC draws ask for: 2 channels cost 2, 6 channels ~44 of the
    64 slots, more than the table's channels its last entry, in its time and in the values it computes on at
    once; the input is held as it is (every channel)."""
    m = CostModel(mem_base_mb=0, mem_bytes_per_value=0, mem_bytes_per_model_value=2**20, time_job_s=0,
                  time_base_s=0, time_ns_per_input_value=0, time_ns_per_value=1e9, model_channels=64,
                  channel_encodings=(1.0, 2.0, 12.0, 4.0, 38.0, 44.0))
    # the memory: the context's series and one query's (2 rows) at what their channels cost
    assert m.estimate(JobSize(n_train=1, n_test=0, n_channels=6, length=1)) == pytest.approx((88, 44))
    assert m.estimate(JobSize(n_train=1, n_test=0, n_channels=100, length=1)) == pytest.approx((88, 44))
    assert m.estimate(JobSize(n_train=1, n_test=0, n_channels=2, length=1)) == pytest.approx((4, 2))
    held = dataclasses.replace(m, mem_bytes_per_value=2**20, mem_bytes_per_model_value=0)
    assert held.estimate(JobSize(n_train=1, n_test=0, n_channels=100, length=1))[0] == pytest.approx(100)


def test_chorustic_costs_the_ensemble_it_runs(methods):
    """The plugin's cost model takes the run's label shifts and RSSC draws: the ablation without the
    label-permutation ensemble runs its ICL once per draw, on a multivariate 10-class dataset 8x fewer times;
    a row's encodings are what the signal level's plan of the RSSC draws holds (1 channel: 1, 2: 2, 6: ~44 of
    the 4 draws' 64 slots, from ~16 channels on 64), the models' literal for 4 draws and computed for others."""
    import torch

    from chorustic.model import ChorusTICConfig
    from chorustic.model.rssc import sample_rssc_assignment
    from chorustic.model.signal_encoder import plan_slots

    plugin = methods["chorustic"]
    size = JobSize(n_train=1000, n_test=500, n_channels=2, length=512, n_classes=10)
    full, ablation = plugin.cost_model(), plugin.cost_model(n_label_shifts=1)
    assert (full.members(size), ablation.members(size)) == (32, 4)
    assert plugin.job_cost(size, n_label_shifts=1)[1] < plugin.job_cost(size)[1]
    config = ChorusTICConfig.paper()

    def encoded(channels, draws, seed):
        gi = sample_rssc_assignment(torch.ones(1, channels, dtype=torch.bool), num_groups=config.num_groups,
                                    group_size=config.group_size, n_draws=draws, mode=config.rssc_sampling,
                                    generator=torch.Generator().manual_seed(seed))
        return sum(u * n for u, n in plan_slots(gi, dedupe=True).items_per_size().items())

    for channels in (1, 2, 3, 6, 13, 32):
        mean = sum(encoded(channels, 4, seed) for seed in range(8)) / 8
        assert full.channel_encodings[channels - 1] == pytest.approx(mean, abs=0.01), channels
    assert full.channel_encodings[:2] == (1.0, 2.0) and full.channel_encodings[-1] == 64
    two = plugin.cost_model(n_rssc_draws=2)
    assert two.channel_encodings[0] == 1 and two.channel_encodings[-1] == 32  # 2 draws of 16 distinct channels
    assert two.members(size) == 16
    # its task level computes on task_batch_size rows at once: a call's queries beyond hold their input and result
    assert full.query_rows == 512 and plugin.cost_model(task_batch_size=128).query_rows == 128
    crop = JobSize(n_train=7200, n_test=16800, n_channels=1, length=512, n_classes=24)
    assert full.context_calls(crop) == 1  # Crop's full context runs once, not in 37 calls of 463 queries


def test_an_elastic_distance_costs_more_per_channel_once_a_series_leaves_the_cache():
    """``time_ns_per_cell_spilled`` adds to every alignment cell and channel of series larger than
    SERIES_CACHE_BYTES (all channels, float64), and to no others."""
    from chorustic.methods.cost import SERIES_CACHE_BYTES

    m = CostModel(time_job_s=0, time_ns_per_input_value=0, time_base_s=0, time_ns_per_value=0,
                  time_ns_per_cell=1.0, time_ns_per_cell_spilled=2.0)
    cells = 10 * 5 * 144 * 144
    fits = JobSize(n_train=10, n_test=5, n_channels=SERIES_CACHE_BYTES // (8 * 144), length=144)
    spills = dataclasses.replace(fits, n_channels=fits.n_channels + 1)
    assert m.estimate(fits)[1] == pytest.approx(cells * fits.n_channels * 1.0 / 1e9)
    assert m.estimate(spills)[1] == pytest.approx(cells * spills.n_channels * 3.0 / 1e9)
    # 1NN-DTW's model: PEMS-SF (963 x 144, 1.1 MB per series) spills, FaceDetection (144 x 62) does not
    dtw = discover(only="dtw_1nn").get("dtw_1nn").cost
    pems, face = cr.job_size("PEMS-SF"), cr.job_size("FaceDetection")
    spilled = CostModel.TIME_COEFFICIENTS.index("time_ns_per_cell_spilled")
    assert dtw.time_terms(pems)[spilled] > 0 and dtw.time_terms(face)[spilled] == 0


def test_evaluate_jobs_follow_the_dataset_with_the_plugin_as_ceiling(methods):
    from chorustic.methods import Method

    runs = [r for r in PAPER["evaluate"] if isinstance(methods[cc.method_entry(PAPER, r)["plugin"]], Method)]
    assert len(runs) >= 15
    for name in runs:
        plugin = methods[cc.method_entry(PAPER, name)["plugin"]]
        assert isinstance(plugin.cost, CostModel), name
        small = cr.evaluate_resources(PAPER, cc.resolved_entry(PAPER, name), "GunPoint", plugin)
        large = cr.evaluate_resources(PAPER, cc.resolved_entry(PAPER, name), "FaceDetection", plugin)
        assert small["mem_mb"] < large["mem_mb"] <= plugin.resources["mem_mb"], name
        assert small["runtime"] <= large["runtime"] <= plugin.resources["runtime"], name
        assert small["mem_mb"] <= plugin.resources["mem_mb"] / 2, name  # small datasets pack densely
        assert small["threads"] == plugin.resources["threads"]


def test_config_resources_replace_the_estimate(methods):
    cfg = copy.deepcopy(PAPER)
    cfg["methods"]["minirocket"]["resources"] = {"mem_mb": 3000, "runtime": 7, "threads": 2,
                                                 "partition": "short", "constraint": "avx512"}
    res = cr.evaluate_resources(cfg, cc.resolved_entry(cfg, "minirocket"), "ElectricDevices", methods["minirocket"])
    assert (res["mem_mb"], res["runtime"], res["threads"]) == (3000, 7, 2)
    assert res["slurm_partition"] == "short" and res["constraint"] == "avx512"


def test_fewer_contexts_ask_for_less_time(methods):
    cfg = copy.deepcopy(PAPER)
    all_contexts = cr.evaluate_resources(cfg, cc.resolved_entry(cfg, "multirocket_hydra"), "HandOutlines", methods["multirocket_hydra"])
    cfg["methods"]["multirocket_hydra"]["protocols"] = ["full"]
    contexts = [cr.job_size("HandOutlines", cfg=c, protocols=p).n_contexts for c, p in ((cfg, ["full"]), (PAPER, None))]
    assert contexts == [1, 16]
    assert cr.evaluate_resources(cfg, cc.resolved_entry(cfg, "multirocket_hydra"), "HandOutlines", methods["multirocket_hydra"])["runtime"] < all_contexts["runtime"]
    # the 5- and 10-shot contexts fit on 10 and 20 of HandOutlines' 1,000 series: the full context is most of it
    full, every = (cr.evaluate_estimate(c, cc.resolved_entry(c, "multirocket_hydra"), "HandOutlines", methods["multirocket_hydra"])[2] for c in (cfg, PAPER))
    assert 1.5 * full < every < 16 * full


def test_a_pair_memo_pays_each_pair_once_per_job(methods):
    """1NN-DTW keeps its (query, context series) distances across a job's contexts: the 16 contexts of
    HandOutlines (3.15 times its training split) cost little more than the full one, where without the memo
    they cost about 3 times as much; the memory holds a float64 per pair of the test split with the training
    series. A job whose pairs exceed PAIR_MEMO_MB (the whole InsectWingbeat: 20,000 x 30,000) has none."""
    from chorustic.methods.cost import PAIR_MEMO_MB

    dtw = methods["dtw_1nn"]
    cost = dtw.cost_model()
    every = cr.job_size("HandOutlines", input_kind="native", cfg=PAPER)
    full = dataclasses.replace(every, context_train=(), n_contexts=1)
    assert cost.memo_train(every) == every.n_train and cost.memo_train(full) == every.n_train
    without = dataclasses.replace(cost, memo_pairs=False)
    (mem_full, t_full), (mem_every, t_every) = cost.estimate(full), cost.estimate(every)
    assert t_full <= t_every < 1.05 * t_full < 2.5 * t_full < without.estimate(every)[1]
    pairs = cost.mem_bytes_per_memo_pair * every.n_train * every.n_test / 2**20
    assert cost.mem_bytes_per_memo_pair >= 8 and mem_every - without.estimate(every)[0] == pytest.approx(pairs)
    big = dataclasses.replace(cr.job_size("InsectWingbeat", input_kind="native"), n_train=30000, n_test=20000)
    assert 8 * big.n_train * big.n_test > PAIR_MEMO_MB * 2**20
    assert cost.memo_train(big) == 0 and cost.estimate(big) == without.estimate(big)


def test_an_embedding_memo_embeds_each_series_once_per_job(methods):
    """A frozen encoder keeps its embeddings across a job's contexts: FordA's 16 contexts (two classes: every
    fixed-shot and proportional context is eligible) embed the test split and the training series once, as the
    full context alone does, where without the memo each context embeds its own series and the test split; the
    memory holds an embedding per series and channel. Where they exceed EMBEDDING_MEMO_MB (the whole
    InsectWingbeat, 50,000 series of 200 channels) the job is costed as without the memo, its memory at the
    memo's bound."""
    from chorustic.methods.cost import EMBEDDING_MEMO_MB

    cost = methods["mantis_rf"].cost_model()
    assert cost.memo_embeddings
    every = cr.job_size("FordA", input_kind="resampled", cfg=PAPER)
    full = dataclasses.replace(every, context_train=(), n_contexts=1)
    assert every.n_contexts == 16 and cost.memo_series(every) == every.n_train + every.n_test
    without = dataclasses.replace(cost, memo_embeddings=False, mem_bytes_per_memo_embedding=0.0)
    values = lambda c, s: c.time_terms(s)[c.TIME_COEFFICIENTS.index("time_ns_per_value")]  # noqa: E731
    assert values(cost, every) == pytest.approx(values(cost, full)) == pytest.approx(every.n_values / 1e9)
    assert values(without, every) > 3 * values(cost, every)
    kept = cost.mem_bytes_per_memo_embedding * every.n_series * every.n_channels / 2**20
    assert cost.estimate(every)[0] - without.estimate(every)[0] == pytest.approx(kept)
    big = cr.job_size("InsectWingbeat", input_kind="resampled", cfg=PAPER)
    assert big.n_series * big.n_channels * cost.mem_bytes_per_memo_embedding > EMBEDDING_MEMO_MB * 2**20
    assert cost.memo_series(big) == 0 and cost.estimate(big)[1] == without.estimate(big)[1]
    assert cost.estimate(big)[0] - without.estimate(big)[0] == pytest.approx(EMBEDDING_MEMO_MB)


def test_dtw_window_shortens_the_estimate(methods):
    dtw = methods["dtw_1nn"]
    size = cr.job_size("HandOutlines", contexts=16)
    assert dtw.job_cost(size, window=0.1)[1] < dtw.job_cost(size, window=None)[1]


def test_dtw_costs_series_of_their_own_lengths_by_their_mean_where_known(methods):
    """1NN-DTW aligns series of lengths L_i x L_j: a known mean length (a stand-in's) costs mean^2 cells per pair;
    without it (the registry has only the maximum) the maximum: an upper bound."""
    import dataclasses

    dtw = methods["dtw_1nn"]
    size = cr.job_size("InsectWingbeatSubset", input_kind="native")
    assert size.mean_length is None and dtw.cost_band(size) is None
    short = dataclasses.replace(size, mean_length=size.length / 2)
    assert dtw.cost_band(short) == size.length / 4
    cost = dtw.cost_model()
    cells = cost.time_terms(size)[6], cost.time_terms(short, band=dtw.cost_band(short))[6]
    assert cells[1] == pytest.approx(cells[0] / 4)
    assert dtw.job_cost(short)[1] < dtw.job_cost(size)[1]
    assert dtw.cost_band(short, window=0.1) == dtw.cost_band(size, window=0.1)  # a band: the same cells


def test_reported_method_asks_for_little(methods):
    res = cr.evaluate_resources(PAPER, cc.resolved_entry(PAPER, "tict"), "GunPoint", methods["tict"])
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


def _with_resources(**own):
    cfg = copy.deepcopy(PAPER)
    cfg["methods"]["minirocket"]["resources"] = own
    return cfg


NO_SCHEDULER = {"PATH": "/nonexistent"}
SLURM_NO_SQUEUE = {"SLURM_JOB_ID": "7", "PATH": "/nonexistent"}


@pytest.mark.parametrize(
    "case, cfg, kwargs, env, minutes, says",
    [
        ("local: the cost model's runtime is no limit", PAPER, {"cluster_runtime_min": 9}, NO_SCHEDULER, None, ()),
        ("local: a runtime the user set holds", _with_resources(runtime=30), {"cluster_runtime_min": 30},
         NO_SCHEDULER, 30, ("time limit of 30 min set by methods.minirocket.resources.runtime",)),
        ("local: a limit set by hand holds", PAPER, {"time_limit_min": 5}, NO_SCHEDULER, 5, ("set by --runtime",)),
        ("SLURM (squeue silent): a minute before the job's runtime", PAPER, {"cluster_runtime_min": 9},
         SLURM_NO_SQUEUE, 8, ("before SLURM ends the job", "9 min, estimated by the method's cost model",
                              "raise methods.minirocket.resources.runtime")),
        ("SLURM: the user's runtime is the scheduler's", _with_resources(runtime=30), {"cluster_runtime_min": 30},
         SLURM_NO_SQUEUE, 29, ("30 min, methods.minirocket.resources.runtime",)),
        ("SLURM: capped by the partition's limit", _cfg(max_runtime=20), {"cluster_runtime_min": 20},
         SLURM_NO_SQUEUE, 19, ("capped by cluster.max_runtime",)),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_time_limits_belong_to_the_cluster(case, cfg, kwargs, env, minutes, says):
    limits = cr.evaluation_limits(cfg, "minirocket", cc.resolved_entry(cfg, "minirocket")["resources"], env=env,
                                  **kwargs)
    assert limits.minutes == minutes, case
    reason = limits.time_reason.format(limit=limits.minutes or 0, elapsed=minutes or 0)
    for fragment in says:
        assert fragment in reason, (case, reason)


def test_the_scheduler_is_recognised_from_its_environment():
    assert cr.cluster_scheduler({"SLURM_JOB_ID": "12"}) == "SLURM"
    assert cr.cluster_scheduler({"SLURM_JOB_ID": ""}) is None and cr.cluster_scheduler({}) is None
    assert cr._slurm_minutes(" 1-02:03:30\n") == 1440 + 123.5
    assert cr._slurm_minutes("2:03:00") == 123 and cr._slurm_minutes("05:30") == 5.5
    assert cr._slurm_minutes("UNLIMITED") is None and cr._slurm_minutes("INVALID") is None
    assert cr.scheduler_minutes_left(SLURM_NO_SQUEUE) is None and cr.scheduler_minutes_left({}) is None


def test_the_memory_limit_reported_is_the_one_set():
    limits = cr.evaluation_limits(_with_resources(mem_mb=1000), "minirocket", {"mem_mb": 1000}, job_mem_mb=1000,
                                  env=NO_SCHEDULER)
    assert limits.mem_mb == 1000 - cr.JOB_OVERHEAD_MB
    reason = limits.mem_reason.format(limit=limits.mem_mb, rss=512)
    assert reason.startswith("exceeded the job's memory limit of 1000 MB: the method's worker reached 512 MB")
    assert reason.endswith("raise methods.minirocket.resources.mem_mb")
    capped = cr.evaluation_limits(_cfg(max_mem_mb=2000), "minirocket", {}, job_mem_mb=2000, env=NO_SCHEDULER)
    assert "2000 MB (capped by cluster.max_mem_mb)" in capped.mem_reason
    assert cr.job_memory_problem(cr.MIN_JOB_MEM_MB, "x") is None
    assert f"at least {cr.MIN_JOB_MEM_MB} MB" in cr.job_memory_problem(400, "methods.m.resources.mem_mb")


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
        res = cr.evaluate_resources(demo, cc.resolved_entry(demo, method), dataset, plugin)
        worker_mem, worker_min = cr.worker_limits(res["mem_mb"], res["runtime"])
        assert runs.peak_memory_mb.max() < worker_mem, (method, dataset, runs.peak_memory_mb.max(), res)
        assert (runs.fit_time_s.sum() + runs.predict_time_s.sum()) / 60 < worker_min, (method, dataset, res)
        # and not wildly more than measured: within 3x the peak plus the job's other processes (requests
        # are rounded up to 100 MB)
        assert res["mem_mb"] <= 3 * runs.peak_memory_mb.max() + cr.JOB_OVERHEAD_MB + 100, (method, dataset, res)


def test_site_example_is_a_valid_site_file(methods):
    site = cc.REPO_ROOT / "config" / "site.example.yaml"
    cfg = cc.load_config([site])  # merged over config.yaml and validated
    res = cr.evaluate_resources(cfg, cc.resolved_entry(cfg, "tabicl"), "GunPoint", methods["tabicl"])
    assert res["mem_mb"] == 80000 and res["slurm_partition"] == "bigmem" and res["gpu"] == 1
    assert cr.evaluate_resources(cfg, cc.resolved_entry(cfg, "minirocket"), "GunPoint", methods["minirocket"])["slurm_partition"] == "compute"
    assert cr.pretrain_resources(cfg, "chorustic")["gpu"] == 4


def test_attention_over_a_rows_features_grows_with_their_square_and_has_its_own_gpu_speedup():
    """TabICL's row interaction attends over every flattened feature of a row: doubling the features doubles
    the per-value terms and quadruples this one. On a GPU that term is sped up by its own factor, the rest by
    gpu_speedup, the job's fixed start by nothing."""
    import dataclasses as dc

    from chorustic.methods.cost import CostModel, JobSize

    cost = CostModel(time_job_s=20, time_base_s=0, time_ns_per_value=1e6, time_ns_per_feature_pair=500,
                     time_ns_per_input_value=0, gpu_speedup=100, gpu_speedup_feature_pairs=5000)
    i = CostModel.TIME_COEFFICIENTS.index("time_ns_per_feature_pair")
    small = JobSize(n_train=7, n_test=7, n_channels=4, length=256)
    big = dc.replace(small, length=512)
    assert cost.time_terms(big)[i] == pytest.approx(4 * cost.time_terms(small)[i])
    assert cost.time_terms(small)[i] == pytest.approx(14 * 1024**2 / 1e9)
    _, seconds = cost.estimate(big)
    pairs = 500 * 14 * 2048**2 / 1e9
    values = 1e6 * 14 * 2048 / 1e9
    assert seconds == pytest.approx(20 + pairs + values)
    assert cost.gpu_seconds(big, seconds) == pytest.approx(20 + pairs / 5000 + values / 100)
    same = dc.replace(cost, gpu_speedup_feature_pairs=None)
    assert same.gpu_seconds(big, seconds) == pytest.approx(20 + (pairs + values) / 100)
    assert dc.replace(cost, gpu_speedup=None).gpu_seconds(big, seconds) == seconds
