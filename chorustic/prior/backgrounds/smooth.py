"""Smooth, periodic and colored-noise processes (with optional trend), mixed across channels."""

from __future__ import annotations

import numpy as np

from chorustic.prior._ops import ChannelMixer, colored_noise, loguniform, smooth_curves
from chorustic.prior.backgrounds.base import Process

__all__ = ["sample_process"]

_COMPONENTS = ("smooth", "periodic", "colored")


def sample_process(rng: np.random.Generator, n_channels: int, length: int) -> Process:
    n_comp = int(rng.integers(1, 4))
    comps = [_COMPONENTS[i] for i in rng.choice(3, size=n_comp, replace=False)]
    weights = rng.dirichlet(np.ones(n_comp) * 2.0)
    n_knots = int(np.clip(loguniform(rng, 3, max(4.0, length / 6)), 3, length))
    period = float(loguniform(rng, max(4.0, length / 40), max(5.0, length / 1.2)))
    n_harm = int(rng.integers(1, 4))
    harm_amp = np.exp(-rng.uniform(0.3, 1.5) * np.arange(n_harm))
    beta = float(rng.uniform(0.5, 2.0))
    trend = float(rng.normal(0.0, 0.6)) if rng.random() < 0.3 else 0.0
    n_shared = int(rng.integers(1, 3))
    mixer = ChannelMixer(rng, n_channels, n_shared, shared_weight=float(rng.uniform(0.0, 0.9)))
    t = np.arange(length, dtype=np.float64)

    def generate(g: np.random.Generator, n: int) -> np.ndarray:
        shape = (n, mixer.n_shared + n_channels)
        total = np.zeros(shape + (length,))
        for comp, w in zip(comps, weights):
            if comp == "smooth":
                x = smooth_curves(g, shape, length, n_knots)
            elif comp == "periodic":
                phase = g.uniform(0, 2 * np.pi, size=shape + (n_harm,))
                ang = 2 * np.pi * t[None, None, None, :] * (np.arange(1, n_harm + 1)[:, None] / period)
                x = np.einsum("h,nshl->nsl", harm_amp, np.sin(ang + phase[..., None]))
            else:
                x = colored_noise(g, shape, length, beta)
            x = x - x.mean(axis=-1, keepdims=True)
            x /= x.std(axis=-1, keepdims=True) + 1e-12
            total += np.sqrt(w) * x
        if trend:
            total += trend * g.uniform(0.5, 1.5, size=shape + (1,)) * np.linspace(-1.5, 1.5, length)
        return mixer(total[:, : mixer.n_shared], total[:, mixer.n_shared:])

    return Process("smooth", n_channels, length, generate,
                   {"components": comps, "period": period, "beta": beta, "n_knots": n_knots})
