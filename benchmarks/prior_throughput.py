"""Throughput of the episodic prior: episodes per second on this machine (one process, one thread).

    python benchmarks/prior_throughput.py [--batches 5] [--batch-size 36] [--config paper|small]

Prints episodes/s for whole training batches (shape sampling, generation, padding, resampling to 512)
and, per rule family and per background family, for single episodes of a fixed shape.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import time

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batches", type=int, default=5)
    ap.add_argument("--batch-size", type=int, default=36)
    ap.add_argument("--config", default="paper", choices=["paper", "small"],
                    help="prior settings of the paper or the small (CPU) training configuration")
    ap.add_argument("--rows", type=int, default=128, help="rows per episode for the per-family tables")
    ap.add_argument("--length", type=int, default=256, help="native length for the per-family tables")
    ap.add_argument("--per-family", type=int, default=10, help="episodes per family")
    args = ap.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")

    from chorustic.prior import ALL_RULES, BACKGROUND_FAMILIES, EpisodePrior
    from chorustic.training.config import TrainConfig

    cfg = TrainConfig.preset(args.config).prior
    prior = EpisodePrior(cfg, seed=0)
    prior.sample_batch(2)  # warm-up (imports, caches)
    t0 = time.perf_counter()
    rows = []
    for _ in range(args.batches):
        b = prior.sample_batch(args.batch_size)
        rows.append(b.X.shape[1])
    dt = time.perf_counter() - t0
    n = args.batches * args.batch_size
    print(f"prior '{args.config}' (rows {cfg.min_rows}-{cfg.max_rows}, native length {cfg.min_length}-"
          f"{cfg.max_length}, output {cfg.output_length}): {n} episodes in {dt:.2f} s = {n / dt:.1f} episodes/s "
          f"(mean rows {np.mean(rows):.0f}; {dt / args.batches:.2f} s per batch of {args.batch_size})")

    print(f"\nper rule family: {args.rows} rows, native length {args.length}, "
          f"{args.per_family} episodes each")
    for rule in ALL_RULES:
        p = EpisodePrior(dataclasses.replace(cfg, background_families=("smooth",)), seed=1)
        kind = "uni" if rule in ("motif_shape", "polarity", "position", "order", "local_deviation") else "multi"
        t0 = time.perf_counter()
        for _ in range(args.per_family):
            p.sample_episode(n_rows=args.rows, n_context=args.rows // 2, length=args.length, rule=rule,
                             n_channels=1 if kind == "uni" else 5)
        dt = time.perf_counter() - t0
        print(f"  {rule:18s} ({'C=1' if kind == 'uni' else 'C=5'}) {args.per_family / dt:8.1f} episodes/s")
    print(f"\nper background family: {args.rows} rows, native length {args.length}, C=5")
    for fam in BACKGROUND_FAMILIES:
        p = EpisodePrior(cfg, seed=2)
        t0 = time.perf_counter()
        for _ in range(args.per_family):
            p.sample_episode(n_rows=args.rows, n_context=args.rows // 2, length=args.length, background=fam,
                             n_channels=5)
        dt = time.perf_counter() - t0
        print(f"  {fam:12s} {args.per_family / dt:8.1f} episodes/s")


if __name__ == "__main__":
    main()
