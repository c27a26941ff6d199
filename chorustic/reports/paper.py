"""The paper's published numbers (``results/reference/``): loading and normalising them.

Files (see ``results/reference/README.md``): ``paper_uea30_per_dataset.csv`` and
``paper_ucr128_per_dataset.csv`` (columns ``dataset`` + one per method display name, four-decimal
accuracies), ``paper_headline.csv`` (printed averages, ranks, W/T/L of Tables 1-4 and the scaling
endpoints), ``paper_wilcoxon.csv`` (W/T/L, raw and Holm p quoted in App. D), ``paper_relative_gains.csv``
(relative improvements quoted in Sec. 4), ``paper_significant.csv`` (the comparisons the text calls
significant after Holm correction).
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import numpy as np
import pandas as pd

from chorustic.protocols.base import parse_protocol_label
from chorustic.reports.accuracies import validate_accuracies
from chorustic.reports.layout import DEFAULT_ABLATIONS, PAPER_COLUMN_TO_RUN_NAME

__all__ = [
    "PER_DATASET_FILES",
    "PAPER_GROUPS",
    "PaperReference",
    "default_reference_dir",
    "load_paper_reference",
    "parse_archive",
    "paper_results_frame",
]

PER_DATASET_FILES = {"UEA": "paper_uea30_per_dataset.csv", "UCR": "paper_ucr128_per_dataset.csv"}
#: Table groups and target fit of the paper's methods (Tables 1-2).
PAPER_GROUPS = {
    "ChorusTIC": ("Time-series ICL", False),
    "TIC-FM": ("Time-series ICL", False),
    "TiCT": ("Time-series ICL", False),
    "TabICL": ("Generic ICL", False),
    "TabICLv2": ("Generic ICL", False),
    "MOMENT+SVM": ("Frozen TSFM", True),
    "Mantis+RF": ("Frozen TSFM", True),
    "MantisV2+LR": ("Frozen TSFM", True),
    "MantisV2+RF": ("Frozen TSFM", True),
    "UniShape+RF": ("Frozen TSFM", True),
    "NuTime+RF": ("Frozen TSFM", True),
}


def default_reference_dir() -> Path:
    """``results/reference`` of this repository checkout."""
    from chorustic.paths import REPO_ROOT

    return REPO_ROOT / "results" / "reference"


def parse_archive(text: str) -> tuple[str, int | None]:
    """``"UEA30"`` -> ("UEA", 30); ``"UEA30(28 eligible)"`` -> ("UEA", 28); ``"UCR"`` -> ("UCR", None)."""
    m = re.match(r"^\s*(UEA|UCR)\s*(\d+)?\s*(?:\((\d+)\s*eligible\))?", str(text))
    if not m:
        raise ValueError(f"cannot parse archive {text!r} (expected e.g. UEA30, UCR128, 'UEA30(28 eligible)')")
    n = m.group(3) or m.group(2)
    return m.group(1), int(n) if n else None


def _headline_method(label: str) -> str:
    """Headline method label -> display name (ablation rows -> the variant's run name)."""
    if label == "ChorusTIC (complete)":
        return "ChorusTIC"
    for run, (_, variant) in DEFAULT_ABLATIONS.items():
        if label == variant:
            return run
    return label


@dataclasses.dataclass
class PaperReference:
    directory: Path
    per_dataset: dict[str, pd.DataFrame]
    """archive -> dataset x method display name"""
    headline: pd.DataFrame | None
    wilcoxon: pd.DataFrame | None
    gains: pd.DataFrame | None
    significant: pd.DataFrame | None
    missing_files: list[str]

    def run_name(self, paper_method: str) -> str:
        return PAPER_COLUMN_TO_RUN_NAME.get(paper_method, paper_method)


def load_paper_reference(directory: str | Path | None = None) -> PaperReference:
    """Load whatever reference files exist in ``directory`` (default :func:`default_reference_dir`)."""
    directory = Path(directory) if directory is not None else default_reference_dir()
    missing, per = [], {}
    for archive, fname in PER_DATASET_FILES.items():
        p = directory / fname
        if p.is_file():
            df = pd.read_csv(p)
            if "dataset" not in df.columns:
                raise ValueError(f"{p}: needs a 'dataset' column and one column per method")
            df = df.set_index("dataset").astype(float)
            if ((df < 0) | (df > 1)).any().any():
                raise ValueError(f"{p}: accuracies must be fractions in [0, 1]")
            per[archive] = df
        else:
            missing.append(fname)

    def opt(fname: str) -> pd.DataFrame | None:
        p = directory / fname
        if not p.is_file():
            missing.append(fname)
            return None
        return pd.read_csv(p)

    headline = opt("paper_headline.csv")
    if headline is not None:
        parsed = headline["archive"].map(parse_archive)
        headline["archive_name"] = parsed.map(lambda t: t[0])
        headline["n_datasets"] = parsed.map(lambda t: t[1])
        headline["run_protocol"] = headline["protocol"].map(parse_protocol_label)
        headline["paper_method"] = headline["method"].map(_headline_method)
    wil = opt("paper_wilcoxon.csv")
    if wil is not None:
        wil["archive_name"] = wil["archive"].map(lambda a: parse_archive(a)[0])
    gains = opt("paper_relative_gains.csv")
    if gains is not None:
        gains["archive_name"] = gains["archive"].map(lambda a: parse_archive(a)[0])
        gains["run_protocol"] = gains["protocol"].map(parse_protocol_label)
    sig = opt("paper_significant.csv")
    if sig is not None:
        sig["archive_name"] = sig["archive"].map(lambda a: parse_archive(a)[0])
        sig["significant"] = sig["significant"].astype(str).str.lower().eq("true")
    return PaperReference(directory, per, headline, wil, gains, sig, missing)


def paper_results_frame(per_dataset: pd.DataFrame, archive: str) -> pd.DataFrame:
    """A paper per-dataset table as ``accuracies.csv`` rows (status "reported", protocol "full"), so that
    it runs through exactly the code that processes the harness's own results."""
    rows = []
    for method in per_dataset.columns:
        group, fits = PAPER_GROUPS.get(method, ("Time-series ICL", False))
        run = PAPER_COLUMN_TO_RUN_NAME.get(method, re.sub(r"[^a-z0-9]+", "_", method.lower()).strip("_"))
        for dataset, acc in per_dataset[method].items():
            rows.append(
                {
                    "method": run,
                    "display_name": method,
                    "group": group,
                    "fits_on_target": fits,
                    "reported": True,
                    "archive": archive,
                    "dataset": dataset,
                    "protocol": "full",
                    "family": "full",
                    "budget": np.nan,
                    "seed": 0,
                    "status": "reported" if not np.isnan(acc) else "failed",
                    "accuracy": acc,
                }
            )
    return validate_accuracies(pd.DataFrame(rows), source=f"paper per-dataset table ({archive})")
