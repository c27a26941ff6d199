"""The Gaussian-process kernel-bank prior: unlabeled synthetic series for the signal encoder's contrastive
pretraining (the released recipe's first stage: a Mantis-style encoder pretrained on synthetic series before
the episodic prior; ``shared`` facts §1.4).

A series is one draw of a zero-mean Gaussian process on ``length`` equally spaced points of [0, 1] whose
covariance is a random *composition* of kernels from a bank: ``n ~ U{1..max_kernels}`` kernels, each drawn
from the bank with its hyperparameters, folded left to right with ``+`` or ``*`` (each with probability
1/2). The bank (every kernel positive semi-definite, so are sums and elementwise products):

* ``Constant(s)``: an offset, ``k = s``;
* ``White(s)``: observation noise, ``k = s`` on the diagonal;
* ``RBF(l)``: smooth variation at length scale ``l``, ``exp(-d^2 / 2 l^2)``;
* ``RationalQuadratic(l, a)``: a mixture of length scales, ``(1 + d^2 / 2 a l^2)^-a``;
* ``Periodic(p, l)``: a seasonality of period ``p`` (in samples, from :data:`PERIODS`: daily, weekly and
  yearly cycles at common sampling rates, and a free period), ``exp(-2 sin^2(pi d / p) / l^2)``;
* ``Linear(c, s)``: a trend through ``c``, ``s (t - c)(t' - c)``.

Length scales are log-uniform in [0.01, 1] (in units of the whole series). A draw is the Cholesky factor of
the covariance (plus a small jitter on the diagonal) times standard normals, then standardised (zero mean,
unit variance; a constant draw stays zero). Series ``index`` of prior ``seed`` comes from its own generator
(``numpy.random.default_rng([seed, index])``), so any series is reproducible alone and a data-loader worker
draws any slice of the stream.

>>> from chorustic.prior.kernel_bank import KernelBankConfig, sample_series, sample_batch
>>> x, kernel = sample_series(seed=0, index=7)          # (512,) float32 and e.g. "(RBF(0.041) + Periodic(24, 0.71))"
>>> X = sample_batch(seed=0, start=0, n=64)             # (64, 512) float32
"""

from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np

__all__ = ["KERNELS", "PERIODS", "STATIONARY", "Kernel", "KernelBankConfig", "sample_batch", "sample_kernel", "sample_series"]

#: Periods in samples: hourly data's day (24) and week (168), daily data's week (7), month (30) and year
#: (365), minute data's hour (60), half-hourly data's day (48), quarterly and monthly years (4, 12).
PERIODS = (4, 7, 12, 24, 30, 48, 60, 168, 365)


@dataclasses.dataclass(frozen=True)
class KernelBankConfig:
    length: int = 512  # points per series (the signal encoder's input length)
    max_kernels: int = 5  # kernels composed per series, drawn uniformly from 1..max_kernels
    #: relative weights of the bank's kernels (names of :data:`KERNELS`)
    weights: tuple[tuple[str, float], ...] = (("Constant", 1.0), ("White", 1.0), ("RBF", 2.0),
                                              ("RationalQuadratic", 1.0), ("Periodic", 3.0), ("Linear", 1.0))
    periods: tuple[int, ...] = PERIODS
    jitter: float = 1e-6  # added to the diagonal before the Cholesky factorisation

    def __post_init__(self) -> None:
        problems = []
        if self.length < 2:
            problems.append(f"length must be >= 2, got {self.length}")
        if self.max_kernels < 1:
            problems.append(f"max_kernels must be >= 1, got {self.max_kernels}")
        unknown = sorted({name for name, _ in self.weights} - set(KERNELS))
        if unknown:
            problems.append(f"unknown kernels {unknown}; known: {sorted(KERNELS)}")
        if not any(w > 0 for _, w in self.weights):
            problems.append("at least one kernel needs a positive weight")
        if problems:
            raise ValueError("invalid KernelBankConfig: " + "; ".join(problems))


@dataclasses.dataclass(frozen=True)
class Kernel:
    """A kernel of the bank with its hyperparameters, or a sum / product of two kernels."""

    name: str  # a name of KERNELS, or "+" / "*"
    params: tuple[float, ...] = ()
    parts: tuple["Kernel", ...] = ()

    def matrix(self, t: np.ndarray, length: int) -> np.ndarray:
        """The covariance matrix on the points ``t`` (equally spaced in [0, 1]) of a series of ``length``
        samples. A stationary kernel is evaluated once per lag and spread over the matrix (Toeplitz)."""
        if self.name in ("+", "*"):
            a, b = (k.matrix(t, length) for k in self.parts)
            return a + b if self.name == "+" else a * b
        fn = KERNELS[self.name][1]
        if self.name in STATIONARY:
            return fn(t - t[0], length, *self.params)[_lags(len(t))]
        return fn(t, length, *self.params)

    def __str__(self) -> str:
        if self.name in ("+", "*"):
            return f"({self.parts[0]} {self.name} {self.parts[1]})"
        return f"{self.name}({', '.join(f'{p:.3g}' for p in self.params)})"


@functools.lru_cache(maxsize=4)
def _lags(n: int) -> np.ndarray:
    """``|i - j|`` of an ``n x n`` matrix (read-only: shared by every stationary kernel of that size)."""
    lag = np.abs(np.arange(n)[:, None] - np.arange(n)[None, :])
    lag.setflags(write=False)
    return lag


# Stationary kernels take the distances ``d`` (in units of the whole series); the others the points ``t``.
def _constant(t, length, s):
    return np.full((len(t), len(t)), s)


def _white(t, length, s):
    return s * np.eye(len(t))


def _rbf(d, length, l):
    return np.exp(-d ** 2 / (2 * l * l))


def _rational_quadratic(d, length, l, a):
    return (1 + d ** 2 / (2 * a * l * l)) ** -a


def _periodic(d, length, period, l):
    # period in samples; d is in units of the whole series: one period is period / (length - 1) of it
    return np.exp(-2 * np.sin(math.pi * d * (length - 1) / period) ** 2 / (l * l))


def _linear(t, length, c, s):
    return s * np.outer(t - c, t - c)


def _log_uniform(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(math.exp(rng.uniform(math.log(lo), math.log(hi))))


def _draw_constant(rng, cfg):
    return (_log_uniform(rng, 0.1, 1.0),)


def _draw_white(rng, cfg):
    return (_log_uniform(rng, 1e-3, 0.3),)


def _draw_rbf(rng, cfg):
    return (_log_uniform(rng, 0.01, 1.0),)


def _draw_rq(rng, cfg):
    return (_log_uniform(rng, 0.01, 1.0), _log_uniform(rng, 0.1, 10.0))


def _draw_periodic(rng, cfg):
    periods = [p for p in cfg.periods if 2 <= p <= cfg.length / 2]
    free = _log_uniform(rng, 2.0, max(cfg.length / 2, 2.0))  # a period no calendar names
    period = float(rng.choice(periods)) if periods and rng.random() < 0.8 else free
    return (period, _log_uniform(rng, 0.3, 3.0))


def _draw_linear(rng, cfg):
    return (float(rng.uniform(-0.5, 1.5)), _log_uniform(rng, 0.1, 1.0))


#: name -> (draw its hyperparameters from ``(rng, cfg)``, its covariance from ``(t or d, length, *params)``)
KERNELS = {
    "Constant": (_draw_constant, _constant),
    "White": (_draw_white, _white),
    "RBF": (_draw_rbf, _rbf),
    "RationalQuadratic": (_draw_rq, _rational_quadratic),
    "Periodic": (_draw_periodic, _periodic),
    "Linear": (_draw_linear, _linear),
}


#: kernels that depend on the distance of two points only
STATIONARY = frozenset({"RBF", "RationalQuadratic", "Periodic"})


def sample_kernel(rng: np.random.Generator, cfg: KernelBankConfig = KernelBankConfig()) -> Kernel:
    """A random composition of 1..``cfg.max_kernels`` kernels of the bank (see the module docstring)."""
    names = [n for n, w in cfg.weights if w > 0]
    p = np.array([w for _, w in cfg.weights if w > 0], dtype=np.float64)
    p /= p.sum()
    kernel = None
    for _ in range(int(rng.integers(1, cfg.max_kernels + 1))):
        name = str(rng.choice(names, p=p))
        k = Kernel(name, KERNELS[name][0](rng, cfg))
        kernel = k if kernel is None else Kernel("+" if rng.random() < 0.5 else "*", (), (kernel, k))
    return kernel


def _draw(rng: np.random.Generator, kernel: Kernel, cfg: KernelBankConfig) -> np.ndarray:
    t = np.linspace(0.0, 1.0, cfg.length)
    cov = kernel.matrix(t, cfg.length)
    scale = max(float(np.mean(np.diag(cov))), 1e-12)
    cov = cov / scale + cfg.jitter * np.eye(cfg.length)  # unit mean variance: the jitter is relative
    try:
        chol = np.linalg.cholesky(cov)
    except np.linalg.LinAlgError:  # a near-singular product of kernels: its square root from the eigenvalues
        w, v = np.linalg.eigh((cov + cov.T) / 2)
        chol = v * np.sqrt(np.clip(w, 0.0, None))
    x = chol @ rng.standard_normal(cfg.length)
    x = x - x.mean()
    sd = x.std()
    return (x / sd if sd > 1e-8 else np.zeros_like(x)).astype(np.float32)


def sample_series(seed: int, index: int, cfg: KernelBankConfig = KernelBankConfig()) -> tuple[np.ndarray, str]:
    """Series ``index`` of the prior ``seed``: a standardised (``cfg.length``,) float32 draw and its kernel."""
    rng = np.random.default_rng([int(seed), int(index)])
    kernel = sample_kernel(rng, cfg)
    return _draw(rng, kernel, cfg), str(kernel)


def sample_batch(seed: int, start: int, n: int, cfg: KernelBankConfig = KernelBankConfig()) -> np.ndarray:
    """Series ``start .. start + n - 1`` of the prior ``seed``, stacked: (n, ``cfg.length``) float32."""
    return np.stack([sample_series(seed, i, cfg)[0] for i in range(start, start + n)]) if n else \
        np.zeros((0, cfg.length), np.float32)
