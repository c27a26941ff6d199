"""Hydra's memory per series and time point: the figure behind MultiRocket-Hydra's ``mem_bytes_per_row_point``.

aeon's ``HydraTransformer`` convolves a batch of series with 512 kernels (64 groups x 8) per dilation; its
outputs have a kernel axis instead of the channel axis, so the memory grows with the series held at once
(at most its batch of 256) times their length, whatever their channels. A job's peak cannot separate that
term from MultiRocket's features and the ridge's matrices (jobs stopped at the limit are lower bounds), so
it is measured here on its own: the transform alone, one shape per fresh process, its peak resident memory
above the process's before the transform.

    python benchmarks/hydra_memory.py [--shapes 64x2000 256x500 256x2000]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

_CHILD = """
import json, resource, sys, time
import numpy as np, torch
torch.set_num_threads(1)
from aeon.transformations.collection.convolution_based import HydraTransformer
n, c, L = (int(v) for v in sys.argv[1:4])
X = np.random.default_rng(0).normal(size=(n, c, L))
hydra = HydraTransformer(n_kernels=8, n_groups=64, random_state=0, n_jobs=1).fit(X[:10])
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
t = time.process_time()
hydra.transform(X)
print(json.dumps({"before_mb": before, "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "cpu_s": time.process_time() - t}))
"""


def measure(n: int, channels: int, length: int) -> dict:
    out = subprocess.run([sys.executable, "-c", _CHILD, str(n), str(channels), str(length)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", nargs="+", default=["64x1x2000", "256x1x500", "256x1x2000", "256x6x1000"],
                    help="series x channels x length, one process each")
    args = ap.parse_args(argv)
    print("| series x channels x length | row points (min(series, 256) x length) | peak above start | bytes per "
          "row point | CPU s |")
    print("|---|---|---|---|---|")
    for shape in args.shapes:
        n, c, L = (int(v) for v in shape.split("x"))
        r = measure(n, c, L)
        points = min(n, 256) * L
        extra = r["peak_mb"] - r["before_mb"]
        print(f"| {n} x {c} x {L} | {points:,} | {extra:,.0f} MB | {extra * 2**20 / points:,.0f} | {r['cpu_s']:.1f} |",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
