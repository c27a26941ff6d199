"""MantisV2 + logistic regression: the ``mantis_rf`` protocol (see ``baselines/mantis_rf.py``) with the
MantisV2 backbone (``paris-noah/MantisV2``) and ``StandardScaler`` + ``LogisticRegression(max_iter=1000)``
as the classifier (the paper's strongest frozen-feature baseline).
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from chorustic.methods import CostModel, MethodInfo, import_plugin_module, register

_mantis = import_plugin_module("mantis_rf", __file__)


@register
class MantisV2LR(_mantis.MantisBase):
    info = MethodInfo(
        name="mantisv2_lr",
        display_name="MantisV2+LR",
        group="Frozen TSFM",
        fits_on_target=True,
        input_kind="resampled",
        description="frozen MantisV2 (final-layer CLS) per channel, concatenated, standard scaling + logistic regression",
        reference="Feofanov et al. MantisV2. 2026",
        pretraining_data="synthetic series only (CauKer; Feofanov et al. 2026, and the ChorusTIC paper, App. A)",
        benchmark_in_pretraining="no",
    )
    fixed_params = {"version": "v2", "repo_id": "paris-noah/MantisV2", "head": "lr"}
    #: Time: fitted on its own jobs (benchmarks/archive_scale.py --fit, one CPU thread, random weights of MantisV2's
    #: architecture; benchmarks/results/archive_scale.md: 25 jobs on 8 stand-ins, 7-162 CPU-s, within 0.89-1.12):
    #: the encoder once per job (23.8 us per resampled value; mantisv2_rf's fit puts more of the same encoder there
    #: and less in its forest) and the scaling and logistic regression per context. Mantis-8M's model, which it used
    #: until 2026-11-30, put its jobs at 0.31-0.52. Memory and thread scaling: Mantis-8M's (0.93-0.99 of its jobs,
    #: 1.43 on PEMS-SF's 963 channels of 7 classes: L-BFGS keeps ~20 vectors of the regression's 963 x 256 x 7
    #: coefficients, ~300 MB whatever the series, which the request's margin covers; the refit's 42 bytes per value
    #: would charge that to every value, 3.5x Mantis-8M's on a job of many series).
    cost: ClassVar[CostModel] = dataclasses.replace(_mantis.MantisBase.cost, time_job_s=6.15, time_base_s=0.161,
                                                    time_ns_per_value=23_800, time_ns_per_series_pair=120)
