"""Loss/accuracy curves of a training run from its ``log.jsonl``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from chorustic.io import atomic_open

__all__ = ["read_log", "plot_curves"]


def read_log(path: str | Path) -> list[dict]:
    path = Path(path)
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        line = line.strip()
        if line:
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:  # a line cut by a crash: ignore it
                continue
    return out


def _smooth(y: np.ndarray, k: int) -> np.ndarray:
    if len(y) < 3 or k <= 1:
        return y
    k = min(k, len(y))
    pad = np.pad(y, (k // 2, k - 1 - k // 2), mode="edge")
    return np.convolve(pad, np.ones(k) / k, mode="valid")


def plot_curves(log_path: str | Path, png_path: str | Path, title: str = "",
                references: dict[str, float] | None = None) -> Path | None:
    """Training loss and accuracy (raw and smoothed) and validation loss/accuracy against steps.
    ``references``: accuracies of parameter-free predictors on the validation set (horizontal lines)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    recs = read_log(log_path)
    train = [r for r in recs if r.get("kind") == "train"]
    val = [r for r in recs if r.get("kind") == "val"]
    if not train and not val:
        return None
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 3.8))
    if train:
        s = np.array([r["step"] for r in train])
        for ax, key in ((ax1, "loss"), (ax2, "acc")):
            y = np.array([r[key] for r in train], dtype=float)
            ax.plot(s, y, color="tab:blue", alpha=0.25, lw=0.8)
            ax.plot(s, _smooth(y, max(1, len(y) // 30)), color="tab:blue", lw=1.6, label="train (smoothed)")
    if val:
        s = np.array([r["step"] for r in val])
        ax1.plot(s, [r["val_loss"] for r in val], "o-", color="tab:red", ms=3, label="validation (64 episodes)")
        ax2.plot(s, [r["val_acc"] for r in val], "o-", color="tab:red", ms=3, label="validation (64 episodes)")
        for key, style in (("val_acc_uni", "--"), ("val_acc_multi", ":")):
            pts = [(r["step"], r[key]) for r in val if key in r]
            if pts:
                ax2.plot(*zip(*pts), style, color="tab:red", lw=1, label=key.replace("val_acc_", "validation, "))
    names = {"context_majority": "context majority (validation)", "one_nn": "1-NN (validation)"}
    for (key, value), color in zip((references or {}).items(), ("0.4", "tab:green", "tab:purple")):
        ax2.axhline(value, ls="--", lw=1, color=color, label=names.get(key, key))
    ax1.set_xlabel("step")
    ax1.set_ylabel("query cross-entropy")
    ax2.set_xlabel("step")
    ax2.set_ylabel("query accuracy")
    for ax in (ax1, ax2):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    if title:
        fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    png_path = Path(png_path)
    with atomic_open(png_path, "wb") as fh:
        fig.savefig(fh, format="png", dpi=110)
    plt.close(fig)
    return png_path
