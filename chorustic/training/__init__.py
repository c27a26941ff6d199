"""Episodic pretraining (paper Sec. 3.3 and App. C.3).

>>> from chorustic.model import ChorusTICConfig
>>> from chorustic.training import Trainer, TrainConfig
>>> trainer = Trainer(ChorusTICConfig.small(), TrainConfig.small(), "runs/small")
>>> trainer.train()                      # checkpoints in runs/small/state, model in runs/small/model.safetensors
>>> Trainer.resume("runs/small").train() # exact continuation

Modules: :mod:`~chorustic.training.config` (``paper`` / ``small`` / ``tiny`` presets),
:mod:`~chorustic.training.trainer` (loop, checkpoints, exact resume), :mod:`~chorustic.training.loss`
(query cross-entropy), :mod:`~chorustic.training.validation` (the fixed 64-episode validation set),
:mod:`~chorustic.training.init` (initialization from the released ChorusTIC or TabICL v1.1),
:mod:`~chorustic.training.curves` (curve PNG), :mod:`~chorustic.training.rng` (RNG state capture),
:mod:`~chorustic.training.devices` (the GPU kinds and their peaks).
"""

from chorustic.lazy_imports import lazy_getattr

#: Where each name lives, imported on first use (PEP 562): ``chorustic.training.<module>`` alone (the workflow's
#: launcher, the planner) does not load the trainer.
_HOMES = {
    "TRAIN_PRESETS": "config", "TrainConfig": "config", "query_cross_entropy": "loss", "Trainer": "trainer",
    "TrainingAborted": "trainer", "TrainingInterrupted": "trainer", "resolve_device": "trainer",
    "build_validation_set": "validation", "evaluate": "validation",
}

__getattr__ = lazy_getattr(__name__, _HOMES)


__all__ = ["TrainConfig", "TRAIN_PRESETS", "Trainer", "TrainingAborted", "TrainingInterrupted", "resolve_device",
           "query_cross_entropy", "build_validation_set", "evaluate"]
