"""Paper scale on stand-ins: every offline method on the shapes of the archives' largest datasets.

Each point is one evaluate job run as the workflow runs it: ``chorustic evaluate`` in a fresh process
(the supervisor, its worker, the job's memory and time limits) on a stand-in
(:mod:`chorustic.data.standin`: random data with the dataset's exact shape, never a result), every
protocol context of the paper profile (full, 5/10-shot x 5 seeds, 20-60 %), one thread (``--threads`` sets
more: a row's CPU time is then all its threads'). Recorded side by side: the job's wall time and its worker's peak memory, the method's cost model at the same shape
(``chorustic.resources.evaluate_estimate``: before margins) and what the job asks for
(``job_request``: with margins). Where the whole shape would take longer than ``--max-job-seconds``
here, the dataset's series are scaled down (``--fractions``, growing until the next one would not fit),
so the rows of one dataset show whether the model's form holds as the job grows. A job stopped before it
finished (Ctrl-C, the machine's session ending) continues where it stopped when the same command runs again
with the same ``--workdir``: its finished contexts and the chunks of test series a long context had
predicted are kept (``chorustic.evaluation.checkpoints``), and its row's CPU time counts every attempt's.
Each job's messages (its progress through a long context) are in ``<workdir>/runs/<job>/evaluate.log``.
A job longer than a machine's lease (1NN-DTW on EigenWorms' full shape: ~20 CPU-hours) continues on another
machine with ``--keep DIR``: the job's kept work (its progress file, partial predictions, memo files and the
prediction files of its finished contexts) is copied into ``DIR/<job>/<method>/`` every :data:`KEEP_EVERY_S`
and when the job ends, and copied back into a new ``--workdir`` before the job starts; a folder in the
repository carries it in a commit (``benchmarks/kept/``). The kept runs name their prediction files by path,
so the job keeps its finished contexts where ``--workdir`` is the same path (elsewhere it runs them again, as
for any missing prediction file); its partial predictions and memos are known by their inputs alone. The
folder is removed once the job has finished.

    python benchmarks/archive_scale.py --methods minirocket quant --datasets Crop PEMS-SF \\
        [--fractions 0.01 0.03 0.1 0.3 1] [--max-job-seconds 600] [--workdir /tmp/archive-scale] \\
        [--out benchmarks/results/archive_scale.csv]

Methods: the classical four (``minirocket``, ``multirocket_hydra``, ``quant``, ``dtw_1nn``), ``chorustic_small``
(the committed ``models/chorustic-small``), ``chorustic_paper`` (the paper configuration, random weights),
and the pretrained baselines with random weights at their real architectures: ``tabicl`` (v1.1),
``tabicl_v2``, ``mantis_rf`` (Mantis-8M), ``mantisv2_rf``, ``mantisv2_lr``, ``moment_svm`` (MOMENT-1-base);
``nutime_rf`` where ``--checkouts`` (default ``$CHORUSTIC_CHECKOUTS``) holds a clone of NuTime's repository (the
authors' code builds the model; random weights in the released file's layout; their code needs ``timm``); any
other plugin that runs offline by its name, with its default parameters. The committed table is
``benchmarks/results/archive_scale.csv``, its summary ``benchmarks/results/archive_scale.md``.

Fitting: ``--fit CSV [CSV ...]`` runs nothing and prints, per method, the cost model's coefficients
refitted on the measured jobs (the terms of ``CostModel.time_terms`` / ``memory_terms``: non-negative least
squares on the relative error, over the terms the method's current model uses; scaled up where needed so
that a job's request, ``TIME_SAFETY`` / ``MEM_SAFETY`` times the model, covers every measurement) and every
job's measured / model ratio before and after; a job measured twice counts with its last measurement.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

#: The largest datasets along each axis (issue: paper scale), and the axis.
DATASETS = {
    "Crop": "series (7,200 / 16,800)",
    "ElectricDevices": "series (8,926 / 7,711)",
    "PenDigits": "context rows (7,494)",
    "StarLightCurves": "test series x length (8,236 x 1,024)",
    "FaceDetection": "series x channels (5,890 x 144)",
    "InsectWingbeatSubset": "channels (200; the subset of 30,000 / 20,000 the paper evaluates)",
    "PEMS-SF": "channels (963)",
    "DuckDuckGeese": "channels (1,345)",
    "EigenWorms": "length (17,984)",
    "MotorImagery": "channels x length (64 x 3,000)",
    "HandOutlines": "length (2,709)",
    "ShapesAll": "classes (60)",
    "PigAirwayPressure": "classes x length (52 x 2,000)",
    "FordA": "series x length (4,921 x 500)",
    "SpokenArabicDigits": "series x channels (8,798 x 13, variable length)",
}
CLASSICAL = ["minirocket", "multirocket_hydra", "quant", "dtw_1nn"]
COLUMNS = ["method", "dataset", "axis", "series_fraction", "n_train", "n_test", "n_channels", "length",
           "contexts", "status", "cpu_s", "wall_s", "model_s", "time_ratio", "peak_mb", "model_mb", "mem_ratio",
           "request_mb", "request_min", "error", "date", "cpu", "torch", "threads"]
#: torch's version where a row has none: every row before the column was measured with the CPU build
ROWS_TORCH = "2.13.0+cpu"


def _assets(workdir: Path, checkouts: Path | None = None) -> dict[str, dict]:
    """Method runs (plugin + params) for every benchmarked method; random-weight files written once.
    ``checkouts``: a folder of the authors' clones (``chorustic fetch-weights``' layout); ``nutime_rf`` runs
    when it holds NuTime's, with a random-weight checkpoint_bias9 built by the authors' factories."""
    from chorustic.methods import import_plugin_module
    from chorustic.methods.checkout import default_checkout_root
    from chorustic.testing import checkpoints as ck

    assets = workdir / "assets"
    assets.mkdir(parents=True, exist_ok=True)
    runs: dict[str, dict] = {m: {"plugin": m} for m in CLASSICAL}
    runs["chorustic_small"] = {"plugin": "chorustic",
                               "params": {"checkpoint": str(REPO / "models" / "chorustic-small" / "model.safetensors")}}

    def once(path: Path, make):
        if not path.exists():
            make(path)
        return str(path)

    def chorustic_paper(path: Path):
        from chorustic.model import ChorusTICConfig, save_checkpoint

        save_checkpoint(path, ck.randomized_chorustic(ChorusTICConfig.paper(), scale=0.02),
                        provenance={"training": "random weights (benchmarks/archive_scale.py)"})

    runs["chorustic_paper"] = {"plugin": "chorustic",
                               "params": {"checkpoint": once(assets / "chorustic-paper-random.safetensors",
                                                             chorustic_paper)}}
    runs["tabicl"] = {"plugin": "tabicl", "params": {"checkpoint": once(
        assets / "tabicl-classifier-v1.1-20250506.ckpt", lambda p: ck.write_tabicl(p, real_size=True, **ck.TABICL_V1_REAL))}}
    runs["tabicl_v2"] = {"plugin": "tabicl_v2", "params": {"checkpoint": once(
        assets / "tabicl-classifier-v2-20260212.ckpt", lambda p: ck.write_tabicl(p, real_size=True, **ck.TABICL_V2_REAL))}}
    runs["mantis_rf"] = {"plugin": "mantis_rf", "params": {"weights": once(
        assets / "mantis8m", lambda p: ck.write_mantis(p, "v1", real_size=True))}}
    mantisv2 = once(assets / "mantisv2", lambda p: ck.write_mantis(p, "v2", real_size=True))
    runs["mantisv2_rf"] = {"plugin": "mantisv2_rf", "params": {"weights": mantisv2}}
    runs["mantisv2_lr"] = {"plugin": "mantisv2_lr", "params": {"weights": mantisv2}}
    runs["moment_svm"] = {"plugin": "moment_svm", "params": {"weights": once(
        assets / "moment-base", lambda p: ck.write_moment(p, real_size=True))}}
    nutime = Path(checkouts if checkouts is not None else default_checkout_root()) / "NuTime"
    nutime_plugin = import_plugin_module("nutime_rf", REPO / "baselines" / "nutime_rf.py")
    if all((nutime / f).is_file() for f in nutime_plugin.REQUIRED):
        runs["nutime_rf"] = {"plugin": "nutime_rf", "params": {"checkout": str(nutime), "checkpoint": once(
            assets / "nutime-checkpoint_bias9-random.pth", lambda p: ck.write_nutime_checkpoint(nutime, p))}}
    return runs


def _add_plugins(runs: dict[str, dict], names: list[str]) -> None:
    """Any other registered plugin (a method author's own) runs with its default parameters."""
    from chorustic.methods import discover

    plugins = discover().methods
    for name in names:
        if name not in runs and name in plugins:
            runs[name] = {"plugin": name}


def _config(workdir: Path, tag: str, dataset: str, runs: dict[str, dict], threads: int = 1) -> Path:
    import yaml

    root = workdir / "runs" / tag
    cfg = {
        "profile": "archive-scale",
        "paths": {"data_dir": str(workdir / "data" / tag), "cache_dir": str(workdir / "cache"),
                  "results_dir": str(root / "results"), "reports_dir": str(root / "reports"),
                  "logs_dir": str(root / "logs"), "models_dir": str(root / "models")},
        "data": {"offline": True, "lock_file": str(workdir / "data" / tag / "lock.json")},
        "datasets": {"archives": ["UCR", "UEA"], "include": [dataset]},
        "evaluate": list(runs),
        "methods": {m: {**r, "resources": {"threads": threads}} for m, r in runs.items()},
        "reports": {"reference_method": next(iter(runs))},
    }
    path = root / "config.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


def _standin_size(cfg: dict, plugin, dataset: str, spec):
    """The job's :class:`JobSize` at the stand-in's shape, each context at its expected training size."""
    import dataclasses

    from chorustic import resources as cr
    from chorustic.protocols.contexts import context_specs, expected_train_size

    size = cr.job_size(dataset, input_kind=plugin.info.input_kind, cfg=cfg)
    train = tuple(expected_train_size(s, spec.n_train, spec.n_classes) for s in context_specs(cfg["protocols"]))
    # a variable-length stand-in draws its lengths uniformly in [min_length, length]: their mean is known here
    mean = None if spec.equal_length or plugin.info.input_kind != "native" else (spec.min_length + spec.length) / 2
    return dataclasses.replace(size, n_train=spec.n_train, n_test=spec.n_test, n_channels=spec.n_channels,
                               n_contexts=len(train), context_train=train, n_classes=spec.n_classes,
                               mean_length=mean)


def _standin_job(cfg_path: Path, method: str, dataset: str, spec):
    """``(plugin, params, size)`` of the job of ``method`` on the stand-in ``spec`` under ``cfg_path``."""
    from chorustic import config as cc
    from chorustic.methods import discover

    cfg = cc.load_config([cfg_path])
    entry = cc.method_entry(cfg, method)
    plugin = discover(only=entry["plugin"]).get(entry["plugin"])
    return plugin, cc.resolved_params(cfg, method), _standin_size(cfg, plugin, dataset, spec)


def _peak_at_limit(error: str | None) -> float | None:
    """The resident peak a run stopped at its memory limit had reached (from its message), else None."""
    hit = re.search(r"(?:reached|resident) (\d+) MB", error or "")
    return float(hit.group(1)) if hit and "memory limit" in error else None


def _estimate(cfg_path: Path, method: str, dataset: str, spec) -> tuple[float, float, int, int, int]:
    """The cost model at the stand-in's shape: (MB, s, request MB, request min, contexts)."""
    from chorustic import resources as cr

    plugin, params, size = _standin_job(cfg_path, method, dataset, spec)
    mem, seconds = plugin.job_cost(size, **params)
    req_mb, req_min = cr.job_request(mem, seconds)
    return mem, seconds, req_mb, req_min, size.n_contexts


def _row_build(r: dict) -> str:
    from chorustic.methods.cost import torch_build_of

    return torch_build_of(r.get("torch") or ROWS_TORCH)


def prepare(workdir: Path, method: str, run: dict, dataset: str, fraction: float, threads: int = 1) -> dict:
    """The job's configuration and the cost model's numbers at the stand-in's shape (nothing runs); a job on
    more than one thread has a folder of its own."""
    from chorustic.data.standin import standin_spec

    spec = standin_spec(dataset, series_fraction=fraction)
    tag = f"{dataset}-f{fraction:g}" + (f"-t{threads}" if threads != 1 else "")
    cfg = _config(workdir, tag, dataset, {method: run}, threads)
    mem, seconds, req_mb, req_min, contexts = _estimate(cfg, method, dataset, spec)
    return {"spec": spec, "tag": tag, "cfg": cfg, "mem": mem, "seconds": seconds, "req_mb": req_mb,
            "req_min": req_min, "contexts": contexts, "threads": threads}


def collect(results: Path, logs: Path) -> list[dict]:
    """Rows of the evaluate jobs of a workflow run on stand-ins (``snakemake`` with ``paths.data_dir`` at
    ``chorustic standin``'s folder): the worker's peak from each job's manifest, the job's CPU time from
    Snakemake's benchmark file (``cpu_time``; for a failed job, which has none: the runs' CPU time, a lower
    bound), the cost model's figures as a measured job's. A job stopped from outside (Ctrl-C,
    SIGTERM) has no manifest: its progress file gives a ``stopped`` row, its finished contexts' CPU time (a
    lower bound)."""
    import glob

    from chorustic.data.standin import standin_mark_of
    from chorustic.evaluation.numerics import cpu_model

    data_dirs = {json.loads(Path(c).read_text())["paths"]["data_dir"] for c in glob.glob(str(logs / "config-*.json"))}

    def mark(dataset: str) -> dict | None:  # a manifest written before the data were read has no mark of its own
        return next((m for d in data_dirs if (m := standin_mark_of(dataset, d)) is not None), None)

    paths = sorted(glob.glob(str(results / "runs" / "*" / "*.json")))
    for prog in sorted(glob.glob(str(results / "runs" / "*" / ".*.progress.json"))):
        name = Path(prog).name.removeprefix(".").removesuffix(".progress.json")
        if not any(Path(prog).with_name(n).exists() for n in (f"{name}.json", f"{name}.failed.json")):
            paths.append(prog)  # an interrupted job (a finished one removes its progress file)
    out = []
    for path in paths:
        doc = json.loads(Path(path).read_text())
        info = doc.get("standin") or mark(doc["dataset"])
        if not info:
            continue
        runs = doc["runs"]
        failed = [r for r in runs if r.get("status") == "failed"]
        stopped = path.endswith(".progress.json")
        bench = logs / "benchmarks" / "evaluate" / doc["method"] / f"{doc['dataset']}.tsv"
        cpu, peak = None, max((float(r.get("peak_memory_mb") or 0) for r in runs), default=0.0)
        peak = max([peak] + [p for r in failed if (p := _peak_at_limit(r.get("error"))) is not None])
        if bench.is_file() and not failed and not stopped:
            head, values = bench.read_text().splitlines()[:2]
            # Snakemake's figure is the job's last attempt's: the runs an earlier attempt finished are not in it
            # and cannot be told apart here (a job resumed across attempts is measured as one job, `measure`)
            cpu = float(dict(zip(head.split("\t"), values.split("\t")))["cpu_time"]) + _earlier_cpu_s(runs, {})
        if cpu is None:  # the runs' CPU time (all threads), or their wall time where a manifest has none
            cpu = sum(float(r["cpu_time_s"]) if r.get("cpu_time_s") is not None
                      else float(r.get("fit_time_s") or 0) + float(r.get("predict_time_s") or 0) for r in runs)
        out.append({"method": doc["method"], "dataset": doc["dataset"], "axis": DATASETS.get(doc["dataset"], ""),
                    "series_fraction": info["series_fraction"], "n_train": info["n_train"], "n_test": info["n_test"],
                    "n_channels": info["n_channels"], "length": info["length"], "contexts": len(runs),
                    "status": "stopped" if stopped else "failed" if failed else "ok", "cpu_s": round(cpu, 1),
                    "peak_mb": peak or None,
                    "error": (f"stopped from outside after {len(runs)} contexts: their "
                              + ("CPU time" if all(r.get("cpu_time_s") is not None for r in runs)
                                 else "fit and predict (wall) time")
                              if stopped else (failed[0].get("error") or "")[:200] if failed else ""),
                    "date": (doc.get("finished") or time.strftime("%Y-%m-%d"))[:10], "cpu": cpu_model()})
    return out


def _kept_runs(progress: Path) -> dict[tuple[str, int], dict]:
    """The finished runs an interrupted job's progress file, or a failed job's manifest, holds (what its next
    attempt keeps), by context."""
    try:
        runs = json.loads(progress.read_text())["runs"]
    except (OSError, ValueError, KeyError):
        return {}
    return {(r["protocol"], int(r["seed"])): r for r in runs if r.get("status") == "ok"}


def _earlier_cpu_s(runs: list[dict], kept: dict[tuple[str, int], dict]) -> float:
    """The CPU time of a job's earlier, stopped attempts that is not in this attempt's own: the runs it kept
    (``kept``: as the progress file held them when it started; their whole ``cpu_time_s``) and, for the
    contexts it ran, the predictions of the chunks it continued from (``earlier_attempts_cpu_s``). Not
    counted: the earlier attempts' work outside any context (loading the data, starting the worker)."""
    total = 0.0
    for r in runs:
        before = kept.get((r.get("protocol"), int(r.get("seed") or 0)))
        if before is not None and (before.get("result") or {}).get("sha256") == (r.get("result") or {}).get("sha256"):
            total += float(r.get("cpu_time_s") or 0)
        else:
            total += float((r.get("extra") or {}).get("earlier_attempts_cpu_s") or 0)
    return total


def preprocess(dataset: str, data_dir: str | Path, cache_dir: str | Path, lock_file: str | Path,
               out=subprocess.PIPE) -> subprocess.CompletedProcess:
    """``chorustic preprocess`` on a stand-in's data folder, as the workflow's preprocess rule runs it before any
    evaluate job (parsed and resampled into the cache once per dataset); its messages go to ``out``."""
    return subprocess.run([sys.executable, "-m", "chorustic", "preprocess", dataset, "--data-dir", str(data_dir),
                           "--cache-dir", str(cache_dir), "--offline", "--no-progress", "--lock-file", str(lock_file)],
                          stdout=out, stderr=subprocess.STDOUT, text=True, env=_job_env(), check=False)


#: Seconds between two copies of a running job's kept work into ``--keep``'s folder (a machine that goes away
#: loses at most this much of the job's work, beyond what the job itself had not yet written).
KEEP_EVERY_S = 300.0


def kept_work(results: Path, method: str, dataset: str) -> list[Path]:
    """The files of a job's work that its next attempt continues from, its record first: the progress file
    (or the record of an attempt that ended with failed runs), then the partial predictions of unfinished
    contexts and the memo files (not the worker's spec file, not a write in progress), then, where a record
    names them, the prediction files of its finished contexts. A job in its first context (1NN-DTW's full
    context of EigenWorms: hours) has no record yet, only partial predictions and memos; a finished job has
    none of these (its prediction files are results)."""
    from chorustic.evaluation.checkpoints import MEMO_KINDS, memo_path, partial_files

    record = _records(results, method, dataset)
    memos = [p for kind in MEMO_KINDS if (p := memo_path(results, method, dataset, kind)).is_file()]
    preds = sorted(results.glob(f"*/{method}/Predictions/{dataset}/testResample*.csv")) if record else []
    return record + partial_files(results, method, dataset) + memos + preds


def _records(results: Path, method: str, dataset: str) -> list[Path]:
    """The job's record files that exist: its progress file, the record of an attempt with failed runs."""
    from chorustic.evaluation.job import failure_record_path, progress_path

    return [p for p in (progress_path(results, method, dataset), failure_record_path(results, method, dataset))
            if p.is_file()]


def _read_records(results: Path, method: str, dataset: str) -> dict[Path, bytes]:
    """The bytes of the job's record files now (one removed meanwhile is left out)."""
    out = {}
    for f in _records(results, method, dataset):
        try:
            out[f] = f.read_bytes()
        except FileNotFoundError:
            pass
    return out


def _copy_if_changed(src: Path, dst: Path, data: bytes | None = None) -> bool:
    """``src``'s bytes (or ``data``) into ``dst`` atomically (a reader never sees half a file) where they differ."""
    from chorustic.io import atomic_open

    if data is None:
        try:
            data = src.read_bytes()
        except FileNotFoundError:  # removed by the job since it was listed
            return False
    if dst.is_file() and dst.read_bytes() == data:
        return False
    dst.parent.mkdir(parents=True, exist_ok=True)
    with atomic_open(dst, "wb") as fh:
        fh.write(data)
    return True


def keep_work(results: Path, keep: Path, method: str, dataset: str) -> int:
    """Make ``keep`` a copy of the job's kept work (paths relative to its results folder) that a next attempt
    can continue from; the files copied. The record is read first and written last, so the copy never names a
    prediction file it lacks, and the copy is made again while the record changed during it (a context that
    finished meanwhile). Files the job no longer keeps (a context's partial file once it finished) are removed
    from ``keep``, but only while the job holds work: a job that holds none yet (just started, or its restored
    work not yet read) never empties the copy."""
    copied = 0
    for _ in range(3):
        records = _read_records(results, method, dataset)
        files = kept_work(results, method, dataset)
        copied += sum(_copy_if_changed(f, keep / f.relative_to(results)) for f in files if f not in records)
        copied += sum(_copy_if_changed(f, keep / f.relative_to(results), data) for f, data in records.items())
        if _read_records(results, method, dataset) == records:
            break
    if files:
        names = {f.relative_to(results) for f in files}
        for old in [p for p in keep.rglob("*") if p.is_file() and p.relative_to(keep) not in names]:
            old.unlink()
    return copied


def restore_work(keep: Path, results: Path) -> int:
    """Copy the kept work in ``keep`` into the job's results folder where it holds no file of that name (its
    own is at least as new); the files copied."""
    copied = 0
    for src in sorted(p for p in keep.rglob("*") if p.is_file()) if keep.is_dir() else []:
        dst = results / src.relative_to(keep)
        if not dst.exists():
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
            copied += 1
    return copied


def _head() -> str:
    """The commit of this benchmark's repository (the harness the jobs run: :func:`_job_env`)."""
    return subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=False).stdout.strip() or "unknown"


def _note_harness(keep: Path, method: str) -> None:
    """Name beside ``keep`` the harness commit that makes the job's kept work (``<method>.harness.json``). A job's
    work counts only under the method code that made it (every kept file's key holds its fingerprint; other code
    discards it and the copy would follow), so kept work made by another commit stops the benchmark with the
    commit to run from (or the folder to remove to start the job again)."""
    note = keep.with_name(f"{method}.harness.json")
    head = _head()
    try:
        before = json.loads(note.read_text()).get("commit")
    except (OSError, ValueError):
        before = None
    if before and before != head and keep.is_dir() and any(p.is_file() for p in keep.rglob("*")):
        raise SystemExit(f"{method}: the kept work in {keep} was made by harness commit {before}, this is {head}. "
                         f"Run this benchmark from {before} (git worktree add <dir> {before}) to continue it, or "
                         f"remove {keep} and {note} to start the job again.")
    note.parent.mkdir(parents=True, exist_ok=True)
    note.write_text(json.dumps({"commit": head, "method": method}) + "\n")


def _job_env() -> dict[str, str]:
    """The environment of the jobs' processes: the harness of this benchmark's repository first on the path (a
    worktree at another commit runs its own code, whatever the installed package points at)."""
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, "PYTHONWARNINGS": "ignore"}


def _run_keeping(cmd: list[str], log: Path, keep: Path | None, results: Path, method: str, dataset: str) -> int:
    """Run the job (its messages to ``log``), copying its kept work to ``keep`` as it goes and when it ends,
    stopped from outside included; its exit status. A copy that fails is said and tried again at the next
    turn: it never stops the job."""
    def copy() -> None:
        try:
            keep_work(results, keep, method, dataset)
        except OSError as exc:
            print(f"{method}/{dataset}: the kept work could not be copied to {keep} ({exc}); trying again in "
                  f"{KEEP_EVERY_S:.0f} s", file=sys.stderr)

    with open(log, "a") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, text=True, env=_job_env())
        try:
            while True:
                try:
                    return proc.wait(timeout=KEEP_EVERY_S if keep is not None else None)
                except subprocess.TimeoutExpired:
                    copy()
        finally:
            if proc.poll() is None:  # stopped from outside (Ctrl-C): the job's own signal handling stops it
                try:
                    proc.wait(timeout=60)
                except (subprocess.TimeoutExpired, KeyboardInterrupt):
                    pass
            if keep is not None:
                copy()


def measure(workdir: Path, method: str, dataset: str, fraction: float, job: dict, limit_s: float,
            keep: Path | None = None) -> dict:
    import yaml

    from chorustic.data.standin import write_standin
    from chorustic.evaluation.numerics import cpu_model
    from chorustic.methods.cost import installed_torch_version

    spec, cfg, mem, seconds = job["spec"], job["cfg"], job["mem"], job["seconds"]
    req_mb, req_min, contexts = job["req_mb"], job["req_min"], job["contexts"]
    write_standin(spec, workdir / "data" / job["tag"])
    row = {"method": method, "dataset": dataset, "axis": DATASETS.get(dataset, ""), "series_fraction": fraction,
           "n_train": spec.n_train, "n_test": spec.n_test, "n_channels": spec.n_channels, "length": spec.length,
           "contexts": contexts, "model_s": round(seconds, 1), "model_mb": round(mem), "request_mb": req_mb,
           "request_min": req_min, "date": time.strftime("%Y-%m-%d"), "cpu": cpu_model(),
           "torch": installed_torch_version() or "",  # this process runs the jobs' Python
           "threads": job.get("threads", 1)}
    # the job's own limits are the request's (a limit hit is a finding), capped by this benchmark's budget
    runtime = min(req_min, 3 * limit_s / 60)  # wall clock: room for other work on the machine
    cmd = [sys.executable, "-m", "chorustic", "evaluate", "--config", str(cfg), "--method", method,
           "--dataset", dataset, "--threads", str(job.get("threads", 1)), "--mem-mb", str(req_mb), "--runtime", f"{runtime:.2f}"]
    # the job's messages (its progress through a long context's chunks) as they come; every attempt's
    log = Path(cfg).parent / "evaluate.log"
    # the data read and resampled into the cache first, as the workflow's preprocess rule does before any evaluate
    # job (once per dataset, billed as its own rule): not the job's time
    paths = yaml.safe_load(Path(cfg).read_text())  # the job's own data folder, cache and lock file
    with open(log, "a") as fh:
        preprocess(dataset, paths["paths"]["data_dir"], paths["paths"]["cache_dir"], paths["data"]["lock_file"], fh)
    results = Path(cfg).parent / "results"
    manifest = results / "runs" / method
    keep = keep / job["tag"] / method if keep is not None else None
    if keep is not None:
        _note_harness(keep, method)
        if n := restore_work(keep, results):
            print(f"{method}/{job['tag']}: continuing from {n} file(s) of kept work in {keep}", file=sys.stderr)
    # an interrupted attempt's finished runs, or those of an attempt that ended with failed runs: this one keeps them
    kept = {**_kept_runs(manifest / f"{dataset}.failed.json"), **_kept_runs(manifest / f".{dataset}.progress.json")}
    t0, r0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    returncode = _run_keeping(cmd, log, keep, results, method, dataset)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    row["wall_s"] = round(time.perf_counter() - t0, 1)
    # the job's CPU time (its processes: the command, the supervisor, the worker), what the cost model's
    # one-thread time is: robust to other work on the machine, which only stretches the wall time
    row["cpu_s"] = round(r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime, 1)
    doc = None
    for name in (f"{dataset}.json", f"{dataset}.failed.json"):
        if (manifest / name).exists():
            doc = json.loads((manifest / name).read_text())
            break
    runs = doc["runs"] if doc else []
    row["cpu_s"] = round(row["cpu_s"] + _earlier_cpu_s(runs, kept), 1)
    peaks = [r["peak_memory_mb"] for r in runs if r.get("peak_memory_mb")]
    peaks += [p for r in runs if (p := _peak_at_limit(r.get("error"))) is not None]  # stopped at the limit
    row["peak_mb"] = round(max(peaks)) if peaks else None
    failed = [r for r in runs if r.get("status") == "failed"]
    row["status"] = "ok" if doc and not failed and returncode in (0, 1) else "failed"
    if keep is not None:  # a finished job keeps nothing; one that ended with failed runs, what its next attempt takes
        if row["status"] == "ok":
            shutil.rmtree(keep, ignore_errors=True)
            keep.with_name(f"{method}.harness.json").unlink(missing_ok=True)
        else:
            keep_work(results, keep, method, dataset)
    row["error"] = (failed[0]["error"][:200] if failed else
                    (log.read_text().strip().splitlines() or [""])[-1][:200] if row["status"] != "ok" else "")
    row["time_ratio"] = round(row["cpu_s"] / seconds, 2) if seconds else None
    row["mem_ratio"] = round(row["peak_mb"] / mem, 2) if row["peak_mb"] and mem else None
    return row


#: Rows that a method's code has since made obsolete, by method: the day its current code was first measured and
#: which of its rows that code changed. Multivariate 1NN-DTW before 2026-12-01 read each alignment cell's channels
#: strided (the collection's layout), at 4-7x the CPU time per cell of the plugin's channels side by side
#: (benchmarks/dtw_cells.py).
SUPERSEDED = {"dtw_1nn": ("2026-12-01", lambda r: int(r["n_channels"]) > 1)}


def superseded(row: dict) -> bool:
    """Whether a measured row was made by code of its method that :data:`SUPERSEDED` says has changed since."""
    since, which = SUPERSEDED.get(row["method"], (None, None))
    return since is not None and row["date"] < since and which(row)


#: Terms every method has, whatever its current model says.
ALWAYS_FITTED = ("time_job_s", "mem_base_mb", "mem_bytes_per_value")
#: Terms kept at the model's value: the harness's own work (the same for every method), and what a job's peak
#: cannot separate, measured on its own (Hydra's convolution outputs: benchmarks/hydra_memory.py; an elastic
#: distance's cost beyond the cache: the per-context CPU times of the full-size jobs) or known from the arrays'
#: sizes (a nearest-neighbour search's distances per query and context series, the embeddings a frozen encoder keeps
#: per series and channel).
KEPT = ("time_ns_per_input_value", "mem_bytes_per_row_point", "mem_bytes_per_query_pair", "time_ns_per_cell_spilled",
        "mem_bytes_per_memo_embedding")
#: A method's own terms kept at its model's value besides :data:`KEPT`: what its jobs on stand-ins (at most a few
#: hundred context rows and 512 features) cannot tell apart, measured on one context of their own
#: (benchmarks/tabicl_memory.py, benchmarks/chorustic_memory.py): TabICL's attention over a row's features (the
#: square of the flattened features) and its work per feature, and its ICL's attention of every row to the context
#: rows, which a job's rows resemble at these sizes and which decides it beyond a few thousand context rows; the
#: same attention of ChorusTIC's paper configuration.
KEPT_FOR = {**{m: ("time_ns_per_feature_pair", "time_ns_per_feature", "time_ns_per_series_pair")
               for m in ("tabicl", "tabicl_v2")},
            # ChorusTIC's paper configuration: its in-context attention per member and pair, from one prediction at
            # 500 and at 2,000 context rows (benchmarks/chorustic_memory.py); its jobs here hold at most 749
            "chorustic_paper": ("time_ns_per_member_pair",)}


def _fit_one(terms: "np.ndarray", measured: "np.ndarray", names: tuple[str, ...], current: dict[str, float],
             upper: float, keep: tuple[str, ...] = KEPT) -> dict[str, float]:
    """Coefficients of ``names`` (those the current model uses, the model's form) that minimise the
    relative error of ``terms @ coef`` against ``measured`` (non-negative least squares), then scaled up
    where needed so that a job's request (``upper`` x the model: ``MEM_SAFETY``, ``TIME_SAFETY``) is at
    least every measurement: a job is never stopped at what its model asks."""
    import numpy as np
    from scipy.optimize import nnls

    kept = [i for i, k in enumerate(names) if k in keep]
    rest = measured - terms[:, kept] @ np.array([current[names[i]] for i in kept]) if kept else measured
    used = [i for i, k in enumerate(names) if (current[k] > 0 or k in ALWAYS_FITTED) and k not in keep]
    coef = {k: (current[k] if k in keep else 0.0) for k in names}
    if len(measured) > len(used):
        a = terms[:, used] / measured[:, None]
        scale = np.maximum(np.abs(a).max(axis=0), 1e-30)  # columns of ~1 for a well-conditioned solve
        x, _ = nnls(a / scale, rest / measured)
        for i, v in zip(used, x / scale):
            coef[names[i]] = float(v)
    else:  # too few jobs to tell the terms apart: the current model's form, scaled to the jobs (geometric mean)
        model = terms[:, used] @ np.array([current[names[i]] for i in used])
        factor = float(np.exp(np.mean(np.log(np.maximum(rest, 1e-9) / np.maximum(model, 1e-9)))))
        for i in used:
            coef[names[i]] = current[names[i]] * factor
    if len(measured) > 1:  # centred: one factor on the fitted terms that makes the worst ratio either way least
        coef = _centred(terms, measured, names, coef, keep)
    if upper:  # the fitted terms scaled where needed until every job's request (safety x the model) covers it
        kept, fitted = _kept_and_fitted(terms, names, coef, keep)
        short = (measured / upper - kept) / np.maximum(fitted, 1e-9)
        factor = max(1.0, float(np.max(short, initial=1.0)))
        coef = {k: v if k in keep else v * factor for k, v in coef.items()}
    return coef


def _kept_and_fitted(terms: "np.ndarray", names: tuple[str, ...], coef: dict[str, float],
                     keep: tuple[str, ...] = KEPT) -> tuple["np.ndarray", "np.ndarray"]:
    """Each job's model split into its kept terms (``keep``) and the fitted ones."""
    import numpy as np

    return (terms @ np.array([coef[k] if k in keep else 0.0 for k in names]),
            terms @ np.array([0.0 if k in keep else coef[k] for k in names]))


def _centred(terms: "np.ndarray", measured: "np.ndarray", names: tuple[str, ...], coef: dict[str, float],
             keep: tuple[str, ...] = KEPT) -> dict[str, float]:
    """``coef`` with its fitted terms (those not in ``keep``) times the factor that minimises the largest
    |log(measured / model)|: least squares weighs the typical job, the target (every job within 2x of its
    model) is about the worst one, so the band of ratios is centred on 1 (a spread under 4x fits in 2x)."""
    import numpy as np
    from scipy.optimize import minimize_scalar

    kept, fitted = _kept_and_fitted(terms, names, coef, keep)

    def worst(log_k: float) -> float:
        return float(np.max(np.abs(np.log(measured / np.maximum(kept + np.exp(log_k) * fitted, 1e-9)))))

    best = minimize_scalar(worst, bounds=(-2.0, 2.0), method="bounded", options={"xatol": 1e-4})
    factor = float(np.exp(best.x)) if best.fun < worst(0.0) else 1.0
    return {k: v if k in keep else v * factor for k, v in coef.items()}


def _literal(coef: dict[str, float], model) -> str:
    """``CostModel(...)`` with ``coef`` (3 significant digits) and the model's other fields: ready to paste."""
    import dataclasses

    def g(v):
        return f"{float(f'{v:.3g}'):g}" if v else "0"

    defaults = {f.name: f.default for f in dataclasses.fields(model)}
    parts = [f"{k}={g(v)}" for k, v in coef.items() if v or defaults.get(k)]  # a 0 where the default is not
    parts += [f"{f.name}={getattr(model, f.name)!r}" for f in dataclasses.fields(model)
              if f.name not in coef and getattr(model, f.name) is not None]
    return "CostModel(" + ", ".join(parts) + ")"


def fit(csv_paths: list[Path], workdir: Path, figure: Path | None = None, checkouts: Path | None = None) -> str:
    """Refit every measured method's cost model on the rows of ``csv_paths``: a summary,
    then per method the refitted model and every job's measured / model ratio with the committed model
    and with the refit. Markdown; with ``figure``, measured against modelled time and memory (PNG). A job
    measured again counts with its last measurement on one thread; a row of code its method no longer runs
    (:data:`SUPERSEDED`) does not count."""
    import numpy as np

    from chorustic.data.standin import standin_spec
    from chorustic.methods.cost import CostModel
    from chorustic.resources import MEM_SAFETY, TIME_SAFETY

    latest = {}  # a job measured again (numba's caches warm, a quieter machine): its last measurement
    for p in csv_paths:
        for r in csv.DictReader(open(p)):
            if superseded(r):  # its method's code has changed since: it measures code that no longer runs
                continue
            key = (r["method"], r["dataset"], float(r["series_fraction"]))
            if int(r.get("threads") or 1) > 1 and key in latest and int(latest[key].get("threads") or 1) == 1:
                continue  # the models are one thread's CPU time: a job measured on one thread keeps that row
            latest[key] = r

    def peak_of(r):  # the worker's peak; for a job stopped at its memory limit, the peak it reached
        if r["status"] != "ok":
            peak = _peak_at_limit(r["error"])
            return float("nan") if peak is None else peak
        return float(r["peak_mb"])

    # every job counts: a finished one for time and memory, one stopped at a limit as a lower bound (its
    # CPU time so far; the peak it reached at the memory limit) that the refit is checked against
    rows = [r for r in latest.values() if r.get("cpu_s") not in ("", None, "None")]
    runs = _assets(workdir, checkouts)
    _add_plugins(runs, [r["method"] for r in rows])
    scratch_dir = tempfile.TemporaryDirectory(prefix="archive-scale-fit-")  # removed when fit returns
    scratch = Path(scratch_dir.name)  # the jobs' configurations, re-made here
    summary = ["| method | jobs | datasets | CPU s measured | time: measured / committed model | "
               "memory: measured / committed model | time / refit | memory / refit |",
               "|---|---|---|---|---|---|---|---|"]
    detail, points = [], {}
    for method in dict.fromkeys(r["method"] for r in rows):
        mine = [r for r in rows if r["method"] == method]
        t, m, secs, mbs, labels, extra = [], [], [], [], [], []
        for r in mine:
            spec = standin_spec(r["dataset"], series_fraction=float(r["series_fraction"]))
            cfg_path = _config(scratch, f"{r['dataset']}-f{float(r['series_fraction']):g}", r["dataset"],
                               {method: runs[method]})
            plugin, params, size = _standin_job(cfg_path, method, r["dataset"], spec)
            model = plugin.cost_model(**params)
            band = plugin.cost_band(size, **params)
            t.append(model.time_terms(size, band=band))
            m.append(model.memory_terms(size))
            # what the plugin's job_cost adds to its cost model's memory (TabICL's forward passes), and the CUDA
            # build's libraries where the row ran on it: kept as they are
            extra.append(plugin.job_cost(size, **params)[0] - model.estimate(size, band=band)[0]
                         + model.torch_build_mb(_row_build(r)))
            secs.append(float(r["cpu_s"]))
            mbs.append(peak_of(r))
            labels.append(f"{r['dataset']} {float(r['series_fraction']):g} "
                          f"({spec.n_train}/{spec.n_test} x {spec.n_channels} x {spec.length})")
        t, m, secs, mbs, extra = map(np.array, (t, m, secs, mbs, extra))
        timed = np.array([r["status"] == "ok" for r in mine])
        sized = ~np.isnan(mbs)
        now = {k: getattr(model, k) for k in CostModel.TIME_COEFFICIENTS + CostModel.MEMORY_COEFFICIENTS}
        keep = KEPT + KEPT_FOR.get(method, ())
        new = {**_fit_one(t[timed], secs[timed], CostModel.TIME_COEFFICIENTS, now, TIME_SAFETY, keep),
               **_fit_one(m[sized], np.maximum(mbs[sized] - extra[sized], 1.0), CostModel.MEMORY_COEFFICIENTS, now,
                         MEM_SAFETY)}

        def model_of(coef):
            return (t @ np.array([coef[k] for k in CostModel.TIME_COEFFICIENTS]),
                    m @ np.array([coef[k] for k in CostModel.MEMORY_COEFFICIENTS]) + extra)

        (t0, m0), (t1, m1) = model_of(now), model_of(new)
        points[method] = (secs[timed], t0[timed], mbs[sized], m0[sized])

        def span(a):
            return f"{a.min():.2f}-{a.max():.2f}"

        if not timed.any():
            continue
        summary.append(f"| {method} | {int(timed.sum())} (+{int((~timed).sum())} stopped) | "
                       f"{len({r['dataset'] for r in mine})} | "
                       f"{secs[timed].min():.0f}-{secs[timed].max():.0f} | {span((secs / t0)[timed])} | "
                       f"{span((mbs / m0)[sized])} | {span((secs / t1)[timed])} | {span((mbs / m1)[sized])} |")
        detail += [f"### {method}", "", f"Refit: `{_literal(new, model)}`", "",
                   "| job (train/test x channels x length) | CPU s | committed model s | ratio | refit s | ratio "
                   "| peak MB | committed model MB | ratio | refit MB | ratio |",
                   "|---|---|---|---|---|---|---|---|---|---|---|"]
        for i, lab in enumerate(labels):
            stop = "" if timed[i] else ">= "  # stopped at a limit: what it had used by then
            times = (f"{stop}{secs[i]:.1f} | {t0[i]:.1f} | {stop}{secs[i] / t0[i]:.2f} | {t1[i]:.1f} | "
                     f"{stop}{secs[i] / t1[i]:.2f}")
            mems = (f"{stop}{mbs[i]:.0f} | {m0[i]:.0f} | {stop}{mbs[i] / m0[i]:.2f} | {m1[i]:.0f} | "
                    f"{stop}{mbs[i] / m1[i]:.2f}") if sized[i] else f"| {m0[i]:.0f} | | {m1[i]:.0f} |"
            detail.append(f"| {lab} | {times} | {mems} |")
        detail.append("")
    failed = [r for r in rows if r["status"] != "ok"]
    if failed:
        detail += ["### Jobs stopped at a limit (rows with >= above)", "", "| method | job | CPU s | error |",
                   "|---|---|---|---|"]
        detail += [f"| {r['method']} | {r['dataset']} {float(r['series_fraction']):g} | {r['cpu_s']} | "
                   f"{r['error'][:160]} |" for r in failed]
        detail.append("")
    if figure is not None:
        _figure(points, figure)
    scratch_dir.cleanup()
    head = [f"{len(rows)} jobs ({', '.join(p.name for p in csv_paths)}); ratio = measured / model (1: exact, "
            "above 1: the model is short).", ""]
    return "\n".join(head + summary + [""] + detail)


def _figure(points: dict, path: Path) -> None:
    """Measured against modelled CPU time and peak memory, one colour per method (log-log, y = x)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from matplotlib.ticker import LogLocator, NullFormatter, ScalarFormatter

    fig, axes = plt.subplots(1, 2, figsize=(11, 5))
    colors, markers = plt.get_cmap("tab20").colors, "osD^v<>ph*"
    for i, (method, (secs, t0, mbs, m0)) in enumerate(points.items()):
        style = {"s": 20, "label": method, "color": colors[(2 * i) % 20 + (i // 10)], "marker": markers[i % 10]}
        axes[0].scatter(t0, secs, **style)
        axes[1].scatter(m0, mbs, **style)
    for ax, what in zip(axes, ("CPU time of the job (s)", "peak memory of the worker (MB)")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        lo, hi = ax.get_xlim()
        lo, hi = min(lo, ax.get_ylim()[0]), max(hi, ax.get_ylim()[1])
        ax.plot([lo, hi], [lo, hi], "k-", lw=0.8)
        ax.plot([lo, hi], [2 * lo, 2 * hi], "k:", lw=0.6)
        ax.plot([lo, hi], [lo / 2, hi / 2], "k:", lw=0.6)
        ax.set_xlim(lo, hi)
        ax.set_ylim(lo, hi)
        for axis in (ax.xaxis, ax.yaxis):
            axis.set_major_locator(LogLocator(base=10, subs=(1, 2, 5)))
            axis.set_major_formatter(ScalarFormatter())
            axis.set_minor_formatter(NullFormatter())
        ax.set_xlabel(f"cost model: {what}")
        ax.set_ylabel(f"measured: {what}")
    axes[0].legend(fontsize=7, loc="upper left")
    fig.suptitle("Evaluate jobs on stand-ins of the archives' largest shapes (dotted: 2x off)")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)


def _upgrade_header(path: Path) -> None:
    """A table written before the last columns (``torch``, ``threads``) gets the current header, its rows kept
    with those columns empty (a row without ``threads`` ran on one, without ``torch`` on :data:`ROWS_TORCH`), so
    that new rows append under it."""
    if not path.is_file():
        return
    with open(path, newline="") as fh:
        header = next(csv.reader(fh), [])
        rows = list(csv.DictReader(fh, fieldnames=header)) if header and header != COLUMNS else None
    if rows is None:
        return
    if set(header) - set(COLUMNS):
        raise SystemExit(f"{path}: columns {sorted(set(header) - set(COLUMNS))} are not this benchmark's; "
                         "write to another --out")
    from chorustic.io import atomic_open

    with atomic_open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--methods", nargs="+", default=CLASSICAL, help="method keys (see the module docstring)")
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS), help="registry datasets to stand in for")
    ap.add_argument("--fractions", nargs="+", type=float, default=[0.01, 0.03, 0.1, 0.3, 1.0],
                    help="series fractions tried in this order while the next fits --max-job-seconds")
    ap.add_argument("--max-job-seconds", type=float, default=600.0, help="the longest job run here")
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/archive-scale"), help="stand-ins, assets, runs")
    ap.add_argument("--checkouts", type=Path, default=None,
                    help="the authors' clones (default: $CHORUSTIC_CHECKOUTS); nutime_rf runs where NuTime's is")
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "archive_scale.csv",
                    help="CSV the rows are appended to (one row per job)")
    ap.add_argument("--threads", type=int, default=1,
                    help="the jobs' threads (default 1, as the cost models' CPU time; a row's CPU time is all "
                         "its threads')")
    ap.add_argument("--keep", type=Path, default=None,
                    help="copy each job's kept work here as it runs and continue from it (a job longer than a "
                         "machine's lease)")
    ap.add_argument("--fit", nargs="+", type=Path, metavar="CSV",
                    help="run nothing: refit the cost models on these measured tables and print the result")
    ap.add_argument("--collect", nargs=2, type=Path, metavar=("RESULTS", "LOGS"),
                    help="run nothing: append the rows of a workflow run on stand-ins (its results and logs folders)")
    ap.add_argument("--figure", type=Path, help="with --fit: write the measured-against-model figure (PNG) here")
    args = ap.parse_args(argv)
    if args.fit:
        print(fit(args.fit, args.workdir, args.figure, args.checkouts))
        return 0
    if args.collect:
        rows = collect(*args.collect)
        _upgrade_header(args.out)
        new = not args.out.exists()
        with open(args.out, "a", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=COLUMNS, extrasaction="ignore")
            if new:
                writer.writeheader()
            writer.writerows(rows)
        print(f"{len(rows)} rows appended to {args.out}")
        return 0
    runs = _assets(args.workdir, args.checkouts)
    _add_plugins(runs, args.methods)
    unknown = [m for m in args.methods if m not in runs]
    if unknown:
        ap.error(f"unknown method(s) {unknown}; known: {sorted(runs)} and every plugin that runs offline")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    _upgrade_header(args.out)
    new = not args.out.exists()
    with open(args.out, "a", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=COLUMNS)
        if new:
            writer.writeheader()
        for dataset in args.datasets:
            for method in args.methods:
                last = None
                for f in sorted(args.fractions):
                    job = prepare(args.workdir, method, runs[method], dataset, f, args.threads)
                    # grow only while the next job is expected to fit the budget: the last one's time
                    # times the cost model's growth (the model's form is what the rows test)
                    expected = job["seconds"] if last is None else last["cpu_s"] * job["seconds"] / last["model_s"]
                    if (last is not None and last["status"] != "ok") or (
                            last is not None and expected > args.max_job_seconds):
                        break
                    row = measure(args.workdir, method, dataset, f, job, args.max_job_seconds, args.keep)
                    writer.writerow(row)
                    fh.flush()
                    print("\t".join(str(row[c]) for c in COLUMNS[:18]), flush=True)
                    last = row
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(f"done: {usage.ru_utime + usage.ru_stime:.0f} CPU-s in the jobs", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
