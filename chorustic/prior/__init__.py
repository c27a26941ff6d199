"""The labeled multivariate episodic prior (paper Sec. 3.3 and Appendix B.8).

>>> from chorustic.prior import EpisodePrior, PriorConfig
>>> prior = EpisodePrior(PriorConfig(), seed=0)
>>> batch = prior.sample_batch(4)          # X (4, T, C, 512), y (4, T), channel_mask (4, C)

Modules: :mod:`~chorustic.prior.episode` (omega, labels, context/query split, label bijection,
batching), :mod:`~chorustic.prior.backgrounds` (six background families + robust normalization),
:mod:`~chorustic.prior.rules` (temporal and cross-channel rule operators),
:mod:`~chorustic.prior.nuisance` (instance-level nuisance transformations and sensor noise),
:mod:`~chorustic.prior.motifs` (the motif library), :mod:`~chorustic.prior.gallery` (figures).
Beside it, :mod:`~chorustic.prior.kernel_bank`: unlabeled Gaussian-process series (a random composition of
kernels) for the signal encoder's contrastive pretraining, the first stage of the released recipe.
"""

from chorustic.prior.backgrounds import BACKGROUND_FAMILIES
from chorustic.prior.episode import Episode, EpisodeBatch, EpisodePrior, Omega, PriorConfig, collate, label_counts
from chorustic.prior.nuisance import NuisanceConfig, apply_nuisance
from chorustic.prior.rules import ALL_RULES, CROSS_CHANNEL_RULES, TEMPORAL_RULES

__all__ = [
    "EpisodePrior",
    "PriorConfig",
    "Omega",
    "Episode",
    "EpisodeBatch",
    "collate",
    "label_counts",
    "NuisanceConfig",
    "apply_nuisance",
    "BACKGROUND_FAMILIES",
    "TEMPORAL_RULES",
    "CROSS_CHANNEL_RULES",
    "ALL_RULES",
]
