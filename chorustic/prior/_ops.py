"""Vectorized numeric building blocks shared by the prior's families (numpy only)."""

from __future__ import annotations

import numpy as np
from scipy.interpolate import CubicSpline

__all__ = [
    "smooth_curves",
    "colored_noise",
    "gather_time",
    "place_window",
    "ChannelMixer",
    "loguniform",
]


def loguniform(rng: np.random.Generator, low: float, high: float, size=None):
    return np.exp(rng.uniform(np.log(low), np.log(high), size=size))


def smooth_curves(rng: np.random.Generator, shape: tuple[int, ...], length: int, n_knots: int) -> np.ndarray:
    """Random smooth curves ``shape + (length,)``: cubic splines through ``n_knots`` N(0, 1) knots."""
    n_knots = int(max(2, min(n_knots, length)))
    knots = rng.standard_normal(tuple(shape) + (n_knots,))
    if n_knots < 4:
        xs = np.linspace(0, 1, n_knots)
        u = np.linspace(0, 1, length)
        flat = knots.reshape(-1, n_knots)
        out = np.stack([np.interp(u, xs, row) for row in flat]).reshape(tuple(shape) + (length,))
        return out
    spline = CubicSpline(np.linspace(0, 1, n_knots), knots, axis=-1)
    return spline(np.linspace(0, 1, length))


def colored_noise(rng: np.random.Generator, shape: tuple[int, ...], length: int, beta) -> np.ndarray:
    """Power-law noise with spectrum ~ 1/f**beta (beta 0 = white, 1 = pink, 2 = brown), unit std.

    ``beta`` is a scalar or an array broadcastable to ``shape``.
    """
    n_freq = length // 2 + 1
    freqs = np.fft.rfftfreq(length)
    freqs[0] = freqs[1] if n_freq > 1 else 1.0
    beta = np.asarray(beta, dtype=np.float64)[..., None]
    amp = freqs ** (-beta / 2.0)
    spec = (rng.standard_normal(tuple(shape) + (n_freq,)) + 1j * rng.standard_normal(tuple(shape) + (n_freq,)))
    spec = spec * amp
    spec[..., 0] = 0.0
    x = np.fft.irfft(spec, n=length, axis=-1)
    std = x.std(axis=-1, keepdims=True)
    return x / np.where(std > 0, std, 1.0)


def gather_time(x: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """Read ``x`` (N, C, L) at fractional time positions ``pos`` (N, L') by linear interpolation.

    Positions outside ``[0, L-1]`` are clamped (edge padding). Returns (N, C, L').
    """
    n, c, length = x.shape
    pos = np.clip(pos, 0.0, length - 1.0)
    i0 = np.floor(pos).astype(np.int64)
    i1 = np.minimum(i0 + 1, length - 1)
    frac = (pos - i0)[:, None, :]
    idx0 = np.broadcast_to(i0[:, None, :], (n, c, pos.shape[-1]))
    idx1 = np.broadcast_to(i1[:, None, :], (n, c, pos.shape[-1]))
    a = np.take_along_axis(x, idx0, axis=-1)
    b = np.take_along_axis(x, idx1, axis=-1)
    return a + (b - a) * frac


def place_window(length: int, motif: np.ndarray, start: int) -> np.ndarray:
    """A length-``length`` array that is ``motif`` at ``[start, start+len(motif))`` (cropped) and 0 elsewhere."""
    out = np.zeros(length)
    w = len(motif)
    a, b = max(start, 0), min(start + w, length)
    if b > a:
        out[a:b] = motif[a - start : b - start]
    return out


class ChannelMixer:
    """A fixed random mixing of shared latent sources into ``n_channels`` channels.

    ``channel = sqrt(w_c) * (M @ shared)_c + sqrt(1 - w_c) * private_c`` with unit-norm rows of ``M`` and a
    per-channel shared weight ``w_c``. Sampled once per process, so every realization (the episode
    background and any per-instance variation) has the same cross-channel structure.
    """

    def __init__(self, rng: np.random.Generator, n_channels: int, n_shared: int, shared_weight: float):
        self.n_channels = int(n_channels)
        self.n_shared = int(n_shared) if n_channels > 1 else 0
        mix = rng.standard_normal((self.n_channels, max(self.n_shared, 1)))
        self.matrix = mix / (np.linalg.norm(mix, axis=1, keepdims=True) + 1e-12)
        w = np.clip(shared_weight * rng.uniform(0.5, 1.0, size=self.n_channels), 0.0, 1.0)
        self.weights = w if self.n_shared > 0 else np.zeros(self.n_channels)

    def __call__(self, shared: np.ndarray | None, private: np.ndarray) -> np.ndarray:
        if self.n_shared == 0 or shared is None:
            return private
        mixed = np.einsum("cs,nsl->ncl", self.matrix, shared)
        mixed /= mixed.std(axis=-1, keepdims=True) + 1e-12
        w = self.weights[None, :, None]
        return np.sqrt(w) * mixed + np.sqrt(1.0 - w) * private
