"""CPU time per alignment cell of aeon's DTW by number of channels, with and without portable numerics.

Every evaluation worker runs with the pins of ``chorustic.evaluation.numerics`` (numba's code for haswell with
AVX2 and FMA only); this measures what that costs 1NN-DTW per cell of the warping path, channel by channel,
against numba's code for the host CPU, with the series as the plugin passes them (multivariate ones with their
channels side by side: ``baselines/dtw_1nn.py``'s ``channels_side_by_side``) and, under the pins, as the
collection holds them (channel by channel: what the plugin passed before 2026-12-01). Each setting runs in a fresh process (numba reads the pins when it
starts). One thread; CPU time of ``aeon.distances.pairwise_distance`` from 2 random float32 queries to 2
context series, or to ``--context`` of them (a context larger than the processor's caches is read from memory,
as a full-size job reads it), ``--dtype float64`` as the harness passes a dataset's series.

    python benchmarks/dtw_cells.py [--length 600] [--channels 1 2 6 13 64 144] [--context 2 589 5890]

Prints one row per channel count: ns per cell under each setting, and the plugin's cost per channel beyond the
first (what ``CostModel.time_ns_per_cell`` and ``time_ns_per_multichannel_cell`` model).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

_CHILD = r"""
import json, sys, time
import numpy as np
from aeon.distances import pairwise_distance
length, channels = int(sys.argv[1]), [int(c) for c in sys.argv[2].split(",")]
context, dtype, layout = int(sys.argv[3]), sys.argv[4], sys.argv[5]
if layout == "plugin":
    from chorustic.methods import default_plugin_dir, import_plugin_module
    side_by_side = import_plugin_module("dtw_1nn", default_plugin_dir() / "dtw_1nn.py").channels_side_by_side
else:
    side_by_side = lambda X: X
rng = np.random.default_rng(0)
out = {}
for c in channels:
    X = side_by_side(rng.normal(size=(2, c, length)).astype(dtype))
    Y = side_by_side(rng.normal(size=(context, c, length)).astype(dtype))
    pairwise_distance(X[:1], Y[:1], method="dtw")  # compiled for these arrays before it is timed
    cells = 2 * context * length * length
    reps = max(1, int(3e8 / (cells * max(1.0, c / 8))))
    t0 = time.process_time()
    for _ in range(reps):
        pairwise_distance(X, Y, method="dtw")
    out[c] = (time.process_time() - t0) / (reps * cells) * 1e9
print(json.dumps(out))
"""


def measure(length: int, channels: list[int], portable: bool, context: int = 2,
            dtype: str = "float32", layout: str = "plugin") -> dict[int, float]:
    """ns per cell by channel count, in a fresh process (numba reads the pins when it starts); ``layout``:
    ``plugin`` (the plugin's series) or ``collection`` (channel by channel)."""
    from chorustic.evaluation.numerics import portable_numerics_env

    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_CPU")}
    if portable:
        env.update({k: v for k, v in portable_numerics_env().items() if k.startswith("NUMBA_")})
    env["NUMBA_NUM_THREADS"] = "1"
    res = subprocess.run([sys.executable, "-c", _CHILD, str(length), ",".join(map(str, channels)), str(context),
                          dtype, layout], env=env, capture_output=True, text=True, check=True)
    return {int(k): v for k, v in json.loads(res.stdout.strip().splitlines()[-1]).items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--length", type=int, default=600)
    ap.add_argument("--channels", type=int, nargs="+", default=[1, 2, 3, 4, 6, 8, 13, 16, 32, 64, 144])
    ap.add_argument("--context", type=int, nargs="+", default=[2],
                    help="context series each of the 2 queries is compared with (one table each)")
    ap.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    args = ap.parse_args(argv)
    channels = sorted(set(args.channels) | {1})  # one channel is the base the per-channel column is read from
    for context in args.context:
        portable = measure(args.length, channels, True, context, args.dtype)
        native = measure(args.length, channels, False, context, args.dtype)
        strided = measure(args.length, channels, True, context, args.dtype, "collection")
        megabytes = context * max(channels) * args.length * (8 if args.dtype == "float64" else 4) / 2**20
        print(f"length {args.length}, {context} context series ({megabytes:,.1f} MB at {max(channels)} channels, "
              f"{args.dtype}), ns per alignment cell (CPU time, one thread)\n")
        print("| channels | portable numerics (haswell) | host CPU's code | portable, channel by channel "
              "| portable, per channel beyond the first |")
        print("|---|---|---|---|---|")
        for c in channels:
            extra = "" if c == 1 else f"{(portable[c] - portable[1]) / (c - 1):.2f}"
            print(f"| {c} | {portable[c]:.2f} | {native[c]:.2f} | {strided[c]:.2f} | {extra} |")
        print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
