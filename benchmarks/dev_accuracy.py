"""Full-context accuracy of a ChorusTIC checkpoint on a folder of UCR/UEA datasets, next to MiniRocket and
next to the paper's ChorusTIC and TabICL columns.

    python benchmarks/dev_accuracy.py --checkpoint models/chorustic-small/model.safetensors \
        --data-dir /path/to/data [--datasets GunPoint BasicMotions] [--out dev_accuracy.csv]

``--data-dir`` holds ``<Name>/<Name>_{TRAIN,TEST}.ts`` folders, directly or under ``UCR/`` and ``UEA/``.
Every dataset is loaded as in the paper (App. C.2: resampled to 512, NaN -> 0, labels encoded on the
training split). ChorusTIC gets the whole training split as context and the whole test split as queries,
with the paper's deployment ensemble (8 cyclic label shifts x 4 RSSC draws, softmax(logits / 0.9));
no parameter is fitted. MiniRocket (aeon ``MiniRocketClassifier``, seed 0) is fitted on the same
512-length training arrays. The paper columns come from ``results/reference/paper_{ucr128,uea30}_per_dataset.csv``
(reported numbers of the 53 M-parameter released model, not reproduced here). One failing dataset or
method never stops the others: its cell says ``error``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import traceback
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
PAPER = {"UCR": REPO / "results/reference/paper_ucr128_per_dataset.csv",
         "UEA": REPO / "results/reference/paper_uea30_per_dataset.csv"}


def discover(data_dir: Path) -> list[tuple[str, str, Path]]:
    """(archive, name, parent folder) of every dataset folder under ``data_dir``."""
    out = []
    for archive in ("UCR", "UEA"):
        sub = data_dir / archive
        if sub.is_dir():
            out += [(archive, p.name, sub) for p in sorted(sub.iterdir()) if (p / f"{p.name}_TRAIN.ts").exists()]
    if not out:
        out = [("?", p.name, data_dir) for p in sorted(data_dir.iterdir())
               if p.is_dir() and (p / f"{p.name}_TRAIN.ts").exists()]
    return out


def paper_columns() -> pd.DataFrame:
    frames = []
    for archive, path in PAPER.items():
        if path.exists():
            df = pd.read_csv(path)[["dataset", "ChorusTIC", "TabICL"]]
            df["archive"] = archive
            frames.append(df)
    if not frames:
        return pd.DataFrame(columns=["dataset", "ChorusTIC", "TabICL", "archive"])
    return pd.concat(frames).rename(columns={"ChorusTIC": "paper_ChorusTIC", "TabICL": "paper_TabICL"})


def run_chorustic(model, ds, args) -> tuple[float, float]:
    from chorustic.inference import ChorusTICClassifier

    clf = ChorusTICClassifier(model=model, n_label_shifts=args.n_label_shifts, n_rssc_draws=args.n_rssc_draws,
                              seed=0, device=args.device)
    t0 = time.perf_counter()
    clf.fit(ds.X_train, ds.y_train)
    pred = clf.predict(ds.X_test)
    return float(np.mean(pred == ds.y_test)), time.perf_counter() - t0


def run_minirocket(ds) -> tuple[float, float]:
    from aeon.classification.convolution_based import MiniRocketClassifier

    t0 = time.perf_counter()
    clf = MiniRocketClassifier(random_state=0, n_jobs=1)
    clf.fit(ds.X_train.astype(np.float64), ds.y_train)
    pred = clf.predict(ds.X_test.astype(np.float64))
    return float(np.mean(pred == ds.y_test)), time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", default=str(REPO / "models/chorustic-small/model.safetensors"))
    ap.add_argument("--data-dir", type=Path, default=Path(os.environ.get("CHORUSTIC_DEV_DATA", "../shared/data")))
    ap.add_argument("--datasets", nargs="*", default=None)
    ap.add_argument("--n-label-shifts", type=int, default=8)
    ap.add_argument("--n-rssc-draws", type=int, default=4)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--no-minirocket", action="store_true")
    ap.add_argument("--out", type=Path, default=None, help="also write the table as CSV")
    args = ap.parse_args()
    label = f"ChorusTIC ({Path(args.checkpoint).parent.name})"  # the checkpoint's folder, e.g. chorustic-small

    import torch

    from chorustic.data import load_dataset
    from chorustic.model import load_model

    if args.threads:
        torch.set_num_threads(args.threads)
    if not args.data_dir.is_dir():
        print(f"data folder {args.data_dir} does not exist; pass --data-dir (or set CHORUSTIC_DEV_DATA)")
        return 2
    model = load_model(args.checkpoint)
    prov = model.provenance.get("training", {})
    print(f"checkpoint {args.checkpoint}: {model.parameter_counts()['total']:,} parameters, seq_len "
          f"{model.config.seq_len}; trained {prov.get('step', '?')} steps / {prov.get('episodes_seen', '?')} "
          f"episodes / {prov.get('wall_time_s', '?')} s; synthetic validation accuracy "
          f"{prov.get('validation', {}).get('val_acc', float('nan')):.4f}")
    found = discover(args.data_dir)
    if args.datasets:
        found = [f for f in found if f[1] in set(args.datasets)]
    rows, loaded = [], []
    for archive, name, parent in found:
        row = {"archive": archive, "dataset": name}
        try:
            ds = load_dataset(name, parent, offline=True)
            row.update(n_train=len(ds.y_train), n_test=len(ds.y_test), channels=ds.X_train.shape[1],
                       classes=ds.n_classes)
        except Exception as exc:
            row["error"] = f"load: {exc}"
            rows.append(row)
            print(f"{name}: cannot load ({exc})", file=sys.stderr)
            continue
        try:
            row["ChorusTIC"], row["ChorusTIC_s"] = run_chorustic(model, ds, args)
        except Exception:
            row["ChorusTIC"] = np.nan
            row["error"] = "chorustic: " + traceback.format_exc(limit=2).strip().splitlines()[-1]
        rows.append(row)
        loaded.append((row, ds))
        print(f"{archive} {name}: {label} {row['ChorusTIC']:.4f} ({row.get('ChorusTIC_s', 0):.1f} s)",
              flush=True)
    # MiniRocket after every ChorusTIC run: once numba's thread pool has run in this process, torch's
    # intra-op threads compete with it (measured with --threads 2: RacketSports 1.9 s -> 103 s)
    if not args.no_minirocket:
        for row, ds in loaded:
            try:
                row["MiniRocket"], row["MiniRocket_s"] = run_minirocket(ds)
            except Exception:
                row["MiniRocket"] = np.nan
                row["error"] = "minirocket: " + traceback.format_exc(limit=2).strip().splitlines()[-1]
            print(f"{row['archive']} {row['dataset']}: MiniRocket {row['MiniRocket']:.4f}", flush=True)
    table = pd.DataFrame(rows)
    if table.empty:
        print("no datasets found")
        return 2
    paper = paper_columns()
    table = table.merge(paper.drop(columns="archive"), on="dataset", how="left")
    cols = [c for c in ["archive", "dataset", "n_train", "n_test", "channels", "classes", "ChorusTIC",
                        "MiniRocket", "paper_ChorusTIC", "paper_TabICL", "ChorusTIC_s", "MiniRocket_s", "error"]
            if c in table.columns]
    table = table[cols]
    with pd.option_context("display.max_rows", None, "display.width", 200, "display.float_format", "{:.4f}".format):
        print()
        print(table.drop(columns=[c for c in ("error",) if c in table.columns]).to_string(index=False))
        acc_cols = [c for c in ("ChorusTIC", "MiniRocket", "paper_ChorusTIC", "paper_TabICL") if c in table]
        print("\nmean accuracy on this subset:")
        print(table.groupby("archive")[acc_cols].mean().to_string())
        if "ChorusTIC" in table and "MiniRocket" in table:
            d = table["ChorusTIC"] - table["MiniRocket"]
            print(f"\n{label} vs MiniRocket: wins {int((d > 0).sum())}, ties {int((d == 0).sum())}, "
                  f"losses {int((d < 0).sum())}")
    if "error" in table and table["error"].notna().any():
        print("\nerrors:")
        for _, r in table[table["error"].notna()].iterrows():
            print(f"  {r['dataset']}: {r['error']}")
    if args.out:
        from chorustic.io import atomic_write_text

        atomic_write_text(args.out, table.to_csv(index=False))
        print(f"\nwritten {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
