"""What each job of the workflow asks of the machine or the cluster: one home for job resources.

The rules in ``workflow/rules/*.smk`` take their ``resources`` from :func:`rule_resources` (every rule
but evaluate and pretrain), :func:`evaluate_resources` and :func:`pretrain_resources`. The Snakemake
resources they set:

``mem_mb``, ``runtime`` (minutes)
    On every rule, so a cluster job is never submitted without a memory request or a time limit.
    An ``evaluate`` job's numbers follow its dataset: the method's :class:`CostModel` turns the
    dataset's size (series, channels and length from the registry, and the number of protocol
    contexts) into peak memory and time, with a safety margin; the plugin's ``resources`` are the
    upper bounds (they are what the largest datasets need), so a small dataset asks for little and
    jobs pack densely. A method run's ``resources`` in the config replace the estimate.
``local_gpus``
    GPUs the job occupies on the machine Snakemake runs on. The local profiles cap the sum
    (``workflow/profiles/default``: one GPU job at a time). A plain counter that no executor
    interprets, unlike ``gpu``.
``gpu`` (+ ``gpu_model``) or ``gres``, ``tasks_per_gpu``
    The SLURM executor plugin's GPU request (``--gpus=[model:]N`` or ``--gres=...:N``), set only when
    the site says it has GPUs (``cluster.gpus``): a cluster without GPUs never receives a GPU request.
    ``tasks_per_gpu: 0`` makes it one task that sees all of its GPUs (what PyTorch and torchrun expect).
``slurm_partition``, ``slurm_account``, ``constraint``
    From the site settings (``cluster`` in the config) or a method run's ``resources``; left out when
    unset, so that ``--default-resources`` and the plugin's defaults still apply.

Site limits ``cluster.max_mem_mb`` / ``cluster.max_runtime`` clamp every request.

Inside an evaluation job the supervisor enforces limits on the method's worker
(:func:`evaluation_limits`): memory, the job's ``mem_mb`` less what the job's other processes need (a
value below :data:`MIN_JOB_MEM_MB` is refused when the configuration is read); time, only where a limit
is real: under a cluster scheduler (:func:`cluster_scheduler`) the worker stops
:data:`SCHEDULER_MARGIN_MIN` before the scheduler would end the job, so the context is recorded as
failed; a local run is stopped only at a limit the user set (``methods.<run>.resources.runtime``), never
because the machine is slower than the cost model assumed. Every message names the setting to raise.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import re
import subprocess
from typing import Any, Mapping

# a plugin declares its cost with CostModel and JobSize; what a job needs beside the method is there too
from chorustic.methods.cost import (
    JOB_OVERHEAD_MB,
    MIN_JOB_MEM_MB,
    MIN_WORKER_MB,
    CostModel,
    JobSize,
    job_memory_problem,
)

__all__ = [
    "REPORTED_ESTIMATE",
    "UNCOSTED_ESTIMATE",
    "CostModel",
    "JobSize",
    "JOB_OVERHEAD_MB",
    "MIN_WORKER_MB",
    "MIN_JOB_MEM_MB",
    "SCHEDULER_ENV",
    "STARTUP_MIN",
    "MIN_RUNTIME",
    "SCHEDULER_MARGIN_MIN",
    "job_size",
    "rule_resources",
    "evaluate_estimate",
    "preprocess_estimate",
    "job_request",
    "evaluate_resources",
    "pretrain_resources",
    "pretrain_gpus",
    "worker_limits",
    "WorkerLimits",
    "evaluation_limits",
    "cluster_scheduler",
    "scheduler_minutes_left",
    "job_memory_problem",
    "site_resources",
]

#: Start-up of a job before its command runs (Snakemake parses the workflow, imports), in minutes.
STARTUP_MIN = 2
#: No job asks for less time than this (scheduling noise, slow shared file systems).
MIN_RUNTIME = 10
#: The supervisor stops a worker this long before the job's time limit, so that it records the
#: timeout itself instead of the scheduler killing the whole job first.
SCHEDULER_MARGIN_MIN = 1
#: Estimates are multiplied by these before rounding: measured peaks vary with the machine, the
#: library versions and the data.
MEM_SAFETY = 1.5
TIME_SAFETY = 3.0

# --------------------------------------------------------------------------------------------------
# job sizes


def _specs(cfg: Mapping[str, Any], protocols: list[str] | None):
    from chorustic.protocols.contexts import context_specs

    specs = context_specs(cfg["protocols"])
    return [s for s in specs if s.protocol in protocols] if protocols else specs


def job_size(dataset: str, *, input_kind: str = "native", contexts: int = 1,
             cfg: Mapping[str, Any] | None = None, protocols: list[str] | None = None) -> JobSize:
    """The :class:`JobSize` of ``dataset`` (registry metadata) for a method with ``input_kind``: with
    ``cfg``, its contexts are the profile's (restricted to ``protocols``), each at its expected training
    size; else ``contexts`` contexts on the whole training split."""
    from chorustic.data.preprocessing import MODEL_LENGTH
    from chorustic.data.registry import get_info
    from chorustic.protocols.contexts import expected_train_size

    info = get_info(dataset)
    length = MODEL_LENGTH if input_kind == "resampled" else info.length
    train: tuple[int, ...] = ()
    if cfg is not None:
        train = tuple(expected_train_size(s, info.n_train, info.n_classes) for s in _specs(cfg, protocols))
        contexts = max(1, len(train))
    return JobSize(info.n_train, info.n_test, info.n_channels, length, contexts, train, info.n_classes)


# --------------------------------------------------------------------------------------------------
# rounding, caps and site settings


def _round_mem(mb: float) -> int:
    return int(math.ceil(mb / 100.0) * 100)


def _round_min(minutes: float) -> int:
    return int(max(MIN_RUNTIME, math.ceil(minutes)))


def site_resources(cfg: Mapping[str, Any], *, mem_mb: int, runtime: int, gpus: int = 0,
                   partition: str | None = None, constraint: str | None = None) -> dict[str, Any]:
    """Snakemake resources of one job: memory, time, GPUs and the site's SLURM settings.

    ``gpus``: GPUs the job wants. ``partition`` / ``constraint``: a method run's or pretraining
    run's own settings, which win over the site's.
    """
    site = cfg.get("cluster") or {}
    if site.get("max_mem_mb"):
        mem_mb = min(mem_mb, int(site["max_mem_mb"]))
    if site.get("max_runtime"):
        runtime = min(runtime, int(site["max_runtime"]))
    res: dict[str, Any] = {"mem_mb": int(mem_mb), "runtime": int(runtime), "local_gpus": int(gpus)}
    on_gpu = gpus > 0 and bool(site.get("gpus"))
    if on_gpu:
        if site.get("gpu_gres"):
            res["gres"] = f"{site['gpu_gres']}:{int(gpus)}"
        else:
            res["gpu"] = int(gpus)
            if site.get("gpu_model"):
                res["gpu_model"] = site["gpu_model"]
        res["tasks_per_gpu"] = 0
    partition = partition or ((site.get("gpu_partition") or site.get("partition")) if on_gpu else site.get("partition"))
    constraint = constraint or (site.get("gpu_constraint") if on_gpu else site.get("constraint"))
    if partition:
        res["slurm_partition"] = str(partition)
    if site.get("account"):
        res["slurm_account"] = str(site["account"])
    if constraint:
        res["constraint"] = str(constraint)
    return res


# --------------------------------------------------------------------------------------------------
# the rules

#: Per-value costs of the data rules (bytes and nanoseconds per native value of both splits), with
#: headroom over `chorustic preprocess` on stand-ins (2026-11-26, 1 thread): DuckDuckGeese (36 M values)
#: 15.6 CPU-s / 1.16 GB, MotorImagery at 30 % (21.7 M) 8.3 s / 0.65 GB, StarLightCurves at 30 % (2.8 M)
#: 2.5 s / 0.36 GB, ElectricDevices at 30 % (0.5 M) 2.0 s / 0.31 GB.
_PREPROCESS = CostModel(loads_torch=False, mem_base_mb=300.0, mem_bytes_per_value=20.0, time_job_s=2.0, time_ns_per_input_value=0.0,
                        time_base_s=0.0, time_ns_per_value=500.0)
#: Fixed resources of the rules whose cost does not grow with a dataset (or grows negligibly).
_FIXED = {
    "contexts": {"mem_mb": 1000, "runtime": MIN_RUNTIME},
    "aggregate": {"mem_mb": 2000, "runtime": 30},
    "report": {"mem_mb": 4000, "runtime": 60},
}


def rule_resources(cfg: Mapping[str, Any], rule: str, dataset: str | None = None) -> dict[str, Any]:
    """Resources of a job of ``rule`` (download, preprocess, contexts, aggregate, report)."""
    if rule == "download":
        from chorustic.data.registry import download_source

        # streamed to disk, so memory stays flat; time follows the archive's size (a slow mirror)
        values = job_size(download_source(dataset)).n_values
        return site_resources(cfg, mem_mb=1000, runtime=_round_min(15 + values / 5e6))
    if rule == "preprocess":
        mem, seconds = preprocess_estimate(dataset)
        return site_resources(cfg, mem_mb=_round_mem(MEM_SAFETY * mem),
                              runtime=_round_min(STARTUP_MIN + TIME_SAFETY * seconds / 60))
    if rule in _FIXED:
        return site_resources(cfg, **_FIXED[rule])
    raise ValueError(f"no resources defined for rule {rule!r}")


@functools.lru_cache(maxsize=None)
def _plugin(plugin: str):
    from chorustic.methods import discover

    return discover().methods.get(plugin)


def preprocess_estimate(dataset: str) -> tuple[float, float]:
    """``(peak MB, seconds)`` of the preprocess job of ``dataset``, without safety margins."""
    mem, seconds = _PREPROCESS.estimate(job_size(dataset, input_kind="native"))
    # the float32 resampled arrays and their float64 chunks
    return mem + 8 * job_size(dataset, input_kind="resampled").n_values / 2**20, seconds


def job_request(mem_mb: float, seconds: float) -> tuple[int, int]:
    """What a job with a cost-model estimate of ``mem_mb`` and ``seconds`` asks for: ``(mem_mb, runtime in
    minutes)`` with the safety margins, the job's other processes and its start-up (before the plugin's caps)."""
    return _round_mem(JOB_OVERHEAD_MB + MEM_SAFETY * mem_mb), _round_min(STARTUP_MIN + TIME_SAFETY * seconds / 60)


#: The estimate (peak MB, seconds) of an evaluate job that has no cost model: one whose plugin fails to import
#: (it fails with the reason when it runs).
UNCOSTED_ESTIMATE = (400.0, 10.0)
#: The estimate (peak MB, seconds besides the job's start, ``chorustic.bill.JOB_START_S``) of a reported
#: method's evaluate job: it reads published numbers. Measured: 2.9 s wall in all and 207 MB peak for
#: ``paper_nutime_rf`` on GunPoint (2 CPU cores, 2026-12-07).
REPORTED_ESTIMATE = (210.0, 0.0)


def evaluate_estimate(cfg: Mapping[str, Any], entry: Mapping[str, Any], dataset: str, plugin_obj: Any = None, *,
                      params: Mapping[str, Any] | None = None) -> tuple[JobSize | None, float, float]:
    """``(size, peak MB, seconds on one CPU thread)`` of the evaluate job of a method run (``entry``: its resolved
    entry, :func:`chorustic.config.resolved_entry`, as the run plan holds it) on ``dataset``: its method's cost
    model (:meth:`Method.job_cost`) at the dataset's shape, without the safety margins of the request. A
    reported method (it computes nothing) or a plugin that failed to import: no size, and what such a job
    needs. ``params``: the run's resolved parameters (default: the entry's)."""
    from chorustic.methods.base import Method, ReportedMethod

    m = plugin_obj if plugin_obj is not None else _plugin(entry["plugin"])
    if isinstance(m, ReportedMethod):
        return None, *REPORTED_ESTIMATE
    if not isinstance(m, Method):
        return None, *UNCOSTED_ESTIMATE
    size = job_size(dataset, input_kind=m.info.input_kind, cfg=cfg, protocols=entry["protocols"])
    mem, seconds = m.job_cost(size, **(entry["params"] if params is None else params))
    return size, float(mem), float(seconds)


def evaluate_resources(cfg: Mapping[str, Any], entry: Mapping[str, Any], dataset: str, plugin_obj: Any = None, *,
                       estimate: tuple[JobSize | None, float, float] | None = None) -> dict[str, Any]:
    """Threads and resources of the evaluate job of a method run (``entry``: its resolved entry) on ``dataset``.

    ``threads``, ``gpu`` and the caps ``mem_mb`` / ``runtime`` come from the plugin's ``resources``;
    memory and time from its cost model (:func:`evaluate_estimate`, or ``estimate`` when the caller
    has it) unless the run's config sets them.
    """
    m = plugin_obj if plugin_obj is not None else _plugin(entry["plugin"])
    caps = {"threads": 1, "mem_mb": 4000, "runtime": 60, "gpu": 0}
    caps.update(getattr(m, "resources", None) or {})
    own = entry["resources"]
    threads = int(own.get("threads", caps["threads"]))
    gpus = int(own.get("gpu", caps["gpu"]))
    size, mem, seconds = estimate if estimate is not None else evaluate_estimate(cfg, entry, dataset, m)
    if size is not None:
        mem_mb, runtime = job_request(mem, seconds)
        mem_mb, runtime = min(int(caps["mem_mb"]), mem_mb), min(int(caps["runtime"]), runtime)
    else:  # a reported method: it copies published numbers, nothing to compute
        mem_mb, runtime = JOB_OVERHEAD_MB + 400, MIN_RUNTIME
    mem_mb = int(own.get("mem_mb", mem_mb))
    runtime = int(own.get("runtime", runtime))
    res = site_resources(cfg, mem_mb=mem_mb, runtime=runtime, gpus=gpus,
                         partition=own.get("partition"), constraint=own.get("constraint"))
    return {"threads": threads, **res}


def pretrain_gpus(cfg: Mapping[str, Any], run: str) -> int:
    """GPUs of pretraining run ``run`` (``pretrain.<run>.gpus``, default 1)."""
    return int((cfg.get("pretrain") or {}).get(run, {}).get("gpus", 1))


def pretrain_resources(cfg: Mapping[str, Any], run: str) -> dict[str, Any]:
    """Resources of pretraining run ``run``: N GPUs (``pretrain.<run>.gpus``), host memory per GPU, a day."""
    entry = (cfg.get("pretrain") or {}).get(run, {})
    own = entry.get("resources") or {}
    gpus = pretrain_gpus(cfg, run)
    mem_mb = int(own.get("mem_mb", 16000 + 16000 * max(gpus, 1)))
    runtime = int(own.get("runtime", 24 * 60))
    return site_resources(cfg, mem_mb=mem_mb, runtime=runtime, gpus=gpus,
                          partition=own.get("partition"), constraint=own.get("constraint"))


def worker_limits(mem_mb: float, runtime_min: float) -> tuple[float, float]:
    """The evaluation worker's own limits inside a job that has ``mem_mb`` and ``runtime_min`` left: what
    the job's other processes use is left out, and the worker stops before the scheduler's time limit, so
    a limit is recorded as a failure of that context instead of killing the job (the time only under a
    cluster scheduler: :func:`evaluation_limits`)."""
    return (max(float(MIN_WORKER_MB), mem_mb - JOB_OVERHEAD_MB), max(0.05, runtime_min - SCHEDULER_MARGIN_MIN))


# --------------------------------------------------------------------------------------------------
# the limits of an evaluation job's worker

#: Environment variables set inside a cluster scheduler's job, and the scheduler they name (the one
#: place a scheduler is recognised; workflow/profiles/slurm submits every job through SLURM).
SCHEDULER_ENV = {"SLURM_JOB_ID": "SLURM"}


def cluster_scheduler(env: Mapping[str, str] | None = None) -> str | None:
    """The cluster scheduler this process runs under (``"SLURM"``), or None on a local run."""
    env = os.environ if env is None else env
    for var, name in SCHEDULER_ENV.items():
        if env.get(var):
            return name
    return None


def _slurm_minutes(text: str) -> float | None:
    """SLURM's ``[days-]hours:minutes:seconds`` (or ``minutes:seconds``) in minutes; None for anything else."""
    m = re.fullmatch(r"(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+)", text.strip())
    if m is None:
        return None
    days, hours, minutes, seconds = (int(g) if g else 0 for g in m.groups())
    return days * 1440 + hours * 60 + minutes + seconds / 60


def scheduler_minutes_left(env: Mapping[str, str] | None = None) -> float | None:
    """Minutes until the cluster scheduler ends this job (SLURM: ``squeue -h -j $SLURM_JOB_ID -o %L``), or
    None when not under a scheduler, when the job has no limit, or when the scheduler does not answer."""
    env = os.environ if env is None else env
    if cluster_scheduler(env) != "SLURM":
        return None
    try:
        out = subprocess.run(["squeue", "-h", "-j", env["SLURM_JOB_ID"], "-o", "%L"], capture_output=True,
                             text=True, timeout=30, env=dict(env))
    except (OSError, subprocess.SubprocessError):
        return None
    return _slurm_minutes(out.stdout) if out.returncode == 0 else None


@dataclasses.dataclass(frozen=True)
class WorkerLimits:
    """What the supervisor enforces on an evaluation job's worker, and how it says a limit was reached."""

    mem_mb: float | None = None
    """Resident memory of the worker's process tree (MB); None: not limited."""
    minutes: float | None = None
    """The worker is stopped after this long (from the supervisor's start); None: never for time."""
    mem_reason: str = "exceeded the memory limit of {limit:.0f} MB (resident {rss:.0f} MB)"
    """The failure recorded when memory is exceeded (``{limit}``, ``{rss}``: MB)."""
    time_reason: str = "exceeded the time limit of {limit:g} min"
    """The failure recorded when the time is up (``{limit}``, ``{elapsed}``: minutes)."""


def evaluation_limits(cfg: Mapping[str, Any], run: str, run_resources: Mapping[str, Any], *,
                      job_mem_mb: float | None = None, time_limit_min: float | None = None, cluster_runtime_min: float | None = None,
                      env: Mapping[str, str] | None = None) -> WorkerLimits:
    """The worker limits of an evaluation job of method run ``run``, whose own settings are ``run_resources``
    (``methods.<run>.resources``: :attr:`chorustic.run_plan.PlannedJob.run_resources`).

    ``job_mem_mb``: the job's memory (its ``mem_mb``); the worker gets it less :data:`JOB_OVERHEAD_MB`, and
    a failure reports the job's number and the setting to raise. ``time_limit_min``: a time limit the user
    set by hand (``chorustic evaluate --runtime``; default ``methods.<run>.resources.runtime``), enforced as
    it is. ``cluster_runtime_min``: the time the job asked its scheduler for (the workflow passes the job's
    ``runtime``); under a cluster scheduler the worker stops :data:`SCHEDULER_MARGIN_MIN` before the
    scheduler ends the job (the time left as the scheduler reports it, else this from now). On a local run
    the cost model's ``runtime`` is never a limit."""
    site = cfg.get("cluster") or {}
    mem_setting, time_setting = f"methods.{run}.resources.mem_mb", f"methods.{run}.resources.runtime"
    limits: dict[str, Any] = {}
    if job_mem_mb is not None:
        capped = " (capped by cluster.max_mem_mb)" if site.get("max_mem_mb") and job_mem_mb >= site["max_mem_mb"] \
            else ""
        worker = worker_limits(job_mem_mb, math.inf)[0]
        limits["mem_mb"] = worker
        limits["mem_reason"] = (
            f"exceeded the job's memory limit of {job_mem_mb:.0f} MB{capped}: the method's worker reached "
            f"{{rss:.0f}} MB of the {worker:.0f} MB left after {JOB_OVERHEAD_MB} MB for the job's other "
            f"processes; raise {mem_setting}"
        )
    user, user_setting = (time_limit_min, "--runtime") if time_limit_min is not None else (
        run_resources.get("runtime"), time_setting)
    if user is not None:
        limits["minutes"] = float(user)
        limits["time_reason"] = (f"exceeded the time limit of {float(user):g} min set by {user_setting}; raise it (a "
                                 "local run has no time limit unless one is set)")
    scheduler = cluster_scheduler(env)
    if scheduler is not None:
        left = scheduler_minutes_left(env)
        total = left if left is not None else cluster_runtime_min
        if total is not None:
            stop = worker_limits(math.inf, total)[1]  # less left than the margin: stop (almost) at once
            if limits.get("minutes") is None or stop < limits["minutes"]:
                if run_resources.get("runtime") is not None:
                    source = time_setting
                else:
                    source = "estimated by the method's cost model"
                if site.get("max_runtime") and cluster_runtime_min is not None \
                        and cluster_runtime_min >= site["max_runtime"]:
                    source += ", capped by cluster.max_runtime"
                asked = f"{cluster_runtime_min:g} min, {source}" if cluster_runtime_min is not None else source
                limits["minutes"] = stop
                limits["time_reason"] = (
                    f"stopped after {{elapsed:.1f}} min, {SCHEDULER_MARGIN_MIN:g} min before {scheduler} ends the "
                    f"job at its time limit (the job's runtime: {asked}); raise {time_setting}"
                )
    return WorkerLimits(**limits)
