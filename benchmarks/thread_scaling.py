"""Thread scaling: how much faster a method's evaluate job runs on more threads than on one.

For each method, one stand-in job of about a minute on one thread (a fraction of an archive shape,
:data:`JOBS`) is run as the workflow runs it (``benchmarks/archive_scale.py``'s ``measure``: ``chorustic
evaluate`` in a fresh process, every protocol context of the paper profile) on each of ``--threads``. The
per-context work is what threads can speed up: the sum of the runs' fit and predict (wall) times in the job's
manifest. Its speed-up ``S`` on ``n`` threads gives Amdahl's parallel fraction ``p = (1 - 1/S) / (1 - 1/n)``,
the cost model's ``parallel_fraction`` (``CostModel.thread_speedup``), from which ``chorustic plan-run``
costs a job on any number of threads. Run it on otherwise free cores: a busy machine's threads wait for
each other's cores, and the speed-up it measures is the machine's, not the method's.

    python benchmarks/thread_scaling.py [--methods minirocket quant ...] [--threads 1 2] \\
        [--workdir /tmp/thread-scaling] [--out benchmarks/results/thread_scaling.csv]
    python benchmarks/thread_scaling.py --methods my_method --dataset Crop --fraction 0.03   # any plugin

Rows are appended to ``--out`` (one per job); the summary (speed-up and parallel fraction per method) is
printed.
"""

from __future__ import annotations

import argparse
import csv
import json
import shutil
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

import archive_scale  # noqa: E402  (the job runner, its stand-ins and the methods' assets)

#: One job per method: (dataset, series fraction), about a minute on one thread here.
JOBS = {
    "minirocket": ("StarLightCurves", 0.3),
    "multirocket_hydra": ("ElectricDevices", 0.1),
    "quant": ("StarLightCurves", 0.3),
    "dtw_1nn": ("ElectricDevices", 0.05),
    "chorustic_small": ("Crop", 0.1),
    "chorustic_paper": ("StarLightCurves", 0.01),
    "mantis_rf": ("Crop", 0.03),
    "mantisv2_rf": ("Crop", 0.03),
    "tabicl": ("Crop", 0.01),
    "tabicl_v2": ("Crop", 0.01),
    "moment_svm": ("Crop", 0.01),
}
COLUMNS = ["method", "dataset", "series_fraction", "threads", "contexts", "status", "work_s", "wall_s", "cpu_s",
           "speedup", "parallel_fraction", "date", "cpu", "note"]


def parallel_fraction(speedup: float, threads: int) -> float:
    """Amdahl's parallel fraction from a speed-up on ``threads`` threads (clipped to [0, 1])."""
    if threads <= 1:
        raise ValueError("a speed-up on one thread says nothing about the parallel fraction")
    return min(1.0, max(0.0, (1.0 - 1.0 / speedup) / (1.0 - 1.0 / threads)))


def work_seconds(cfg: Path, method: str, dataset: str) -> tuple[float, int] | None:
    """(sum of the runs' fit + predict wall times, runs) of a finished job, or None."""
    path = Path(cfg).parent / "results" / "runs" / method / f"{dataset}.json"
    if not path.is_file():
        return None
    runs = [r for r in json.loads(path.read_text())["runs"] if r.get("status") == "ok"]  # not the ineligible
    return sum(float(r["fit_time_s"]) + float(r["predict_time_s"]) for r in runs), len(runs)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--methods", nargs="+", default=list(JOBS),
                    help="method keys of benchmarks/archive_scale.py, or any plugin that runs offline")
    ap.add_argument("--dataset", help="the stand-in's registry dataset, for every method (default: JOBS)")
    ap.add_argument("--fraction", type=float, help="with --dataset: the share of its series (default 0.03)")
    ap.add_argument("--threads", nargs="+", type=int, default=[1, 2], help="thread counts, the first 1")
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/thread-scaling"),
                    help="stand-ins, assets and runs (emptied first)")
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "thread_scaling.csv")
    ap.add_argument("--max-job-seconds", type=float, default=900.0, help="a job's own time limit here")
    args = ap.parse_args(argv)
    if args.threads[0] != 1:
        ap.error("--threads: the first is the one-thread baseline (1)")
    shutil.rmtree(args.workdir / "runs", ignore_errors=True)  # a finished job would be skipped, not measured
    runs = archive_scale._assets(args.workdir)
    archive_scale._add_plugins(runs, args.methods)
    unknown = [m for m in args.methods if m not in runs or (m not in JOBS and not args.dataset)]
    if unknown:
        ap.error(f"{unknown}: not a method that runs offline here, or no stand-in job for it in JOBS "
                 f"(name one with --dataset and --fraction)")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    new = not args.out.exists()
    summary = []
    with open(args.out, "a", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=COLUMNS)
        if new:
            writer.writeheader()
        for method in args.methods:
            dataset, fraction = (args.dataset, args.fraction or 0.03) if args.dataset else JOBS[method]
            base = None
            for threads in args.threads:
                job = archive_scale.prepare(args.workdir, method, runs[method], dataset, fraction, threads)
                row = archive_scale.measure(args.workdir, method, dataset, fraction, job, args.max_job_seconds)
                work = work_seconds(job["cfg"], method, dataset)
                out = {"method": method, "dataset": dataset, "series_fraction": fraction, "threads": threads,
                       "contexts": work[1] if work else 0, "status": row["status"],
                       "work_s": round(work[0], 2) if work else None, "wall_s": row["wall_s"], "cpu_s": row["cpu_s"],
                       "speedup": None, "parallel_fraction": None, "date": time.strftime("%Y-%m-%d"),
                       "cpu": row["cpu"], "note": ""}
                if base is None:
                    base = out
                elif work and base["work_s"] and row["status"] == "ok" and base["status"] == "ok":
                    speedup = base["work_s"] / out["work_s"]
                    out["speedup"] = round(speedup, 3)
                    out["parallel_fraction"] = round(parallel_fraction(speedup, threads), 3)
                    summary.append(out)
                writer.writerow(out)
                fh.flush()
                print("\t".join(str(out[c]) for c in COLUMNS[:11]), flush=True)
    print("\nmethod              threads  speed-up  parallel fraction")
    for s in summary:
        print(f"{s['method']:<20}{s['threads']:>7}{s['speedup']:>10.2f}{s['parallel_fraction']:>19.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
