"""Structural channel graphs: a random DAG over channels with lagged, possibly nonlinear edges.

Root channels are stable AR(2) processes (quasi-periodic when the roots are complex); every other
channel is a nonlinear function of lagged parents plus its own AR innovation. A univariate episode
gets a single nonlinear AR channel.
"""

from __future__ import annotations

import numpy as np
from scipy.signal import lfilter

from chorustic.prior._ops import loguniform
from chorustic.prior.backgrounds.base import Process

__all__ = ["sample_process"]

_NONLIN = {
    "linear": lambda x: x,
    "tanh": lambda x: np.tanh(1.5 * x),
    "sin": lambda x: np.sin(2.0 * x),
    "square": lambda x: x**2 - 1.0,
    "abs": lambda x: np.abs(x) - 0.8,
    "relu": lambda x: np.maximum(x, 0.0) - 0.4,
}


def _ar2(rng: np.random.Generator) -> tuple[float, float]:
    r = rng.uniform(0.6, 0.995)
    theta = loguniform(rng, 0.01, 2.5)
    return 2 * r * np.cos(theta), -(r**2)


def sample_process(rng: np.random.Generator, n_channels: int, length: int) -> Process:
    order = rng.permutation(n_channels)
    max_lag = max(1, length // 10)
    nodes = []
    for pos, ch in enumerate(order):
        n_par = 0 if pos == 0 else int(rng.integers(0, min(2, pos) + 1))
        parents = [int(order[j]) for j in rng.choice(pos, size=n_par, replace=False)] if n_par else []
        nodes.append({
            "channel": int(ch),
            "parents": parents,
            "lags": [int(rng.integers(0, max_lag + 1)) for _ in parents],
            "weights": [float(rng.choice([-1, 1]) * rng.uniform(0.5, 1.5)) for _ in parents],
            "nonlin": str(rng.choice(list(_NONLIN))) if parents else "linear",
            "ar": _ar2(rng),
            "innovation": float(rng.uniform(0.15, 0.8)) if parents else 1.0,
        })
    self_nonlin = str(rng.choice(list(_NONLIN)))
    burn = max_lag + 16

    def generate(g: np.random.Generator, n: int) -> np.ndarray:
        total = length + burn
        out = np.zeros((n, n_channels, total))
        for node in nodes:
            a1, a2 = node["ar"]
            own = lfilter([1.0], [1.0, -a1, -a2], g.standard_normal((n, total)), axis=-1)
            own /= own.std(axis=-1, keepdims=True) + 1e-12
            if node["parents"]:
                drive = np.zeros((n, total))
                for p, lag, w in zip(node["parents"], node["lags"], node["weights"]):
                    src = out[:, p]
                    shifted = np.concatenate([np.repeat(src[:, :1], lag, axis=1), src[:, : total - lag]], axis=1)
                    drive += w * shifted
                drive /= drive.std(axis=-1, keepdims=True) + 1e-12
                x = _NONLIN[node["nonlin"]](drive)
                x = (x - x.mean(axis=-1, keepdims=True)) / (x.std(axis=-1, keepdims=True) + 1e-12)
                x = np.sqrt(1 - node["innovation"] ** 2 / 2) * x + node["innovation"] * own / np.sqrt(2)
            elif n_channels == 1:
                x = own + 0.5 * _NONLIN[self_nonlin](own)
            else:
                x = own
            out[:, node["channel"]] = x
        return out[:, :, burn:]

    return Process("graph", n_channels, length, generate,
                   {"edges": [(p, nd["channel"], lag) for nd in nodes for p, lag in zip(nd["parents"], nd["lags"])],
                    "nonlin": [nd["nonlin"] for nd in nodes]})
