"""MantisV2 + random forest: the ``mantis_rf`` protocol (see ``baselines/mantis_rf.py``) with the MantisV2
backbone (``paris-noah/MantisV2``, the id ``mantis-tsfm`` 1.1.0 uses): frozen per-channel embeddings of
the 512-point resampled series, final-layer CLS readout by default (``layer``/``token`` switch it,
e.g. ``layer: 2, token: combined`` as the MantisV2 paper suggests for zero-shot features),
channels concatenated, ``RandomForestClassifier(n_estimators=200)``.
"""

from __future__ import annotations

from chorustic.methods import MethodInfo, import_plugin_module, register

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
    )
    fixed_params = {"version": "v2", "repo_id": "paris-noah/MantisV2", "head": "rf"}
