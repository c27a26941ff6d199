"""Hydra's memory per series and time point: the figure behind MultiRocket-Hydra's ``mem_bytes_per_row_point``.

aeon's ``HydraTransformer`` convolves series with 512 kernels (64 groups x 8) per dilation; its outputs have
a kernel axis instead of the channel axis, so the memory grows with the series convolved at once times
their length, whatever their channels. aeon's ``transform`` convolves every series of the call at once;
the plugin (``baselines/multirocket_hydra.py``) runs it in batches with aeon's ``batch`` method (at most 256
series and 524,288 time points).
A job's peak cannot separate that term from MultiRocket's features and the ridge's matrices (jobs stopped
at the limit are lower bounds), so it is measured here on its own: the transform alone, one shape per
fresh process, its peak resident memory above the process's before the transform, as the plugin runs it
(``batched``) and as aeon does (``whole``).

    python benchmarks/hydra_memory.py [--shapes 64x1x2000 256x1x2000 1000x1x2709] [--modes batched whole]
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
if sys.argv[4] == "batched":  # as the plugin runs it: aeon's own batch method
    hydra._hydra.batch(torch.tensor(X).float(), batch_size=int(sys.argv[5])).numpy()
else:
    hydra.transform(X)
print(json.dumps({"before_mb": before, "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "cpu_s": time.process_time() - t}))
"""


def _batch(length: int) -> int:
    """The plugin's batch of series of ``length`` points (``hydra_batch`` in ``baselines/multirocket_hydra.py``)."""
    from chorustic.methods import import_plugin_module
    from chorustic.paths import REPO_ROOT

    plugin = import_plugin_module("multirocket_hydra", REPO_ROOT / "baselines" / "multirocket_hydra.py")
    return plugin.hydra_batch(length)


def measure(n: int, channels: int, length: int, mode: str) -> dict:
    args = [str(n), str(channels), str(length), mode, str(_batch(length))]
    out = subprocess.run([sys.executable, "-c", _CHILD, *args],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", nargs="+", default=["64x1x2000", "256x1x500", "256x1x2000", "256x6x1000",
                                                     "1024x1x500", "512x1x2000", "1000x1x2709"],
                    help="series x channels x length, one process each")
    ap.add_argument("--modes", nargs="+", default=["batched", "whole"], choices=["batched", "whole"],
                    help="batched: as the plugin runs it (its batches); whole: aeon's transform")
    args = ap.parse_args(argv)

    print("| series x channels x length | mode | row points (series at once x length) | peak above start | bytes "
          "per row point | CPU s |")
    print("|---|---|---|---|---|---|")
    for shape in args.shapes:
        n, c, L = (int(v) for v in shape.split("x"))
        for mode in args.modes:
            r = measure(n, c, L, mode)
            points = (min(n, _batch(L)) if mode == "batched" else n) * L
            extra = r["peak_mb"] - r["before_mb"]
            print(f"| {n} x {c} x {L} | {mode} | {points:,} | {extra:,.0f} MB | {extra * 2**20 / points:,.0f} | "
                  f"{r['cpu_s']:.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
