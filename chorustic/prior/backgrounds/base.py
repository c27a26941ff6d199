"""The background process interface shared by the family modules."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import numpy as np

from chorustic.prior.backgrounds.normalize import robust_normalize

__all__ = ["Process"]


@dataclasses.dataclass
class Process:
    """A background process with fixed structure; ``realize`` draws normalized realizations.

    ``generate(rng, n) -> (n, C, L)`` produces raw realizations; ``realize`` normalizes them
    channel-wise (robust location/scale) and clips them to ``[-clip, clip]``.
    """

    family: str
    n_channels: int
    length: int
    generate: Callable[[np.random.Generator, int], np.ndarray]
    params: dict[str, Any] = dataclasses.field(default_factory=dict)

    def realize(self, rng: np.random.Generator, n: int = 1, clip: float = 5.0) -> np.ndarray:
        raw = self.generate(rng, int(n))
        if raw.shape != (n, self.n_channels, self.length):
            raise RuntimeError(
                f"background family {self.family!r} produced shape {raw.shape}, "
                f"expected {(n, self.n_channels, self.length)}"
            )
        return robust_normalize(raw, clip=clip)
