"""Figures that show what the prior makes: one PNG per rule family (class prototypes and a few
instances per class), plus the six background families and the effect of the difficulty setting.

``chorustic prior-gallery --out-dir reports/prior_gallery`` calls :func:`write_gallery`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from chorustic.io import atomic_open
from chorustic.prior.backgrounds import BACKGROUND_FAMILIES, sample_process
from chorustic.prior.episode import Episode, EpisodePrior, PriorConfig
from chorustic.prior.rules import ALL_RULES, get_rule

__all__ = ["write_gallery", "plot_rule_family", "plot_backgrounds", "plot_difficulty"]

_PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2"]


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: Path) -> None:
    with atomic_open(path, "wb") as fh:
        fig.savefig(fh, format="png", dpi=110, bbox_inches="tight")


def _display_scale(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-channel (center, scale) over all rows, so channels of different units stack readably."""
    center = np.median(X, axis=(0, 2))
    scale = np.percentile(np.abs(X - center[None, :, None]), 98, axis=(0, 2))
    return center, np.where(scale > 0, scale, 1.0)


def _draw(ax, series: np.ndarray, center, scale, informative, region, color_by_channel=True) -> None:
    C, L = series.shape
    t = np.arange(L)
    for c in range(C):
        y = (series[c] - center[c]) / scale[c] - 2.3 * c
        if c in informative:
            color = _PALETTE[informative.index(c) % len(_PALETTE)]
            ax.plot(t, y, color=color, lw=1.1)
        else:
            ax.plot(t, y, color="0.6", lw=0.8)
    ax.axvspan(region[0], region[1] - 1, color="gold", alpha=0.18, lw=0)
    ax.set_xlim(0, L - 1)
    ax.set_yticks([])
    ax.tick_params(labelsize=6)


def _episode_for(rule: str, seed: int, n_classes: int, difficulty: float, length: int,
                 config: PriorConfig) -> Episode:
    r = get_rule(rule)
    prior = EpisodePrior(config, seed=seed)
    C = 1 if r.kind == "temporal" else 3
    k = min(n_classes, r.capacity(C, length))
    omega = prior.sample_omega(80, 60, length, rule=rule, n_classes=k, n_channels=C, difficulty=difficulty,
                               background="smooth" if r.kind == "cross_channel" else None)
    return prior.generate(omega, keep_prototypes=True)


def plot_rule_family(rule: str, path: str | Path, *, n_classes: int = 4, n_instances: int = 3,
                     difficulty: float = 0.15, length: int = 256, seed: int = 0,
                     config: PriorConfig | None = None) -> Path:
    """One figure: a row per class, the class prototype then ``n_instances`` instances of that class."""
    plt = _plt()
    cfg = config or PriorConfig()
    ep = _episode_for(rule, seed, n_classes, difficulty, length, cfg)
    K, C = ep.n_classes, ep.X.shape[1]
    center, scale = _display_scale(ep.X)
    informative = list(ep.channels)
    fig, axes = plt.subplots(K, 1 + n_instances, figsize=(2.6 * (1 + n_instances), (0.9 + 0.55 * C) * K),
                             squeeze=False, sharex=True)
    for label in range(K):
        rows = np.flatnonzero(ep.y == label)[:n_instances]
        _draw(axes[label, 0], ep.prototypes[label], center, scale, informative, ep.region)
        axes[label, 0].set_ylabel(f"class {label}", fontsize=8)
        for j in range(n_instances):
            ax = axes[label, 1 + j]
            if j < len(rows):
                _draw(ax, ep.X[rows[j]], center, scale, informative, ep.region)
            else:
                ax.axis("off")
    axes[0, 0].set_title("prototype", fontsize=8)
    for j in range(n_instances):
        axes[0, 1 + j].set_title(f"instance {j + 1}", fontsize=8)
    o = ep.omega
    fig.suptitle(
        f"rule family: {rule} ({get_rule(rule).kind.replace('_', '-')})  |  K={K}, C={C}, L={o.length}, "
        f"d={o.difficulty:.2f}, background={o.background}\n"
        f"shaded: informative region; colored: informative channels; gray: other channels "
        f"(display: channels centered, scaled, stacked)", fontsize=8)
    fig.tight_layout()
    path = Path(path)
    _save(fig, path)
    plt.close(fig)
    return path


def plot_backgrounds(path: str | Path, *, n_channels: int = 3, length: int = 256, seed: int = 0) -> Path:
    """One panel per background family: a 3-channel realization (normalized, stacked)."""
    plt = _plt()
    fams = list(BACKGROUND_FAMILIES)
    fig, axes = plt.subplots(len(fams), 2, figsize=(10, 1.5 * len(fams)), squeeze=False)
    for i, fam in enumerate(fams):
        for j in range(2):
            rng = np.random.default_rng(seed + 100 * i + j)
            W = sample_process(rng, fam, n_channels, length).realize(rng, 1)[0]
            ax = axes[i, j]
            for c in range(n_channels):
                ax.plot(W[c] / 5.0 - 2.3 * c * 0.5, lw=0.9, color=_PALETTE[c])
            ax.set_yticks([])
            ax.set_xlim(0, length - 1)
            ax.tick_params(labelsize=6)
            if j == 0:
                ax.set_ylabel(fam, fontsize=8)
    fig.suptitle("shared temporal backgrounds: two draws per family (3 channels, robustly normalized)", fontsize=9)
    fig.tight_layout()
    path = Path(path)
    _save(fig, path)
    plt.close(fig)
    return path


def plot_difficulty(path: str | Path, *, rule: str = "motif_shape", length: int = 256, seed: int = 3,
                    config: PriorConfig | None = None) -> Path:
    """The same rule at d = 0, 0.5, 1: class margin shrinks, nuisance severity grows."""
    plt = _plt()
    cfg = config or PriorConfig()
    ds = (0.0, 0.5, 1.0)
    fig, axes = plt.subplots(3, len(ds), figsize=(4 * len(ds), 5.5), squeeze=False, sharex=True)
    for j, d in enumerate(ds):
        prior = EpisodePrior(cfg, seed=seed)
        om = prior.sample_omega(60, 40, length, rule=rule, n_classes=3, n_channels=1, difficulty=d,
                                background="smooth")
        ep = prior.generate(om, keep_prototypes=True)
        center, scale = _display_scale(ep.X)
        for label in range(3):
            ax = axes[label, j]
            for r in np.flatnonzero(ep.y == label)[:4]:
                ax.plot((ep.X[r, 0] - center[0]) / scale[0], color=_PALETTE[label], lw=0.7, alpha=0.8)
            ax.plot((ep.prototypes[label, 0] - center[0]) / scale[0], color="k", lw=1.2)
            ax.axvspan(ep.region[0], ep.region[1] - 1, color="gold", alpha=0.18, lw=0)
            ax.set_yticks([])
            ax.tick_params(labelsize=6)
            if label == 0:
                ax.set_title(f"d = {d:.1f}", fontsize=9)
            if j == 0:
                ax.set_ylabel(f"class {label}", fontsize=8)
    fig.suptitle(f"difficulty: {rule}, prototype (black) and four instances per class", fontsize=9)
    fig.tight_layout()
    path = Path(path)
    _save(fig, path)
    plt.close(fig)
    return path


def write_gallery(out_dir: str | Path, *, seed: int = 0, config: PriorConfig | None = None,
                  rules: list[str] | None = None) -> list[Path]:
    """Write ``<rule>.png`` for every rule family plus ``backgrounds.png`` and ``difficulty.png``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for rule in rules or list(ALL_RULES):
        written.append(plot_rule_family(rule, out / f"{rule}.png", seed=seed, config=config))
    written.append(plot_backgrounds(out / "backgrounds.png", seed=seed))
    written.append(plot_difficulty(out / "difficulty.png", config=config))
    return written
