"""What an evaluate job pays to read its data: ``load_dataset`` from the preprocessed cache, per input value.

The workflow's preprocess rule parses a dataset's .ts files and resamples them into the cache once; every
evaluate job then reads the arrays its method takes (``native`` or ``resampled``) from that cache and checks
them against the source files' hashes. This is the harness's own work, the same for every method: the cost
models' ``time_ns_per_input_value`` (:class:`chorustic.methods.cost.CostModel`). Each point is a fresh process
on a stand-in (:mod:`chorustic.data.standin`) with the dataset's exact shape (or ``--fraction`` of its
series), after ``chorustic preprocess`` as the workflow runs it; printed: the CPU seconds of the imports and
of the read, the values read and the nanoseconds per value.

    python benchmarks/job_reading.py [--datasets Crop PEMS-SF ...] [--fraction 1] [--workdir /tmp/job-reading]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

DATASETS = ["Crop", "StarLightCurves", "EigenWorms", "DuckDuckGeese", "MotorImagery", "PEMS-SF"]

#: One fresh process: the imports a job needs to read, then the read itself (CPU time of this process).
_CHILD = r"""
import json, sys, time
t0 = time.process_time()
import numpy as np
from chorustic.data import load_dataset
t1 = time.process_time()
name, data_dir, cache_dir, lock, series = sys.argv[1:6]
ds = load_dataset(name, data_dir, cache_dir=cache_dir, offline=True, lock=lock, series=series)
t2 = time.process_time()
native = series == "native"
values = sum(np.asarray(x).size for X in ((ds.X_train_native, ds.X_test_native) if native else (ds.X_train, ds.X_test))
             for x in (X if isinstance(X, list) else [X]))
print(json.dumps({"import_s": t1 - t0, "read_s": t2 - t1, "values": int(values)}))
"""


def measure(name: str, fraction: float, workdir: Path) -> list[dict]:
    from archive_scale import preprocess  # the same folders as its jobs': a --workdir of either serves both

    from chorustic.data.standin import standin_spec, write_standin

    data_dir, cache_dir = workdir / "data" / f"{name}-f{fraction:g}", workdir / "cache"
    lock = data_dir / "lock.json"
    write_standin(standin_spec(name, series_fraction=fraction), data_dir)
    done = preprocess(name, data_dir, cache_dir, lock)
    if done.returncode:
        raise SystemExit(f"chorustic preprocess {name} failed:\n{done.stdout}")
    rows = []
    for series in ("native", "resampled"):
        out = subprocess.run([sys.executable, "-c", _CHILD, name, str(data_dir), str(cache_dir), str(lock), series],
                             check=True, capture_output=True, text=True)
        r = json.loads(out.stdout.strip().splitlines()[-1])
        rows.append({"dataset": name, "series": series, **r, "ns_per_value": 1e9 * r["read_s"] / r["values"]})
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=DATASETS)
    ap.add_argument("--fraction", type=float, default=1.0, help="of each dataset's series (stand-in's shape)")
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/job-reading"))
    args = ap.parse_args(argv)
    from chorustic.evaluation.numerics import cpu_model

    print(f"CPU: {cpu_model()}, one thread per process\n")
    print("| dataset | series | values read | imports CPU s | read CPU s | ns per value |")
    print("|---|---|---|---|---|---|")
    for name in args.datasets:
        for r in measure(name, args.fraction, args.workdir):
            print(f"| {r['dataset']} | {r['series']} | {r['values']:,} | {r['import_s']:.2f} | {r['read_s']:.2f} | "
                  f"{r['ns_per_value']:.0f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
