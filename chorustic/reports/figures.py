"""The report's figures, each saved as PNG and PDF (atomically, without time stamps so that a rebuild of
the same results gives the same files):

* :func:`scaling_figure`      paper Figure 2: average accuracy against the labeled fraction, one line per method
* :func:`cd_figure`           critical-difference diagram (:func:`aeon.visualisation.plot_critical_difference`)
* :func:`scatter_figure`      the reference method against each other method, one panel per method
* :func:`distribution_figure` violin plot of the per-dataset accuracies of each method
* :func:`cost_figure`         mean accuracy against total wall time (fit + predict), one point per method
* :func:`mcm_figure`          aeon's multi-comparison matrix (:func:`aeon.visualisation.create_multi_comparison_matrix`)

aeon's own pairwise-scatter and violin helpers need seaborn, which the harness does not depend on; these
two are drawn with matplotlib directly. Figures are plain :class:`matplotlib.figure.Figure` objects (no
pyplot state), except aeon's critical-difference diagram, which is closed after saving.
"""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # reports are written to files; never open a window (safe: called before pyplot)

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
import pandas as pd  # noqa: E402

from chorustic.io import atomic_open  # noqa: E402
from chorustic.stats import win_tie_loss  # noqa: E402

__all__ = [
    "save_figure",
    "scaling_figure",
    "cd_figure",
    "scatter_figure",
    "distribution_figure",
    "cost_figure",
    "mcm_figure",
    "FORMATS",
]

FORMATS = ("png", "pdf")
REFERENCE_COLOR = "#1b1b1b"
#: Margin of the scatter panels around [lo, 1], as a fraction of the range: a point at 1.0 is drawn whole,
#: inside the frame.
SCATTER_PAD = 0.04
_MARKERS = ["o", "s", "^", "D", "v", "P", "X", "<", ">", "h", "*", "p"]
# matplotlib >= 3.10 takes `orientation`; `vert` is deprecated there and the only option before
_HORIZONTAL = (
    {"orientation": "horizontal"}
    if tuple(int(x) for x in matplotlib.__version__.split(".")[:2]) >= (3, 10)
    else {"vert": False}
)
_METADATA = {
    "png": {"Software": None},
    "pdf": {"CreationDate": None, "ModDate": None, "Producer": None, "Creator": None},
}


def _colors(n: int) -> list:
    cmap = plt.get_cmap("tab10" if n <= 10 else "tab20")
    return [cmap(i % cmap.N) for i in range(n)]


def save_figure(fig, stem: str | Path, formats=FORMATS, dpi: int = 200) -> list[Path]:
    """Save ``fig`` as ``<stem>.<fmt>`` for each format, atomically; close it; return the paths."""
    stem = Path(stem)
    paths = []
    try:
        for f in formats:
            path = stem.with_name(f"{stem.name}.{f}")
            with atomic_open(path, "wb") as fh:
                fig.savefig(fh, format=f, dpi=dpi, bbox_inches="tight", metadata=_METADATA.get(f))
            paths.append(path)
    finally:
        if getattr(fig.canvas, "manager", None) is not None:  # a pyplot figure (aeon's): release it
            plt.close(fig)
    return paths


def scaling_figure(points: pd.DataFrame, reference_label: str | None, title: str):
    """Average accuracy (%) against the labeled fraction (%), one line per method.

    ``points``: columns ``label``, ``budget`` (percent), ``avg_acc`` (fraction), ``n_common`` (datasets
    behind each point). The reference method is drawn last, thick and dark.
    """
    labels = list(dict.fromkeys(points["label"]))
    others = [lab for lab in labels if lab != reference_label]
    colors = dict(zip(others, _colors(len(others))))
    fig = Figure(figsize=(7.2, 4.4))
    ax = fig.subplots()
    for i, lab in enumerate(others + ([reference_label] if reference_label in labels else [])):
        p = points[points["label"] == lab].sort_values("budget")
        is_ref = lab == reference_label
        ax.plot(
            p["budget"],
            100 * p["avg_acc"],
            label=lab,
            marker="o" if is_ref else _MARKERS[i % len(_MARKERS)],
            color=REFERENCE_COLOR if is_ref else colors[lab],
            linewidth=2.6 if is_ref else 1.4,
            markersize=7 if is_ref else 5,
            zorder=3 if is_ref else 2,
        )
    budgets = sorted(set(points["budget"]))
    ns = points.groupby("budget")["n_common"].max()
    ax.set_xticks(budgets)
    if ns.nunique() > 1:
        ax.set_xticklabels([f"{b:g}%\n(n={ns[b]})" for b in budgets])
    else:
        ax.set_xticklabels([f"{b:g}%" for b in budgets])
    ax.set_xlabel("Labeled fraction of the training split")
    ax.set_ylabel("Average accuracy (%)")
    ax.set_title(title, fontsize=11)
    ax.grid(True, alpha=0.3)
    handles, labs = ax.get_legend_handles_labels()
    # legend in the order of the lines' last points (top to bottom), so it reads like the plot
    last = points.sort_values("budget").groupby("label")["avg_acc"].last()
    order = sorted(range(len(labs)), key=lambda k: -last.get(labs[k], -np.inf))
    handles, labs = [handles[k] for k in order], [labs[k] for k in order]
    ax.legend(handles, labs, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False, fontsize=9)
    return fig


def cd_figure(matrix: pd.DataFrame, labels: list[str], alpha: float, title: str, lower_better: bool = False):
    """Critical-difference diagram of a complete matrix of one measure (datasets x methods); rank 1 = the
    highest value, or the lowest with ``lower_better`` (log loss)."""
    from aeon.visualisation import plot_critical_difference

    if matrix.shape[1] < 3 or matrix.shape[0] < 2:
        raise ValueError(
            f"a critical-difference diagram needs >= 3 methods and >= 2 datasets, got "
            f"{matrix.shape[1]} methods and {matrix.shape[0]} datasets"
        )
    width = max(6.0, 0.45 * matrix.shape[1] + 2.5)
    fig, ax = plot_critical_difference(
        matrix.to_numpy(float),
        list(labels),
        alpha=alpha,
        width=width,
        textspace=1.7,
        test="wilcoxon",
        correction="holm",
        lower_better=lower_better,
    )
    fig.suptitle(title, fontsize=11, y=1.02)
    return fig


def scatter_figure(matrix: pd.DataFrame, reference: str, labels: dict[str, str], title: str):
    """One panel per other method: x = its accuracy, y = the reference's, per dataset. Points above the
    diagonal are datasets where the reference is more accurate (wins, blue), below are losses (red), on it
    ties (grey)."""
    others = [m for m in matrix.columns if m != reference]
    if not others:
        raise ValueError("a scatter plot needs at least one method besides the reference")
    ncol = min(4, len(others))
    nrow = math.ceil(len(others) / ncol)
    fig = Figure(figsize=(3.0 * ncol, 3.05 * nrow))
    axes = fig.subplots(nrow, ncol, squeeze=False)
    ref = matrix[reference].to_numpy(float)
    lo = max(0.0, math.floor(10 * min(matrix.min().min(), 1.0) - 0.5) / 10)
    pad = SCATTER_PAD * (1 - lo)
    for ax, m in zip(axes.flat, others):
        x = matrix[m].to_numpy(float)
        d = np.round(ref - x, 12)
        for mask, color, name in (
            (d > 0, "#1f77b4", "win"),
            (d < 0, "#d62728", "loss"),
            (d == 0, "#7f7f7f", "tie"),
        ):
            ax.scatter(x[mask], ref[mask], s=16, color=color, alpha=0.75, edgecolor="none", label=name)
        edge = [lo - pad, 1 + pad]
        ax.plot(edge, edge, color="black", linewidth=0.8, linestyle="--", zorder=0)
        # padded around [lo, 1], so points at an accuracy of 0 or 1 are drawn whole, off the frame;
        # ticks stay within [lo, 1]
        ax.set_xlim(*edge)
        ax.set_ylim(*edge)
        step = 0.2 if 1 - lo > 0.6 else 0.1 if 1 - lo > 0.25 else 0.05
        ticks = np.round(np.arange(lo, 1 + 1e-9, step), 2)
        ax.set_xticks(ticks)
        ax.set_yticks(ticks)
        ax.set_aspect("equal")
        wtl = win_tie_loss(ref, x)
        ax.text(
            0.04,
            0.96,
            f"W/T/L {wtl}",
            transform=ax.transAxes,
            va="top",
            fontsize=8.5,
            bbox={"boxstyle": "round,pad=0.2", "facecolor": "white", "edgecolor": "none", "alpha": 0.8},
        )
        ax.set_title(labels.get(m, m), fontsize=9.5)
        ax.set_xlabel(f"{labels.get(m, m)} accuracy", fontsize=8)
        ax.set_ylabel(f"{labels.get(reference, reference)} accuracy", fontsize=8)
        ax.tick_params(labelsize=7.5)
        ax.grid(True, alpha=0.25)
    for ax in list(axes.flat)[len(others) :]:
        ax.set_visible(False)
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    return fig


def distribution_figure(matrix: pd.DataFrame, labels: dict[str, str], reference: str | None, title: str):
    """Horizontal violins of per-dataset accuracy (%), methods sorted by mean accuracy (best on top), the
    mean as a white diamond and the datasets as dots."""
    order = list(matrix.mean().sort_values(ascending=True).index)  # bottom -> top
    fig = Figure(figsize=(7.2, max(2.6, 0.42 * len(order) + 1.2)))
    ax = fig.subplots()
    rng = np.random.default_rng(0)
    for i, m in enumerate(order):
        v = 100 * matrix[m].to_numpy(float)
        color = REFERENCE_COLOR if m == reference else "#4c72b0"
        if np.unique(v).size >= 2:
            parts = ax.violinplot(v, positions=[i], widths=0.8, showextrema=False, **_HORIZONTAL)
            for body in parts["bodies"]:
                body.set_facecolor(color)
                body.set_alpha(0.35 if m == reference else 0.3)
                body.set_edgecolor("none")
        ax.scatter(
            v, i + rng.uniform(-0.12, 0.12, v.size), s=7, color=color, alpha=0.6, edgecolor="none", zorder=2
        )
        ax.scatter(
            [v.mean()], [i], marker="D", s=36, color="white", edgecolor="black", linewidth=0.9, zorder=3
        )
    ax.set_yticks(range(len(order)))
    ax.set_yticklabels([labels.get(m, m) for m in order], fontsize=9)
    for tick, m in zip(ax.get_yticklabels(), order):
        if m == reference:
            tick.set_fontweight("bold")
    ax.set_xlabel("Accuracy (%) per dataset  (diamond: mean)")
    lo = float(np.nanmin(matrix.to_numpy(float))) * 100
    ax.set_xlim(max(0.0, 10 * math.floor(lo / 10) - 2), 102)
    ax.grid(True, axis="x", alpha=0.3)
    ax.set_title(title, fontsize=11)
    fig.tight_layout()
    return fig


def _fmt_seconds(s: float) -> str:
    """A tick label of the log-time axis: ``"0.5 s"``, ``"30 s"``, ``"2 min"``, ``"5 h"``, ``"2 d"``."""
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if s >= size:
            return f"{s / size:.3g} {unit}"
    return f"{s:.3g} s"


#: Tick positions (s) of the log-time axis, densest first; each ladder is a subset of "round" durations
#: (1-2-5 steps within a unit, then the unit boundaries). :func:`_time_ticks` takes the densest whose
#: rendered labels keep apart.
TIME_TICK_LADDERS = (
    (0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 18000, 36000, 86400,
     172800, 432000, 864000, 1728000, 4320000, 8640000),
    (0.1, 0.5, 1, 5, 10, 30, 60, 300, 600, 1800, 3600, 18000, 36000, 86400, 432000, 864000, 4320000, 8640000),
    (0.1, 1, 10, 60, 600, 3600, 36000, 86400, 864000, 8640000),
    (0.1, 10, 600, 36000, 864000),
)


def _renderer(fig: Figure):
    """The Agg renderer of ``fig`` (text extents in display pixels), attaching an Agg canvas if needed."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    if not isinstance(fig.canvas, FigureCanvasAgg):
        FigureCanvasAgg(fig)
    return fig.canvas.get_renderer()


def _tick_label_boxes(ax, renderer) -> list:
    """Window extents of the x tick labels drawn inside the view (after laying the axis out)."""
    ax.figure.draw_without_rendering()
    lo, hi = sorted(ax.get_xlim())
    return [
        lab.get_window_extent(renderer)
        for loc, lab in zip(ax.xaxis.get_majorticklocs(), ax.xaxis.get_majorticklabels())
        if lo <= loc <= hi and lab.get_visible() and lab.get_text()
    ]


def _time_ticks(ax, renderer, min_gap_px: float) -> None:
    """Log-time major ticks: the densest of :data:`TIME_TICK_LADDERS` with >= 2 ticks in view whose
    rendered labels are at least ``min_gap_px`` apart (else the sparsest), labelled by
    :func:`_fmt_seconds`."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullFormatter

    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: _fmt_seconds(v)))
    ax.xaxis.set_minor_locator(LogLocator(subs=(2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0)))
    ax.xaxis.set_minor_formatter(NullFormatter())
    lo, hi = sorted(ax.get_xlim())
    for ladder in TIME_TICK_LADDERS:
        ticks = [t for t in ladder if lo <= t <= hi]
        if len(ticks) < 2 and ladder is not TIME_TICK_LADDERS[-1]:
            continue
        ax.xaxis.set_major_locator(FixedLocator(ticks))
        boxes = sorted(_tick_label_boxes(ax, renderer), key=lambda b: b.x0)
        if all(b.x0 - a.x1 >= min_gap_px for a, b in zip(boxes, boxes[1:])):
            return


def _overlap(a, b) -> float:
    """Area (px^2) shared by two display bounding boxes (a line's box, of zero width or height, counts
    as 1 px across)."""
    w = min(a.x1, b.x1) - max(a.x0, b.x0)
    h = min(a.y1, b.y1) - max(a.y0, b.y0)
    if w < 0 or h < 0 or (w == 0 and a.width and b.width) or (h == 0 and a.height and b.height):
        return 0.0
    return max(w, 1.0) * max(h, 1.0)


def _outside(box, frame) -> float:
    """Area (px^2) of ``box`` outside ``frame``."""
    return box.width * box.height - _overlap(box, frame)


#: Where a point's label may go: (dx, dy) from the point, in units of the ring's distance, and the text's
#: alignment there, in order of preference.
_LABEL_SPOTS = (
    ((1, 0.7), "left", "bottom"), ((1, -0.7), "left", "top"), ((-1, 0.7), "right", "bottom"),
    ((-1, -0.7), "right", "top"), ((1.2, 0), "left", "center"), ((-1.2, 0), "right", "center"),
    ((0, 1.2), "center", "bottom"), ((0, -1.2), "center", "top"),
)
#: Distances (points) of the spots from their point: next to it, then further out with a leader line.
NEAR_RING = ((6, False),)
LEADER_RINGS = ((16, True), (28, True), (42, True))


def place_labels(ax, points: list[tuple[float, float, str, dict]], marker_pt: list[float], renderer, *,
                 segments=(), rings=NEAR_RING + LEADER_RINGS, clearance_pt: float = 6.0,
                 margin_px: float = 2.0) -> list | None:
    """Label each point ``(x, y, text, text_kwargs)`` without overlap, inside the axes (greedy, in order).

    Each label takes the first spot of :data:`_LABEL_SPOTS` on the first of ``rings`` whose rendered extent
    (from ``renderer``) lies inside the axes and overlaps no label placed before it, its own marker, the
    surroundings of any other point (its marker, ``marker_pt`` in points, plus ``clearance_pt``, so a
    label never reads as another point's), or a line of the plot (``segments``: axis-parallel segments
    ``((x0, y0), (x1, y1))`` in data coordinates). Spots on a leader ring get a leader line to their point.
    Returns the annotations, or None (nothing drawn) when some label has no free spot: the caller widens
    the axes or allows further rings and tries again.
    """
    from matplotlib.transforms import Bbox

    frame = ax.get_window_extent(renderer).padded(-margin_px)
    px = ax.figure.dpi / 72.0
    centers = ax.transData.transform([(x, y) for x, y, _, _ in points])

    def around(k: int, extra_pt: float):
        (cx, cy), r = centers[k], (marker_pt[k] + extra_pt) * px
        return Bbox.from_extents(cx - r, cy - r, cx + r, cy + r)

    lines = [Bbox(ax.transData.transform([a, b])) for a, b in segments]
    placed, boxes = [], []
    for k, (x, y, text, kw) in enumerate(points):
        keep_off = boxes + lines + [around(j, 0 if j == k else clearance_pt) for j in range(len(points))]
        probe = ax.annotate(text, (x, y), xytext=(0, 0), textcoords="offset points", **kw)
        spot = None
        for dist, leader in rings:
            for (ux, uy), ha, va in _LABEL_SPOTS:
                probe.xyann = (ux * dist, uy * dist)
                probe.set_horizontalalignment(ha)
                probe.set_verticalalignment(va)
                box = probe.get_window_extent(renderer).padded(1.5 * px)
                if _outside(box, frame) == 0 and not any(_overlap(box, b) for b in keep_off):
                    spot = (probe.xyann, ha, va, leader, box)
                    break
            if spot is not None:
                break
        probe.remove()
        if spot is None:
            for a in placed:
                a.remove()
            return None
        offset, ha, va, leader, box = spot
        arrow = {"arrowstyle": "-", "color": "#777777", "linewidth": 0.6, "shrinkA": 1, "shrinkB": 4}
        placed.append(ax.annotate(text, (x, y), xytext=offset, textcoords="offset points", ha=ha, va=va,
                                  arrowprops=arrow if leader else None, **kw))
        boxes.append(box)
    return placed


def cost_figure(cost: pd.DataFrame, labels: dict[str, str], reference: str | None, title: str):
    """Mean accuracy (%) against total wall time (fit + predict, log scale), one point per method.

    ``cost``: one row per method with ``method``, ``group``, ``device``, ``avg_acc`` (fraction) and
    ``total_time_s``. Colour = group, marker = device (circle: CPU, square: GPU, triangle: other or
    unknown). The dashed line joins the Pareto front: no other method is both faster and more accurate.
    Labels are placed where they overlap no other label or point and stay inside the axes
    (:func:`place_labels`; the time axis widens until they fit); time ticks are the densest round
    durations whose labels keep apart (:func:`_time_ticks`).
    """
    from matplotlib.lines import Line2D

    cost = cost[cost["avg_acc"].notna() & (cost["total_time_s"] > 0)].copy()
    if cost.empty:
        raise ValueError("no method has both an accuracy and timings")
    from chorustic.methods.base import GROUPS

    known = list(GROUPS) + sorted(set(cost["group"]) - set(GROUPS))
    gcolor = dict(zip(known, _colors(len(known))))  # one colour per group in every report
    groups = [g for g in known if g in set(cost.loc[cost["method"] != reference, "group"])]
    fig = Figure(figsize=(7.6, 4.8))
    ax = fig.subplots()
    renderer = _renderer(fig)

    def marker(device: str) -> str:
        d = str(device).lower()
        return "o" if d == "cpu" else "s" if d.startswith("cuda") or d == "gpu" else "^"

    points, radii = [], []
    # the reference is labelled first, then from the most accurate down: the crowded top gets first pick
    order = sorted(cost.itertuples(index=False), key=lambda r: (r.method != reference, -r.avg_acc, r.method))
    for r in order:
        is_ref = r.method == reference
        size = 90 if is_ref else 55
        ax.scatter(
            r.total_time_s,
            100 * r.avg_acc,
            s=size,
            marker=marker(r.device),
            color=REFERENCE_COLOR if is_ref else gcolor[r.group],
            edgecolor="black" if is_ref else "white",
            linewidth=0.8,
            zorder=3,
        )
        font = {"fontsize": 8.5, "fontweight": "bold" if is_ref else "normal"}
        points.append((r.total_time_s, 100 * r.avg_acc, labels.get(r.method, r.method), font))
        radii.append(math.sqrt(size) / 2)
    front = cost.sort_values(["total_time_s", "avg_acc"], ascending=[True, False])
    best, pts = -np.inf, []
    for r in front.itertuples(index=False):
        if r.avg_acc > best:
            best = r.avg_acc
            pts.append((r.total_time_s, 100 * r.avg_acc))
    segments = []  # the Pareto line, which labels keep off
    if len(pts) > 1:
        xs, ys = zip(*pts)
        ax.step(xs, ys, where="post", linestyle="--", color="#888888", linewidth=1, zorder=1)
        for (xa, ya), (xb, yb) in zip(pts, pts[1:]):
            segments += [((xa, ya), (xb, ya)), ((xb, ya), (xb, yb))]
    ax.set_xscale("log")
    lo, hi = cost["total_time_s"].min(), cost["total_time_s"].max()
    ymin, ymax = 100 * cost["avg_acc"].min(), 100 * cost["avg_acc"].max()
    pad = max(1.0, 0.1 * (ymax - ymin))
    ax.set_xlim(lo / 2, hi * 4)
    ax.set_ylim(ymin - pad, min(100.5, ymax + pad))
    ax.set_xlabel("Total wall time: fit + predict, summed over the datasets (log scale)")
    ax.set_ylabel("Average accuracy (%)")
    ax.grid(True, alpha=0.3, which="both")
    ax.set_title(title, fontsize=11)
    handles = [Line2D([], [], marker="o", linestyle="", color=gcolor[g], label=g) for g in groups]
    if reference in set(cost["method"]):
        handles.insert(0, Line2D([], [], marker="o", linestyle="", color=REFERENCE_COLOR,
                                 label=f"{labels.get(reference, reference)} (reference)"))
    devices = sorted(set(cost["device"].astype(str)))
    handles += [
        Line2D([], [], marker=marker(d), linestyle="", color="#555555", markerfacecolor="white", label=f"device: {d}")
        for d in devices
    ]
    if len(pts) > 1:
        handles.append(Line2D([], [], linestyle="--", color="#888888", label="Pareto front"))
    ax.legend(handles=handles, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False, fontsize=8.5)
    gap = 0.8 * 8.5 * fig.dpi / 72  # tick labels keep most of an em apart
    _time_ticks(ax, renderer, gap)
    fig.tight_layout()  # the axes' final place: labels are placed in its pixels
    # labels next to their points, widening the time axis to the right (where labels go first) up to
    # twice; then with leader lines too; in a view too crowded even for that, in place
    x0, x1 = ax.get_xlim()
    y0, y1 = ax.get_ylim()
    for rings in (NEAR_RING, NEAR_RING + LEADER_RINGS):
        for widen in (0, 1, 2):
            ax.set_xlim(x0, x1 * 2**widen)
            ax.set_ylim(y0, max(y1, min(y1 + widen * pad / 2, 102.5)))  # room above the top point
            if place_labels(ax, points, radii, renderer, segments=segments, rings=rings) is not None:
                break
        else:
            continue
        break
    else:
        ax.set_xlim(x0, x1)
        ax.set_ylim(y0, y1)
        for x, y, text, kw in points:
            ax.annotate(text, (x, y), xytext=(6, 4), textcoords="offset points", **kw)
    bottom, top = ax.get_ylim()
    ax.set_yticks([t for t in ax.get_yticks() if bottom <= t <= min(top, 100)])  # never above 100 %
    _time_ticks(ax, renderer, gap)
    return fig


def mcm_figure(matrix: pd.DataFrame, labels: dict[str, str], alpha: float):
    """aeon's multi-comparison matrix of a complete accuracy matrix (datasets x methods): per pair of
    methods the mean difference, W/T/L and the two-sided Wilcoxon p-value (Holm-corrected); methods
    ordered by average accuracy."""
    from aeon.visualisation import create_multi_comparison_matrix

    if matrix.shape[1] < 2 or matrix.shape[0] < 2:
        raise ValueError(
            f"a multi-comparison matrix needs >= 2 methods and >= 2 datasets, got {matrix.shape[1]} methods and "
            f"{matrix.shape[0]} datasets"
        )
    # long names ("ChorusTIC-small (CPU-pretrained)") break before the parenthesis, so columns do not overlap
    wrapped = {m: str(labels.get(m, m)).replace(" (", "\n(") for m in matrix.columns}
    frame = matrix.rename(columns=wrapped).astype(float)
    with matplotlib.rc_context():  # aeon sets rcParams["figure.autolayout"]; keep it out of later figures
        return create_multi_comparison_matrix(
            frame,
            save_path="",  # with formats=None aeon saves nothing
            formats=None,
            statistic_name="Accuracy",
            pvalue_test_params={"zero_method": "wilcox", "alternative": "two-sided"},
            pvalue_correction="Holm",
            pvalue_threshold=alpha,
            show_symmetry=True,
            fig_size=(max(5.0, 1.45 * frame.shape[1] + 1.5), max(3.0, 0.85 * frame.shape[1] + 1.2)),
            font_size=8,
        )
