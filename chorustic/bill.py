"""``chorustic plan-run``: the bill of a configured run, before anything runs.

From the run plan (:class:`chorustic.run_plan.RunPlan`: every job with its dataset's shape and its
method's cost model) the bill lists the jobs per rule, the CPU-hours and GPU-hours per method and per
rule, the largest job's memory, the expected wall time on this machine and on N cluster nodes, and the
critical path, and the disk the run fills (:func:`disk_gb`). How each job's time is estimated:

``download``
    The dataset's ``.ts`` text (:data:`TEXT_BYTES_PER_VALUE` per value) at ``bandwidth_mb_s``; a dataset
    already in the data folder or inside the aeon wheel is only verified (read at :data:`READ_MB_S`).
``preprocess``
    Its cost model in :mod:`chorustic.resources` (per native value).
``contexts``, ``audit``, ``aggregate``, ``report``
    :data:`FIXED_S`: measured on the demo, and ``aggregate`` and ``report`` on the paper profile's whole
    results (``benchmarks/results_scale.py``). ``aggregate`` also reads every prediction file to check it (at
    :data:`READ_MB_S`) and parses it for its measures (at :data:`RESULT_READ_MB_S`), and a report that checks the run against reference results
    (``reports.reference_results``) parses both prediction files of every run (:data:`RESULT_READ_MB_S`).
``pretrain``
    The FLOPs of the run's configuration (the committed plan of ``chorustic pretrain --plan`` in
    ``tools/gpu/plans/``): on a GPU at the FLOP rate ``benchmarks/pretrain_throughput.py`` measured for that
    configuration on a lent GPU (the newest file of :data:`GPU_MEASURED_DIR`), or where none was measured at
    the plan's model-FLOPs utilisation and the GPU's peak; on a CPU at :data:`CPU_TRAIN_GFLOPS` per core
    (measured with the same benchmark).
``evaluate``
    Its method's cost model (one CPU thread, the ``chorustic.methods.CostModel`` of the plugin); the
    per-context part divided by the speed-up of the job's threads (``CostModel.thread_speedup``: Amdahl's
    law with the method's measured ``parallel_fraction``; the number of threads where it is not measured),
    or on a GPU by the cost model's ``gpu_speedup``. A job holds its cores for the whole time: its
    CPU-hours are its cores times its wall time, more than one thread's time where threads are not fully used.

Every job also pays :data:`JOB_START_S` (the job's process starting and importing). The wall time is a
list schedule of the job graph (longest remaining path first, as a critical-path scheduler would) on the
machines' cores, GPUs and memory; Snakemake's own order is greedier, so it is a lower bound of what a run
takes, and the critical path a lower bound of that.
"""

from __future__ import annotations

import dataclasses
import heapq
import json
import math
import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from chorustic.paths import REPO_ROOT
from chorustic.run_plan import RunPlan

__all__ = ["Machine", "BillJob", "this_machine", "bill_jobs", "disk_gb", "schedule", "critical_path", "make_bill",
           "format_bill"]

#: Bytes of ``.ts`` text per value (measured on the development subset's files: 11.1-11.2).
TEXT_BYTES_PER_VALUE = 11.1
#: Reading a local file to verify its checksum (MB/s).
READ_MB_S = 300.0
#: A job's process starting: Snakemake's job script, the ``chorustic`` command's imports (s).
JOB_START_S = 4.0
#: The fixed part of jobs (s): measured on the demo's 6 datasets (contexts 3, aggregate 10, report 120) and on
#: the paper profile's 2,588 jobs (aggregate 14 with its 8.2 GB of prediction files in the page cache, report
#: 138; benchmarks/results_scale.py, 2026-11-29).
#: ``audit``: 0.57-0.64 s a whole `chorustic audit` process on the demo's GunPoint, JapaneseVowels and
#: ItalyPowerDemand (2026-12-07, 2 Intel Xeon cores), its reading of larger arrays billed on top (bill_jobs).
FIXED_S = {"contexts": 3.0, "audit": 1.0, "aggregate": 10.0, "report": 140.0}

#: Bytes of one prediction file (tsml-eval CSV, :mod:`chorustic.evaluation.results`): its header lines, per
#: test series and per class probability, and of a job's manifest; fitted on the paper profile's 37,560 files
#: of random probabilities (~19 digits each; each file 0.67-1.04 of the fit; benchmarks/results_scale.py).
#: A nearest neighbour's 0/1 print shorter, a tiny probability in exponent notation a few bytes longer.
RESULT_FILE_BYTES = {"file": 825.0, "per_series": 0.27, "per_probability": 20.6, "manifest": 10500.0}
#: The report's check against reference results parses both prediction files of every run (MB/s of CSV;
#: the paper profile's 2 x 8.2 GB in 344 CPU-s more than the report without it with numpy's reader,
#: benchmarks/results_scale.py, 2026-11-29; 524 CPU-s with the Python parsing before it).
RESULT_READ_MB_S = 47.0
#: Pretraining on a CPU (GFLOP/s per core): one process of one thread 39, two processes of one thread 27.5 each
#: (``benchmarks/pretrain_throughput.py``, ``small`` configuration, 2026-11-25; docs/pretraining.md).
CPU_TRAIN_GFLOPS = {1: 39.0, "per_core": 27.5}
#: The committed plans of ``chorustic pretrain --plan`` (FLOPs per episode, episodes, MFU of the target).
PLANS_DIR = REPO_ROOT / "tools" / "gpu" / "plans"
#: ``benchmarks/pretrain_throughput.py`` outputs from lent GPUs (``YYYY-MM-DD_<gpu>_<config>.json``).
GPU_MEASURED_DIR = REPO_ROOT / "benchmarks" / "results" / "gpu"


@dataclasses.dataclass(frozen=True)
class Machine:
    """One machine (or one node of a cluster)."""

    cores: int
    gpus: int = 0
    mem_mb: int = 0
    gpu: str = "h100"
    """The GPU's kind (a key of :data:`chorustic.training.devices.DEVICE_PEAK_TFLOPS`)."""

    def describe(self) -> str:
        gpu = f", {self.gpus} GPU{'s' if self.gpus != 1 else ''} ({self.gpu})" if self.gpus else ", no GPU"
        return f"{self.cores} cores{gpu}, {self.mem_mb / 1024:.0f} GB"


def this_machine(detect_gpus: bool = True) -> Machine:
    """The cores this process may use, its memory and its CUDA GPUs (``detect_gpus=False``: none counted,
    and torch, a few seconds to import, is not loaded: for a bill whose GPUs are given)."""
    import psutil

    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cores = os.cpu_count() or 1
    gpus, kind = 0, "h100"
    try:
        if detect_gpus:
            import torch

            if torch.cuda.is_available():
                gpus = torch.cuda.device_count()
                kind = _gpu_kind(torch.cuda.get_device_name(0))
    except ImportError:  # pragma: no cover
        pass
    return Machine(cores=cores, gpus=gpus, mem_mb=int(psutil.virtual_memory().total / 2**20), gpu=kind)


def _gpu_kind(name: str) -> str:
    from chorustic.training.devices import gpu_kind

    return gpu_kind(name) or "h100"


@dataclasses.dataclass
class BillJob:
    """One job of the bill: what it occupies and for how long (s)."""

    rule: str
    name: str
    group: str
    """What its hours are billed to: the method run for evaluate jobs, else the rule."""
    cores: int
    gpus: int
    mem_mb: int
    seconds: float
    deps: list[str] = dataclasses.field(default_factory=list)
    note: str = ""

    @property
    def cpu_hours(self) -> float:
        return 0.0 if self.gpus else self.cores * self.seconds / 3600

    @property
    def gpu_hours(self) -> float:
        return self.gpus * self.seconds / 3600


# --------------------------------------------------------------------------------------------------
# one job's time and the disk


def _encoder_trainable(entry: dict[str, Any]) -> bool:
    return "--freeze-signal-encoder" not in (entry.get("args") or [])


def _json_files(folder: Path, newest_first: bool = False) -> Iterator[tuple[Path, dict[str, Any]]]:
    """``(path, content)`` of the readable JSON files of ``folder`` in name order (names starting with a date:
    ``newest_first`` reverses it)."""
    for path in sorted(folder.glob("*.json"), reverse=newest_first):
        try:
            yield path, json.loads(path.read_text())
        except (OSError, ValueError):
            continue


def _pretrain_plan(entry: dict[str, Any]) -> dict[str, Any] | None:
    """The committed plan of a pretraining run's configuration (model and train config, encoder trainable
    or frozen), or None."""
    trainable = _encoder_trainable(entry)
    for path, plan in _json_files(PLANS_DIR):
        if (plan.get("train", {}).get("name") == entry.get("train_config") == entry.get("model_config")
                and bool(plan["model"].get("signal_encoder_frozen")) is not trainable):
            return {**plan, "_file": path.name}
    return None


def _measured_gpu_rate(entry: dict[str, Any]) -> dict[str, Any] | None:
    """The newest GPU throughput measurement of a pretraining run's configuration, or None."""
    trainable = _encoder_trainable(entry)
    for path, m in _json_files(GPU_MEASURED_DIR, newest_first=True):
        if (m.get("model_config") == entry.get("model_config") and m.get("train_config") == entry.get("train_config")
                and m.get("signal_encoder_trainable") is trainable and m.get("achieved_tflops")):
            return {**m, "_file": path.name}
    return None


def _gpu_memory_note(plan: dict[str, Any], kind: str) -> str:
    """What the plan's micro-batches need of one GPU of ``kind``: the largest that fits, or that none does."""
    from chorustic.training.devices import DEVICE_MEMORY_GB

    have = DEVICE_MEMORY_GB[kind]
    fits = [c for c in plan.get("memory", {}).get("candidates", []) if c["estimated_peak_gb"] <= 0.9 * have]
    if not plan.get("memory", {}).get("candidates"):
        return ""
    if not fits:
        smallest = min(c["estimated_peak_gb"] for c in plan["memory"]["candidates"])
        return f"; DOES NOT FIT one {kind} ({have:.0f} GB): the smallest micro-batch needs {smallest:.1f} GB"
    best = max(fits, key=lambda c: c["micro_batch_size"])
    return (f"; micro-batch {best['micro_batch_size']} fits one {kind}'s {have:.0f} GB "
            f"({best['estimated_peak_gb']:.1f} GB estimated)")


def _pretrain_seconds(entry: dict[str, Any], machine: Machine, gpus: int) -> tuple[float, str]:
    from chorustic.training.devices import DEVICE_PEAK_TFLOPS, gpu_kind

    plan = _pretrain_plan(entry)
    if plan is None:
        return math.nan, (f"no committed plan for model {entry.get('model_config')!r} / train "
                          f"{entry.get('train_config')!r}: run `chorustic pretrain --plan ...` for its cost")
    flops = plan["time"]["total_pflop"] * 1e15
    source = f"{plan['time']['total_pflop']:.0f} PFLOP ({plan['_file']})"
    if gpus and machine.gpus and (m := _measured_gpu_rate(entry)) is not None:
        # the measured rate on the measured GPU, scaled to the billed kind by their matmul peaks
        measured_kind = gpu_kind(m["device"]) or "h100"
        scale = DEVICE_PEAK_TFLOPS[machine.gpu] / DEVICE_PEAK_TFLOPS[measured_kind]
        rate = m["achieved_tflops"] * scale * 1e12 * gpus
        scaled = "" if scale == 1 else f" x {scale:.2f} ({machine.gpu}'s peak / {measured_kind}'s)"
        return flops / rate, (f"{source} on {gpus} {machine.gpu} at {m['achieved_tflops']:.1f} TFLOP/s{scaled}, "
                              f"measured on one {m['device']} on {m['date']} ({100 * m['mfu']:.1f} % MFU; "
                              f"{m['_file']}){_gpu_memory_note(plan, machine.gpu)}")
    if gpus and machine.gpus:
        mfu = plan["time"]["mfu"]
        rate = DEVICE_PEAK_TFLOPS[machine.gpu] * 1e12 * mfu * gpus
        return flops / rate, f"{source} on {gpus} {machine.gpu} at {mfu:.0%} MFU{_gpu_memory_note(plan, machine.gpu)}"
    cores = machine.cores
    rate = (CPU_TRAIN_GFLOPS[1] if cores == 1 else CPU_TRAIN_GFLOPS["per_core"] * cores) * 1e9
    return flops / rate, f"{source} on {cores} CPU core(s) at {rate / 1e9:.0f} GFLOP/s"


def _text_mb(dataset: str) -> float:
    """MB of the ``.ts`` text a dataset's download fetches (a subset's: its source's; variable-length series at
    their maximum length)."""
    from chorustic import resources as cr
    from chorustic.data.registry import download_source

    return cr.job_size(download_source(dataset)).n_values * TEXT_BYTES_PER_VALUE / 1e6


def _download_seconds(plan: RunPlan, dataset: str, bandwidth_mb_s: float) -> tuple[float, str]:
    from chorustic.data.download import find_local
    from chorustic.data.registry import AEON_SHIPPED, download_source

    source = download_source(dataset)
    mb = _text_mb(dataset)
    data_dir = plan.cfg["paths"]["data_dir"]
    try:
        local = find_local(dataset, data_dir) is not None or find_local(source, data_dir) is not None
    except Exception:  # noqa: BLE001 - a folder we cannot read is downloaded
        local = False
    if local or dataset in AEON_SHIPPED:
        return mb / READ_MB_S, "present: verified only"
    return mb / bandwidth_mb_s, f"{mb:.0f} MB at {bandwidth_mb_s:g} MB/s"


def _evaluate_seconds(job, machine: Machine, cores: int) -> tuple[float, int, str]:
    """(seconds, GPUs used, note) of an evaluate job on ``machine``, on ``cores`` threads (its threads, at
    most the machine's cores: Snakemake gives a job no more)."""
    cost = job.cost
    fixed = min(float(cost.time_job_s), job.estimate_s) if cost is not None else 0.0
    compute = job.estimate_s - fixed
    if job.gpus and machine.gpus:
        speedup = cost.gpu_speedup if cost is not None else None
        if speedup:
            note = f"GPU: compute / {speedup:g} (estimated speed-up)"
            if cost.time_ns_per_feature_pair and cost.gpu_speedup_feature_pairs and job.size is not None:
                note += f", attention over features / {cost.gpu_speedup_feature_pairs:g}"
            return cost.gpu_seconds(job.size, job.estimate_s), job.gpus, note
        return job.estimate_s, job.gpus, "GPU: no speed-up estimate, CPU time of one thread"
    if cost is None or cores <= 1:
        return fixed + compute / max(1, cores), 0, ""
    speedup = cost.thread_speedup(cores)
    note = ("" if cost.parallel_fraction is None
            else f"{cores} threads: {speedup:.2f}x one (parallel fraction {cost.parallel_fraction:g}, measured)")
    return fixed + compute / speedup, 0, note


def _cache_item_bytes() -> int:
    """Bytes of one preprocessed value (:func:`chorustic.data.loading.preprocessing_settings`' dtype)."""
    import numpy as np

    from chorustic.data.loading import preprocessing_settings

    return int(np.dtype(preprocessing_settings()["dtype"]).itemsize)


def disk_gb(plan: RunPlan) -> dict[str, float]:
    """About the disk a run fills (GB of 10^9 bytes): ``data`` the ``.ts`` files its downloads extract (a
    subset's source, variable-length series at their longest), ``cache`` the preprocessed arrays (every series
    at the model length and at its own, :func:`chorustic.data.loading.preprocessing_settings`' dtype),
    ``results`` a prediction file of every context (an ineligible one writes none) and a manifest of every job.
    Not counted: checkpoints, context files, logs, reports, a download's zip while it is extracted, and the kept
    work of a job that did not finish (pair memos, embeddings, chunks)."""
    from chorustic import resources as cr

    item = _cache_item_bytes()
    data = sum(_text_mb(d) * 1e6 for d in plan.datasets)
    cache = item * sum(cr.job_size(d, input_kind=kind).n_values for d in plan.datasets
                       for kind in ("resampled", "native"))
    b = RESULT_FILE_BYTES
    results = b["manifest"] * len(plan.jobs) + sum(len(j.contexts) * (b["file"] + j.size.n_test * (
        b["per_series"] + b["per_probability"] * j.size.n_classes)) for j in plan.jobs if j.size is not None)
    return {"data": data / 1e9, "cache": cache / 1e9, "results": results / 1e9}


def _report_seconds(plan: RunPlan, results_mb: float) -> tuple[float, str]:
    from chorustic import config as cc

    if cc.reference_results(plan.cfg) is None:
        return FIXED_S["report"], ""
    mb = 2 * results_mb
    return FIXED_S["report"] + mb / RESULT_READ_MB_S, f"parses {mb / 1e3:.1f} GB of prediction files (reference results)"


def bill_jobs(plan: RunPlan, machine: Machine, *, bandwidth_mb_s: float = 10.0) -> list[BillJob]:
    """Every job of the plan's workflow with its duration on ``machine`` and its dependencies."""
    from chorustic import resources as cr

    jobs: list[BillJob] = []
    for d in plan.datasets:
        res = plan.dataset_resources
        secs, note = _download_seconds(plan, d, bandwidth_mb_s)
        jobs.append(BillJob("download", f"download/{d}", "download", 1, 0, res["download"][d]["mem_mb"],
                            JOB_START_S + secs, note=note))
        _, pre = cr.preprocess_estimate(d)
        jobs.append(BillJob("preprocess", f"preprocess/{d}", "preprocess", 1, 0, res["preprocess"][d]["mem_mb"],
                            JOB_START_S + pre, deps=[f"download/{d}"]))
        jobs.append(BillJob("contexts", f"contexts/{d}", "contexts", 1, 0, res["contexts"][d]["mem_mb"],
                            JOB_START_S + FIXED_S["contexts"], deps=[f"preprocess/{d}"]))
        # the audit reads the dataset's resampled arrays back from the cache and hashes every series
        audit_mb = cr.job_size(d, input_kind="resampled").n_values * _cache_item_bytes() / 1e6
        jobs.append(BillJob("audit", f"audit/{d}", "audit", 1, 0, res["preprocess"][d]["mem_mb"],
                            JOB_START_S + FIXED_S["audit"] + audit_mb / READ_MB_S, deps=[f"preprocess/{d}"]))
    for run in plan.pretrain_runs():
        entry = (plan.cfg.get("pretrain") or {}).get(run, {})
        gpus = cr.pretrain_gpus(plan.cfg, run)
        use_gpus = min(gpus, machine.gpus) if machine.gpus else 0
        secs, note = _pretrain_seconds(entry, machine, use_gpus)
        jobs.append(BillJob("pretrain", f"pretrain/{run}", "pretrain", machine.cores if not use_gpus else 1,
                            use_gpus, plan.pretrain_resources[run]["mem_mb"], JOB_START_S + secs, note=note))
    for j in plan.jobs:
        cores = min(j.threads, machine.cores)
        secs, gpus, note = _evaluate_seconds(j, machine, cores)
        deps = [f"contexts/{j.dataset}"] + ([f"pretrain/{j.pretrain_run}"] if j.pretrain_run else [])
        jobs.append(BillJob("evaluate", f"evaluate/{j.method}/{j.dataset}", j.method, cores if not gpus else 1,
                            gpus, int(j.resources["mem_mb"]), JOB_START_S + secs, deps=deps, note=note))
    evaluations = [j.name for j in jobs if j.rule in ("evaluate", "audit")]
    results_mb = disk_gb(plan)["results"] * 1e3  # the prediction files the last two rules read
    # the aggregate step verifies every prediction file's checksum and parses it for its measures (metrics.csv)
    jobs.append(BillJob("aggregate", "aggregate", "aggregate", 1, 0, cr.rule_resources(plan.cfg, "aggregate")["mem_mb"],
                        JOB_START_S + FIXED_S["aggregate"] + results_mb / READ_MB_S + results_mb / RESULT_READ_MB_S,
                        deps=evaluations))
    secs, note = _report_seconds(plan, results_mb)
    jobs.append(BillJob("report", "report", "report", 1, 0, cr.rule_resources(plan.cfg, "report")["mem_mb"],
                        JOB_START_S + secs, deps=["aggregate"], note=note))
    return jobs


# --------------------------------------------------------------------------------------------------
# the schedule


def _remaining(jobs: list[BillJob]) -> dict[str, float]:
    """Each job's longest path to the end (its own time included)."""
    children: dict[str, list[str]] = {j.name: [] for j in jobs}
    for j in jobs:
        for d in j.deps:
            children[d].append(j.name)
    by_name = {j.name: j for j in jobs}
    memo: dict[str, float] = {}
    for j in reversed(_topological(jobs)):
        memo[j.name] = by_name[j.name].seconds + max((memo[c] for c in children[j.name]), default=0.0)
    return memo


def _topological(jobs: list[BillJob]) -> list[BillJob]:
    by_name = {j.name: j for j in jobs}
    indeg = {j.name: len(j.deps) for j in jobs}
    children: dict[str, list[str]] = {j.name: [] for j in jobs}
    for j in jobs:
        for d in j.deps:
            children[d].append(j.name)
    ready = [n for n, k in indeg.items() if k == 0]
    out = []
    while ready:
        n = ready.pop()
        out.append(by_name[n])
        for c in children[n]:
            indeg[c] -= 1
            if indeg[c] == 0:
                ready.append(c)
    return out


def critical_path(jobs: list[BillJob]) -> tuple[float, list[BillJob]]:
    """The longest chain of dependent jobs: (its seconds, its jobs in order)."""
    rem = _remaining(jobs)
    by_name = {j.name: j for j in jobs}
    children: dict[str, list[str]] = {j.name: [] for j in jobs}
    for j in jobs:
        for d in j.deps:
            children[d].append(j.name)
    start = max((j for j in jobs if not j.deps), key=lambda j: rem[j.name])
    chain = [start]
    while children[chain[-1].name]:
        chain.append(by_name[max(children[chain[-1].name], key=lambda c: rem[c])])
    return rem[start.name], chain


def schedule(jobs: list[BillJob], machine: Machine, nodes: int = 1, *, downloads: int = 4) -> float:
    """Wall time (s) of the job graph on ``nodes`` machines like ``machine``: a list schedule, longest
    remaining path first among the jobs that fit; a job runs on one node, within its free cores, GPUs and
    memory, and at most ``downloads`` downloads run at a time (the profiles' ``downloads`` resource)."""
    rem = _remaining(jobs)
    cap_mem = machine.mem_mb or math.inf
    need: dict[str, tuple[int, int, float]] = {}
    for j in jobs:  # a job wanting more GPUs than a node has runs on its CPU
        need[j.name] = (max(1, min(j.cores, machine.cores)), j.gpus if j.gpus <= machine.gpus else 0,
                        min(j.mem_mb, cap_mem))
    by_name = {j.name: j for j in jobs}
    children: dict[str, list[str]] = {j.name: [] for j in jobs}
    waiting = {j.name: len(j.deps) for j in jobs}
    for j in jobs:
        for d in j.deps:
            children[d].append(j.name)
    free = [[machine.cores, machine.gpus, cap_mem] for _ in range(nodes)]
    slots = {"download": downloads}
    # ready jobs by what they occupy (few kinds: cores, GPUs, download or not), each a heap by priority
    classes: dict[tuple[int, int, bool], list[tuple[float, str]]] = {}

    def push(name: str) -> None:
        c, g, _ = need[name]
        heapq.heappush(classes.setdefault((c, g, by_name[name].rule == "download"), []), (-rem[name], name))

    for n, k in waiting.items():
        if k == 0:
            push(n)
    running: list[tuple[float, str, int]] = []
    now = 0.0
    while True:
        while True:  # start the most urgent job that fits anywhere, until none does
            best = None
            for (c, g, dl), heap in classes.items():
                if not heap or (dl and slots["download"] == 0):
                    continue
                if best is not None and heap[0][0] >= best[0]:
                    continue
                name = heap[0][1]
                node = next((i for i, f in enumerate(free)
                             if c <= f[0] and g <= f[1] and need[name][2] <= f[2]), None)
                if node is not None:
                    best = (heap[0][0], (c, g, dl), node)
            if best is None:
                break
            _, key, node = best
            _, name = heapq.heappop(classes[key])
            c, g, mem = need[name]
            free[node][0] -= c
            free[node][1] -= g
            free[node][2] -= mem
            slots["download"] -= key[2]
            heapq.heappush(running, (now + by_name[name].seconds, name, node))
        if not running:
            break
        now, name, node = heapq.heappop(running)
        c, g, mem = need[name]
        free[node][0] += c
        free[node][1] += g
        free[node][2] += mem
        slots["download"] += by_name[name].rule == "download"
        for child in children[name]:
            waiting[child] -= 1
            if waiting[child] == 0:
                push(child)
    return now


# --------------------------------------------------------------------------------------------------
# the bill


def _unmeasured_scaling(plan: RunPlan, jobs: list[BillJob]) -> list[str]:
    """The method runs with CPU jobs on more than one thread whose cost model has no measured
    ``parallel_fraction``."""
    multi = {j.group for j in jobs if j.rule == "evaluate" and j.cores > 1 and not j.gpus}
    return sorted({j.method for j in plan.jobs
                   if j.method in multi and j.cost is not None and j.cost.parallel_fraction is None})


def _over_ceilings(plan: RunPlan, jobs: list[BillJob]) -> str | None:
    """The evaluate jobs whose model needs more than their method's ceilings (``resources``: the plugin's, or the
    run's own): more memory than ``mem_mb`` (the job is stopped at it anywhere), or longer on the billed machine
    than ``runtime`` (a cluster's scheduler stops it there; a local run has no time limit)."""
    from chorustic import resources as cr

    seconds = {j.name: j.seconds for j in jobs}
    memory, time = [], []
    for j in plan.jobs:
        if j.cost is None:
            continue
        want_mb, _ = cr.job_request(j.estimate_mb, j.estimate_s)
        if want_mb > j.resources["mem_mb"]:
            memory.append((want_mb / j.resources["mem_mb"], f"{j.method}/{j.dataset} {want_mb / 1024:,.0f} GB "
                                                            f"against {j.resources['mem_mb'] / 1024:,.0f}"))
        minutes = seconds.get(f"evaluate/{j.method}/{j.dataset}", 0.0) / 60
        if minutes > j.resources["runtime"]:
            time.append((minutes / j.resources["runtime"], f"{j.method}/{j.dataset} {minutes / 60:,.1f} h "
                                                          f"against {j.resources['runtime'] / 60:,.1f}"))
    if not memory and not time:
        return None
    parts = []
    for what, rows in (("more memory than their mem_mb (stopped at it, here as on a cluster)", memory),
                       ("longer than their runtime (a cluster stops them there)", time)):
        if rows:
            worst = ", ".join(text for _, text in sorted(rows, reverse=True)[:3])
            parts.append(f"{len(rows)} need {what}, e.g. {worst}")
    return (f"evaluate jobs beyond their method's ceilings (methods.<run>.resources): {'; '.join(parts)}; raise "
            "the ceilings of those runs, or leave them out, before relying on this bill")


def make_bill(plan: RunPlan, machine: Machine | None = None, *, cluster_nodes: int = 0,
              node: Machine | None = None, bandwidth_mb_s: float = 10.0) -> dict[str, Any]:
    """The bill of ``plan`` on ``machine`` (default: this one) and on ``cluster_nodes`` nodes like ``node``."""
    machine = machine or this_machine()
    jobs = bill_jobs(plan, machine, bandwidth_mb_s=bandwidth_mb_s)
    per_rule: dict[str, dict[str, float]] = {}
    per_method: dict[str, dict[str, float]] = {}
    for j in jobs:
        for table, key in ((per_rule, j.rule), (per_method, j.group if j.rule == "evaluate" else None)):
            if key is None:
                continue
            row = table.setdefault(key, {"jobs": 0, "cpu_hours": 0.0, "gpu_hours": 0.0})
            row["jobs"] += 1
            row["cpu_hours"] += j.cpu_hours
            row["gpu_hours"] += j.gpu_hours
    largest = max(jobs, key=lambda j: j.mem_mb)
    cp_seconds, chain = critical_path(jobs)
    bill: dict[str, Any] = {
        "profile": plan.cfg.get("profile"),
        "datasets": len(plan.datasets),
        "method_runs": len(plan.methods),
        "jobs": len(jobs),
        "per_rule": per_rule,
        "per_method": per_method,
        "cpu_hours": sum(j.cpu_hours for j in jobs),
        "gpu_hours": sum(j.gpu_hours for j in jobs),
        "largest_job": {"name": largest.name, "mem_mb": largest.mem_mb},
        "disk_gb": disk_gb(plan),
        "machine": dataclasses.asdict(machine) | {"description": machine.describe()},
        "wall_hours": schedule(jobs, machine) / 3600,
        "critical_path": {"hours": cp_seconds / 3600,
                          "jobs": [{"name": j.name, "hours": j.seconds / 3600, "note": j.note} for j in chain]},
        "notes": sorted({f"{j.name}: {j.note}" for j in jobs if j.rule == "pretrain" and j.note}),
        "warnings": [],
    }
    unmeasured = _unmeasured_scaling(plan, jobs)
    if unmeasured:
        bill["notes"].append(f"thread scaling not measured for {', '.join(unmeasured)}: every thread taken as fully "
                             "used (their wall time is a lower bound; benchmarks/thread_scaling.py measures it)")
    from chorustic.methods.cost import CostModel
    from chorustic.resources import UNCOSTED_ESTIMATE

    n_jobs = Counter(j.method for j in plan.jobs)
    reported = [m for m in plan.methods if plan.metadata.get(m, {}).get("reported")]
    if reported:
        bill["reported"] = reported
        bill["notes"].append(f"reported, not reproduced: {', '.join(reported)} ({sum(n_jobs[m] for m in reported)} "
                             f"evaluate jobs) compute nothing: each job copies the published accuracy of its dataset "
                             f"(billed at its start, {JOB_START_S:g} s)")
    for run, reason in sorted(plan.broken_runs.items()):  # no cost model to bill them by: say so, never drop them
        bill["warnings"].append(f"{run}: {reason}; its {n_jobs[run]} evaluate job(s) are counted at a placeholder "
                                f"{UNCOSTED_ESTIMATE[1]:g} s each, not by a cost model, so the totals above miss what they "
                                "cost (`chorustic methods` shows why the plugin fails)")
    uncosted = {j.method: j.plugin for j in plan.jobs if j.cost == CostModel() and j.method not in plan.broken_runs}
    for run, plugin in sorted(uncosted.items()):  # the contract's default model measures nothing: not the plugin's
        bill["warnings"].append(f"{run}: plugin {plugin!r} has no cost model of its own (no `cost = CostModel(...)` "
                                f"in its class): its {n_jobs[run]} evaluate job(s) are billed at the default CostModel()'s "
                                "rates, which were measured for no method; measure one (docs/adding-a-method.md, "
                                "benchmarks/job_costs.py) for a bill of this method")
    ceilings = _over_ceilings(plan, jobs)
    if ceilings:
        bill["warnings"].append(ceilings)
    if machine.mem_mb and largest.mem_mb > machine.mem_mb:
        bill["warnings"].append(f"{largest.name} asks for {largest.mem_mb} MB, more than this machine's "
                                f"{machine.mem_mb} MB")
    if cluster_nodes:
        node = node or machine
        cluster_jobs = bill_jobs(plan, node, bandwidth_mb_s=bandwidth_mb_s)
        bill["cluster"] = {"nodes": cluster_nodes, "node": dataclasses.asdict(node) | {"description": node.describe()},
                           "wall_hours": schedule(cluster_jobs, node, cluster_nodes) / 3600,
                           "critical_path_hours": critical_path(cluster_jobs)[0] / 3600}
    return bill


def _hours(h: float) -> str:
    if math.isnan(h):
        return "?"
    if h >= 48:
        return f"{h / 24:,.1f} days"
    if h >= 1:
        return f"{h:,.1f} h"
    return f"{h * 60:,.0f} min"


def _disk_line(gb: dict[str, float]) -> str:
    return (f"disk: about {gb['data'] + gb['cache'] + gb['results']:,.1f} GB of 10^9 bytes ({gb['data']:,.1f} of .ts "
            f"files in paths.data_dir, {gb['cache']:,.1f} of preprocessed arrays in paths.cache_dir, "
            f"{gb['results']:,.1f} of prediction files and manifests in paths.results_dir)")


def format_bill(bill: dict[str, Any]) -> str:
    """The bill as the text ``chorustic plan-run`` prints."""
    out = [f"The bill of profile {bill['profile']!r}: {bill['datasets']} datasets, {bill['method_runs']} method "
           f"runs, {bill['jobs']} jobs.", "", f"{'rule':<12}{'jobs':>7}{'CPU-hours':>14}{'GPU-hours':>12}"]
    for rule, row in bill["per_rule"].items():
        out.append(f"{rule:<12}{row['jobs']:>7}{row['cpu_hours']:>14,.1f}{row['gpu_hours']:>12,.1f}")
    out += ["", f"{'method run (evaluate)':<34}{'jobs':>6}{'CPU-hours':>14}{'GPU-hours':>12}"]
    for m, row in sorted(bill["per_method"].items(), key=lambda kv: -(kv[1]["cpu_hours"] + kv[1]["gpu_hours"])):
        name = f"{m} (reported)" if m in bill.get("reported", ()) else m
        out.append(f"{name:<34}{row['jobs']:>6}{row['cpu_hours']:>14,.1f}{row['gpu_hours']:>12,.1f}")
    out += ["", f"total: {bill['cpu_hours']:,.0f} CPU-hours, {bill['gpu_hours']:,.1f} GPU-hours; largest job "
                f"{bill['largest_job']['name']} ({bill['largest_job']['mem_mb'] / 1024:.1f} GB)",
            _disk_line(bill["disk_gb"]),
            f"on this machine ({bill['machine']['description']}): about {_hours(bill['wall_hours'])}"]
    if "cluster" in bill:
        c = bill["cluster"]
        out.append(f"on {c['nodes']} cluster node(s) ({c['node']['description']}): about {_hours(c['wall_hours'])}")
    cp = bill["critical_path"]
    out += ["", f"critical path ({_hours(cp['hours'])}, no run can be shorter on this machine):"]
    out += [f"  {j['name']:<48}{_hours(j['hours']):>14}  {j['note']}".rstrip() for j in cp["jobs"]]
    for n in bill["notes"]:
        out.append(f"note: {n}")
    for w in bill["warnings"]:
        out.append(f"warning: {w}")
    return "\n".join(out)


def write_json(bill: dict[str, Any], path: str | os.PathLike) -> None:
    from chorustic.io import atomic_write_json

    atomic_write_json(Path(path), bill)
