"""Peak memory and CPU time of one ChorusTIC prediction at a given context size, against its cost model.

Each shape runs in a fresh process (so the peak is that shape's): the deployment ensemble (8 label
shifts x 4 RSSC draws) of the paper configuration with random weights (or ``--config small``) fits a
context of ``n_ctx`` series and predicts ``n_q`` queries (one chunk, as the harness predicts a large test
split), one thread. Printed per shape: the measured resident peak and CPU seconds, and the memory the
method's cost model gives one context of that shape (``CostModel.memory_terms``, before a job's margins).
It shows how the memory grows with the context (what a full-context job on Crop's 7,200 training series
holds) where the whole job would take days on a CPU.

    python benchmarks/chorustic_memory.py [--config paper] [--shapes 500x64x1 2000x64x1 50x50x1345]

A shape is ``n_ctx x n_q x channels`` (length 512, as the model sees every series; 24 classes).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def one(config: str, n_ctx: int, n_q: int, channels: int, classes: int = 24) -> dict:
    """Run one shape in this process (a fresh one: see main)."""
    import numpy as np
    import torch

    from chorustic.inference import ChorusTICClassifier
    from chorustic.model import ChorusTICConfig
    from chorustic.testing.checkpoints import randomized_chorustic

    torch.set_num_threads(1)
    model = randomized_chorustic(getattr(ChorusTICConfig, config)(), scale=0.02).eval()
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n_ctx + n_q, channels, 512)).astype(np.float32)
    y = np.arange(n_ctx) % classes
    clf = ChorusTICClassifier(model=model, seed=0).fit(X[:n_ctx], y)
    t0 = time.process_time()
    clf.predict_proba(X[n_ctx:])
    return {"cpu_s": round(time.process_time() - t0, 1),
            "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024}


def model_mb(config: str, n_ctx: int, n_q: int, channels: int) -> float:
    """The cost model's memory of one context of this shape, all ``n_q`` queries held."""
    from chorustic.methods import import_plugin_module
    from chorustic.methods.cost import JobSize

    plugin = import_plugin_module("chorustic", REPO / "baselines" / "chorustic.py")
    cost = plugin.PAPER_COST if config == "paper" else plugin.SMALL_COST
    return cost.estimate(JobSize(n_ctx, n_q, channels, 512))[0]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default="paper", choices=["paper", "small"], help="model configuration")
    ap.add_argument("--shapes", nargs="+", default=["500x64x1", "2000x64x1"], help="n_ctx x n_q x channels")
    ap.add_argument("--one", help=argparse.SUPPRESS)  # internal: run one shape in this process
    args = ap.parse_args(argv)
    if args.one:
        n_ctx, n_q, c = map(int, args.one.split("x"))
        print(json.dumps(one(args.config, n_ctx, n_q, c)))
        return 0
    for shape in args.shapes:
        n_ctx, n_q, c = map(int, shape.split("x"))
        proc = subprocess.run([sys.executable, __file__, "--config", args.config, "--one", shape],
                              capture_output=True, text=True, check=True)
        row = {"config": args.config, "n_ctx": n_ctx, "n_q": n_q, "channels": c,
               **json.loads(proc.stdout.strip().splitlines()[-1]),
               "model_mb": round(model_mb(args.config, n_ctx, n_q, c))}
        print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    sys.exit(main())
