"""Check (2026-11-25): does the small model (models/chorustic-small) lose accuracy on long contexts it
never saw in pretraining?

The small prior has 32-64 rows (at most 51 context rows); real training splits are longer. For every
development dataset with more than 64 training series: accuracy with the whole training split as context
vs a stratified random 48-row subset (one series of every class, the rest at random; mean of 3 subsets).

    python experiments/context_size.py --data-dir ../shared/data
"""

import argparse
import sys
from pathlib import Path

import numpy as np
import torch

from chorustic.data import load_dataset
from chorustic.inference import ChorusTICClassifier
from chorustic.model import load_model

REPO = Path(__file__).resolve().parents[1]
MODEL_DIR = REPO / "models" / "chorustic-small"
sys.path.insert(0, str(REPO / "benchmarks"))


def main() -> None:
    from dev_accuracy import discover

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", default=str(MODEL_DIR / "model.safetensors"))
    ap.add_argument("--data-dir", type=Path, default=Path("../shared/data"))
    ap.add_argument("--rows", type=int, default=48)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    model = load_model(args.checkpoint)
    rows = []
    for archive, name, parent in discover(args.data_dir):
        ds = load_dataset(name, parent, offline=True)
        n = len(ds.y_train)
        if n <= 64:
            continue
        full = ChorusTICClassifier(model=model, seed=0).fit(ds.X_train, ds.y_train).predict(ds.X_test)
        sub = []
        for r in range(3):
            rng = np.random.default_rng(r)
            idx = [rng.choice(np.flatnonzero(ds.y_train == c)) for c in np.unique(ds.y_train)]
            rest = rng.permutation(np.setdiff1d(np.arange(n), idx))[: max(0, args.rows - len(idx))]
            idx = np.concatenate([idx, rest])
            clf = ChorusTICClassifier(model=model, seed=0).fit(ds.X_train[idx], ds.y_train[idx])
            sub.append(float(np.mean(clf.predict(ds.X_test) == ds.y_test)))
        rows.append((float(np.mean(full == ds.y_test)), float(np.mean(sub))))
        print(f"{archive} {name} (n_train {n}): whole context {rows[-1][0]:.3f}, "
              f"{args.rows} rows {rows[-1][1]:.3f}", flush=True)
    a = np.array(rows)
    print(f"mean over {len(a)} datasets: whole context {a[:, 0].mean():.4f}, {args.rows} rows {a[:, 1].mean():.4f}")


if __name__ == "__main__":
    main()
