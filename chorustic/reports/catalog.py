"""Where each report file appears in ``snakemake --report``: category (archive), subcategory (protocol
or topic) and the labels shown next to it. The report rule (``workflow/rules/report.smk``) marks the
folders ``tables/``, ``figures/``, ``overview/`` and ``reproduction/`` with ``report(...)``; Snakemake
calls :func:`category`, :func:`subcategory` and :func:`labels` with the file name as wildcard
``name``. The captions are ``workflow/report/<folder>.rst``.
"""

from __future__ import annotations

import re

__all__ = ["ARTIFACTS", "FOLDERS", "OVERVIEW", "describe", "category", "subcategory", "labels"]

OVERVIEW = "Overview"

#: Report folders shown by ``snakemake --report`` -> the file type shown from each. ``chorustic report``
#: always creates them (the report rule declares them as outputs).
FOLDERS: dict[str, str] = {"tables": "html", "figures": "png", "overview": "html", "reproduction": "html"}

#: (folder, file stem pattern, subcategory, what it is). Subcategories are numbered because the
#: Snakemake report lists them alphabetically.
ARTIFACTS: list[tuple[str, str, str, str]] = [
    ("tables", r"^table_intervals_", "6. Spread, intervals, measures",
     "Means with 95 % bootstrap intervals, s.d. over seeds, differences from the reference"),
    ("tables", r"^table_metrics_", "6. Spread, intervals, measures", "Every chosen measure side by side"),
    ("tables", r"^table_(balacc|f1|auroc|logloss)_", "6. Spread, intervals, measures",
     "One measure beyond accuracy, with intervals and ranks"),
    ("figures", r"^cd_(balacc|f1|auroc|logloss)_", "6. Spread, intervals, measures",
     "Critical-difference diagram of one measure beyond accuracy"),
    ("tables", r"^table_published_", "7. Published results",
     "Harness re-run against published results (bake-off redux)"),
    ("tables", r"^table_(uea|ucr)_with_published$", "7. Published results",
     "Every method beside the published classical results, on the datasets they cover"),
    ("tables", r"^table[12]_", "1. Full context", "Main results (paper Tables 1-2)"),
    ("tables", r"^tableD_", "1. Full context", "Per-dataset accuracies (appendix)"),
    ("tables", r"^table_stats_", "1. Full context", "Wilcoxon-Holm comparison with the reference (appendix)"),
    ("figures", r"^cd_", "1. Full context", "Critical-difference diagram"),
    ("figures", r"^mcm_", "1. Full context", "Multi-comparison matrix (aeon)"),
    ("figures", r"^scatter_", "1. Full context", "Reference method against each method, per dataset"),
    ("figures", r"^violin_", "1. Full context", "Distribution of per-dataset accuracies"),
    ("tables", r"^table3_fixed_shot_", "2. Fixed-shot", "Fixed-shot results, one column per k (paper Table 3)"),
    ("tables", r"^table_scaling_", "3. Proportional", "Context scaling, one column per percentage (numbers of Figure 2)"),
    ("figures", r"^scaling_", "3. Proportional", "Context scaling (paper Figure 2)"),
    ("tables", r"^table4_ablation_", "4. Ablations", "Ablations (paper Table 4)"),
    ("tables", r"^table_cost_", "5. Accuracy and cost", "Accuracy, wall time, device and memory"),
    ("figures", r"^cost_", "5. Accuracy and cost", "Accuracy against wall time"),
    (
        "overview",
        r"^coverage$",
        "Coverage and missing runs",
        "Coverage, missing runs, ineligible datasets, problems",
    ),
    (
        "reproduction",
        r"^reproduction$",
        "Reproduction check",
        "The paper's tables through this code; results vs paper",
    ),
    (
        "reproduction",
        r"^reference_results$",
        "Reproduction check",
        "These results against reference results (another run)",
    ),
]

_ARCHIVE = re.compile(r"(?:^|_)(uea|ucr)(?:_|$)")


def describe(folder: str, name: str) -> dict[str, str]:
    """``category``, ``subcategory`` and ``what`` of the report file ``<folder>/<name>.<ext>``."""
    archive = _ARCHIVE.search(name)
    for f, pattern, sub, what in ARTIFACTS:
        if f == folder and re.search(pattern, name):
            return {
                "category": archive.group(1).upper()
                if archive and folder in ("tables", "figures")
                else OVERVIEW,
                "subcategory": sub,
                "what": what,
            }
    return {
        "category": archive.group(1).upper() if archive else OVERVIEW,
        "subcategory": "Other",
        "what": name,
    }


def category(folder: str, wildcards) -> str:
    return describe(folder, wildcards.name)["category"]


def subcategory(folder: str, wildcards) -> str:
    return describe(folder, wildcards.name)["subcategory"]


def labels(folder: str, wildcards) -> dict[str, str]:
    """One label. (With a second label that takes two values in a subcategory of two results, the
    Snakemake 9 report treats it as an on/off toggle between variants and cannot show the results.)"""
    return {"Result": describe(folder, wildcards.name)["what"]}
