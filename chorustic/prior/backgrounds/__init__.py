"""Shared temporal backgrounds W in R^{C x L} (paper Appendix B.8, "Shared temporal background").

A family is chosen from a categorical mixture ``a ~ Categorical(lambda)``; its module draws a *process*
(the family's structural parameters: frequencies, channel graph, regimes, event rates, ...) and the
process is realized once per episode to give the background shared by every class. The same process
can be realized again to give small per-instance background variations with the same structure.
Every realization is normalized channel-wise with robust statistics and clipped
(:func:`~chorustic.prior.backgrounds.normalize.robust_normalize`).

Families (one module each): ``smooth`` (smooth, periodic and colored-noise processes), ``graph``
(structural channel graphs with lagged or nonlinear dependencies), ``regime`` (regime-switching and
changepoint processes), ``events`` (event, spike, burst and plateau processes), ``modulated``
(amplitude- and frequency-modulated sinusoids), ``audio`` (audio-like multiscale processes).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from chorustic.prior.backgrounds import audio, events, graph, modulated, regime, smooth
from chorustic.prior.backgrounds.base import Process
from chorustic.prior.backgrounds.normalize import robust_normalize

__all__ = ["BACKGROUND_FAMILIES", "Process", "sample_process", "robust_normalize"]

#: family name -> ``sample_process(rng, n_channels, length) -> Process``
BACKGROUND_FAMILIES: dict[str, Callable[[np.random.Generator, int, int], Process]] = {
    "smooth": smooth.sample_process,
    "graph": graph.sample_process,
    "regime": regime.sample_process,
    "events": events.sample_process,
    "modulated": modulated.sample_process,
    "audio": audio.sample_process,
}


def sample_process(rng: np.random.Generator, family: str, n_channels: int, length: int) -> Process:
    """Draw a background process of ``family`` for ``n_channels`` x ``length`` series."""
    try:
        fn = BACKGROUND_FAMILIES[family]
    except KeyError:
        raise ValueError(f"unknown background family {family!r}; known: {sorted(BACKGROUND_FAMILIES)}") from None
    return fn(rng, int(n_channels), int(length))
