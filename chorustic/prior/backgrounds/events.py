"""Event, spike, burst and plateau processes on a weak smooth baseline.

Events arrive as a sparse random impulse train (shared latent trains are mixed into several channels,
so one physical event can show on many sensors); each impulse is convolved with the kernel of its kind:
a spike (a few samples), an exponentially decaying response, an oscillatory burst or a plateau.
"""

from __future__ import annotations

import numpy as np
from scipy.signal import fftconvolve

from chorustic.prior._ops import ChannelMixer, loguniform, smooth_curves
from chorustic.prior.backgrounds.base import Process

__all__ = ["sample_process"]

_KINDS = ("spike", "decay", "burst", "plateau")


def _kernel(kind: str, width: int, rng: np.random.Generator) -> np.ndarray:
    width = max(2, int(width))
    u = np.linspace(0, 1, width)
    if kind == "spike":
        return np.hanning(min(width, 5) + 2)[1:-1]
    if kind == "decay":
        return np.exp(-u * rng.uniform(3.0, 8.0))
    if kind == "burst":
        return np.sin(2 * np.pi * rng.uniform(2.0, 6.0) * u) * np.hanning(width)
    ramp = max(1, width // 8)
    k = np.ones(width)
    k[:ramp] = np.linspace(0, 1, ramp)
    k[-ramp:] = np.linspace(1, 0, ramp)
    return k


def sample_process(rng: np.random.Generator, n_channels: int, length: int) -> Process:
    n_kinds = int(rng.integers(1, 3))
    kinds = [_KINDS[i] for i in rng.choice(len(_KINDS), size=n_kinds, replace=False)]
    kernels = [_kernel(k, loguniform(rng, max(2.0, length / 60), max(3.0, length / 6)), rng) for k in kinds]
    rate = float(rng.uniform(1.0, 8.0))  # expected events per series and kind
    amp_sd = float(rng.uniform(0.2, 0.8))
    positive = rng.random() < 0.6
    baseline = float(rng.uniform(0.05, 0.4))
    n_knots = int(np.clip(length / 10, 3, 12))
    n_shared = int(rng.integers(1, 3))
    mixer = ChannelMixer(rng, n_channels, n_shared, shared_weight=float(rng.uniform(0.3, 1.0)))

    def generate(g: np.random.Generator, n: int) -> np.ndarray:
        shape = (n, mixer.n_shared + n_channels)
        total = np.zeros(shape + (length,))
        for kernel in kernels:
            hits = g.random(shape + (length,)) < rate / length
            amps = g.lognormal(0.0, amp_sd, size=shape + (length,))
            if not positive:
                amps *= g.choice([-1.0, 1.0], size=amps.shape)
            train = hits * amps
            total += fftconvolve(train, kernel[None, None, :], mode="full", axes=-1)[..., :length]
        sources = mixer(total[:, : mixer.n_shared], total[:, mixer.n_shared:]) if mixer.n_shared else total
        base = smooth_curves(g, (n, n_channels), length, n_knots) * baseline
        noise = 0.05 * g.standard_normal((n, n_channels, length))
        return sources + base + noise

    return Process("events", n_channels, length, generate, {"kinds": kinds, "rate": rate})
