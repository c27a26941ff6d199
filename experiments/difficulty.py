"""Check (2026-11-25): how does the small model (models/chorustic-small) compare with simple probes of its
own features, by episode difficulty?

Episodes of the `small` prior with the difficulty pinned (0, 0.5, 1; 40 each, the same shapes and rules for
every level): one ensemble member's accuracy next to 1-NN on the resampled series, 1-NN and logistic
regression on the RSSC features H and 1-NN on the row representations R
(``benchmarks/representation_probes.probe_episode``).

    python experiments/difficulty.py
"""

import argparse
import dataclasses
import sys
from pathlib import Path

import numpy as np
import torch

REPO = Path(__file__).resolve().parents[1]
MODEL_DIR = REPO / "models" / "chorustic-small"
sys.path.insert(0, str(REPO / "benchmarks"))


def main() -> None:
    from representation_probes import probe_episode

    from chorustic.model import load_model
    from chorustic.prior import EpisodePrior
    from chorustic.training import TrainConfig

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", default=str(MODEL_DIR / "model.safetensors"))
    ap.add_argument("--episodes", type=int, default=40)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    model = load_model(args.checkpoint).eval()
    tc = TrainConfig.resolve("small")
    prior = dataclasses.replace(tc.prior, output_length=model.config.seq_len,
                                max_classes=min(tc.prior.max_classes, model.config.max_classes))
    keys = ("member", "raw_1nn", "H_1nn", "H_logreg", "R_1nn")
    for difficulty in (0.0, 0.5, 1.0):
        gen = EpisodePrior(prior, seed=777)
        rows = []
        for _ in range(args.episodes):
            T, n_ctx, L = gen.sample_shape()
            ep = gen.generate(gen.sample_omega(T, n_ctx, L, difficulty=difficulty))
            n = ep.n_context
            rows.append(probe_episode(model, ep.X, ep.y[:n], ep.y[n:], max_offsets=1))
        means = {k: round(float(np.nanmean([r[k] for r in rows])), 3) for k in keys}
        print(f"difficulty {difficulty}: " + ", ".join(f"{k} {v:.3f}" for k, v in means.items()), flush=True)


if __name__ == "__main__":
    main()
