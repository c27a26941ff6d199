"""MantisV2 + random forest: the ``mantis_rf`` protocol (see ``baselines/mantis_rf.py``) with the MantisV2
backbone (``paris-noah/MantisV2``, the id ``mantis-tsfm`` 1.1.0 uses): frozen per-channel embeddings of
the 512-point resampled series, final-layer CLS readout by default (``layer``/``token`` switch it,
e.g. ``layer: 2, token: combined`` as the MantisV2 paper suggests for zero-shot features),
channels concatenated, ``RandomForestClassifier(n_estimators=200)``.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from chorustic.methods import CostModel, MethodInfo, import_plugin_module, register

_mantis = import_plugin_module("mantis_rf", __file__)


@register
class MantisV2RF(_mantis.MantisBase):
    info = MethodInfo(
        name="mantisv2_rf",
        display_name="MantisV2+RF",
        group="Frozen TSFM",
        fits_on_target=True,
        input_kind="resampled",
        description="frozen MantisV2 (final-layer CLS) per channel, concatenated, random forest (200 trees)",
        reference="Feofanov et al. MantisV2. 2026",
        pretraining_data="synthetic series only (CauKer; Feofanov et al. 2026, and the ChorusTIC paper, App. A)",
        benchmark_in_pretraining="no",
    )
    fixed_params = {"version": "v2", "repo_id": "paris-noah/MantisV2", "head": "rf"}
    #: Time: fitted on its own jobs (benchmarks/archive_scale.py --fit, one CPU thread, random weights of MantisV2's
    #: architecture; benchmarks/results/archive_scale.md: 25 jobs on 8 stand-ins, 9-186 CPU-s, within 0.78-1.29):
    #: ~16 ms per channel and series through the encoder (30.9 us per resampled value; Mantis-8M's model 37 ms: its
    #: attention heads are 32 wide where Mantis-8M's are 128), once per job, and the forest per context. Mantis-8M's
    #: model, which it used until 2026-11-30, put its jobs at 0.35-0.73. Memory and thread scaling: Mantis-8M's
    #: (0.95-1.02 of its jobs; the refit's 0.96-1.04).
    cost: ClassVar[CostModel] = dataclasses.replace(_mantis.MantisBase.cost, time_job_s=9.3, time_base_s=0.276,
                                                    time_ns_per_value=30_900, time_ns_per_series_pair=259)
