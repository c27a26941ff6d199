"""The paper's table layout (group order, method order, ablation variants) as overridable defaults.

Any method present in the results gets a row: methods the paper does not list go after the paper's ones
in their group (alphabetically by display name), and groups the paper does not use (e.g. "Classical")
come last. Ablation variants (Table 4) are identified by run name through :data:`DEFAULT_ABLATIONS`.
"""

from __future__ import annotations

import pandas as pd

from chorustic.methods.base import GROUPS

__all__ = [
    "DEFAULT_ABLATIONS",
    "DEFAULT_REFERENCE",
    "TABLE_LAYOUTS",
    "PAPER_COLUMN_TO_RUN_NAME",
    "ARCHIVE_TITLES",
    "ordered_methods",
    "group_blocks",
    "archive_title",
    "SEEN_MARK",
    "method_label",
    "leakage_note",
]

#: After the name of a method whose pretraining data includes UCR/UEA series (the leakage audit).
SEEN_MARK = "\u2021"


def _seen(meta: pd.DataFrame, m: str) -> str:
    return str(meta.loc[m, "benchmark_in_pretraining"]) if "benchmark_in_pretraining" in meta.columns else "unknown"


def method_label(m: str, meta: pd.DataFrame) -> str:
    """A method's name in tables and figure legends: its display name, with :data:`SEEN_MARK` when its
    pretraining data includes series of the UCR or UEA archives."""
    return str(meta.loc[m, "display_name"]) + (SEEN_MARK if _seen(meta, m) == "yes" else "")


def leakage_note(methods, meta: pd.DataFrame) -> str | None:
    """The footnote of :data:`SEEN_MARK` for ``methods`` (None when none is pretrained on the archives and
    none is unknown); the methods whose sources do not say are named too."""
    methods = [m for m in methods if m in meta.index]
    seen = [str(meta.loc[m, "display_name"]) for m in methods if _seen(meta, m) == "yes"]
    unknown = [str(meta.loc[m, "display_name"]) for m in methods if _seen(meta, m) == "unknown"]
    parts = []
    if seen:
        parts.append(f"{SEEN_MARK} pretrained on data that includes UCR/UEA series, so the test sets may have been "
                     f"seen in pretraining: {', '.join(seen)}.")
    if unknown:
        parts.append(f"Whether the pretraining data includes UCR/UEA series is not known for: {', '.join(unknown)}.")
    if not parts:
        return None
    return " ".join(parts) + " (Each method's `MethodInfo.pretraining_data` says what, with its source.)"


#: Default reference method (W/T/L and tests are from its perspective).
DEFAULT_REFERENCE = "chorustic"

#: Table 4: run name -> (factor, variant label as printed in the paper).
DEFAULT_ABLATIONS: dict[str, tuple[str, str]] = {
    "chorustic_no_channel_attention": ("Architecture", "No channel-axis attention"),
    "chorustic_no_calibration": ("Architecture", "No task-conditioned calibration"),
    "chorustic_no_label_permutation": ("Inference", "No label-permutation ensemble"),
    "chorustic_no_cross_channel_rules": ("Pretraining prior", "No cross-channel discriminative rules"),
}

_CLASSICAL = ["minirocket", "multirocket_hydra", "quant", "dtw_1nn"]

#: (group order, method order) of each table kind, as in the paper.
TABLE_LAYOUTS: dict[str, tuple[list[str], list[str]]] = {
    # Table 1 (UEA-30) and the UEA per-dataset table
    "main_UEA": (
        ["Time-series ICL", "Generic ICL", "Frozen TSFM", "Classical"],
        [
            "chorustic",
            "tabicl",
            "tabicl_v2",
            "moment_svm",
            "mantis_rf",
            "mantisv2_lr",
            "mantisv2_rf",
            "unishape_rf",
            "nutime_rf",
            "tict",
            "tic_fm",
            *_CLASSICAL,
        ],
    ),
    # Table 2 (UCR-128) and the UCR per-dataset table
    "main_UCR": (
        ["Frozen TSFM", "Generic ICL", "Time-series ICL", "Classical"],
        [
            "moment_svm",
            "mantis_rf",
            "mantisv2_rf",
            "mantisv2_lr",
            "unishape_rf",
            "nutime_rf",
            "tabicl",
            "tabicl_v2",
            "tict",
            "tic_fm",
            "chorustic",
            *_CLASSICAL,
        ],
    ),
    # Table 3 (fixed-shot) and the context-scaling results
    "low_label": (
        ["Frozen TSFM", "Generic ICL", "Time-series ICL", "Classical"],
        [
            "moment_svm",
            "mantis_rf",
            "mantisv2_lr",
            "mantisv2_rf",
            "unishape_rf",
            "nutime_rf",
            "tabicl",
            "tabicl_v2",
            "tict",
            "tic_fm",
            "chorustic",
            *_CLASSICAL,
        ],
    ),
}

#: Paper column / headline names -> run names (the baselines' display names are the paper's names).
PAPER_COLUMN_TO_RUN_NAME: dict[str, str] = {
    "ChorusTIC": "chorustic",
    "TabICL": "tabicl",
    "TabICLv2": "tabicl_v2",
    "MOMENT+SVM": "moment_svm",
    "Mantis+RF": "mantis_rf",
    "MantisV2+LR": "mantisv2_lr",
    "MantisV2+RF": "mantisv2_rf",
    "UniShape+RF": "unishape_rf",
    "NuTime+RF": "nutime_rf",
    "TIC-FM": "tic_fm",
    "TiCT": "tict",
}

ARCHIVE_TITLES = {"UEA": ("UEA", 30), "UCR": ("UCR", 128)}


def archive_title(archive: str, n_datasets: int | None = None) -> str:
    """ "UEA-30" when all the paper's datasets are there, else "UEA (6 datasets)"."""
    name, full = ARCHIVE_TITLES.get(archive, (archive, None))
    if n_datasets is None or n_datasets == full:
        return f"{name}-{full}" if full else name
    return f"{name} ({n_datasets} dataset{'s' if n_datasets != 1 else ''})"


def ordered_methods(methods: list[str], meta: pd.DataFrame, layout: str) -> list[str]:
    """``methods`` sorted by the layout's group order, then its method order, then display name."""
    groups, order = TABLE_LAYOUTS[layout]
    group_rank = {g: i for i, g in enumerate(groups)}
    extra_groups = {g: len(groups) + i for i, g in enumerate(GROUPS)}
    pos = {m: i for i, m in enumerate(order)}

    def key(m: str):
        g = meta.loc[m, "group"]
        return (
            group_rank.get(g, extra_groups.get(g, 99)),
            pos.get(m, len(pos)),
            str(meta.loc[m, "display_name"]).lower(),
        )

    return sorted(methods, key=key)


def group_blocks(methods: list[str], meta: pd.DataFrame) -> list[tuple[str, list[str]]]:
    """Consecutive runs of the same group in an ordered method list."""
    blocks: list[tuple[str, list[str]]] = []
    for m in methods:
        g = meta.loc[m, "group"]
        if blocks and blocks[-1][0] == g:
            blocks[-1][1].append(m)
        else:
            blocks.append((g, [m]))
    return blocks
