"""The ChorusTIC architecture (paper Sec. 3, App. B), one module per concept.

==============================================  ============================================================
module                                          concept
==============================================  ============================================================
:mod:`~chorustic.model.config`                  hyperparameters (``paper``, ``small``, ``tiny``; ablations)
:mod:`~chorustic.model.patch_tokenizer`         patch tokenization (Mantis v1 token generator)
:mod:`~chorustic.model.dual_axis_encoder`       temporal / channel blocks
:mod:`~chorustic.model.slot_readout`            shared summary-token readout (Mantis v1 transformer unit)
:mod:`~chorustic.model.signal_encoder`          the shared group encoder and its de-duplicating schedule
:mod:`~chorustic.model.rssc`                    RSSC assignment sampling and fixed-order slot composition
:mod:`~chorustic.model.context_standardization`  optional context standardization of H (``small`` only,
                                                not in the released model)
:mod:`~chorustic.model.column_distribution_modeling`  context-conditioned feature-axis calibration
:mod:`~chorustic.model.row_interaction`         row-wise feature interaction (summary tokens, RoPE)
:mod:`~chorustic.model.icl`                     leakage-protected ICL transformer and decoder
:mod:`~chorustic.model.hierarchical`            hierarchical extension for K > K_max
:mod:`~chorustic.model.chorustic`               the top module
:mod:`~chorustic.model.checkpoint`              our checkpoint format, checkpoint resolution (local / hf://)
:mod:`~chorustic.model.official`                the released checkpoint's key map, TabICL v1 task level
==============================================  ============================================================
"""

from chorustic.model.checkpoint import (
    CheckpointNotFoundError,
    load_checkpoint,
    load_model,
    resolve_checkpoint,
    save_checkpoint,
)
from chorustic.model.chorustic import ChorusTIC
from chorustic.model.config import ChorusTICConfig
from chorustic.model.official import CheckpointError, load_official_checkpoint, load_task_level_from_tabicl
from chorustic.model.rssc import sample_rssc_assignment

__all__ = [
    "CheckpointError",
    "CheckpointNotFoundError",
    "ChorusTIC",
    "ChorusTICConfig",
    "load_checkpoint",
    "load_model",
    "load_official_checkpoint",
    "load_task_level_from_tabicl",
    "resolve_checkpoint",
    "sample_rssc_assignment",
    "save_checkpoint",
]
