"""Where a ChorusTIC checkpoint loses accuracy: probes of its representations next to its predictions.

    python benchmarks/representation_probes.py --checkpoint models/chorustic-small/model.safetensors \
        --data-dir ../shared/data [--datasets GunPoint CBF] [--synthetic 64] [--out probes.csv]

For every dataset (full context: the training split is the context, the test split the queries, loaded
and resampled as in ``benchmarks/dev_accuracy.py``) and for ``--synthetic`` episodes of the training
prior, with one RSSC draw (seed 0):

* ``ensemble``: the model's accuracy with the paper's deployment ensemble (8 label shifts x 4 RSSC draws);
* ``member``: one ensemble member (label offset 0, the draw above); ``offset_min`` / ``offset_max``: the
  worst and best member over the label offsets 0 .. min(K, 8) - 1 (K <= K_max only). A model that has
  learned the label symmetry of in-context learning gives the same accuracy for every offset;
* probes fitted on the context rows and scored on the queries, of the inputs of each stage:
  ``raw_1nn`` (1-nearest-neighbour, Euclidean, on the resampled series), ``H_1nn`` / ``H_logreg`` on the
  RSSC representations H (context-standardized when the model standardizes), ``R_1nn`` / ``R_logreg``
  on the row representations R (after column distribution modeling and row interaction), the input of
  the ICL transformer. ``logreg``: scikit-learn ``LogisticRegression`` on context-standardized features;
* ``H_rank`` / ``R_rank``: how many directions the context rows of H (before the context standardization)
  and of R vary in: the singular values of the centered matrix above 1e-3 of the largest. For a univariate
  series every RSSC slot holds the same channel and the slots of H differ only through their group and
  slot embeddings, so H can vary in far fewer than ``d_h`` directions (in the small model about
  ``slot_dim``).

A probe well above ``member`` says the information is in that representation and a later stage does not
use it. Prints the table and the means per archive; ``--out`` writes the CSV. CPU, seconds per dataset.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import traceback
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

PROBES = ("raw_1nn", "H_1nn", "H_logreg", "R_1nn", "R_logreg")
RANKS = ("H_rank", "R_rank")


def effective_rank(features: np.ndarray, rtol: float = 1e-3) -> int:
    """Directions the rows of ``features`` vary in: singular values of the centered matrix above ``rtol``
    times the largest (0 when all rows are equal)."""
    f = np.asarray(features, dtype=np.float64)
    s = np.linalg.svd(f - f.mean(axis=0), compute_uv=False)
    return int((s > rtol * s[0]).sum()) if s.size and s[0] > 0 else 0


def _one_nn(train, y_train, test, y_test) -> float:
    from sklearn.neighbors import KNeighborsClassifier

    return float(KNeighborsClassifier(n_neighbors=1).fit(train, y_train).score(test, y_test))


def _logreg(train, y_train, test, y_test) -> float:
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    if len(np.unique(y_train)) < 2:
        return float("nan")
    scaler = StandardScaler().fit(train)
    clf = LogisticRegression(max_iter=2000).fit(scaler.transform(train), y_train)
    return float(clf.score(scaler.transform(test), y_test))


def rssc_features(model, X: np.ndarray, *, seed: int = 0):
    """The model's inputs ``(1, T, C, L)`` and RSSC features H ``(1, T, d_h)`` of one episode ``X (T, C, L)``,
    one RSSC draw (``seed``), no gradients."""
    import torch

    Xp, mask = model.prepare_inputs(torch.as_tensor(X)[None])
    with torch.no_grad():
        g = model.sample_assignment(mask, n_draws=1, generator=torch.Generator().manual_seed(seed))
        return Xp, model.encode_signal(Xp, g)[:, 0]


def probe_episode(model, X: np.ndarray, y_context: np.ndarray, y_query: np.ndarray, *, max_offsets: int = 8,
                  seed: int = 0) -> dict[str, float]:
    """Member accuracies and representation probes of one episode ``X (T, C, L)``, context rows first."""
    import torch

    from chorustic.inference.ensemble import shift_labels, unshift_logits
    from chorustic.model.context_standardization import standardize_by_context

    n, k = len(y_context), int(y_context.max()) + 1
    Xp, H = rssc_features(model, X, seed=seed)
    y = torch.as_tensor(y_context, dtype=torch.long)[None]
    with torch.no_grad():
        R = model.row_representations(H, n)
        ranks = {f"{name}_rank": effective_rank(f[0, :n].float().numpy()) for name, f in (("H", H), ("R", R))}
        accs = []
        for off in range(min(k, max_offsets) if k <= model.config.max_classes else 1):
            logits = unshift_logits(model.icl_logits(R, shift_labels(y, off, k)), off)[0]
            accs.append(float((logits.argmax(-1).numpy() == y_query).mean()))
        if model.config.context_standardization:
            H = standardize_by_context(H, n)
    raw = Xp[0].reshape(Xp.shape[1], -1).numpy()
    h, r = H[0].float().numpy(), R[0].float().numpy()
    out = {"member": accs[0], "offset_min": min(accs) if len(accs) > 1 else np.nan,
           "offset_max": max(accs) if len(accs) > 1 else np.nan, **ranks}
    for name, feats in (("raw", raw), ("H", h), ("R", r)):
        out[f"{name}_1nn"] = _one_nn(feats[:n], y_context, feats[n:], y_query)
        if name != "raw":
            out[f"{name}_logreg"] = _logreg(feats[:n], y_context, feats[n:], y_query)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", default=str(REPO / "models/chorustic-small/model.safetensors"))
    ap.add_argument("--data-dir", type=Path, default=Path(os.environ.get("CHORUSTIC_DEV_DATA", "../shared/data")))
    ap.add_argument("--datasets", nargs="*", default=None)
    ap.add_argument("--synthetic", type=int, default=64, help="episodes of the training prior (0: none)")
    ap.add_argument("--prior", default=None, help="train config whose prior makes the synthetic episodes "
                                                  "(default: the one named in the checkpoint, else small)")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()

    import torch

    from chorustic.data import load_dataset
    from chorustic.inference import ChorusTICClassifier
    from chorustic.model import load_model
    from dev_accuracy import discover

    if args.threads:
        torch.set_num_threads(args.threads)
    model = load_model(args.checkpoint).eval()
    rows = []
    found = discover(args.data_dir) if args.data_dir.is_dir() else []
    if args.datasets:
        found = [f for f in found if f[1] in set(args.datasets)]
    for archive, name, parent in found:
        row = {"archive": archive, "dataset": name}
        try:
            ds = load_dataset(name, parent, offline=True)
            row.update(n_train=len(ds.y_train), classes=ds.n_classes, channels=ds.X_train.shape[1])
            clf = ChorusTICClassifier(model=model, seed=0).fit(ds.X_train, ds.y_train)
            row["ensemble"] = float(np.mean(clf.predict(ds.X_test) == ds.y_test))
            row.update(probe_episode(model, np.concatenate([ds.X_train, ds.X_test]), ds.y_train, ds.y_test))
        except Exception:
            row["error"] = traceback.format_exc(limit=2).strip().splitlines()[-1]
        rows.append(row)
        print(" ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()), flush=True)
    if args.synthetic:
        from chorustic.prior import EpisodePrior
        from chorustic.training import TrainConfig

        trained = model.provenance.get("training", {}).get("train_config")
        try:
            tc = TrainConfig.resolve(args.prior or trained or "small")
        except (ValueError, KeyError, OSError):  # a run's own config name (e.g. 'small-continue'): not a preset
            tc = TrainConfig.resolve("small")
        prior = dataclasses.replace(tc.prior, output_length=model.config.seq_len,
                                    max_classes=min(tc.prior.max_classes, model.config.max_classes))
        gen = EpisodePrior(prior, seed=12_345)
        for i in range(args.synthetic):
            ep = gen.sample_episode()
            n = ep.n_context
            row = {"archive": "synthetic", "dataset": f"{tc.name}-prior-{i}", "n_train": n, "classes": ep.n_classes,
                   "channels": ep.X.shape[1]}
            row.update(probe_episode(model, ep.X, ep.y[:n], ep.y[n:]))
            rows.append(row)
        print(f"{args.synthetic} synthetic episodes of the {tc.name!r} prior probed", flush=True)
    if not rows:
        print("nothing probed: no datasets found under --data-dir and --synthetic 0")
        return 2
    table = pd.DataFrame(rows)
    cols = [c for c in ("ensemble", "member", "offset_min", "offset_max", *PROBES, *RANKS) if c in table]
    with pd.option_context("display.max_rows", None, "display.width", 220, "display.float_format", "{:.3f}".format):
        real = table[table["archive"] != "synthetic"]
        if not real.empty:
            print(real.drop(columns=[c for c in ("error",) if c in real]).to_string(index=False))
        print("\nmean per archive:")
        print(table.groupby("archive")[cols].mean().to_string())
    if args.out:
        from chorustic.io import atomic_write_text

        atomic_write_text(args.out, table.to_csv(index=False))
        print(f"\nwritten {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
