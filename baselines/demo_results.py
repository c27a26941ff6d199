"""The committed demo run as published numbers: each method run of ``examples/demo/results/accuracies.csv``
("reported, not reproduced", marked with a dagger), on the demo's six datasets and every protocol it ran.

Named ``demo_<run>`` after the run of the demo profile (``demo_minirocket`` for ``minirocket``); the compare
profile's worked example (``examples/compare/config.yaml``) places them beside a new method, so an author
meets the demo's five methods on those datasets without running them. Their jobs are the datasets of that
table, and the aggregate step keeps the protocols the configuration selects.
"""

from __future__ import annotations

from chorustic.methods import register
from chorustic.methods.reported import run_reported_method

DEMO_RESULTS = "examples/demo/results"
NOT_PRETRAINED = "none: fitted on the target training split only"

#: (run of the demo, display name, group, fits on the target split, pretraining data, includes UCR/UEA)
DEMO_RUNS = (
    ("chorustic_small", "ChorusTIC-small (demo run)", "Time-series ICL", False,
     "synthetic episodes of its episodic prior only (models/chorustic-small/README.md)", "no"),
    ("minirocket", "MiniRocket (demo run)", "Classical", True, NOT_PRETRAINED, "no"),
    ("multirocket_hydra", "MultiRocket-Hydra (demo run)", "Classical", True, NOT_PRETRAINED, "no"),
    ("quant", "QUANT (demo run)", "Classical", True, NOT_PRETRAINED, "no"),
    ("dtw_1nn", "1NN-DTW, 10% window (demo run)", "Classical", True, NOT_PRETRAINED, "no"),
)

for _run, _display, _group, _fits, _data, _seen in DEMO_RUNS:
    register(run_reported_method(
        name=f"demo_{_run}", display_name=_display, group=_group, fits_on_target=_fits, results=DEMO_RESULTS,
        method=_run, pretraining_data=_data, benchmark_in_pretraining=_seen,
        reference="the committed demo run (examples/demo/README.md)"))

del _run, _display, _group, _fits, _data, _seen
