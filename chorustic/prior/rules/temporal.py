"""Temporal rule families: motif shape, polarity, position, order and localized deviations.

Univariate episodes use one of these on their only channel. In multivariate episodes of the
``cross_channel_rules=False`` ablation they act *channel-wise*: the same class-to-pattern mapping is
applied independently on each informative channel (each with its own temporal region), so every
informative channel alone carries the class and no cross-channel relation is discriminative.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from chorustic.prior.motifs import MOTIF_KINDS, make_motif, sample_motif_kinds
from chorustic.prior.rules.base import Rule, RuleContext, RuleOutput, sample_region

__all__ = ["MotifShapeRule", "PolarityRule", "PositionRule", "OrderRule", "LocalDeviationRule",
           "DEVIATION_TYPES"]


def _tukey(n: int, alpha: float = 0.3) -> np.ndarray:
    if n <= 2:
        return np.ones(n)
    u = np.linspace(0, 1, n)
    w = np.ones(n)
    edge = alpha / 2
    lo = u < edge
    hi = u > 1 - edge
    w[lo] = 0.5 * (1 - np.cos(np.pi * u[lo] / edge))
    w[hi] = 0.5 * (1 - np.cos(np.pi * (1 - u[hi]) / edge))
    return w


class _TemporalRule(Rule):
    kind = "temporal"
    #: fraction of the series covered by the informative region
    region_frac: tuple[float, float] = (0.15, 0.45)

    def sample_params(self, rng: np.random.Generator, n_classes: int, length: int, strength: float) -> dict:
        raise NotImplementedError

    def class_parts(self, params: dict, w: np.ndarray, start: int, stop: int, amplitude: float,
                    rng: np.random.Generator | None) -> np.ndarray:
        """(K, L) additive class parts for one channel whose background is ``w`` (L,)."""
        raise NotImplementedError

    def stochastic_parts(self, params: dict, labels: np.ndarray, start: int, stop: int, length: int,
                         amplitude: float, rng: np.random.Generator) -> np.ndarray | None:
        """Optional (N, L) instance-random class parts (only local deviations use it)."""
        return None

    def build(self, ctx: RuleContext) -> RuleOutput:
        rng, W, K, L = ctx.rng, ctx.background, ctx.n_classes, ctx.length
        if K > self.capacity(ctx.n_channels, L):
            raise ValueError(f"rule {self.name!r} cannot separate {K} classes at length {L}")
        channels = tuple(ctx.channels) if ctx.channels else (0,)
        params = self.sample_params(rng, K, L, ctx.strength)
        regions = [sample_region(rng, L, self.region_frac, min_width=self.min_region(K)) for _ in channels]
        deltas = np.zeros((K, ctx.n_channels, L))
        for c, (a, b) in zip(channels, regions):
            deltas[:, c] = self.class_parts(params, W[c], a, b, ctx.amplitude, None)
        region = (min(r[0] for r in regions), max(r[1] for r in regions))
        has_stochastic = self.stochastic_parts(params, np.zeros(1, np.int64), *regions[0], L, ctx.amplitude,
                                               np.random.default_rng(0)) is not None
        amp = ctx.amplitude

        def render(labels: np.ndarray, g: np.random.Generator | None) -> np.ndarray:
            out = deltas[labels].copy()
            if has_stochastic:
                gen = g if g is not None else np.random.default_rng(0)  # canonical draw for display
                for c, (a, b) in zip(channels, regions):
                    extra = self.stochastic_parts(params, labels, a, b, L, amp, gen)
                    out[:, c] += extra
            return out

        return RuleOutput(self.name, K, channels, region, render,
                          params={**params, "regions": regions}, stochastic=has_stochastic)

    def min_region(self, n_classes: int) -> int:
        return 6


class MotifShapeRule(_TemporalRule):
    """Class k inserts motif shape m_k at the shared region (K distinct shapes)."""

    name = "motif_shape"

    def capacity(self, n_channels, length):
        return len(MOTIF_KINDS) + 1 if length >= 8 else 0

    def sample_params(self, rng, n_classes, length, strength):
        return {"kinds": sample_motif_kinds(rng, n_classes), "motif_seed": int(rng.integers(2**31))}

    def class_parts(self, params, w, start, stop, amplitude, rng):
        out = np.zeros((len(params["kinds"]), len(w)))
        mrng = np.random.default_rng(params["motif_seed"])
        for k, kind in enumerate(params["kinds"]):
            out[k, start:stop] = amplitude * make_motif(kind, stop - start, mrng)
        return out


class PolarityRule(_TemporalRule):
    """One motif repeated in ceil(log2 K) sub-windows; class k = a distinct sign code (+/-) over them."""

    name = "polarity"

    def capacity(self, n_channels, length):
        return 16 if length >= 32 else (4 if length >= 12 else 2)

    def sample_params(self, rng, n_classes, length, strength):
        n_bits = max(1, math.ceil(math.log2(n_classes)))
        codes = np.array(list(itertools.product([1.0, -1.0], repeat=n_bits)))
        chosen = codes[rng.choice(len(codes), size=n_classes, replace=False)]
        kind = str(rng.choice([k for k in MOTIF_KINDS if k not in ("sine_cycle", "chirp", "damped_osc")]))
        return {"codes": chosen, "kind": kind}

    def class_parts(self, params, w, start, stop, amplitude, rng):
        codes = params["codes"]
        n_bits = codes.shape[1]
        edges = np.linspace(start, stop, n_bits + 1).round().astype(int)
        out = np.zeros((len(codes), len(w)))
        for j in range(n_bits):
            a, b = edges[j], edges[j + 1]
            if b - a < 2:
                continue
            m = make_motif(params["kind"], b - a)
            out[:, a:b] = amplitude * codes[:, j : j + 1] * m[None]
        return out

    def min_region(self, n_classes):
        return 3 * max(1, math.ceil(math.log2(n_classes)))


class PositionRule(_TemporalRule):
    """The same motif at a class-specific position inside a wide region."""

    name = "position"
    region_frac = (0.5, 0.95)

    def capacity(self, n_channels, length):
        return int(min(12, length // 5))

    def sample_params(self, rng, n_classes, length, strength):
        return {"kind": str(rng.choice(MOTIF_KINDS)), "slots": rng.permutation(n_classes)}

    def class_parts(self, params, w, start, stop, amplitude, rng):
        slots = params["slots"]
        K = len(slots)
        spacing = (stop - start) / K
        mw = int(max(3, min(0.9 * spacing, 0.25 * len(w))))
        m = make_motif(params["kind"], mw)
        out = np.zeros((K, len(w)))
        for k in range(K):
            a = int(round(start + slots[k] * spacing + (spacing - mw) / 2))
            a = int(np.clip(a, 0, len(w) - mw))
            out[k, a : a + mw] = amplitude * m
        return out

    def min_region(self, n_classes):
        return 4 * n_classes


class OrderRule(_TemporalRule):
    """A sequence of distinct motifs in consecutive slots; class k = a distinct order of them."""

    name = "order"
    region_frac = (0.35, 0.8)

    def capacity(self, n_channels, length):
        return 24 if length >= 40 else (6 if length >= 24 else 2)

    def sample_params(self, rng, n_classes, length, strength):
        n_m = 2 if n_classes <= 2 else (3 if n_classes <= 6 else 4)
        kinds = sample_motif_kinds(rng, n_m, include_random=False)
        perms = list(itertools.permutations(range(n_m)))
        chosen = [perms[i] for i in rng.choice(len(perms), size=n_classes, replace=False)]
        return {"kinds": kinds, "orders": chosen}

    def class_parts(self, params, w, start, stop, amplitude, rng):
        kinds, orders = params["kinds"], params["orders"]
        n_m = len(kinds)
        edges = np.linspace(start, stop, n_m + 1).round().astype(int)
        out = np.zeros((len(orders), len(w)))
        for k, order in enumerate(orders):
            for slot, mi in enumerate(order):
                a, b = edges[slot], edges[slot + 1]
                if b - a >= 2:
                    out[k, a:b] = amplitude * make_motif(kinds[mi], b - a)
        return out

    def min_region(self, n_classes):
        return 3 * (2 if n_classes <= 2 else (3 if n_classes <= 6 else 4))


#: Deviation types of :class:`LocalDeviationRule` (``none`` is the "normal" class).
DEVIATION_TYPES = ("none", "level_up", "level_down", "noise_burst", "flatline", "spike", "ramp_up",
                   "ramp_down", "oscillation", "dip", "sign_flip")


class LocalDeviationRule(_TemporalRule):
    """Class k = a distinct kind of localized deviation (anomaly) in the shared region."""

    name = "local_deviation"
    region_frac = (0.1, 0.35)

    def capacity(self, n_channels, length):
        return len(DEVIATION_TYPES) if length >= 16 else 4

    def sample_params(self, rng, n_classes, length, strength):
        types = [DEVIATION_TYPES[i] for i in rng.choice(len(DEVIATION_TYPES), size=n_classes, replace=False)]
        return {"types": types, "spike_at": float(rng.uniform(0.2, 0.8)), "osc_cycles": float(rng.uniform(2.5, 6))}

    def class_parts(self, params, w, start, stop, amplitude, rng):
        n = stop - start
        u = np.linspace(0, 1, n)
        seg = w[start:stop]
        taper = _tukey(n, 0.3)
        out = np.zeros((len(params["types"]), len(w)))
        for k, t in enumerate(params["types"]):
            if t == "level_up":
                d = amplitude * taper
            elif t == "level_down":
                d = -amplitude * taper
            elif t == "flatline":
                d = (seg.mean() - seg) * _tukey(n, 0.1) - 0.3 * amplitude * _tukey(n, 0.1)
            elif t == "spike":
                d = 1.5 * amplitude * np.exp(-0.5 * ((u - params["spike_at"]) / max(1.0 / n, 0.02)) ** 2)
            elif t == "ramp_up":
                d = amplitude * u * _tukey(n, 0.15)
            elif t == "ramp_down":
                d = -amplitude * u * _tukey(n, 0.15)
            elif t == "oscillation":
                d = amplitude * np.sin(2 * np.pi * params["osc_cycles"] * u) * np.hanning(n)
            elif t == "dip":
                d = -1.2 * amplitude * np.exp(-0.5 * ((u - 0.5) / 0.12) ** 2)
            elif t == "sign_flip":
                d = (-2.0 * (seg - seg.mean()) + 0.5 * amplitude) * _tukey(n, 0.2)
            else:  # none, noise_burst (stochastic part only)
                d = np.zeros(n)
            out[k, start:stop] = d
        return out

    def stochastic_parts(self, params, labels, start, stop, length, amplitude, rng):
        types = params["types"]
        if "noise_burst" not in types:
            return None
        k_burst = types.index("noise_burst")
        n = stop - start
        out = np.zeros((len(labels), length))
        sel = labels == k_burst
        if sel.any():
            out[sel, start:stop] = 0.8 * amplitude * rng.standard_normal((int(sel.sum()), n)) * _tukey(n, 0.3)
        return out

    def min_region(self, n_classes):
        return 6


TEMPORAL_RULES: dict[str, Rule] = {r.name: r for r in (MotifShapeRule(), PolarityRule(), PositionRule(),
                                                       OrderRule(), LocalDeviationRule())}
