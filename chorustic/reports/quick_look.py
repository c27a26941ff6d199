"""The quick look: predict a method's UCR-128 / UEA-30 mean accuracy from a few cheap datasets.

Before a method is billed for the whole archives (issue 69, "a quick look before the full bill"), it runs
on the *quick-look selection*: a few UCR and UEA datasets listed in ``config/quick_look.yaml`` (the one home
of the selection; a config overlay, ``chorustic plan-run --config config/quick_look.yaml`` bills it), chosen
by ``benchmarks/quick_look.py`` and validated in ``benchmarks/results/quick_look.md``.

The mapping
-----------
From the mean accuracy ``x`` of a method on the datasets it ran (those of the selection), the predicted
archive mean is ``x + c``, where the offset ``c`` is the mean, over the paper's methods (the per-dataset
tables of ``results/reference/``), of (archive mean - mean on the same datasets). The archive mean of a
paper method is the plain mean of its column over every dataset of the archive. The offset is fitted at
call time on the datasets actually given, so a partial run still gets a prediction, with its own error.

The stated error ``e`` is the larger of two leave-one-method-out (LOMO) RMS errors: that of the mapping on
the datasets given (each paper method predicted by the offset fitted on the others; for the full selection
optimistic, since the selection was chosen to make exactly this error small on the same methods), and the
honest one of the whole procedure, with the selection search re-run without the held-out method
(:func:`nested_rms`), the headline of ``benchmarks/results/quick_look.md``.

Why an offset (slope 1) and not the plain subset mean or a fitted line ``a + b x``: on 200 random
selections of the same size the offset's LOMO error is well below the plain mean's (a selection is easier
or harder than its archive by about the same amount for every method), and below the line's on UCR, equal
on UEA. The line does better for most held-out methods but, with NuTime+RF (far below the others) held
out, extrapolates to errors of about 6 pp; the offset has no slope to fit on 8-10 methods and works from a
single dataset. The figures are in the results page (``benchmarks/quick_look.py`` computes them).

The selection search (:func:`choose_selection`) is a greedy forward selection: each step adds the dataset
that makes the LOMO RMS error of the mapping smallest, preferring the cheapest of those within
``tolerance`` of the best (then the name), under a budget on the total cost (:func:`dataset_costs`: series
x length x channels of both splits, from the registry) as a fraction of the archive's.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from chorustic.paths import repo_path

__all__ = [
    "ARCHIVES",
    "ARCHIVE_LABELS",
    "REFERENCE_DIR",
    "SELECTION_FILE",
    "Prediction",
    "archive_means",
    "choose_selection",
    "dataset_costs",
    "lomo_errors",
    "lomo_rms",
    "nested_lomo",
    "nested_rms",
    "normalise_archive",
    "predict_archive_mean",
    "read_selection",
    "reference_table",
]

ARCHIVES = ("UCR", "UEA")
#: How the archives are named in text.
ARCHIVE_LABELS = {"UCR": "UCR-128", "UEA": "UEA-30"}
#: The paper's per-dataset tables (file names: :data:`chorustic.reports.paper.PER_DATASET_FILES`).
REFERENCE_DIR = "results/reference"
#: The selection, relative to the repository root.
SELECTION_FILE = "config/quick_look.yaml"
#: The search settings of the shipped selection (benchmarks/quick_look.py chooses it with them): datasets
#: per archive; its cost (series x length x channels) at most this fraction of the archive's; candidates
#: whose LOMO RMS error is within this (a fraction: 0.1 percentage point) of the best are equally good, the
#: cheapest of them is taken.
SIZES = {"UCR": 20, "UEA": 8}
MAX_COST_FRACTION = 0.1
TOLERANCE = 0.001


def normalise_archive(archive: str) -> str:
    """``"UCR"``, ``"ucr"``, ``"UCR128"``, ``"UCR-128"`` -> ``"UCR"``; likewise UEA; else ValueError."""
    a = re.sub(r"[-_ ]?\d+$", "", str(archive).strip()).upper()
    if a not in ARCHIVES:
        raise ValueError(f"unknown archive {archive!r}: expected one of {', '.join(ARCHIVES)}")
    return a


@functools.lru_cache(maxsize=None)
def _reference(archive: str) -> pd.DataFrame:
    from chorustic.reports.paper import PER_DATASET_FILES

    path = repo_path(REFERENCE_DIR) / PER_DATASET_FILES[archive]
    table = pd.read_csv(path).set_index("dataset")
    if table.index.has_duplicates or table.isna().any().any():
        raise ValueError(f"{path}: every dataset once, every accuracy given")
    return table.astype(float)


def reference_table(archive: str) -> pd.DataFrame:
    """The paper's accuracies on ``archive`` (fractions): one row per dataset (file order), one column per
    method (display names)."""
    return _reference(normalise_archive(archive)).copy()


def archive_means(archive: str) -> pd.Series:
    """Each paper method's archive mean: the plain mean of its column over every dataset of the archive."""
    return reference_table(archive).mean(axis=0)


def dataset_costs(names: Iterable[str]) -> pd.Series:
    """What a dataset costs to run, as the values it holds: (train + test series) x length x channels
    (the registry's sizes; the longest length for a variable-length dataset)."""
    from chorustic.data.registry import get_info

    out = {}
    for n in names:
        info = get_info(n)
        out[n] = float((info.n_train + info.n_test) * info.length * info.n_channels)
    return pd.Series(out, dtype=float)


def read_selection(path: str | Path | None = None) -> dict[str, tuple[str, ...]]:
    """The quick-look datasets per archive (``{"UCR": (...), "UEA": (...)}``, in file order) from
    ``datasets.include`` of the selection file (default :data:`SELECTION_FILE`).

    Every name must be a dataset of the paper's per-dataset table of its archive."""
    from chorustic.config import read_yaml
    from chorustic.data.registry import get_info

    path = repo_path(path or SELECTION_FILE)
    data = read_yaml(path)
    try:
        names = list(data["datasets"]["include"])
    except (KeyError, TypeError):
        raise ValueError(f"{path}: expected a list of dataset names under datasets.include") from None
    out: dict[str, list[str]] = {a: [] for a in ARCHIVES}
    for n in names:
        archive = get_info(n).archive
        if n not in _reference(archive).index:
            raise ValueError(f"{path}: {n!r} is not in the paper's {ARCHIVE_LABELS[archive]} "
                             "per-dataset table")
        out[archive].append(n)
    return {a: tuple(v) for a, v in out.items()}


def _offset_lomo(acc: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """Signed LOMO errors (prediction - truth) of the offset mapping, one per method (rows of ``acc``:
    methods x columns; several column sets at once when ``acc`` is methods x candidates, already averaged)."""
    m = acc.shape[0]
    if m < 2:
        raise ValueError("leave-one-method-out needs at least two reference methods")
    gap = acc - truth.reshape(-1, *([1] * (acc.ndim - 1)))
    return gap - (gap.sum(axis=0) - gap) / (m - 1)


def lomo_errors(archive: str, datasets: Sequence[str], methods: Sequence[str] | None = None) -> pd.Series:
    """Signed leave-one-method-out errors (predicted - true archive mean, fractions) of the mapping on
    ``datasets``: each of ``methods`` (default: all the paper's) predicted by the offset fitted on the
    others."""
    table = reference_table(archive)
    methods = list(table.columns if methods is None else methods)
    if not datasets:
        raise ValueError("no dataset to predict from")
    subset = table.loc[list(datasets), methods].mean(axis=0).to_numpy()
    truth = table[methods].mean(axis=0).to_numpy()
    return pd.Series(_offset_lomo(subset, truth), index=methods)


def lomo_rms(archive: str, datasets: Sequence[str], methods: Sequence[str] | None = None) -> float:
    """The RMS of :func:`lomo_errors`: the error ``e`` a prediction states."""
    e = lomo_errors(archive, datasets, methods).to_numpy()
    return float(np.sqrt(np.mean(e**2)))


@dataclasses.dataclass(frozen=True)
class Prediction:
    """A method's predicted archive mean accuracy (fractions throughout)."""

    archive: str
    """``"UCR"`` or ``"UEA"``."""
    mean: float
    """The predicted archive mean: :attr:`subset_mean` + :attr:`offset`."""
    error: float
    """The stated error: the larger of :attr:`error_on_datasets` and :attr:`nested_error`."""
    error_on_datasets: float
    """The LOMO RMS error of the mapping on these datasets over the paper's methods (:func:`lomo_rms`); for
    the whole selection optimistic, as the selection was chosen to make it small on the same methods."""
    nested_error: float
    """The RMS of the honest validation of the whole procedure (:func:`nested_rms`: the selection chosen again
    without the held-out method)."""
    n_datasets: int
    """Datasets of the selection the prediction rests on."""
    n_selection: int
    """Datasets of the selection in this archive."""
    datasets: tuple[str, ...]
    missing: tuple[str, ...]
    """Datasets of the selection not among the accuracies given."""
    subset_mean: float
    """The method's plain mean over :attr:`datasets`."""
    offset: float
    reference_methods: tuple[str, ...]

    @property
    def text(self) -> str:
        """``"predicted UCR-128 mean 81.2 % ± 1.1 pp (from 20 datasets)"`` (in percent, as the tables)."""
        of = "" if self.n_datasets == self.n_selection else f" of {self.n_selection}"
        return (f"predicted {ARCHIVE_LABELS[self.archive]} mean {100 * self.mean:.1f} % ± {100 * self.error:.1f} pp "
                f"(from {self.n_datasets}{of} datasets)")

    def __str__(self) -> str:
        return self.text


def predict_archive_mean(
    accuracies: Mapping[str, float],
    archive: str,
    *,
    reference_methods: Iterable[str] | None = None,
    selection_file: str | Path | None = None,
) -> Prediction:
    """Predict a method's archive mean accuracy from its accuracies (fractions, by dataset name) on the
    quick-look selection of ``archive``.

    Only the datasets of the selection are used (others, e.g. the other archive's, are ignored); the
    mapping is fitted on ``reference_methods`` (default: all the paper's methods of that archive) restricted
    to those datasets. Raises ValueError when none of the selection's datasets is given, or an accuracy
    used is not a fraction in [0, 1]."""
    archive = normalise_archive(archive)
    path = selection_file or SELECTION_FILE
    selection = read_selection(path)[archive]
    if not selection:
        raise ValueError(f"{path} selects no {ARCHIVE_LABELS[archive]} dataset")
    given = dict(accuracies)
    used = tuple(n for n in selection if n in given)
    if not used:
        raise ValueError(
            f"none of the {len(selection)} {ARCHIVE_LABELS[archive]} datasets of the quick-look selection "
            f"({path}: {', '.join(selection)}) is among the {len(given)} accuracies given")
    values = np.array([given[n] for n in used], dtype=float)
    bad = [n for n, v in zip(used, values) if not (math.isfinite(v) and 0.0 <= v <= 1.0)]
    if bad:
        raise ValueError(f"accuracies are fractions in [0, 1]; not so for {', '.join(bad)} "
                         f"({', '.join(str(given[n]) for n in bad)})")
    table = reference_table(archive)
    methods = tuple(table.columns if reference_methods is None else reference_methods)
    unknown = [m for m in methods if m not in table.columns]
    if unknown:
        raise ValueError(f"not a method of the paper's {ARCHIVE_LABELS[archive]} table: {', '.join(unknown)}")
    if len(methods) < 2:
        raise ValueError("the mapping needs at least two reference methods")
    on_datasets = lomo_rms(archive, used, methods)
    nested = nested_rms(archive)
    ref = table.loc[list(used), list(methods)]
    offset = float((table[list(methods)].mean(axis=0) - ref.mean(axis=0)).mean())
    subset_mean = float(values.mean())
    return Prediction(
        archive=archive,
        mean=subset_mean + offset,
        error=max(on_datasets, nested),
        error_on_datasets=on_datasets,
        nested_error=nested,
        n_datasets=len(used),
        n_selection=len(selection),
        datasets=used,
        missing=tuple(n for n in selection if n not in given),
        subset_mean=subset_mean,
        offset=offset,
        reference_methods=methods,
    )


def _cheapest_others(costs: np.ndarray, k: int) -> np.ndarray:
    """For each entry of ``costs``: the sum of the ``k`` smallest of the others (inf where too few)."""
    if k == 0:
        return np.zeros_like(costs)
    if k >= len(costs):
        return np.full_like(costs, np.inf)
    r = np.sort(costs)
    base = r[:k].sum()
    # an entry among the k smallest (by value) is replaced by the (k+1)-th smallest
    return np.where(costs <= r[k - 1], base - costs + r[k], base)


def choose_selection(
    archive: str,
    size: int,
    *,
    methods: Sequence[str] | None = None,
    max_cost_fraction: float = 0.2,
    tolerance: float = 0.0,
) -> tuple[str, ...]:
    """The greedy forward selection of ``size`` datasets of ``archive`` (in the order chosen).

    Each step adds, among the datasets that keep the selection within ``max_cost_fraction`` of the
    archive's cost (counting the cheapest datasets still to add), one whose addition gives a LOMO RMS
    error over ``methods`` (default: all the paper's) within ``tolerance`` (a fraction) of the smallest:
    the cheapest of those, then the first by name. Deterministic."""
    table = reference_table(archive)
    methods = list(table.columns if methods is None else methods)
    names = list(table.index)
    acc = table[methods].to_numpy().T  # methods x datasets
    truth = acc.mean(axis=1)
    cost = dataset_costs(names).to_numpy()
    budget = max_cost_fraction * cost.sum()
    if not 1 <= size <= len(names):
        raise ValueError(f"size must be 1..{len(names)}, got {size}")
    chosen: list[int] = []
    sums = np.zeros(len(methods))
    spent = 0.0
    for step in range(size):
        rest = np.array([j for j in range(len(names)) if j not in chosen])
        still = size - step - 1  # datasets to add after this one
        feasible = spent + cost[rest] + _cheapest_others(cost[rest], still) <= budget
        if not feasible.any():
            raise ValueError(f"no {size} datasets of {archive} fit within {max_cost_fraction:.0%} "
                             "of its cost")
        cand = rest[feasible]
        means = (sums[:, None] + acc[:, cand]) / (step + 1)
        err = _offset_lomo(means, truth)
        rms = np.sqrt(np.mean(err**2, axis=0))
        near = cand[rms <= rms.min() + tolerance]
        pick = min(near, key=lambda j: (cost[j], names[j]))
        chosen.append(int(pick))
        sums += acc[:, pick]
        spent += cost[pick]
    return tuple(names[j] for j in chosen)


def nested_lomo(
    archive: str,
    size: int,
    *,
    max_cost_fraction: float = 0.2,
    tolerance: float = 0.0,
) -> pd.DataFrame:
    """The honest validation of the whole procedure: for each paper method, the selection is chosen
    (:func:`choose_selection`) on the other methods, the offset fitted on them, and the held-out method
    predicted from its accuracies on that selection.

    One row per held-out method: ``true``, ``predicted``, ``error`` (predicted - true, fractions) and
    ``selection`` (the datasets chosen without it)."""
    table = reference_table(archive)
    truth = table.mean(axis=0)
    rows = []
    for held in table.columns:
        others = [m for m in table.columns if m != held]
        chosen = choose_selection(archive, size, methods=others, max_cost_fraction=max_cost_fraction,
                                  tolerance=tolerance)
        sub = table.loc[list(chosen)].mean(axis=0)
        offset = float((truth[others] - sub[others]).mean())
        pred = float(sub[held]) + offset
        rows.append({"method": held, "true": float(truth[held]), "predicted": pred,
                     "error": pred - float(truth[held]), "selection": chosen})
    return pd.DataFrame(rows).set_index("method")


@functools.lru_cache(maxsize=None)
def nested_rms(archive: str) -> float:
    """The RMS error of :func:`nested_lomo` with the shipped selection's settings (:data:`SIZES`,
    :data:`MAX_COST_FRACTION`, :data:`TOLERANCE`): the error a quick look honestly has."""
    archive = normalise_archive(archive)
    err = nested_lomo(archive, SIZES[archive], max_cost_fraction=MAX_COST_FRACTION, tolerance=TOLERANCE)["error"]
    return float(np.sqrt(np.mean(err.to_numpy() ** 2)))
