"""One evaluation job: one method on one dataset under every protocol context.

The job reads the shared context file, fits the method on each context, predicts the complete test
split, and writes one tsml prediction file per context plus a manifest
``results/runs/<method>/<dataset>.json`` that lists every run (ok / failed / ineligible / reported).

Guarantees
----------
* Test labels never reach a method: the estimator only receives ``X_test``.
* A method that fails on one context (error, out of memory, missing weights) is recorded as
  ``failed`` with its reason and leaves no prediction file; the other contexts still run.
* The manifest is written last and atomically; prediction files are written atomically. A job that
  starts again first deletes the prediction files of the contexts it runs that an earlier attempt
  left behind, so a finished manifest never points at files of another attempt; the files of contexts
  it does not run (another protocol selection's finished results) are left alone. A job that was
  stopped from outside (Ctrl-C, SIGTERM, a cluster's preemption) is the exception: its next start keeps
  the runs its progress file recorded (:func:`job_inputs`: the same fingerprint, context file and data,
  library versions and numerics; prediction files as recorded) and runs the others. Within a context, the predictions of the chunks an
  earlier attempt finished are kept too (:mod:`chorustic.evaluation.checkpoints`), so a long context
  continues where it stopped, and so are the distances of its pair memo (a nearest-neighbour method computes
  again only the pairs of its last minute or so before the stop) and the embeddings of its embedding memo (a
  frozen encoder's, written as its batches finish, in a fit too).
* A job with a failed run is not finished: its manifest goes to ``<dataset>.failed.json`` instead of
  ``<dataset>.json`` (aggregation lists its runs, the workflow retries the job). Every prediction file is
  recorded in the manifest with its SHA-256 (:mod:`chorustic.evaluation.integrity`), and the manifest
  records the run's fingerprint (parameters and method code).
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import functools
import gc
import json
import os
import platform
import resource
import sys
import time
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from chorustic.results_layout import failure_record_path, manifest_path, progress_path  # noqa: F401
from chorustic.errors import NoSpaceError, shorten
from chorustic.evaluation.checkpoints import (KeptMemo, PartialPredictions, context_digest, memo_path,
                                              partial_path)
from chorustic.evaluation.integrity import file_record, verify_result_file
from chorustic.evaluation.numerics import numerics_record
from chorustic.evaluation.results import result_path, stored_result_file, write_result_file
from chorustic.io import atomic_write_json, sha256_file
from chorustic.methods.base import PROBA_ADVICE, probability_rows_problem
from chorustic.methods.inputs import series_lengths, take_series
from chorustic.methods.registry import default_plugin_dir

if TYPE_CHECKING:
    from chorustic.run_plan import PlannedJob, RunPlan

__all__ = [
    "FINISHED_STATUSES",
    "MANIFEST_FORMAT",
    "RUN_FIELDS",
    "RUN_STATUSES",
    "JobFailed",
    "JobSpec",
    "clear_job_outputs",
    "failed_runs_message",
    "failure_record_path",
    "finished_manifest",
    "job_contexts",
    "manifest_path",
    "no_contexts_error",
    "run_job",
    "run_record",
    "write_finished",
]

MANIFEST_FORMAT = "chorustic-run/1"
#: Outcomes of one run (one context): the vocabulary of manifests and of ``accuracies.csv``.
RUN_STATUSES = ("ok", "failed", "ineligible", "reported")
#: Outcomes that finish a run; a job with any other outcome is retried.
FINISHED_STATUSES = ("ok", "ineligible", "reported")
#: The fields of one run in a manifest (:func:`run_record`); ``result`` is the prediction file's checksum
#: record (:func:`chorustic.evaluation.integrity.file_record`), ``extra`` what the estimator reported.
RUN_FIELDS = (
    "protocol", "family", "budget", "seed", "status", "accuracy", "n_context", "n_test", "n_classes",
    "fit_time_s", "predict_time_s", "cpu_time_s", "peak_memory_mb", "error", "result_file", "result", "extra",
)


class JobFailed(RuntimeError):
    """A job could not record an outcome for its contexts, or recorded failed runs; the message says what
    and where (the CLI prints it, the workflow writes it to the job's log)."""


@dataclasses.dataclass
class JobSpec:
    method: str
    """Run name (config key), e.g. ``chorustic_no_label_permutation``."""
    plugin: str
    """Plugin name (``MethodInfo.name``) the run instantiates."""
    dataset: str
    archive: str
    results_dir: str
    contexts_file: str | None
    data_dir: str
    cache_dir: str | None = None
    params: dict[str, Any] = dataclasses.field(default_factory=dict)
    display_name: str | None = None
    protocols: list[str] | None = None
    device: str = "cpu"
    n_jobs: int = 1
    fail_fast: bool = False
    plugin_dir: str | None = None
    offline: bool = True
    lock_file: str | None = None
    """The data lock file (None: ``<data_dir>/chorustic-data.lock.json``)."""
    allow_modified_data: bool = False
    fingerprint: str | None = None
    """The run's fingerprint (:attr:`chorustic.run_plan.PlannedJob.fingerprint`), recorded."""
    portable_numerics: bool = True
    """start the worker with the vendor-neutral numerics pins (chorustic.evaluation.numerics): same results across x86-64 machines"""

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "JobSpec":
        return cls(**d)

    @classmethod
    def from_plan(cls, plan: "RunPlan", job: "PlannedJob", *, contexts_file: str | os.PathLike | None = None,
                  n_jobs: int = 1, protocols: list[str] | None = None) -> "JobSpec":
        """The job a worker runs for ``job`` of ``plan`` (:class:`chorustic.run_plan.PlannedJob`, the one resolved
        job): its own facts plus the configuration's paths and evaluation settings. ``contexts_file``: default
        the dataset's under the results folder; ``protocols``: the ids to run (default the run's own)."""
        from chorustic import config as cc

        cfg, ev = plan.cfg, plan.cfg["evaluation"]
        results = cfg["paths"]["results_dir"]
        if protocols is None and job.run_protocols is not None:
            protocols = list(job.run_protocols)
        return cls(
            method=job.method, plugin=job.plugin, dataset=job.dataset, archive=job.archive, results_dir=results,
            contexts_file=str(contexts_file if contexts_file is not None else Path(results) / job.contexts_file),
            data_dir=cfg["paths"]["data_dir"], cache_dir=cfg["paths"]["cache_dir"], params=dict(job.params),
            display_name=job.display_name, protocols=list(protocols) if protocols is not None else None,
            device=ev.get("device", "auto"), n_jobs=int(n_jobs), fail_fast=bool(ev.get("fail_fast", False)),
            offline=bool(cfg["data"]["offline"]), lock_file=cc.lock_file(cfg),
            allow_modified_data=cc.allow_modified_data(cfg, job.dataset), fingerprint=job.fingerprint,
            portable_numerics=bool(ev.get("portable_numerics", True)),
        )


def finished_manifest(results_dir: str | os.PathLike, method: str, dataset: str) -> Path | None:
    """The manifest the job's last attempt wrote (finished or failed), or None."""
    for p in (manifest_path(results_dir, method, dataset), failure_record_path(results_dir, method, dataset)):
        if p.exists():
            return p
    return None


def write_finished(results_dir: str | os.PathLike, manifest: dict[str, Any]) -> Path:
    """Write the manifest of a job whose every context has an outcome: ``<dataset>.json`` when every run
    finished, else ``<dataset>.failed.json``; the other name is removed. Returns the path written."""
    ok = all(r.get("status") in FINISHED_STATUSES for r in manifest["runs"])
    good = manifest_path(results_dir, manifest["method"], manifest["dataset"])
    bad = failure_record_path(results_dir, manifest["method"], manifest["dataset"])
    target, other = (good, bad) if ok else (bad, good)
    atomic_write_json(target, manifest)
    other.unlink(missing_ok=True)
    return target


def failed_runs_message(manifest: dict[str, Any], results_dir: str | os.PathLike) -> str | None:
    """None when every run of the manifest finished; else one message naming the failures."""
    failed = [r for r in manifest["runs"] if r.get("status") not in FINISHED_STATUSES]
    if not failed:
        return None
    first = failed[0]
    where = failure_record_path(results_dir, manifest["method"], manifest["dataset"])
    return (
        f"{manifest['method']}/{manifest['dataset']}: {len(failed)} of {len(manifest['runs'])} runs failed, "
        f"e.g. {first['protocol']} seed {first['seed']}: {first.get('error')}. Recorded in {where}; the tables "
        "list them as missing runs and the next `snakemake` retries them (the finished runs are kept)."
    )


def job_contexts(spec: "JobSpec") -> list[tuple[str, int]] | None:
    """``(protocol, seed)`` of every context the job runs (its context file, restricted to its protocols),
    or None when the context file cannot be read."""
    from chorustic.protocols.contexts import iter_contexts

    try:
        doc = json.loads(Path(spec.contexts_file).read_text(encoding="utf-8"))
        return [(ctx.protocol, int(ctx.seed)) for ctx, _ in iter_contexts(doc, spec.protocols)]
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError):
        return None


def no_contexts_error(spec: "JobSpec") -> JobFailed:
    """A job whose protocol selection matches no context of its context file: nothing is run or written."""
    return JobFailed(
        f"{spec.method}/{spec.dataset}: the protocols {spec.protocols} select no context of {spec.contexts_file}; "
        "nothing was run and no result was touched. Select protocols the configuration produces (or re-make "
        "the context file with `chorustic contexts`)."
    )


def job_inputs(contexts_file: str | os.PathLike, source_sha256: dict[str, str] | None,
               environment: dict[str, Any] | None = None, job_params: dict[str, Any] | None = None) -> dict[str, Any]:
    """What a job's runs were made from, besides the method's fingerprint: the SHA-256 of its context file
    and of its dataset's files, the environment that computed them (:func:`_kept_work_environment`: the
    libraries' versions and the numerics) and the parameters the method set from the whole job
    (``Method.job_params``: they follow from the job's protocol selection). A run recorded with other inputs
    is never resumed."""
    return {"contexts_sha256": sha256_file(contexts_file), "source_sha256": source_sha256,
            "environment": environment, "job_params": json.loads(json.dumps(job_params or {}))}  # as read back


def clear_job_outputs(
    results_dir: str | os.PathLike, method: str, dataset: str, contexts: list[tuple[str, int]]
) -> list[Path]:
    """Delete the prediction files of ``contexts`` (``(protocol, seed)``: the contexts the job is about to
    run), and the progress and failure record of an earlier attempt; return what was removed. Prediction
    files of other contexts (finished results of another protocol selection) are never touched."""
    removed = _remove_predictions(results_dir, method, dataset, contexts)
    for p in (progress_path(results_dir, method, dataset), failure_record_path(results_dir, method, dataset)):
        if p.exists():
            p.unlink()
            removed.append(p)
    return removed


def _remove_predictions(
    results_dir: str | os.PathLike, method: str, dataset: str, contexts: list[tuple[str, int]]
) -> list[Path]:
    removed = []
    for protocol, seed in contexts:
        p = result_path(results_dir, protocol, method, dataset, seed)
        if p.exists():
            p.unlink()
            removed.append(p)
    return removed


def _peak_rss_mb() -> float:
    # Linux reports ru_maxrss in KiB.
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


#: The libraries whose version is part of the key of work kept from an earlier attempt (a job's partial
#: predictions and pair memo): what computes the methods' numbers.
KEPT_WORK_LIBRARIES = ("numpy", "scipy", "numba", "scikit-learn", "aeon", "torch", "tabicl", "mantis-tsfm", "momentfm")


def _kept_work_environment(device: str, portable_numerics: bool) -> dict[str, Any]:
    """What, besides the method, its parameters and the data, decides the numbers of a job's kept work: the
    installed versions of :data:`KEPT_WORK_LIBRARIES`, the numerics (:func:`numerics_key`) and the process's
    string-hash seed (the order of sets of strings; the supervisor fixes it, ``WORKER_HASH_SEED``)."""
    from importlib import metadata

    from chorustic.evaluation.numerics import numerics_key

    versions = {"python": platform.python_version()}
    for name in KEPT_WORK_LIBRARIES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return {"libraries": versions, "numerics": numerics_key(device, portable_numerics),
            "hash_seed": os.environ.get("PYTHONHASHSEED", "random")}


def _versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for mod in ("numpy", "torch", "sklearn", "aeon", "tabicl", "mantis", "chorustic"):
        m = sys.modules.get(mod)
        if m is not None and hasattr(m, "__version__"):
            out[mod] = str(m.__version__)
    return out


#: The longest error text recorded for a run (the ``error`` column); longer ones are cut in the middle.
ERROR_CHARS = 2000


def _format_error(exc: BaseException) -> str:
    msg = f"{type(exc).__name__}: {exc}".strip()
    return shorten(" ".join(msg.split()), ERROR_CHARS)  # the head (what and what to do) and the tail kept


def _is_out_of_memory(exc: BaseException) -> bool:
    if isinstance(exc, MemoryError):
        return True
    text = str(exc).lower()
    return "out of memory" in text or "cublas_status_alloc_failed" in text


def _align_proba(proba: np.ndarray, est_classes: np.ndarray, n_classes: int, name: str) -> np.ndarray:
    """Map the estimator's probability columns (its ``classes_``) onto the dataset's K classes.

    Any estimator (a :class:`~chorustic.methods.estimators.ContractClassifier` or a plain sklearn/aeon one a
    plugin returns) is held to the contract's probability clause: rows more than
    :data:`~chorustic.methods.base.PROBA_TOL` from probabilities are a ValueError naming ``name`` (the run
    is recorded failed), rows within it are renormalised in float64 (tiny negatives clipped to 0), as the base
    class does. The harness never rescales scores into probabilities."""
    proba = np.asarray(proba, dtype=np.float64)
    est_classes = np.asarray(est_classes).astype(np.int64)
    if proba.ndim != 2 or proba.shape[1] != len(est_classes):
        raise ValueError(f"{name}: predict_proba returned shape {proba.shape} for {len(est_classes)} classes_")
    if np.any(est_classes < 0) or np.any(est_classes >= n_classes):
        raise ValueError(f"{name}: classes_ {est_classes.tolist()} outside 0..{n_classes - 1}")
    problem = probability_rows_problem(proba)
    if problem is not None:
        raise ValueError(f"{name}: predict_proba returned rows that are not probabilities: {problem}. "
                         f"{PROBA_ADVICE}")
    proba = np.clip(proba, 0.0, None)  # within the tolerance: float rounding only
    full = np.zeros((proba.shape[0], n_classes), dtype=np.float64)
    full[:, est_classes] = proba / proba.sum(axis=1, keepdims=True)
    return full


def _job_size(n_context: int, X_test: Any, n_classes: int = 2, context_train: tuple[int, ...] = (),
              context_length: int = 0):
    """The :class:`~chorustic.methods.cost.JobSize` of a context of ``n_context`` series (with
    ``context_train``, the sizes of every context of a job: the whole job), the test split, channels and
    maximum length as the method receives them (of the test split and of the context's series,
    ``context_length``: they differ on a variable-length dataset), and the dataset's classes."""
    from chorustic.methods.cost import JobSize

    length = max(int(series_lengths(X_test).max()), int(context_length))
    return JobSize(int(n_context), int(len(X_test)), int(X_test[0].shape[0]), length,
                   context_train=tuple(int(k) for k in context_train), n_classes=int(n_classes))


def _predict_in_chunks(estimator: Any, X_test: Any, chunk: int, n_classes: int, tag: str,
                       partial: Any = None, log=None, memos: Any = (), source: str | None = None
                       ) -> tuple[np.ndarray, int]:
    """The estimator's probabilities of the whole test split, asked for ``chunk`` queries at a time (a query's
    prediction depends on the context and that query only, a clause of the method contract), each chunk
    mapped onto the dataset's ``n_classes`` columns; and how many of them an earlier attempt had kept.

    ``partial``: the context's :class:`~chorustic.evaluation.checkpoints.PartialPredictions`: the rows it
    holds are not predicted again, and the rows predicted so far are written to it as the chunks finish;
    ``memos``: the job's :class:`~chorustic.evaluation.checkpoints.KeptMemo` files, written as the chunks finish."""
    from chorustic.evaluation.checkpoints import SAVE_EVERY_S

    n = len(X_test)
    step = max(1, int(chunk))
    kept = partial.load(n_classes=n_classes, chunk=step) if partial is not None else None
    if partial is not None and partial.discarded and log is not None:
        log(f"{tag} the partial predictions of an earlier attempt were {partial.discarded}; predicting every query")
    parts = [] if kept is None else [kept]
    first = 0 if kept is None else min(len(kept), n)
    if first and log is not None:
        log(f"{tag} continuing from {first}/{n} test series predicted by an earlier attempt ({partial.path.name})")
    w0, c0, saved = time.perf_counter(), time.process_time(), -np.inf  # the first chunk is kept at once
    for start in range(first, n, step):
        part = X_test[start:start + step]
        name = f"{tag} {type(estimator).__name__}" + (f" (from the plugin file {source})" if source else "")
        if step < n:  # a row named in a message counts from the chunk's first test series
            name += f" (test series {start}..{min(start + step, n) - 1})"
        parts.append(_align_proba(estimator.predict_proba(part), estimator.classes_, n_classes, name))
        done = min(start + step, n)
        for memo in memos:
            _save_memo(memo, log, tag)
        if partial is not None and done < n and time.monotonic() - saved >= SAVE_EVERY_S:
            spent = dict(partial.spent)
            spent["predict_s"] += time.perf_counter() - w0
            spent["cpu_s"] += time.process_time() - c0
            spent["peak_memory_mb"] = max(spent["peak_memory_mb"], _peak_rss_mb())
            partial.save(np.concatenate(parts), spent)
            saved = time.monotonic()
            if log is not None:
                log(f"{tag} {done}/{n} test series predicted ({time.perf_counter() - w0:.0f}s this attempt)")
    return (parts[0] if len(parts) == 1 else np.concatenate(parts)), first


def _save_memo(memo: Any, log, tag: str, *, force: bool = False) -> None:
    """:meth:`KeptMemo.save`, saying once (in the job's log, ``tag`` first) when the memo file had to be
    given up."""
    if memo.given_up:
        return
    memo.save(force=force)
    if memo.given_up and log is not None:
        log(f"{tag} the {memo.name} cannot be written ({memo.given_up}): the job goes on without keeping it "
            "(a stopped job will compute its entries again)")


def _memo_write_times(memos: Any) -> tuple[float, float]:
    """The seconds and CPU seconds the job's memo files took to write so far."""
    return sum(m.write_s for m in memos), sum(m.write_cpu_s for m in memos)


def _method_clocks(memos: Any) -> tuple[float, float]:
    """(wall, CPU) clocks that stand still while the job's memo files are written: the method's times."""
    write_s, write_cpu_s = _memo_write_times(memos)
    return time.perf_counter() - write_s, time.process_time() - write_cpu_s


def run_record(context: Any, **fields: Any) -> dict[str, Any]:
    """One run (one context) of a manifest, every field of :data:`RUN_FIELDS`: the context's protocol,
    family, budget and seed (``context``: a :class:`~chorustic.protocols.ContextSpec` or a dict with
    those keys), then ``fields``; the rest None (``extra``: an empty dict)."""
    ctx = context if isinstance(context, dict) else dataclasses.asdict(context)
    unknown = sorted(set(fields) - set(RUN_FIELDS))
    if unknown:
        raise ValueError(f"unknown run field(s) {unknown}; a run has {RUN_FIELDS}")
    rec: dict[str, Any] = dict.fromkeys(RUN_FIELDS)
    rec["extra"] = {}
    rec.update({k: ctx.get(k) for k in ("protocol", "family", "budget", "seed")})
    rec.update(fields)
    return rec


def run_job(spec: JobSpec, *, resume: bool = False, log=None) -> dict[str, Any]:
    """Run the job in this process and write its manifest; return the manifest.

    With ``resume=True`` the runs recorded in the job's progress file (written after every context)
    are kept and their contexts skipped; this is how the supervisor continues a job whose worker
    died (out of memory, time limit) after recording the context that killed it.
    """
    from chorustic.methods.embedding_memo import EMBEDDING_MEMO
    from chorustic.methods.pair_memo import PAIR_MEMO

    try:
        return _run_job(spec, resume=resume, log=log)
    finally:
        EMBEDDING_MEMO.after_batch = PAIR_MEMO.after_block = None  # a job's memo files: written by it only


def _run_job(spec: JobSpec, *, resume: bool, log) -> dict[str, Any]:
    """:func:`run_job`'s work."""
    from chorustic.methods import MethodNotReady, ReportedMethod, discover
    from chorustic.methods.devices import resolve_device
    from chorustic.protocols import ContextSpec, parse_protocol_id
    from chorustic.protocols.contexts import iter_contexts, read_contexts

    log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
    started = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    results_dir = Path(spec.results_dir)
    prog = progress_path(results_dir, spec.method, spec.dataset)
    prior_runs: list[dict[str, Any]] = []
    selected = job_contexts(spec)
    if selected == []:
        raise no_contexts_error(spec)
    prior_inputs = None
    if resume and prog.exists():
        prior = json.loads(prog.read_text())
        prior_inputs = prior.get("inputs")
        mine = set(selected or [])
        # a run whose prediction file is gone or changed is run again
        prior_runs = [r for r in prior.get("runs", []) if (r["protocol"], int(r["seed"])) in mine
                      and (r.get("status") != "ok" or verify_result_file(r, full=True, base=results_dir) is None)]
        started = prior.get("started", started)
        keep = {(r["protocol"], int(r["seed"])) for r in prior_runs if r.get("result_file")}
        # only the files of the runs recorded so far are kept (of the job's own contexts: never another selection's)
        _remove_predictions(results_dir, spec.method, spec.dataset, [c for c in selected or [] if c not in keep])
    else:
        removed = clear_job_outputs(results_dir, spec.method, spec.dataset, selected or [])
        if removed:
            log(f"[{spec.method}/{spec.dataset}] removed {len(removed)} file(s) of an earlier attempt")
    done = {(r["protocol"], r["seed"]) for r in prior_runs}

    discovery = discover(spec.plugin_dir, only=spec.plugin)
    method = discovery.get(spec.plugin)
    plugin_file = (f"{Path(spec.plugin_dir or default_plugin_dir()).name}/{discovery.sources[spec.plugin]}"
                   if spec.plugin in discovery.sources else None)
    info = method.info
    params = method.params(spec.params)
    manifest: dict[str, Any] = {
        "format": MANIFEST_FORMAT,
        "method": spec.method,
        "plugin": spec.plugin,
        "display_name": spec.display_name or info.display_name,
        "group": info.group,
        "fits_on_target": info.fits_on_target,
        "reported": info.reported,
        "benchmark_in_pretraining": info.benchmark_in_pretraining,
        "input_kind": info.input_kind,
        "dataset": spec.dataset,
        "archive": spec.archive,
        "params": params,
        "fingerprint": json.loads(spec.fingerprint) if spec.fingerprint else None,
        "data_modifications": [],
        "device": None,
        "started": started,
        "finished": None,
        "host": platform.node(),
        "numerics": None,  # set when the runs are done (the libraries are loaded then)
        "versions": {},
        "runs": list(prior_runs),
    }
    if isinstance(method, ReportedMethod):
        table = method.reported_accuracies(**params)
        rows = table[table["dataset"] == spec.dataset]
        for row in rows.itertuples(index=False):
            ctx = ContextSpec(row.protocol, *parse_protocol_id(row.protocol), int(row.seed))
            manifest["runs"].append(run_record(ctx, status="reported", accuracy=float(row.accuracy)))
        if not manifest["runs"]:
            manifest["runs"].append(run_record(ContextSpec("full", "full", None, 0), status="failed",
                                               error="no reported accuracy for this dataset"))
        manifest["finished"] = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        write_finished(results_dir, manifest)
        return manifest

    from chorustic.data import load_dataset
    from chorustic.methods.embedding_memo import EMBEDDING_MEMO
    from chorustic.methods.pair_memo import PAIR_MEMO

    PAIR_MEMO.clear()  # the distances another job kept in this process: this job's memory is its own
    EMBEDDING_MEMO.clear()  # and the embeddings
    device = resolve_device(spec.device, method.cost_model(**params).loads_torch)
    manifest["device"] = device
    native = info.input_kind == "native"
    # only the input the method takes: the other form of the series is never read (it can be larger)
    ds = load_dataset(spec.dataset, spec.data_dir, cache_dir=spec.cache_dir, offline=spec.offline,
                      lock=spec.lock_file or True, allow_modified=spec.allow_modified_data,
                      series="native" if native else "resampled")
    manifest["data_modifications"] = list(ds.modifications)
    environment = _kept_work_environment(device, spec.portable_numerics)
    contexts = read_contexts(spec.contexts_file, ds.y_train)
    X_train = ds.X_train_native if native else ds.X_train
    X_test = ds.X_test_native if native else ds.X_test
    n_classes = int(ds.n_classes)
    # the parameters that follow from the whole job (Method.job_params): from every context it evaluates, done or
    # not, so that each attempt sets the same
    eligible = [np.asarray(entry["indices"], dtype=np.int64) for _, entry in iter_contexts(contexts, spec.protocols)
                if entry["status"] != "ineligible"]
    sizes = tuple(len(idx) for idx in eligible)
    train_lengths = series_lengths(X_train)
    longest = max((int(train_lengths[idx].max(initial=0)) for idx in eligible), default=0)
    job_params = method.job_params(_job_size(max(sizes, default=0), X_test, n_classes, sizes, longest), **params)
    manifest["inputs"] = job_inputs(spec.contexts_file, ds.source_sha256, environment, job_params)
    if prior_inputs is not None and prior_inputs != manifest["inputs"]:
        # an interrupted run of this job on other data, contexts, libraries or numerics: none of its runs counts
        log(f"[{spec.method}/{spec.dataset}] the {len(prior_runs)} run(s) recorded by an earlier attempt were made "
            "from another version of the data or contexts, or with other library versions or numerics "
            f"({', '.join(k for k in manifest['inputs'] if prior_inputs.get(k) != manifest['inputs'][k])}); "
            "running every context again")
        _remove_predictions(results_dir, spec.method, spec.dataset, sorted(done))
        manifest["runs"], done = [], set()
    # the work an earlier attempt kept is used when made from the same inputs, here and in the same environment,
    # with the same job parameters where the method has some (they set how the estimator computes: a chunk of
    # another plan is not kept; a method without any keeps the key it had before job parameters existed)
    kept_inputs = {"method": spec.method, "plugin": spec.plugin, "params": params, "fingerprint": spec.fingerprint,
                   "source_sha256": ds.source_sha256, "device": device, "environment": environment,
                   **({"job_params": manifest["inputs"]["job_params"]} if job_params else {})}
    # the distances and embeddings an earlier attempt of this job computed (its memo files)
    memos = {"pair": PAIR_MEMO, "embedding": EMBEDDING_MEMO}
    kept = {kind: KeptMemo(memo_path(results_dir, spec.method, spec.dataset, kind), kept_inputs, memo, kind)
            for kind, memo in memos.items()}
    kept_memos = tuple(kept.values())
    for kept_memo in kept_memos:
        n_kept = kept_memo.load()
        if kept_memo.discarded:
            log(f"[{spec.method}/{spec.dataset}] the {kept_memo.name} of an earlier attempt was {kept_memo.discarded}")
        if n_kept:
            log(f"[{spec.method}/{spec.dataset}] {n_kept} {kept_memo.keeps} computed by an earlier attempt are kept "
                f"({kept_memo.path.name})")
    # a frozen encoder's fit can embed for hours, a chunk's distances take an hour: the memo files are
    # written as the batches and blocks of queries finish, not only between prediction chunks (at most every
    # SAVE_EVERY_S, as the chunks' writes)
    tag = f"[{spec.method}/{spec.dataset}]"
    EMBEDDING_MEMO.after_batch = functools.partial(_save_memo, kept["embedding"], log, tag)
    PAIR_MEMO.after_block = functools.partial(_save_memo, kept["pair"], log, tag)
    if ds.standin is not None:  # random data of the dataset's shape: recorded, never collected as a result
        manifest["standin"] = ds.standin
    if ds.archive != spec.archive:
        log(f"[{spec.method}/{spec.dataset}] archive {ds.archive!r} differs from job archive {spec.archive!r}")

    not_ready: str | None = None
    try:
        method.check_ready(**params)
    except MethodNotReady as exc:
        not_ready = f"MethodNotReady: {exc}"
        log(f"[{spec.method}/{spec.dataset}] {not_ready}")

    for ctx, entry in iter_contexts(contexts, spec.protocols):
        if (ctx.protocol, ctx.seed) in done:
            continue
        if entry["status"] == "ineligible":
            manifest["runs"].append(run_record(ctx, status="ineligible", error=entry.get("reason"),
                                               n_context=entry.get("n_context"), n_test=len(ds.y_test),
                                               n_classes=n_classes))
            continue
        if not_ready is not None:
            manifest["runs"].append(run_record(ctx, status="failed", error=not_ready, n_context=entry.get("n_context"),
                                               n_test=len(ds.y_test), n_classes=n_classes))
            continue
        idx = np.asarray(entry["indices"], dtype=np.int64)
        out = result_path(results_dir, ctx.protocol, spec.method, spec.dataset, ctx.seed)
        tag = f"[{spec.method}/{spec.dataset}/{ctx.protocol}/seed{ctx.seed}]"
        try:
            estimator = method.build(seed=int(ctx.seed), device=device, n_jobs=int(spec.n_jobs), **params)
            if job_params:
                estimator.set_params(**job_params)
            # the memos' writes (in a fit too) are the harness's, not the method's: recorded apart from its times
            written = _memo_write_times(kept_memos)
            t0, c0 = _method_clocks(kept_memos)
            estimator.fit(take_series(X_train, idx), ds.y_train[idx])
            t1, _ = _method_clocks(kept_memos)
            chunk = method.query_chunk(_job_size(len(idx), X_test, n_classes, context_length=int(
                train_lengths[idx].max(initial=0))), **params)
            partial = PartialPredictions(
                partial_path(results_dir, spec.method, spec.dataset, ctx.protocol, ctx.seed),
                {**kept_inputs, "protocol": ctx.protocol, "seed": int(ctx.seed), "context": context_digest(idx),
                 "n_test": len(ds.y_test), "n_classes": n_classes, "chunk": int(chunk)})
            proba, resumed = _predict_in_chunks(estimator, X_test, chunk, n_classes, tag, partial, log, kept_memos,
                                                source=plugin_file)
            t2, c2 = _method_clocks(kept_memos)
            memo_s = _memo_write_times(kept_memos)[0] - written[0]
            extra = dict(getattr(estimator, "run_info_", {}) or {})
            if memo_s > 0:
                extra["memo_write_s"] = round(memo_s, 3)
            if chunk < len(ds.y_test):
                extra["query_chunk"] = int(chunk)
            peak = max(_peak_rss_mb(), partial.spent["peak_memory_mb"])
            if resumed:  # the times and memory are those of every attempt that predicted this context
                extra["resumed_at_query"] = int(resumed)
                extra["earlier_attempts_cpu_s"] = round(partial.spent["cpu_s"], 3)
                t2 += partial.spent["predict_s"]
                c2 += partial.spent["cpu_s"]
            info_line = {
                "method": spec.method, "plugin": spec.plugin, "display_name": manifest["display_name"],
                "params": params, "protocol": ctx.protocol, "family": ctx.family, "budget": ctx.budget,
                "seed": ctx.seed, "context_file": stored_result_file(spec.contexts_file, results_dir), "n_context": int(len(idx)),
                "class_labels": [str(c) for c in ds.classes], "device": device, "run_info": extra,
                "source_sha256": ds.source_sha256, "data_modifications": list(ds.modifications),
                **({"standin": ds.standin} if ds.standin is not None else {}),
            }
            acc = write_result_file(
                out, dataset=spec.dataset, method=spec.method, seed=ctx.seed, y_true=ds.y_test, proba=proba,
                fit_time_s=t1 - t0, predict_time_s=t2 - t1, memory_bytes=int(peak * 1024 * 1024),
                info=info_line, description=f"protocol={ctx.protocol}",
            )
            rec = run_record(ctx, status="ok", accuracy=acc, n_context=entry.get("n_context"), n_test=len(ds.y_test),
                             n_classes=n_classes, fit_time_s=round(t1 - t0, 4), predict_time_s=round(t2 - t1, 4),
                             cpu_time_s=round(c2 - c0, 3), peak_memory_mb=round(peak, 1), result_file=stored_result_file(out, results_dir),
                             extra=extra,
                             result=file_record(out))
            partial.remove()
            log(f"{tag} accuracy {acc:.4f} (fit {t1 - t0:.1f}s, predict {t2 - t1:.1f}s)")
        except NoSpaceError:  # the disk is full: no later context can be written either; the job stops here
            raise
        except Exception as exc:  # one failing context never stops the others
            if spec.fail_fast:
                raise
            reason = _format_error(exc)
            if _is_out_of_memory(exc):
                reason = f"out of memory: {reason}"
            log(f"{tag} FAILED: {reason}\n{traceback.format_exc()}")
            if out.exists():
                out.unlink()
            rec = run_record(ctx, status="failed", error=reason, n_context=entry.get("n_context"),
                             n_test=len(ds.y_test), n_classes=n_classes)
        finally:
            estimator = None  # noqa: F841 - release the model before the next context
            gc.collect()
        manifest["runs"].append(rec)
        atomic_write_json(prog, manifest)
        for kept_memo in kept_memos:
            _save_memo(kept_memo, log, f"[{spec.method}/{spec.dataset}]")

    manifest["versions"] = _versions()
    manifest["numerics"] = numerics_record(device, requested=spec.portable_numerics)
    manifest["finished"] = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    write_finished(results_dir, manifest)
    if prog.exists():
        prog.unlink()
    for kept_memo in kept_memos:
        if all(r["status"] in FINISHED_STATUSES for r in manifest["runs"]):
            kept_memo.remove()
        else:  # kept whole for the retry of a job with failed runs
            _save_memo(kept_memo, log, f"[{spec.method}/{spec.dataset}]", force=True)
    return manifest


def load_manifest(path: str | os.PathLike) -> dict[str, Any]:
    doc = json.loads(Path(path).read_text())
    if doc.get("format") != MANIFEST_FORMAT:
        raise ValueError(f"{path}: not a chorustic run manifest (format {doc.get('format')!r})")
    return doc
