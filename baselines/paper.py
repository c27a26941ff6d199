"""The paper's methods as published: "reported, not reproduced" runs of its per-dataset tables.

One reported method per column of the paper's per-dataset accuracy tables (App. D: UCR-128, 11 methods;
UEA-30, 9 methods), read from ``results/reference/paper_{ucr128,uea30}_per_dataset.csv``, full context only
(the paper prints no per-dataset fixed-shot or proportional accuracies). Each is named ``paper_<plugin>``
after the plugin that reproduces it (``paper_moment_svm`` for ``moment_svm``) and shown under the paper's
name with a dagger ("reported, not reproduced") in every table and figure. The compare profile
(``config/compare.yaml``) evaluates them beside a user's own method, so a new method meets the paper's
eleven without running any of them.

The group and "Target fit" of each are those of the plugin that reproduces it (tests/test_baselines_reported.py
checks that they agree); TiCT has no reproducing plugin (``baselines/tict.py`` is its reported method).
"""

from __future__ import annotations

from chorustic.methods import register
from chorustic.methods.reported import reported_method

#: The paper's per-dataset tables (a method absent from one archive's table is not reported there).
PAPER_TABLES = ("results/reference/paper_ucr128_per_dataset.csv", "results/reference/paper_uea30_per_dataset.csv")

#: (reproducing plugin, column of the paper's tables = display name, group, fits on the target split, whether its
#: pretraining data includes UCR/UEA series: the reproducing plugin's ``MethodInfo``, which says from where)
PAPER_METHODS = (
    ("chorustic", "ChorusTIC", "Time-series ICL", False, "no"),
    ("tic_fm", "TIC-FM", "Time-series ICL", False, "unknown"),
    ("tabicl", "TabICL", "Generic ICL", False, "no"),
    ("tabicl_v2", "TabICLv2", "Generic ICL", False, "no"),
    ("moment_svm", "MOMENT+SVM", "Frozen TSFM", True, "yes"),
    ("mantis_rf", "Mantis+RF", "Frozen TSFM", True, "unknown"),
    ("mantisv2_lr", "MantisV2+LR", "Frozen TSFM", True, "no"),
    ("mantisv2_rf", "MantisV2+RF", "Frozen TSFM", True, "no"),
    ("unishape_rf", "UniShape+RF", "Frozen TSFM", True, "yes"),
    ("nutime_rf", "NuTime+RF", "Frozen TSFM", True, "yes"),
)

PAPER = "Training-free multivariate time series classification via chorus in-context learning (ChorusTIC), App. D"


for _plugin, _column, _group, _fits, _seen in PAPER_METHODS:
    register(reported_method(
        name=f"paper_{_plugin}", display_name=_column, group=_group, fits_on_target=_fits, csv=PAPER_TABLES,
        column=_column, reference=PAPER, benchmark_in_pretraining=_seen,
        pretraining_data=f"that of the `{_plugin}` plugin's model (its MethodInfo.pretraining_data)",
        description=f"reported, not reproduced: the paper's per-dataset {_column} accuracies (full context); "
                    f"`{_plugin}` reproduces it",
    ))

del _plugin, _column, _group, _fits, _seen
