"""A micro ChorusTIC and its training configuration: every stage of the architecture intact, sizes that
train a step in milliseconds (the training tests on CPU, and tests/test_cuda.py on a GPU)."""

from __future__ import annotations

import dataclasses

from chorustic.model import ChorusTICConfig
from chorustic.prior import PriorConfig
from chorustic.training import TrainConfig

__all__ = ["MICRO", "MICRO_PRIOR", "micro_train"]

#: a micro model: 4 RSSC slots, 32-sample inputs
MICRO = dataclasses.replace(ChorusTICConfig.tiny(), seq_len=32, num_patches=4, num_groups=2, group_size=2,
                            slot_dim=4)
#: a prior of small, easy episodes (two classes, up to 3 channels)
MICRO_PRIOR = PriorConfig(min_rows=12, max_rows=16, min_length=32, max_length=64, max_channels=3, max_classes=2,
                          difficulty=(0.0, 0.3), dirichlet_alpha=0.3)


def micro_train(**kw) -> TrainConfig:
    """Six steps of 8 episodes in micro-batches of 4, generated in the training process; ``kw`` overrides."""
    base = dict(name="micro", steps=6, batch_size=8, micro_batch_size=4, lr=3e-3, checkpoint_every=3,
                val_every=3, val_episodes=8, val_batch_size=4, log_every=1, prior=MICRO_PRIOR, num_workers=0)
    base.update(kw)
    return TrainConfig(**base)
