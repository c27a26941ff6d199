"""Motif library: short, unit-amplitude shapes that rules insert into a background.

A motif is a 1-D array of ``width`` samples with peak absolute value 1 (so the rule's amplitude is
the class margin in units of the robust background scale). Kinds are deliberately diverse in shape
(bumps, edges, oscillations, asymmetric ramps) so that ``motif_shape`` episodes with up to ten classes
have ten visibly different prototypes.
"""

from __future__ import annotations

import numpy as np

__all__ = ["MOTIF_KINDS", "make_motif", "sample_motif_kinds", "random_smooth_motif"]


def _grid(width: int) -> np.ndarray:
    return np.linspace(0.0, 1.0, max(int(width), 2))


def _unit(x: np.ndarray) -> np.ndarray:
    peak = np.max(np.abs(x))
    return x / peak if peak > 0 else x


def _bump(u):  # Gaussian bump
    return np.exp(-0.5 * ((u - 0.5) / 0.15) ** 2)


def _triangle(u):
    return 1.0 - np.abs(2.0 * u - 1.0)


def _square(u):  # plateau with short soft edges
    return 1.0 / (1.0 + np.exp(-(u - 0.15) * 60.0)) - 1.0 / (1.0 + np.exp(-(u - 0.85) * 60.0))


def _sawtooth(u):  # slow rise, fast fall
    return np.where(u < 0.8, u / 0.8, (1.0 - u) / 0.2)


def _rev_sawtooth(u):  # fast rise, slow fall
    return np.where(u < 0.2, u / 0.2, (1.0 - u) / 0.8)


def _sine_cycle(u):
    return np.sin(2 * np.pi * u)


def _double_bump(u):
    return np.exp(-0.5 * ((u - 0.28) / 0.09) ** 2) + np.exp(-0.5 * ((u - 0.72) / 0.09) ** 2)


def _damped_osc(u):
    return np.exp(-4.0 * u) * np.sin(2 * np.pi * 3.0 * u)


def _mexican_hat(u):
    z = (u - 0.5) / 0.12
    return (1 - z**2) * np.exp(-0.5 * z**2)


def _step_up(u):  # a sigmoid edge that returns to baseline at the end of the window
    return np.tanh((u - 0.3) * 25.0) * 0.5 + 0.5 - (np.tanh((u - 0.95) * 40.0) * 0.5 + 0.5)


def _chirp(u):
    return np.sin(2 * np.pi * (1.0 * u + 3.0 * u**2)) * np.hanning(len(u))


def _ramp(u):  # linear trend that drops back
    return np.where(u < 0.9, u / 0.9, (1.0 - u) / 0.1)


def _w_shape(u):
    return np.abs(np.sin(2 * np.pi * u)) * _triangle(u)


def _spike_train(u):
    out = np.zeros_like(u)
    for c in (0.2, 0.5, 0.8):
        out += np.exp(-0.5 * ((u - c) / 0.03) ** 2)
    return out


def _half_wave(u):  # one positive lobe, one negative lobe of different widths
    return np.where(u < 0.35, np.sin(np.pi * u / 0.35), -0.6 * np.sin(np.pi * (u - 0.35) / 0.65))


_KINDS = {
    "bump": _bump,
    "triangle": _triangle,
    "square": _square,
    "sawtooth": _sawtooth,
    "rev_sawtooth": _rev_sawtooth,
    "sine_cycle": _sine_cycle,
    "double_bump": _double_bump,
    "damped_osc": _damped_osc,
    "mexican_hat": _mexican_hat,
    "step": _step_up,
    "chirp": _chirp,
    "ramp": _ramp,
    "w_shape": _w_shape,
    "spike_train": _spike_train,
    "half_wave": _half_wave,
}

#: Names of the deterministic motif kinds (``"random"`` additionally draws a smooth random shape).
MOTIF_KINDS: tuple[str, ...] = tuple(_KINDS)


def make_motif(kind: str, width: int, rng: np.random.Generator | None = None) -> np.ndarray:
    """A unit-peak motif of ``width`` samples. ``kind="random"`` needs ``rng``."""
    width = max(int(width), 2)
    if kind == "random":
        if rng is None:
            raise ValueError("make_motif('random', ...) needs a numpy Generator")
        return random_smooth_motif(rng, width)
    try:
        fn = _KINDS[kind]
    except KeyError:
        raise ValueError(f"unknown motif kind {kind!r}; known: {MOTIF_KINDS + ('random',)}") from None
    return _unit(fn(_grid(width))).astype(np.float64)


def random_smooth_motif(rng: np.random.Generator, width: int, n_knots: int | None = None) -> np.ndarray:
    """A random smooth shape that starts and ends near zero (cubic interpolation of random knots)."""
    width = max(int(width), 2)
    k = int(n_knots or rng.integers(4, 8))
    knots = rng.standard_normal(k)
    knots[0] = knots[-1] = 0.0
    xs = np.linspace(0, 1, k)
    u = _grid(width)
    # Catmull-Rom-like smoothing via np.interp on a densified, moving-averaged knot curve
    dense = np.interp(np.linspace(0, 1, 8 * k), xs, knots)
    kernel = np.hanning(7)
    kernel /= kernel.sum()
    dense = np.convolve(np.pad(dense, 3, mode="edge"), kernel, mode="valid")
    out = np.interp(u, np.linspace(0, 1, len(dense)), dense) * np.hanning(width + 2)[1:-1] ** 0.5
    return _unit(out)


def sample_motif_kinds(rng: np.random.Generator, n: int, include_random: bool = True) -> list[str]:
    """``n`` distinct motif kinds (``"random"`` may appear at most once, always distinct from the rest)."""
    pool = list(MOTIF_KINDS) + (["random"] if include_random else [])
    if n > len(pool):
        raise ValueError(f"cannot sample {n} distinct motif kinds from {len(pool)}")
    return [pool[i] for i in rng.choice(len(pool), size=n, replace=False)]
