"""Audio-like multiscale processes: note sequences of harmonic partials with envelopes and vibrato,
resonant (formant-like) filtered noise, and a multiscale sum of band-limited octaves."""

from __future__ import annotations

import numpy as np
from scipy.signal import lfilter

from chorustic.prior._ops import ChannelMixer, colored_noise, loguniform
from chorustic.prior.backgrounds.base import Process

__all__ = ["sample_process"]


def _resonator(freq: float, bandwidth: float) -> tuple[np.ndarray, np.ndarray]:
    r = np.exp(-np.pi * bandwidth)
    theta = 2 * np.pi * freq
    return np.array([1.0 - r]), np.array([1.0, -2 * r * np.cos(theta), r**2])


def sample_process(rng: np.random.Generator, n_channels: int, length: int) -> Process:
    parts = [p for p in ("notes", "formant", "multiscale") if rng.random() < 0.6] or ["notes"]
    n_notes = int(rng.integers(1, 5))
    base_cycles = float(loguniform(rng, 2.0, max(3.0, length / 8)))
    n_partials = int(rng.integers(2, 6))
    rolloff = float(rng.uniform(0.5, 1.5))
    vibrato = float(rng.uniform(0.0, 0.05))
    n_res = int(rng.integers(1, 4))
    res = [_resonator(float(loguniform(rng, 2.0 / length, 0.25)), float(rng.uniform(0.005, 0.05)))
           for _ in range(n_res)]
    hurst = float(rng.uniform(0.2, 0.9))
    n_oct = int(max(2, min(7, np.log2(max(length, 4)) - 1)))
    mixer = ChannelMixer(rng, n_channels, 1, shared_weight=float(rng.uniform(0.3, 0.95)))
    t = np.arange(length, dtype=np.float64)

    def generate(g: np.random.Generator, n: int) -> np.ndarray:
        shape = (n, mixer.n_shared + n_channels)
        total = np.zeros(shape + (length,))
        if "notes" in parts:
            bounds = np.sort(g.uniform(0, length, size=shape + (n_notes - 1,)), axis=-1)
            note = (t[None, None, :, None] >= bounds[..., None, :]).sum(-1)  # (n, S, L)
            f_note = base_cycles / length * 2.0 ** (g.integers(-5, 8, size=shape + (n_notes,)) / 6.0)
            f = np.take_along_axis(f_note, note, axis=-1)
            f = f * (1.0 + vibrato * np.sin(2 * np.pi * t / max(8.0, length / 12)))
            phase = 2 * np.pi * np.cumsum(f, axis=-1)
            k = np.arange(1, n_partials + 1)
            amps = k ** (-rolloff)
            x = np.einsum("k,nskl->nsl", amps, np.sin(phase[:, :, None, :] * k[:, None]))
            onset = np.concatenate([np.zeros(shape + (1,)), bounds], axis=-1)
            since = t[None, None, :] - np.take_along_axis(onset, note, axis=-1)
            env = np.exp(-since / max(4.0, length / (2.0 * n_notes))) * (1 - np.exp(-since / 2.0))
            total += x * (0.3 + env) / np.sqrt(len(parts))
        if "formant" in parts:
            noise = g.standard_normal(shape + (length,))
            y = sum(lfilter(b, a, noise, axis=-1) for b, a in res)
            total += y / (y.std(axis=-1, keepdims=True) + 1e-12) / np.sqrt(len(parts))
        if "multiscale" in parts:
            acc = np.zeros(shape + (length,))
            for j in range(n_oct):
                width = 2**j
                band = colored_noise(g, shape, length, 0.0)
                if width > 1:
                    kern = np.hanning(2 * width + 1)
                    kern /= kern.sum()
                    band = _conv_last(band, kern)
                    band /= band.std(axis=-1, keepdims=True) + 1e-12
                acc += 2.0 ** (j * hurst) * band
            total += acc / (acc.std(axis=-1, keepdims=True) + 1e-12) / np.sqrt(len(parts))
        return mixer(total[:, : mixer.n_shared], total[:, mixer.n_shared:])

    return Process("audio", n_channels, length, generate, {"parts": parts, "n_notes": n_notes})


def _conv_last(x: np.ndarray, kern: np.ndarray) -> np.ndarray:
    from scipy.signal import fftconvolve

    pad = len(kern) // 2
    xp = np.pad(x, [(0, 0)] * (x.ndim - 1) + [(pad, pad)], mode="reflect" if x.shape[-1] > pad else "edge")
    return fftconvolve(xp, kern.reshape((1,) * (x.ndim - 1) + (-1,)), mode="valid", axes=-1)
