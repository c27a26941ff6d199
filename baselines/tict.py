"""TiCT (Yeh et al., 2025): reported, not reproduced.

No public implementation of TiCT (a 47M-parameter ResNet in-context classifier) is known, so its
accuracies are the paper's published per-dataset column (UCR-128, full context), read from
``results/reference/paper_ucr128_per_dataset.csv`` (a copy of the paper's numbers). Every table and
figure marks it "reported, not reproduced"; it has no fixed-shot or proportional results.

Override ``csv``/``column`` in the config to use other published numbers. The same mechanism works
for any method you cannot run: see :func:`chorustic.methods.reported.reported_method`.
"""

from __future__ import annotations

from typing import Any, ClassVar

from chorustic.methods import MethodInfo, register
from chorustic.methods.reported import CSVReportedMethod


@register
class TiCT(CSVReportedMethod):
    info = MethodInfo(
        name="tict",
        display_name="TiCT",
        group="Time-series ICL",
        fits_on_target=False,
        input_kind="resampled",
        reported=True,
        description="reported, not reproduced: the paper's published TiCT accuracies (no public implementation)",
        reference="Yeh et al. TiCT: a synthetically pre-trained foundation model for time series classification. 2025",
        pretraining_data="synthetic binary in-context tasks from KernelSynth templates (Yeh et al. 2025; the ChorusTIC"
        " paper, App. A)",
        benchmark_in_pretraining="no",
    )
    default_params: ClassVar[dict[str, Any]] = {
        "csv": [
            "results/reference/paper_ucr128_per_dataset.csv",
            "results/reference/paper_uea30_per_dataset.csv",
        ],
        "column": "TiCT",
        "protocol": "full",
        "seed": 0,
    }
