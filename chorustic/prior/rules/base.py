"""The rule-operator interface: Gamma_{r,k}(W; S_k, T_k, eta_k) (paper Appendix B.8).

A rule family turns the shared background ``W`` (C, L) into ``K`` class-conditional signals. Most
families are deterministic given the episode (a class prototype ``P_k``); a few (relative delay, phase
relationships, correlation regimes) put the class information in a *relation* between channels that
is only meaningful with instance-level randomness (a random common onset or phase, fresh correlated
noise). Both kinds are expressed the same way: :meth:`RuleOutput.render` returns the class-dependent
part for given labels, drawing instance randomness from ``rng``; with ``rng=None`` it returns the
canonical (noise-free, centered) rendering used as the displayed prototype.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, ClassVar

import numpy as np

__all__ = ["RuleOutput", "Rule", "RuleContext", "sample_region"]


@dataclasses.dataclass
class RuleContext:
    """What a rule needs to build an episode's classes."""

    rng: np.random.Generator
    background: np.ndarray  # W, (C, L), robustly normalized
    n_classes: int
    amplitude: float  # class margin in units of the background's robust scale (difficulty-dependent)
    strength: float  # 1 = easiest, 0 = hardest; rules map it to spacing / correlation strength / ...
    channels: tuple[int, ...] | None = None  # temporal rules: the channels they act on (channel-wise)

    @property
    def n_channels(self) -> int:
        return int(self.background.shape[0])

    @property
    def length(self) -> int:
        return int(self.background.shape[1])


@dataclasses.dataclass
class RuleOutput:
    """An episode's class construction.

    ``render(labels, rng)`` -> (N, C, L) class-dependent additive part; the instance before nuisance is
    ``background + render(labels, rng)`` (+ optional background variation).
    """

    family: str
    n_classes: int
    channels: tuple[int, ...]  # informative channels S (union over classes)
    region: tuple[int, int]  # informative temporal region T = [start, stop) (union over classes)
    _render: Callable[[np.ndarray, np.random.Generator | None], np.ndarray]
    params: dict[str, Any] = dataclasses.field(default_factory=dict)
    stochastic: bool = False  # True when instances need fresh randomness to carry the class relation

    def render(self, labels: np.ndarray, rng: np.random.Generator | None = None) -> np.ndarray:
        return self._render(np.asarray(labels, dtype=np.int64), rng)

    def prototypes(self, background: np.ndarray) -> np.ndarray:
        """Class prototypes P_k = W + canonical class part, (K, C, L)."""
        return background[None] + self.render(np.arange(self.n_classes), None)


class Rule:
    """Base class of a rule family."""

    name: ClassVar[str]
    kind: ClassVar[str]  # "temporal" | "cross_channel"
    min_channels: ClassVar[int] = 1

    def capacity(self, n_channels: int, length: int) -> int:
        """The largest number of classes this family can separate for this shape."""
        raise NotImplementedError

    def build(self, ctx: RuleContext) -> RuleOutput:
        raise NotImplementedError


def sample_region(rng: np.random.Generator, length: int, frac: tuple[float, float],
                  min_width: int = 4) -> tuple[int, int]:
    """A random window ``[start, stop)`` whose width is a fraction ``frac`` of ``length``."""
    width = int(round(rng.uniform(*frac) * length))
    width = int(np.clip(width, min(min_width, length), length))
    start = int(rng.integers(0, length - width + 1))
    return start, start + width


def deterministic(deltas: np.ndarray) -> Callable[[np.ndarray, np.random.Generator | None], np.ndarray]:
    """A render function for a deterministic rule: per-class additive parts ``deltas`` (K, C, L)."""

    def render(labels: np.ndarray, rng: np.random.Generator | None) -> np.ndarray:
        return deltas[labels]

    return render
