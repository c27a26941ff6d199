"""MantisV2 + logistic regression: the ``mantis_rf`` protocol (see ``baselines/mantis_rf.py``) with the
MantisV2 backbone (``paris-noah/MantisV2``) and ``StandardScaler`` + ``LogisticRegression(max_iter=1000)``
as the classifier (the paper's strongest frozen-feature baseline).
"""

from __future__ import annotations

from chorustic.methods import MethodInfo, import_plugin_module, register

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
    )
    fixed_params = {"version": "v2", "repo_id": "paris-noah/MantisV2", "head": "lr"}
