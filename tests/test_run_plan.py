"""The run plan (every job of a configuration, made once) and the bill `chorustic plan-run` prints from it."""

from __future__ import annotations

import copy
import dataclasses
import json
import subprocess
import sys

import pytest

from chorustic import config as cc
from chorustic import resources as cr
from chorustic.bill import JOB_START_S, BillJob, Machine, bill_jobs, critical_path, format_bill, make_bill, schedule
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
        assert job.resources == cr.evaluate_resources(cfg, cc.resolved_entry(cfg, job.method), job.dataset, plugin)
        assert job.fingerprint == paper.fingerprints[job.method]
    crop = paper.job("minirocket", "Crop")
    assert (crop.size.n_train, crop.size.n_test, crop.size.length, crop.size.n_contexts) == (7200, 16800, 46, 16)
    assert paper.job("chorustic", "Crop").size.length == 512  # resampled input
    assert paper.job("chorustic_no_calibration", "PEMS-SF").contexts == (
        {"protocol": "full", "family": "full", "budget": None, "seed": 0},)
    assert paper.pretrain_runs() == sorted(cfg["pretrain"])


def _facts(job):
    """A planned job's facts, without its cost model object (compared by what it estimates)."""
    return {f.name: getattr(job, f.name) for f in dataclasses.fields(job) if f.name != "cost"}


def test_a_slice_of_the_plan_holds_the_same_jobs_as_the_whole_plan(paper):
    cfg = paper.cfg
    part = RunPlan.from_config(cfg, paper.discovery, methods=["minirocket", "chorustic"],
                               datasets=["Crop", "GunPoint", "BasicMotions"])
    assert part.evaluation_jobs == [(m, d) for m in ("minirocket", "chorustic")
                                    for d in ("Crop", "GunPoint", "BasicMotions")]
    for job in part.jobs:
        assert _facts(job) == _facts(paper.job(*job.key)), job.key
    assert part.fingerprints == {m: paper.fingerprints[m] for m in ("minirocket", "chorustic")}
    assert set(part.metadata) == {"minirocket", "chorustic"}
    # a run limited to one archive is planned on a dataset named by hand outside it (as `evaluate` runs it)
    uea_only = copy.deepcopy(cfg)
    uea_only["methods"]["minirocket"]["archives"] = ["UEA"]
    assert ("minirocket", "GunPoint") not in RunPlan.from_config(uea_only, paper.discovery).evaluation_jobs
    assert RunPlan.from_config(uea_only, paper.discovery, methods=["minirocket"],
                               datasets=["GunPoint"]).evaluation_jobs == [("minirocket", "GunPoint")]


def test_the_workers_job_is_the_planned_job(paper, tmp_path):
    from pathlib import Path

    from chorustic.evaluation.job import JobSpec
    from chorustic.results_layout import contexts_path, manifest_path

    cfg = copy.deepcopy(paper.cfg)
    cfg["methods"]["minirocket"].update(protocols=["full"], resources={"mem_mb": 3000})
    cfg["methods"]["minirocket"]["params"] = {"n_kernels": 2000}
    plan = RunPlan.from_config(cfg, paper.discovery, methods=["minirocket"], datasets=["GunPoint"])
    job = plan.job("minirocket", "GunPoint")
    spec = JobSpec.from_plan(plan, job, n_jobs=3)
    results = cfg["paths"]["results_dir"]
    assert (spec.method, spec.plugin, spec.dataset, spec.archive) == ("minirocket", "minirocket", "GunPoint", "UCR")
    assert spec.params == job.params and spec.params["n_kernels"] == 2000
    assert spec.fingerprint == job.fingerprint == plan.fingerprints["minirocket"]
    assert spec.protocols == ["full"] and job.run_resources == {"mem_mb": 3000} and job.resources["mem_mb"] == 3000
    assert spec.contexts_file == str(contexts_path(results, "GunPoint")) and spec.n_jobs == 3
    assert spec.results_dir == results and spec.lock_file == cc.lock_file(cfg)
    assert Path(results) / job.manifest == manifest_path(results, "minirocket", "GunPoint")
    # the evaluated checkpoint of a pretraining run is the rule's input and the job's parameter
    chorustic = paper.job("chorustic", "GunPoint")
    assert chorustic.pretrain_run and chorustic.checkpoint_inputs == (chorustic.params["checkpoint"],)
    assert chorustic.params["checkpoint"] == cc.checkpoint_path(paper.cfg, chorustic.pretrain_run)
    narrow = JobSpec.from_plan(plan, job, contexts_file=tmp_path / "c.json", protocols=["full"])
    assert narrow.contexts_file == str(tmp_path / "c.json")


def test_only_the_run_plan_resolves_a_method_runs_entry():
    """A job's facts are resolved once, by the run plan: the other modules and the rules read its jobs (the
    commands that list or check runs by name are the exception)."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    allowed = {"chorustic/config.py", "chorustic/run_plan.py", "chorustic/commands/methods.py",
               "chorustic/commands/evaluate.py"}
    call = re.compile(r"\b(method_entry|resolved_entry|resolved_params|checkpoint_inputs|run_fingerprint)\(")
    found = []
    for path in [*(root / "chorustic").rglob("*.py"), *(root / "workflow").rglob("*.smk"), root / "Snakefile"]:
        rel = path.relative_to(root).as_posix()
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if call.search(line) and rel not in allowed and not line.lstrip().startswith(("def ", "#")):
                found.append(f"{rel}:{n}: {line.strip()}")
    assert not found, "resolve the job through the run plan (RunPlan.from_config, PlannedJob): " + "; ".join(found)
    evaluate = (root / "chorustic" / "commands" / "evaluate.py").read_text(encoding="utf-8")
    assert "resolved_params(" not in evaluate and "run_fingerprint(" not in evaluate


def test_bill_jobs_follow_the_workflow_graph(paper):
    jobs = bill_jobs(paper, Machine(cores=16, gpus=1, mem_mb=128 * 1024))
    rules = {}
    for j in jobs:
        rules[j.rule] = rules.get(j.rule, 0) + 1
    assert rules == {"download": 158, "preprocess": 158, "contexts": 158, "audit": 158, "pretrain": 4, "evaluate": 2588,
                     "aggregate": 1, "report": 1}
    by_name = {j.name: j for j in jobs}
    ev = by_name["evaluate/chorustic/Crop"]
    assert set(ev.deps) == {"contexts/Crop", "pretrain/chorustic"}
    assert by_name["evaluate/minirocket/Crop"].deps == ["contexts/Crop"]
    assert len(by_name["aggregate"].deps) == 2588 + 158  # every evaluation and every audit
    # a GPU job uses the GPU when the machine has one, the CPU otherwise (and is slower there)
    cpu = {j.name: j for j in bill_jobs(paper, Machine(cores=16, gpus=0, mem_mb=128 * 1024))}
    assert ev.gpus == 0 or ev.seconds < cpu["evaluate/chorustic/Crop"].seconds
    assert by_name["evaluate/tabicl/Crop"].gpus == 1 and cpu["evaluate/tabicl/Crop"].gpus == 0
    assert by_name["pretrain/chorustic"].seconds < cpu["pretrain/chorustic"].seconds / 50  # measured: ~90x 16 cores


def test_a_jobs_time_on_its_cores_follows_its_methods_thread_scaling(paper):
    """A 4-thread job on a 2-core machine runs on 2 threads (Snakemake caps them). Its per-context work runs
    as many times faster as its method's measured thread scaling allows (Amdahl's law), and it holds its
    cores for the whole time: its CPU-hours are its cores times its wall time."""
    two = {j.name: j for j in bill_jobs(paper, Machine(cores=2, gpus=0, mem_mb=16 * 1024))}
    many = {j.name: j for j in bill_jobs(paper, Machine(cores=16, gpus=0, mem_mb=128 * 1024))}
    job = paper.job("multirocket_hydra", "HandOutlines")
    assert job.threads == 4 and two["evaluate/multirocket_hydra/HandOutlines"].cores == 2
    cost = job.cost
    assert cost == paper.discovery.methods.get(job.plugin).cost_model(**job.params)
    assert cost.parallel_fraction is not None  # measured (benchmarks/thread_scaling.py)
    fixed = cost.time_job_s
    for bill, cores in ((two, 2), (many, 4)):
        j = bill["evaluate/multirocket_hydra/HandOutlines"]
        assert j.cores == cores
        assert j.seconds == pytest.approx(JOB_START_S + fixed + (job.estimate_s - fixed) / cost.thread_speedup(cores))
        assert j.cpu_hours * 3600 == pytest.approx(cores * j.seconds)
        assert j.cpu_hours * 3600 >= JOB_START_S + job.estimate_s  # never less than one thread's work
    assert many["evaluate/multirocket_hydra/HandOutlines"].seconds < two["evaluate/multirocket_hydra/HandOutlines"].seconds


def test_threads_speed_a_job_up_by_amdahls_law():
    from chorustic.methods import CostModel

    assert CostModel().thread_speedup(4) == 4  # not measured: every thread taken as fully used
    half = CostModel(parallel_fraction=0.5)
    assert half.thread_speedup(1) == 1 and half.thread_speedup(2) == pytest.approx(4 / 3)
    assert half.thread_speedup(10**6) == pytest.approx(2, rel=1e-5)  # never more than 1 / (1 - p)
    assert CostModel(parallel_fraction=0).thread_speedup(16) == 1


def test_the_bill_names_the_methods_whose_thread_scaling_is_not_measured(paper):
    bill = make_bill(paper, Machine(cores=16, gpus=0, mem_mb=128 * 1024))
    note = [n for n in bill["notes"] if n.startswith("thread scaling not measured")]
    assert len(note) == 1 and "unishape_rf" in note[0], bill["notes"]  # needs its authors' code: not measured here
    costs = {j.method: j.cost for j in paper.jobs}
    measured = {m for m, c in costs.items() if c is not None and c.parallel_fraction is not None}
    named = set(note[0].split(" for ", 1)[1].split(":", 1)[0].split(", "))
    assert "minirocket" in measured and "dtw_1nn" in measured and not named & measured
    assert named == {m for m, c in costs.items() if c is not None and c.parallel_fraction is None}


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
    assert bill["jobs"] == 3226
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
                           "--cores", "2", "--gpus", "0", "--mem-gb", "8", "--nodes", "3", "--out", str(out)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    bill = json.loads(out.read_text())
    assert bill["profile"] == "demo" and bill["per_rule"]["evaluate"]["jobs"] == 30
    assert "critical path" in proc.stdout and "on 3 cluster node(s)" in proc.stdout
    assert bill["machine"]["cores"] == 2 and bill["per_rule"]["evaluate"]["gpu_hours"] == 0


def test_a_bill_whose_gpus_are_given_never_loads_torch(tmp_path):
    """torch takes seconds to import and the bill needs it only to count this machine's GPUs: with --gpus and
    --gpu given (the README's workstation and laptop bills), plan-run imports no torch, even where it bills
    pretraining on a GPU (the devices' peaks live apart from the torch-based planner)."""
    code = ("import runpy, sys; sys.argv = ['chorustic', 'plan-run', '--cores', '16', '--gpus', '1', '--gpu', "
            "'h100', '--mem-gb', '128']\n"
            "try:\n    runpy.run_module('chorustic', run_name='__main__')\nexcept SystemExit as e:\n"
            "    assert not e.code, e.code\n"
            "print('torch loaded:', 'torch' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "pretrain/chorustic" in proc.stdout and "GPU-hours" in proc.stdout
    assert proc.stdout.rstrip().endswith("torch loaded: False"), proc.stdout[-500:]


def test_gpu_pretraining_is_billed_at_the_measured_rate_where_one_was_measured(paper, tmp_path, monkeypatch):
    """A throughput measurement of the run's configuration from a lent GPU (benchmarks/results/gpu/) decides
    the pretraining time; without one, the plan's assumed MFU does; a measurement of another configuration
    (the encoder frozen) is not used."""
    import chorustic.bill as bill

    ws = Machine(cores=16, gpus=1, mem_mb=128 * 1024)
    entry = paper.cfg["pretrain"]["chorustic"]
    flops = bill._pretrain_plan(entry)["time"]["total_pflop"] * 1e15

    def measure(name: str, trainable: bool, tflops: float, date: str) -> None:
        (tmp_path / name).write_text(json.dumps({
            "model_config": "paper", "train_config": "paper", "signal_encoder_trainable": trainable,
            "device": "NVIDIA H200", "date": date, "achieved_tflops": tflops, "mfu": tflops / 770}))

    monkeypatch.setattr(bill, "GPU_MEASURED_DIR", tmp_path)
    planned, note = bill._pretrain_seconds(entry, ws, 1)
    assert "MFU" in note and "measured" not in note  # the plan's assumption
    measure("2026-11-27_h200_paper_frozen.json", False, 100.0, "2026-11-27")
    assert bill._pretrain_seconds(entry, ws, 1)[0] == planned
    measure("2026-11-27_h200_paper.json", True, 40.0, "2026-11-27")
    measure("2026-12-01_h200_paper.json", True, 80.0, "2026-12-01")  # the newest measurement counts
    secs, note = bill._pretrain_seconds(entry, ws, 1)
    assert secs == pytest.approx(flops / 80e12)
    assert "80.0 TFLOP/s, measured on one NVIDIA H200 on 2026-12-01" in note
    assert bill._pretrain_seconds(entry, ws, 2)[0] == pytest.approx(flops / 160e12)


def test_a_method_whose_plugin_fails_to_import_is_named_in_the_bill(tmp_path):
    """Its jobs stay in the plan (they run and fail with the reason) but have no cost model: the bill says so,
    with the import's own words, instead of quietly pricing them at a placeholder."""
    import shutil

    plugins = tmp_path / "baselines"
    shutil.copytree(cc.REPO_ROOT / "baselines", plugins, ignore=shutil.ignore_patterns("__pycache__"))
    with open(plugins / "minirocket.py", "a") as fh:
        fh.write("\nraise ImportError('a broken installation')\n")
    disc = discover(plugins)
    plan = RunPlan.from_config(cc.load_config([cc.REPO_ROOT / "config" / "demo.yaml"]), disc)
    assert "minirocket" in plan.broken_runs
    bill = make_bill(plan, Machine(cores=2, gpus=0, mem_mb=8192))
    (warning,) = [w for w in bill["warnings"] if w.startswith("minirocket:")]
    n = sum(j.method == "minirocket" for j in plan.jobs)
    assert n > 0 and f"its {n} evaluate job(s)" in warning and "a broken installation" in warning


def test_the_bill_names_the_jobs_whose_model_exceeds_their_methods_ceilings(paper):
    """A job is stopped at its method's mem_mb whatever its cost model says it needs: the bill says how many
    such jobs the run has, and names the worst. The paper profile's ceilings hold every job's request; a site
    that lowers one (here ChorusTIC's to 16 GB) is told which jobs it stops."""
    def over_ceiling(plan):
        return [j for j in plan.jobs
                if j.cost is not None and cr.job_request(j.estimate_mb, j.estimate_s)[0] > j.resources["mem_mb"]]

    assert over_ceiling(paper) == []
    cfg = copy.deepcopy(paper.cfg)
    cfg["methods"]["chorustic"]["resources"] = {"mem_mb": 16000}
    low = RunPlan.from_config(cfg, paper.discovery)
    bill = make_bill(low, Machine(cores=16, gpus=1, mem_mb=256 * 1024))
    (warning,) = [w for w in bill["warnings"] if w.startswith("evaluate jobs beyond their method's ceilings")]
    over = over_ceiling(low)
    assert over and {j.method for j in over} == {"chorustic"}
    assert f"{len(over)} need more memory than their mem_mb" in warning

    def ratio(j):
        return cr.job_request(j.estimate_mb, j.estimate_s)[0] / j.resources["mem_mb"]

    worst = max(map(ratio, over))
    assert any(f"{j.method}/{j.dataset}" in warning for j in over if ratio(j) == pytest.approx(worst))


def test_the_bill_counts_the_disk_a_run_fills_and_the_last_rules_read_it(paper):
    """Prediction files grow with the contexts, the .ts files and arrays with the datasets; the aggregation
    reads every prediction file, and a report that checks the run against reference results parses both files
    of every run."""
    from chorustic.bill import FIXED_S, READ_MB_S, RESULT_FILE_BYTES, RESULT_READ_MB_S, disk_gb

    gb = disk_gb(paper)
    one = copy.copy(paper)
    one.jobs = [dataclasses.replace(j, contexts=j.contexts[:1]) for j in paper.jobs]
    one_gb = disk_gb(one)
    assert (one_gb["data"], one_gb["cache"]) == (gb["data"], gb["cache"]) and gb["cache"] > 0
    manifests = len(paper.jobs) * RESULT_FILE_BYTES["manifest"] / 1e9
    # 16 contexts in most jobs (the ablations run the full context alone): their files are 15x more than one's
    assert gb["results"] - manifests > 15 * (one_gb["results"] - manifests)
    ws = Machine(cores=16, gpus=1, mem_mb=128 * 1024)
    jobs = {j.name: j for j in bill_jobs(paper, ws)}
    assert jobs["aggregate"].seconds == pytest.approx(JOB_START_S + FIXED_S["aggregate"] + gb["results"] * 1e3 / READ_MB_S
                                                      + gb["results"] * 1e3 / RESULT_READ_MB_S)  # checked, then parsed
    assert jobs["report"].seconds == JOB_START_S + FIXED_S["report"]
    checked = copy.copy(paper)
    checked.cfg = {**paper.cfg, "reports": {**paper.cfg["reports"], "reference_results": "other/results"}}
    report = {j.name: j for j in bill_jobs(checked, ws)}["report"]
    assert report.seconds == pytest.approx(JOB_START_S + FIXED_S["report"] + 2 * gb["results"] * 1e3 / RESULT_READ_MB_S)
    assert "reference results" in report.note
    assert "disk: about" in format_bill(make_bill(paper, ws))


@pytest.mark.slow(reason="plan-run for two GPU kinds in subprocesses (~6 s)")
def test_the_gpu_kind_changes_the_bill(tmp_path):
    """`plan-run --gpu KIND` bills pretraining at that kind's rate (the measured rate scaled by the matmul peaks)
    and says which micro-batch fits its memory; an unknown kind is refused (tests/test_cli_vocabulary.py)."""
    from chorustic.cli import main

    hours, notes = {}, {}
    for kind in ("h100", "a100", "v100"):
        out = tmp_path / f"{kind}.json"
        assert main(["plan-run", "--cores", "16", "--gpus", "1", "--gpu", kind, "--mem-gb", "128",
                     "--out", str(out)]) == 0
        bill = json.loads(out.read_text())
        hours[kind] = bill["per_rule"]["pretrain"]["gpu_hours"]
        notes[kind] = " ".join(n for n in bill["notes"] if "pretrain/chorustic:" in n)
    assert hours["h100"] < hours["a100"] < hours["v100"]
    assert hours["a100"] / hours["h100"] == pytest.approx(989.0 / 312.0, rel=1e-3)
    assert "fits one v100's 32 GB" in notes["v100"] and "fits one h100's 80 GB" in notes["h100"]


def test_the_compare_profile_bills_only_the_runs_it_computes():
    """config/compare.yaml with one run added: that run's jobs carry the bill; each job of the paper's
    reported methods is billed at its start only (they copy published numbers) and marked (reported)."""
    cfg = cc.load_config([cc.REPO_ROOT / "config" / "compare.yaml"], overrides={"evaluate_extra": ["minirocket"]})
    plan = RunPlan.from_config(cfg, discover())
    bill = make_bill(plan, Machine(cores=16, gpus=1, mem_mb=128 * 1024))
    reported = [m for m in plan.methods if m != "minirocket"]
    assert bill["reported"] == reported and len(reported) == 11
    for m in reported:
        row = bill["per_method"][m]
        assert row["gpu_hours"] == 0 and row["cpu_hours"] == pytest.approx(row["jobs"] * JOB_START_S / 3600)
    assert bill["per_method"]["minirocket"]["cpu_hours"] > 5 * max(bill["per_method"][m]["cpu_hours"] for m in reported)
    text = format_bill(bill)
    assert "paper_chorustic (reported)" in text and "minirocket (reported)" not in text
    assert all(c["protocol"] == "full" for j in plan.jobs for c in j.contexts)  # the paper's tables: full context
