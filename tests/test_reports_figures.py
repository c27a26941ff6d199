"""The report's figures as a reviewer reads them, measured on the rendered figure (renderer window extents):
the accuracy-vs-cost labels never overprint each other or a point and stay inside the axes (the demo's crowded
case and a generated one), time tick labels never run together, and the scatter panels are padded around
[lo, 1] so points at an accuracy of 1.0 are drawn whole, off the frame."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.text import Text

from chorustic.reports.figures import cost_figure, scatter_figure

DEMO = Path(__file__).resolve().parents[1] / "examples" / "demo"
SAVE_DPI = 200  # save_figure's resolution: the extents of the PNG a reviewer opens


def rendered(fig):
    """Draw ``fig`` at the saved resolution; return its renderer."""
    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    fig.set_dpi(SAVE_DPI)
    canvas.draw()
    return canvas.get_renderer()


def inside(box, frame) -> bool:
    return box.x0 >= frame.x0 and box.x1 <= frame.x1 and box.y0 >= frame.y0 and box.y1 <= frame.y1


def marker_boxes(ax):
    """The display box of every scatter marker of ``ax`` (center and size as drawn: ``s`` is the area in pt^2;
    a collection's own window extent is empty for markers)."""
    from matplotlib.transforms import Bbox

    px = ax.figure.dpi / 72
    boxes = []
    for c in ax.collections:
        sizes = np.broadcast_to(c.get_sizes(), (len(c.get_offsets()),))
        for (cx, cy), s in zip(ax.transData.transform(c.get_offsets()), sizes):
            r = np.sqrt(s) / 2 * px
            boxes.append(Bbox.from_extents(cx - r, cy - r, cx + r, cy + r))
    return boxes


def tick_label_boxes(ax, renderer, axis="x"):
    """Extents of the tick labels drawn inside the view, left to right (bottom to top)."""
    a = ax.xaxis if axis == "x" else ax.yaxis
    lo, hi = sorted(ax.get_xlim() if axis == "x" else ax.get_ylim())
    pairs = zip(a.get_majorticklocs(), a.get_majorticklabels())
    boxes = [lab.get_window_extent(renderer) for loc, lab in pairs
             if lo <= loc <= hi and lab.get_visible() and lab.get_text()]
    return sorted(boxes, key=lambda b: b.x0 if axis == "x" else b.y0)


def assert_labels_readable(fig, names):
    r = rendered(fig)
    ax = fig.axes[0]
    frame = ax.get_window_extent(r)
    labels = {t.get_text(): Text.get_window_extent(t, r) for t in ax.texts}  # the text, not its leader line
    assert set(labels) == set(names)
    for name, box in labels.items():
        assert inside(box, frame), f"label {name!r} runs past the axes: {box} vs {frame}"
        assert inside(box, fig.bbox), name
    for (a, box_a), (b, box_b) in itertools.combinations(labels.items(), 2):
        assert not box_a.overlaps(box_b), f"labels {a!r} and {b!r} overprint each other"
    markers = marker_boxes(ax)
    assert len(markers) == len(labels)
    for name, box in labels.items():
        assert not any(box.overlaps(m) for m in markers), f"label {name!r} covers a point"
    ticks = tick_label_boxes(ax, r)
    assert len(ticks) >= 2
    for a, b in zip(ticks, ticks[1:]):
        assert b.x0 > a.x1, "time tick labels run together"
    return ax


@pytest.mark.parametrize("archive", ["UCR", "UEA"])
def test_demo_cost_figure_labels_do_not_overlap_and_stay_inside(archive):
    """The demo's committed cost inputs: MiniRocket and MultiRocket-Hydra 0.3 accuracy points and 1.5x in time
    apart on UEA (their labels overprinted, MultiRocket-Hydra ran past the frame, ticks read "20 s30 s")."""
    cost = pd.read_csv(DEMO / "reports" / "tables" / f"table_cost_{archive.lower()}.csv")
    labels = dict(zip(cost["method"], cost["display_name"]))
    fig = cost_figure(cost, labels, "chorustic_small", f"Accuracy and wall time on {archive}")
    ax = assert_labels_readable(fig, labels.values())
    assert ax.get_yticks().max() <= 100  # room above the top points, never an accuracy tick above 100 %


def test_crowded_cost_figure_and_every_time_span_stay_readable():
    """Ten methods within 2 accuracy points and a factor 3 in time; and time spans from a second to weeks
    (the tick labels are the densest round durations that keep apart)."""
    names = ["ChorusTIC", "MiniRocket", "MultiRocket-Hydra", "QUANT", "1NN-DTW (10% window)", "TabICL",
             "MantisV2+RF", "MOMENT+SVM", "TiCT", "NuTime+RF"]
    rng = np.random.default_rng(0)
    cost = pd.DataFrame({"method": [n.lower() for n in names], "group": "Classical", "device": "cpu",
                         "avg_acc": 0.9 + rng.uniform(0, 0.02, 10),
                         "total_time_s": 20 * rng.uniform(1, 3, 10)})
    assert_labels_readable(cost_figure(cost, dict(zip(cost["method"], names)), "chorustic", "crowded"), names)
    for lo, hi in [(0.3, 4), (2.8, 39), (50, 4000), (3, 2e6)]:
        two = cost.iloc[:2].assign(total_time_s=[lo, hi], avg_acc=[0.8, 0.9])
        fig = cost_figure(two, dict(zip(two["method"], names)), "chorustic", f"{lo}-{hi} s")
        r = rendered(fig)
        ticks = tick_label_boxes(fig.axes[0], r)
        assert len(ticks) >= 2 and all(b.x0 > a.x1 for a, b in zip(ticks, ticks[1:])), (lo, hi)


def test_demo_scatter_points_at_accuracy_one_are_inside_the_frame():
    acc = pd.read_csv(DEMO / "results" / "accuracies.csv")
    full = acc[(acc["archive"] == "UEA") & (acc["protocol"] == "full") & (acc["status"] == "ok")]
    matrix = full.pivot_table(index="dataset", columns="method", values="accuracy")
    labels = dict(zip(full["method"], full["display_name"]))
    assert (matrix.drop(columns="chorustic_small") == 1.0).any().any()  # the case at stake
    fig = scatter_figure(matrix, "chorustic_small", labels, "scatter")
    r = rendered(fig)
    panels = [ax for ax in fig.axes if ax.get_visible()]
    assert len(panels) == 4
    for ax in panels:
        (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
        assert x1 > 1.0 and y1 > 1.0 and x0 < matrix.min().min() and y0 < matrix.min().min()
        assert max(ax.get_xticks()) <= 1.0 and max(ax.get_yticks()) <= 1.0  # no accuracy tick above 1
        frame = ax.get_window_extent(r)
        markers = marker_boxes(ax)
        assert len(markers) == len(matrix)
        assert all(inside(m, frame) for m in markers), "a point sits on the frame"
        for a, b in zip(tick_label_boxes(ax, r), tick_label_boxes(ax, r)[1:]):
            assert b.x0 > a.x1
