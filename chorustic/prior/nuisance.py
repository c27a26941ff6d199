"""Instance-level nuisance transformations A_xi and sensor noise epsilon (paper Appendix B.8).

``X_i = A_xi(P_{y_i}) + eps_i``. The transformation family: temporal shifts, elastic warping, length
perturbations (crop-and-stretch, or a zero tail as in zero-filled variable-length recordings), local
masking, burst noise, quantization, amplitude clipping, distractor-channel perturbations (random
uninformative motifs, mostly on non-informative channels), instance amplitude/offset jitter and sensor
noise. Each is applied per instance with a probability and magnitude interpolated between an easy and
a hard setting by the episode's nuisance ``severity`` in [0, 1] (derived from the difficulty ``d``).
Everything is vectorized over instances; all randomness comes from the given numpy Generator.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from chorustic.prior._ops import colored_noise, gather_time, smooth_curves
from chorustic.prior.motifs import make_motif, sample_motif_kinds

__all__ = ["NuisanceConfig", "apply_nuisance", "NUISANCE_NAMES"]

NUISANCE_NAMES = ("shift", "warp", "length", "mask", "burst", "quantize", "clip", "distractor",
                  "amplitude", "noise")


@dataclasses.dataclass(frozen=True)
class NuisanceConfig:
    """(easy, hard) probabilities per instance and (easy, hard) magnitudes of each transformation."""

    shift_prob: tuple[float, float] = (0.5, 1.0)
    shift_max: tuple[float, float] = (0.02, 0.12)  # fraction of L
    warp_prob: tuple[float, float] = (0.2, 0.8)
    warp_max: tuple[float, float] = (0.01, 0.06)  # displacement amplitude, fraction of L
    length_prob: tuple[float, float] = (0.1, 0.5)
    length_max: tuple[float, float] = (0.05, 0.25)  # cropped fraction
    zero_tail_share: float = 0.25  # share of length perturbations that zero the tail instead
    mask_prob: tuple[float, float] = (0.05, 0.4)
    mask_max: tuple[float, float] = (0.03, 0.12)  # window fraction of L
    burst_prob: tuple[float, float] = (0.05, 0.4)
    burst_std: tuple[float, float] = (0.5, 2.0)
    quantize_prob: tuple[float, float] = (0.05, 0.3)
    quantize_levels: tuple[float, float] = (64.0, 8.0)
    clip_prob: tuple[float, float] = (0.05, 0.3)
    clip_quantile: tuple[float, float] = (0.99, 0.85)
    distractor_prob: tuple[float, float] = (0.2, 0.7)  # per non-informative channel
    distractor_amp: tuple[float, float] = (0.4, 1.2)  # relative to the rule amplitude
    amplitude_sd: tuple[float, float] = (0.05, 0.3)  # log-scale jitter per instance and channel
    offset_sd: tuple[float, float] = (0.05, 0.4)
    noise_std: tuple[float, float] = (0.03, 0.5)  # white sensor noise
    colored_noise_prob: float = 0.3

    def at(self, name: str, severity: float) -> float:
        lo, hi = getattr(self, name)
        return float(lo + (hi - lo) * severity)


def apply_nuisance(rng: np.random.Generator, X: np.ndarray, severity: float,
                   informative_channels: tuple[int, ...] = (), rule_amplitude: float = 1.0,
                   config: NuisanceConfig | None = None) -> np.ndarray:
    """Apply instance-specific nuisances to clean instances ``X`` (N, C, L); returns a new array."""
    cfg = config or NuisanceConfig()
    s = float(np.clip(severity, 0.0, 1.0))
    N, C, L = X.shape
    t = np.arange(L, dtype=np.float64)

    def chosen(name: str) -> np.ndarray:
        return rng.random(N) < cfg.at(name, s)

    # --- time map: temporal shift, elastic warping and crop-and-stretch, one interpolation -----------
    pos = np.broadcast_to(t, (N, L)).copy()
    crop = np.where(chosen("length_prob"), rng.uniform(0, cfg.at("length_max", s), size=N), 0.0)
    zero_tail = (crop > 0) & (rng.random(N) < cfg.zero_tail_share)
    stretch = (crop > 0) & ~zero_tail
    start = rng.uniform(0, 1, size=N) * crop * L
    pos = np.where(stretch[:, None], start[:, None] + t[None] * (1.0 - crop[:, None]), pos)
    if L >= 8:
        warp_on = chosen("warp_prob")
        if warp_on.any():
            warp = smooth_curves(rng, (N,), L, int(rng.integers(3, 7)))
            warp -= warp.mean(axis=-1, keepdims=True)
            pos += warp * cfg.at("warp_max", s) * L * warp_on[:, None]
    shift = rng.uniform(-1, 1, size=N) * cfg.at("shift_max", s) * L * chosen("shift_prob")
    pos += shift[:, None]
    out = gather_time(X, pos)

    # --- instance amplitude and offset jitter ---------------------------------------------------------
    out *= np.exp(rng.normal(0.0, cfg.at("amplitude_sd", s), size=(N, C, 1)))
    out += rng.normal(0.0, cfg.at("offset_sd", s), size=(N, C, 1))

    # --- distractor-channel perturbations: random uninformative motifs ---------------------------------
    width = int(np.clip(rng.uniform(0.05, 0.2) * L, 2, L))
    bank = np.stack([make_motif(k, width, rng) for k in sample_motif_kinds(rng, 3)])
    p_d = cfg.at("distractor_prob", s)
    ch_prob = np.full(C, p_d)
    ch_prob[list(informative_channels)] *= 0.35  # informative channels get fewer, weaker distractors
    hit = rng.random((N, C)) < ch_prob[None, :]
    if hit.any():
        rows = np.flatnonzero(hit.reshape(-1))
        starts = rng.integers(0, L - width + 1, size=len(rows))
        amps = rule_amplitude * cfg.at("distractor_amp", s) * rng.uniform(0.5, 1.0, size=len(rows))
        amps *= rng.choice([-1.0, 1.0], size=len(rows))
        flat = out.reshape(N * C, L)
        flat[rows[:, None], starts[:, None] + np.arange(width)] += amps[:, None] * bank[rng.integers(0, 3, len(rows))]

    # --- burst noise ------------------------------------------------------------------------------------
    burst_on = chosen("burst_prob")
    if burst_on.any():
        bw = np.maximum(2, (rng.uniform(0.03, 0.15, size=N) * L).astype(int))
        b0 = (rng.random(N) * (L - bw)).astype(int)
        win = (t[None] >= b0[:, None]) & (t[None] < (b0 + bw)[:, None]) & burst_on[:, None]
        ch = rng.random((N, C)) < 0.6
        out += rng.standard_normal((N, C, L)) * cfg.at("burst_std", s) * (win[:, None, :] & ch[:, :, None])

    # --- sensor noise -----------------------------------------------------------------------------------
    sigma = cfg.at("noise_std", s) * rng.uniform(0.3, 1.0)
    out += sigma * rng.standard_normal((N, C, L))
    if rng.random() < cfg.colored_noise_prob:
        out += 0.5 * sigma * colored_noise(rng, (N, C), L, rng.uniform(1.0, 2.0))

    # --- local masking (value hold or zero, like a dropout or a zero-filled gap) ----------------------------
    mask_on = chosen("mask_prob")
    if mask_on.any():
        mw = np.maximum(1, (rng.uniform(0.3, 1.0, size=N) * cfg.at("mask_max", s) * L).astype(int))
        m0 = (rng.random(N) * (L - mw)).astype(int)
        win = (t[None] >= m0[:, None]) & (t[None] < (m0 + mw)[:, None]) & mask_on[:, None]
        ch = rng.random((N, C)) < 0.7
        full = win[:, None, :] & ch[:, :, None]
        hold = np.take_along_axis(out, np.broadcast_to(m0[:, None, None], (N, C, 1)), axis=-1)
        fill = np.where((rng.random(N) < 0.5)[:, None, None], 0.0, hold)
        out = np.where(full, fill, out)

    # --- quantization -----------------------------------------------------------------------------------
    q_on = chosen("quantize_prob")
    if q_on.any():
        levels = cfg.at("quantize_levels", s)
        rng_ = out[q_on].max(axis=-1, keepdims=True) - out[q_on].min(axis=-1, keepdims=True)
        step = np.maximum(rng_ / levels, 1e-6)
        out[q_on] = np.round(out[q_on] / step) * step

    # --- amplitude clipping -----------------------------------------------------------------------------
    c_on = chosen("clip_prob")
    if c_on.any():
        sub = out[c_on]
        med = np.median(sub, axis=-1, keepdims=True)
        thr = np.quantile(np.abs(sub - med), cfg.at("clip_quantile", s), axis=-1, keepdims=True)
        out[c_on] = np.clip(sub, med - thr, med + thr)

    # --- zero tail (a shorter recording, zero-filled to the episode length) --------------------------------
    if zero_tail.any():
        cut = ((1.0 - crop) * L).astype(int)
        out = np.where((t[None] >= cut[:, None])[:, None, :] & zero_tail[:, None, None], 0.0, out)
    return out
