"""Amplitude- and frequency-modulated sinusoids (including chirps) with harmonics."""

from __future__ import annotations

import numpy as np

from chorustic.prior._ops import loguniform, smooth_curves
from chorustic.prior.backgrounds.base import Process

__all__ = ["sample_process"]


def sample_process(rng: np.random.Generator, n_channels: int, length: int) -> Process:
    cycles = float(loguniform(rng, 1.5, max(2.0, length / 6)))  # carrier cycles over the series
    am_depth = float(rng.uniform(0.0, 0.9))
    fm_depth = float(rng.uniform(0.0, 0.6))
    chirp = float(rng.normal(0.0, 0.8)) if rng.random() < 0.3 else 0.0
    n_knots = int(np.clip(loguniform(rng, 3, 12), 3, max(3, length // 2)))
    n_harm = int(rng.integers(1, 4))
    harm = np.exp(-rng.uniform(0.5, 2.0) * np.arange(n_harm))
    ch_ratio = rng.choice([1.0, 1.0, 0.5, 2.0, 1.5], size=n_channels)  # per-channel frequency ratio
    ch_ratio[0] = 1.0
    shared_mod = rng.random() < 0.6  # channels share the modulating curves
    t = np.linspace(0.0, 1.0, length)

    def generate(g: np.random.Generator, n: int) -> np.ndarray:
        m_ch = 1 if shared_mod else n_channels
        am = smooth_curves(g, (n, m_ch), length, n_knots)
        fm = smooth_curves(g, (n, m_ch), length, n_knots)
        freq = cycles * ch_ratio[None, :, None] * (1.0 + fm_depth * np.tanh(fm) + chirp * t)
        freq = np.maximum(freq, 0.05 * cycles)
        phase = 2 * np.pi * np.cumsum(freq, axis=-1) / length
        phase += g.uniform(0, 2 * np.pi, size=(n, n_channels, 1))
        carrier = np.einsum("h,nchl->ncl", harm, np.sin(phase[:, :, None, :] * np.arange(1, n_harm + 1)[:, None]))
        env = 1.0 + am_depth * np.tanh(am)
        return env * carrier + 0.05 * g.standard_normal((n, n_channels, length))

    return Process("modulated", n_channels, length, generate,
                   {"cycles": cycles, "am_depth": am_depth, "fm_depth": fm_depth, "chirp": chirp})
