"""Regime-switching (Markov) and changepoint processes.

Markov mode: a system-wide hidden regime sequence (geometric dwell times); each regime has its own
per-channel level, scale and AR(1) dynamics. Changepoint mode: a few changepoints per series with a
new level, slope and noise scale per segment (per channel).
"""

from __future__ import annotations

import numpy as np
from scipy.signal import lfilter

from chorustic.prior._ops import loguniform
from chorustic.prior.backgrounds.base import Process

__all__ = ["sample_process"]


def sample_process(rng: np.random.Generator, n_channels: int, length: int) -> Process:
    mode = "markov" if rng.random() < 0.5 else "changepoint"
    t = np.linspace(0.0, 1.0, length)
    if mode == "markov":
        n_reg = int(rng.integers(2, 5))
        levels = rng.normal(0.0, 1.5, size=(n_reg, n_channels))
        scales = loguniform(rng, 0.2, 1.5, size=(n_reg, n_channels))
        phis = rng.uniform(0.0, 0.97, size=n_reg)
        dwell = float(rng.uniform(max(2.0, length / 20), max(3.0, length / 3)))
        p_switch = 1.0 / dwell

        def generate(g: np.random.Generator, n: int) -> np.ndarray:
            switches = g.random((n, length)) < p_switch
            switches[:, 0] = False
            seg = np.cumsum(switches, axis=1)  # (n, L) segment id
            n_seg = int(seg.max()) + 1
            # regime of each segment: a random walk on regimes that never stays in place
            steps = g.integers(1, n_reg, size=(n, n_seg)) if n_reg > 1 else np.zeros((n, n_seg), int)
            steps[:, 0] = g.integers(0, n_reg, size=n)
            reg_of_seg = np.cumsum(steps, axis=1) % n_reg
            state = np.take_along_axis(reg_of_seg, seg, axis=1)  # (n, L)
            out = np.zeros((n, n_channels, length))
            noise = g.standard_normal((n, n_channels, length))
            for r in range(n_reg):
                ar = lfilter([1.0], [1.0, -phis[r]], noise, axis=-1) * np.sqrt(1 - phis[r] ** 2)
                sig = levels[r][None, :, None] + scales[r][None, :, None] * ar
                out += (state == r)[:, None, :] * sig
            return out

        params = {"mode": mode, "n_regimes": n_reg, "dwell": dwell}
    else:
        max_cp = int(rng.integers(1, 5))
        slope_sd = float(rng.uniform(0.0, 2.0))
        noise_sd = float(rng.uniform(0.05, 0.6))

        def generate(g: np.random.Generator, n: int) -> np.ndarray:
            cps = np.sort(g.uniform(0.05, 0.95, size=(n, max_cp)), axis=1)
            seg = (t[None, :, None] >= cps[:, None, :]).sum(-1)  # (n, L)
            level = g.normal(0.0, 1.5, size=(n, n_channels, max_cp + 1))
            slope = g.normal(0.0, slope_sd, size=(n, n_channels, max_cp + 1))
            scale = noise_sd * loguniform(g, 0.3, 3.0, size=(n, n_channels, max_cp + 1))
            idx = np.broadcast_to(seg[:, None, :], (n, n_channels, length))
            start = np.concatenate([np.zeros((n, 1)), cps], axis=1)
            t0 = np.take_along_axis(np.broadcast_to(start[:, None, :], (n, n_channels, max_cp + 1)), idx, -1)
            lv = np.take_along_axis(level, idx, -1)
            sl = np.take_along_axis(slope, idx, -1)
            sc = np.take_along_axis(scale, idx, -1)
            return lv + sl * (t[None, None, :] - t0) + sc * g.standard_normal((n, n_channels, length))

        params = {"mode": mode, "max_changepoints": max_cp}
    return Process("regime", n_channels, length, generate, params)
