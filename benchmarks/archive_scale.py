"""Paper scale on stand-ins: every offline method on the shapes of the archives' largest datasets.

Each point is one evaluate job run as the workflow runs it: ``chorustic evaluate`` in a fresh process
(the supervisor, its worker, the job's memory and time limits) on a stand-in
(:mod:`chorustic.data.standin`: random data with the dataset's exact shape, never a result), every
protocol context of the paper profile (full, 5/10-shot x 5 seeds, 20-60 %), one thread. Recorded side by
side: the job's wall time and its worker's peak memory, the method's cost model at the same shape
(``chorustic.resources.evaluate_estimate``: before margins) and what the job asks for
(``job_request``: with margins). Where the whole shape would take longer than ``--max-job-seconds``
here, the dataset's series are scaled down (``--fractions``, growing until the next one would not fit),
so the rows of one dataset show whether the model's form holds as the job grows.

    python benchmarks/archive_scale.py --methods minirocket quant --datasets Crop PEMS-SF \\
        [--fractions 0.01 0.03 0.1 0.3 1] [--max-job-seconds 600] [--workdir /tmp/archive-scale] \\
        [--out benchmarks/results/archive_scale.csv]

Methods: the classical four (``minirocket``, ``multirocket_hydra``, ``quant``, ``dtw_1nn``), ``chorustic_small``
(the committed ``models/chorustic-small``), ``chorustic_paper`` (the paper configuration, random weights),
and the pretrained baselines with random weights at their real architectures: ``tabicl`` (v1.1),
``tabicl_v2``, ``mantis_rf`` (Mantis-8M), ``mantisv2_rf``, ``moment_svm`` (MOMENT-1-base). The committed
table is ``benchmarks/results/archive_scale.csv``, its summary ``benchmarks/results/archive_scale.md``.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import resource
import subprocess
import sys
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
           "request_mb", "request_min", "error", "date", "cpu"]


def _assets(workdir: Path) -> dict[str, dict]:
    """Method runs (plugin + params) for every benchmarked method; random-weight files written once."""
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
    runs["mantisv2_rf"] = {"plugin": "mantisv2_rf", "params": {"weights": once(
        assets / "mantisv2", lambda p: ck.write_mantis(p, "v2", real_size=True))}}
    runs["moment_svm"] = {"plugin": "moment_svm", "params": {"weights": once(
        assets / "moment-base", lambda p: ck.write_moment(p, real_size=True))}}
    return runs


def _config(workdir: Path, tag: str, dataset: str, runs: dict[str, dict]) -> Path:
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
        "methods": {m: {**r, "resources": {"threads": 1}} for m, r in runs.items()},
        "reports": {"reference_method": next(iter(runs))},
    }
    path = root / "config.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


def _estimate(cfg_path: Path, method: str, dataset: str, spec) -> tuple[float, float, int, int, int]:
    """The cost model at the stand-in's shape: (MB, s, request MB, request min, contexts)."""
    import dataclasses

    from chorustic import config as cc
    from chorustic import resources as cr
    from chorustic.methods import discover

    cfg = cc.load_config([cfg_path])
    entry = cc.method_entry(cfg, method)
    plugin = discover(only=entry["plugin"]).get(entry["plugin"])
    size = cr.job_size(dataset, input_kind=plugin.info.input_kind, contexts=cr.n_contexts(cfg))
    size = dataclasses.replace(size, n_train=spec.n_train, n_test=spec.n_test, n_channels=spec.n_channels)
    mem, seconds = plugin.job_cost(size, **cc.resolved_params(cfg, method))
    req_mb, req_min = cr.job_request(mem, seconds)
    return mem, seconds, req_mb, req_min, size.n_contexts


def prepare(workdir: Path, method: str, run: dict, dataset: str, fraction: float) -> dict:
    """The job's configuration and the cost model's numbers at the stand-in's shape (nothing runs)."""
    from chorustic.data.standin import standin_spec

    spec = standin_spec(dataset, series_fraction=fraction)
    tag = f"{dataset}-f{fraction:g}"
    cfg = _config(workdir, tag, dataset, {method: run})
    mem, seconds, req_mb, req_min, contexts = _estimate(cfg, method, dataset, spec)
    return {"spec": spec, "tag": tag, "cfg": cfg, "mem": mem, "seconds": seconds, "req_mb": req_mb,
            "req_min": req_min, "contexts": contexts}


def measure(workdir: Path, method: str, dataset: str, fraction: float, job: dict, limit_s: float) -> dict:
    from chorustic.data.standin import write_standin

    spec, cfg, mem, seconds = job["spec"], job["cfg"], job["mem"], job["seconds"]
    req_mb, req_min, contexts = job["req_mb"], job["req_min"], job["contexts"]
    write_standin(spec, workdir / "data" / job["tag"])
    row = {"method": method, "dataset": dataset, "axis": DATASETS.get(dataset, ""), "series_fraction": fraction,
           "n_train": spec.n_train, "n_test": spec.n_test, "n_channels": spec.n_channels, "length": spec.length,
           "contexts": contexts, "model_s": round(seconds, 1), "model_mb": round(mem), "request_mb": req_mb,
           "request_min": req_min, "date": time.strftime("%Y-%m-%d"), "cpu": _cpu()}
    # the job's own limits are the request's (a limit hit is a finding), capped by this benchmark's budget
    runtime = min(req_min, 3 * limit_s / 60)  # wall clock: room for other work on the machine
    cmd = ["chorustic", "evaluate", "--config", str(cfg), "--method", method, "--dataset", dataset,
           "--threads", "1", "--mem-mb", str(req_mb), "--runtime", f"{runtime:.2f}"]
    t0, r0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "PYTHONWARNINGS": "ignore"})
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    row["wall_s"] = round(time.perf_counter() - t0, 1)
    # the job's CPU time (its processes: the command, the supervisor, the worker), what the cost model's
    # one-thread time is: robust to other work on the machine, which only stretches the wall time
    row["cpu_s"] = round(r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime, 1)
    manifest = Path(cfg).parent / "results" / "runs" / method
    doc = None
    for name in (f"{dataset}.json", f"{dataset}.failed.json"):
        if (manifest / name).exists():
            doc = json.loads((manifest / name).read_text())
            break
    runs = doc["runs"] if doc else []
    peaks = [r["peak_memory_mb"] for r in runs if r.get("peak_memory_mb")]
    row["peak_mb"] = round(max(peaks)) if peaks else None
    failed = [r for r in runs if r.get("status") == "failed"]
    row["status"] = "ok" if doc and not failed and proc.returncode in (0, 1) else "failed"
    row["error"] = (failed[0]["error"][:200] if failed else
                    (proc.stderr.strip().splitlines() or [""])[-1][:200] if row["status"] != "ok" else "")
    row["time_ratio"] = round(row["cpu_s"] / seconds, 2) if seconds else None
    row["mem_ratio"] = round(row["peak_mb"] / mem, 2) if row["peak_mb"] and mem else None
    return row


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--methods", nargs="+", default=CLASSICAL, help="method keys (see the module docstring)")
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS), help="registry datasets to stand in for")
    ap.add_argument("--fractions", nargs="+", type=float, default=[0.01, 0.03, 0.1, 0.3, 1.0],
                    help="series fractions tried in this order while the next fits --max-job-seconds")
    ap.add_argument("--max-job-seconds", type=float, default=600.0, help="the longest job run here")
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/archive-scale"), help="stand-ins, assets, runs")
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "archive_scale.csv",
                    help="CSV the rows are appended to (one row per job)")
    args = ap.parse_args(argv)
    runs = _assets(args.workdir)
    unknown = [m for m in args.methods if m not in runs]
    if unknown:
        ap.error(f"unknown method(s) {unknown}; known: {sorted(runs)}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    new = not args.out.exists()
    with open(args.out, "a", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=COLUMNS)
        if new:
            writer.writeheader()
        for dataset in args.datasets:
            for method in args.methods:
                last = None
                for f in sorted(args.fractions):
                    job = prepare(args.workdir, method, runs[method], dataset, f)
                    # grow only while the next job is expected to fit the budget: the last one's time
                    # times the cost model's growth (the model's form is what the rows test)
                    expected = job["seconds"] if last is None else last["cpu_s"] * job["seconds"] / last["model_s"]
                    if (last is not None and last["status"] != "ok") or (
                            last is not None and expected > args.max_job_seconds):
                        break
                    row = measure(args.workdir, method, dataset, f, job, args.max_job_seconds)
                    writer.writerow(row)
                    fh.flush()
                    print("\t".join(str(row[c]) for c in COLUMNS[:18]), flush=True)
                    last = row
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(f"done: {usage.ru_utime + usage.ru_stime:.0f} CPU-s in the jobs", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
