"""Synthetic ``results/accuracies.csv`` in the aggregate step's format, for tests and report previews.

The numbers are random (seeded) and mean nothing: per-dataset difficulty plus a per-method skill, noise,
a per-protocol label-budget penalty, quantised to multiples of 1/n_test like real accuracies. Failed runs,
ineligible datasets and a "reported, not reproduced" method can be injected to exercise every path of the
reports.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd

from chorustic.evaluation.aggregate import COLUMNS
from chorustic.io import atomic_write_text
from chorustic.protocols.base import parse_protocol_id
from chorustic.protocols.contexts import DEFAULT_PROTOCOLS, context_specs

__all__ = [
    "SyntheticMethod",
    "DEFAULT_SYNTHETIC_METHODS",
    "synthetic_accuracies",
    "write_synthetic_accuracies",
    "PAPER_PROTOCOLS",
    "budget_penalty",
]

#: The protocol ids of the paper's settings (derived from :data:`chorustic.protocols.DEFAULT_PROTOCOLS`).
PAPER_PROTOCOLS = tuple(dict.fromkeys(s.protocol for s in context_specs(DEFAULT_PROTOCOLS)))


def budget_penalty(family: str, budget: int | None) -> float:
    """How much accuracy a smaller label budget costs in the synthetic results (any k or %)."""
    if family == "fixed_shot":
        return float(np.interp(budget, [5, 10], [0.10, 0.06]))
    if family == "proportional":
        return float(np.interp(budget, [20, 30, 40, 50, 60], [0.07, 0.055, 0.04, 0.03, 0.02]))
    return 0.0


@dataclasses.dataclass(frozen=True)
class SyntheticMethod:
    name: str
    display_name: str
    group: str
    fits_on_target: bool
    skill: float
    reported: bool = False
    archives: tuple[str, ...] = ("UEA", "UCR")
    protocols: tuple[str, ...] | None = None  # None = every protocol requested


DEFAULT_SYNTHETIC_METHODS = (
    SyntheticMethod("chorustic", "ChorusTIC", "Time-series ICL", False, 0.05),
    SyntheticMethod("tabicl", "TabICL", "Generic ICL", False, -0.02),
    SyntheticMethod("tabicl_v2", "TabICLv2", "Generic ICL", False, 0.0),
    SyntheticMethod("moment_svm", "MOMENT+SVM", "Frozen TSFM", True, 0.0),
    SyntheticMethod("mantisv2_lr", "MantisV2+LR", "Frozen TSFM", True, 0.02),
    SyntheticMethod("nutime_rf", "NuTime+RF", "Frozen TSFM", True, -0.12),
    SyntheticMethod("minirocket", "MiniRocket", "Classical", True, 0.04),
    SyntheticMethod(
        "tict", "TiCT", "Time-series ICL", False, 0.01, reported=True, archives=("UCR",), protocols=("full",)
    ),
    SyntheticMethod(
        "chorustic_no_channel_attention",
        "ChorusTIC w/o channel attention",
        "Time-series ICL",
        False,
        0.04,
        archives=("UEA",),
        protocols=("full",),
    ),
    SyntheticMethod(
        "chorustic_no_calibration",
        "ChorusTIC w/o calibration",
        "Time-series ICL",
        False,
        0.03,
        archives=("UEA",),
        protocols=("full",),
    ),
)

DEFAULT_UEA = (
    "ArticularyWordRecognition",
    "AtrialFibrillation",
    "BasicMotions",
    "Cricket",
    "Epilepsy",
    "ERing",
    "JapaneseVowels",
    "Libras",
    "NATOPS",
    "RacketSports",
)
DEFAULT_UCR = (
    "ArrowHead",
    "Beef",
    "BeetleFly",
    "CBF",
    "Coffee",
    "ECG200",
    "GunPoint",
    "ItalyPowerDemand",
    "Meat",
    "OSULeaf",
    "Plane",
    "Trace",
)


def synthetic_accuracies(
    methods=DEFAULT_SYNTHETIC_METHODS,
    uea: tuple[str, ...] = DEFAULT_UEA,
    ucr: tuple[str, ...] = DEFAULT_UCR,
    protocols: tuple[str, ...] = PAPER_PROTOCOLS,
    n_seeds: int = 5,
    seed: int = 0,
    failures: tuple[tuple[str, str, str, int], ...] = (),
    ineligible: dict[str, tuple[str, ...]] | None = None,
) -> pd.DataFrame:
    """A DataFrame with the columns of ``results/accuracies.csv``.

    ``failures``: (method, dataset, protocol, seed) runs that fail; ``ineligible``: protocol -> datasets
    that are ineligible at that budget (every method gets an ``ineligible`` row).
    """
    rng = np.random.default_rng(seed)
    ineligible = ineligible or {}
    failed = set(failures)
    rows = []
    for archive, datasets in (("UEA", uea), ("UCR", ucr)):
        for d in datasets:
            base = rng.uniform(0.45, 0.92)
            n_test = int(rng.integers(40, 400))
            for m in methods:
                if archive not in m.archives:
                    continue
                for protocol in protocols:
                    if m.protocols is not None and protocol not in m.protocols:
                        continue
                    family, budget = parse_protocol_id(protocol)
                    penalty = budget_penalty(family, budget)
                    seeds = [0] if (family == "full" or m.reported) else list(range(n_seeds))
                    for s in seeds:
                        row = {
                            "method": m.name,
                            "display_name": m.display_name,
                            "group": m.group,
                            "fits_on_target": m.fits_on_target,
                            "reported": m.reported,
                            "archive": archive,
                            "dataset": d,
                            "protocol": protocol,
                            "family": family,
                            "budget": budget,
                            "seed": s,
                            "n_test": n_test,
                            "n_classes": 3,
                            "n_context": 30,
                            "error": "",
                            "result_file": "",
                        }
                        if d in ineligible.get(protocol, ()):
                            row.update(
                                status="ineligible",
                                accuracy=np.nan,
                                error=f"a class has fewer than {budget} training examples",
                            )
                        elif (m.name, d, protocol, s) in failed:
                            row.update(
                                status="failed", accuracy=np.nan, error="synthetic failure (RuntimeError)"
                            )
                        else:
                            acc = np.clip(base + m.skill - penalty + rng.normal(0, 0.03), 0.0, 1.0)
                            row.update(
                                status="reported" if m.reported else "ok",
                                accuracy=round(acc * n_test) / n_test,
                                fit_time_s=float(rng.uniform(0.1, 5)),
                                predict_time_s=float(rng.uniform(0.1, 2)),
                                peak_memory_mb=float(rng.uniform(200, 900)),
                                device="cuda" if m.group in ("Time-series ICL", "Generic ICL") else "cpu",
                            )
                            if not m.reported:
                                row["result_file"] = (
                                    f"{protocol}/{m.name}/Predictions/{d}/testResample{s}.csv"
                                )
                        rows.append(row)
    cols = COLUMNS  # the columns the aggregate step writes
    df = pd.DataFrame(rows).reindex(columns=cols)
    df["budget"] = df["budget"].astype("Int64")
    return df


def write_synthetic_accuracies(results_dir: str | Path, **kwargs) -> Path:
    """Write :func:`synthetic_accuracies` to ``<results_dir>/accuracies.csv``; return the path."""
    path = Path(results_dir) / "accuracies.csv"
    atomic_write_text(path, synthetic_accuracies(**kwargs).to_csv(index=False, lineterminator="\n"))
    return path
