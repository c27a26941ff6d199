"""Cross-channel rule families: informative-channel selection, channel-specific motifs, relative
delay, phase relationships and correlation regimes.

They make the *relation between channels* class-discriminative. For relative delay, phase and
correlation regimes no single channel carries the class: each instance draws a random common onset,
a random common phase or fresh correlated noise, and only the relation (delay, phase offset,
correlation pattern) depends on the class.
"""

from __future__ import annotations

import functools
import itertools

import numpy as np

from chorustic.prior._ops import smooth_curves
from chorustic.prior.motifs import MOTIF_KINDS, make_motif, sample_motif_kinds
from chorustic.prior.rules.base import Rule, RuleContext, RuleOutput, deterministic, sample_region

__all__ = ["ChannelSelectionRule", "ChannelMotifsRule", "RelativeDelayRule", "PhaseRule", "CorrelationRule",
           "CROSS_CHANNEL_RULES", "correlation_patterns"]


def _pick_channels(rng: np.random.Generator, n_channels: int, n: int) -> tuple[int, ...]:
    return tuple(int(c) for c in np.sort(rng.choice(n_channels, size=min(n, n_channels), replace=False)))


class _CrossRule(Rule):
    kind = "cross_channel"
    min_channels = 2


class ChannelSelectionRule(_CrossRule):
    """The same motif at the same region; class k = which channels carry it (a distinct channel subset)."""

    name = "channel_selection"

    def capacity(self, n_channels, length):
        return 2 ** min(n_channels, 4) - 1 if n_channels >= 2 and length >= 8 else 0

    def build(self, ctx: RuleContext) -> RuleOutput:
        rng, K, L, C = ctx.rng, ctx.n_classes, ctx.length, ctx.n_channels
        m = min(C, 4)
        while 2**m - 1 < K:  # pragma: no cover - guarded by capacity
            m += 1
        pool = _pick_channels(rng, C, m)
        subsets = [s for r in range(1, m + 1) for s in itertools.combinations(pool, r)]
        chosen = [subsets[i] for i in rng.choice(len(subsets), size=K, replace=False)]
        start, stop = sample_region(rng, L, (0.15, 0.45), min_width=6)
        kind = str(rng.choice(MOTIF_KINDS))
        motif = ctx.amplitude * make_motif(kind, stop - start)
        deltas = np.zeros((K, C, L))
        for k, subset in enumerate(chosen):
            for c in subset:
                deltas[k, c, start:stop] = motif
        return RuleOutput(self.name, K, pool, (start, stop), deterministic(deltas),
                          params={"subsets": chosen, "kind": kind})


class ChannelMotifsRule(_CrossRule):
    """Each informative channel shows one symbol of a small motif alphabet (or nothing) at its own region;
    class k = a distinct tuple of symbols, so no single channel identifies the class."""

    name = "channel_motifs"

    def capacity(self, n_channels, length):
        return 16 if n_channels >= 2 and length >= 16 else 0

    def build(self, ctx: RuleContext) -> RuleOutput:
        rng, K, L, C = ctx.rng, ctx.n_classes, ctx.length, ctx.n_channels
        n_inf = min(C, int(rng.choice([2, 3])))
        q = 2
        while q**n_inf < K + 1:  # +1: the all-absent tuple is excluded
            q += 1
        symbols = [None] + sample_motif_kinds(rng, q - 1, include_random=False)
        tuples = [t for t in itertools.product(range(q), repeat=n_inf) if any(t)]
        chosen = [tuples[i] for i in rng.choice(len(tuples), size=K, replace=False)]
        channels = _pick_channels(rng, C, n_inf)
        regions = [sample_region(rng, L, (0.15, 0.4), min_width=6) for _ in channels]
        deltas = np.zeros((K, C, L))
        for k, tup in enumerate(chosen):
            for c, (a, b), s in zip(channels, regions, tup):
                if symbols[s] is not None:
                    deltas[k, c, a:b] = ctx.amplitude * make_motif(symbols[s], b - a)
        region = (min(r[0] for r in regions), max(r[1] for r in regions))
        return RuleOutput(self.name, K, channels, region, deterministic(deltas),
                          params={"symbols": symbols, "tuples": chosen, "regions": regions})


class RelativeDelayRule(_CrossRule):
    """The same event on two channels; class k = the delay of the second relative to the first. The
    common onset is random per instance, so absolute positions carry (almost) no class information."""

    name = "relative_delay"

    def _geometry(self, length: int) -> tuple[int, int]:
        mw = int(max(3, round(0.08 * length)))
        max_delay = int(max(1, round(0.2 * length)))
        return mw, max_delay

    def capacity(self, n_channels, length):
        if n_channels < 2 or length < 16:
            return 0
        mw, d = self._geometry(length)
        return int(min(10, 2 * d + 1))

    def build(self, ctx: RuleContext) -> RuleOutput:
        rng, K, L, C = ctx.rng, ctx.n_classes, ctx.length, ctx.n_channels
        mw, max_delay = self._geometry(L)
        delays = np.round(np.linspace(-max_delay, max_delay, K)).astype(int)
        delays = delays[rng.permutation(K)]
        a_ch, b_ch = (int(c) for c in rng.choice(C, size=2, replace=False))
        kind = str(rng.choice(MOTIF_KINDS))
        motif = ctx.amplitude * make_motif(kind, mw)
        lo = max_delay
        hi = L - mw - max_delay  # inclusive upper bound of the onset
        hi = max(hi, lo)
        idx = np.arange(mw)

        def render(labels: np.ndarray, g: np.random.Generator | None) -> np.ndarray:
            n = len(labels)
            out = np.zeros((n, C, L))
            onset = (np.full(n, (lo + hi) // 2) if g is None else g.integers(lo, hi + 1, size=n))
            rows = np.arange(n)[:, None]
            out[rows, a_ch, onset[:, None] + idx] += motif
            out[rows, b_ch, np.clip(onset + delays[labels], 0, L - mw)[:, None] + idx] += motif
            return out

        return RuleOutput(self.name, K, (min(a_ch, b_ch), max(a_ch, b_ch)), (0, L), render,
                          params={"delays": delays, "kind": kind, "leader": a_ch, "follower": b_ch},
                          stochastic=True)


class PhaseRule(_CrossRule):
    """A windowed oscillation on two channels; class k = their phase offset. The common phase is random
    per instance, so each channel alone is uninformative."""

    name = "phase"

    def capacity(self, n_channels, length):
        return 10 if n_channels >= 2 and length >= 24 else 0

    def build(self, ctx: RuleContext) -> RuleOutput:
        rng, K, L, C = ctx.rng, ctx.n_classes, ctx.length, ctx.n_channels
        start, stop = sample_region(rng, L, (0.4, 0.9), min_width=16)
        n = stop - start
        cycles = float(rng.uniform(2.0, max(2.5, min(8.0, n / 6))))
        offsets = (2 * np.pi * (np.arange(K) / K) + rng.uniform(0, 2 * np.pi)) % (2 * np.pi)
        offsets = offsets[rng.permutation(K)]
        a_ch, b_ch = (int(c) for c in rng.choice(C, size=2, replace=False))
        u = np.linspace(0, 1, n)
        env = ctx.amplitude * np.hanning(n + 2)[1:-1] ** 0.5

        def render(labels: np.ndarray, g: np.random.Generator | None) -> np.ndarray:
            m = len(labels)
            out = np.zeros((m, C, L))
            psi = np.zeros(m) if g is None else g.uniform(0, 2 * np.pi, size=m)
            base = 2 * np.pi * cycles * u[None, :] + psi[:, None]
            out[:, a_ch, start:stop] = env * np.sin(base)
            out[:, b_ch, start:stop] = env * np.sin(base + offsets[labels][:, None])
            return out

        return RuleOutput(self.name, K, (min(a_ch, b_ch), max(a_ch, b_ch)), (start, stop), render,
                          params={"offsets": offsets, "cycles": cycles}, stochastic=True)


@functools.cache
def correlation_patterns(m: int) -> tuple[np.ndarray, ...]:
    """Distinct channel correlation structures over ``m`` channels, one loading vector each (read-only).

    A loading vector ``l`` in {-1, 0, 1}^m couples the channels with ``l_c != 0`` to one common factor
    (sign = direction); the implied pattern is ``sign(l_c l_c')`` for coupled pairs and 0 otherwise.
    Vectors implying the same pattern (``l`` and ``-l``; fewer than two coupled channels) are merged.
    """
    seen: dict[bytes, np.ndarray] = {}
    for vec in itertools.product((-1, 0, 1), repeat=m):
        v = np.array(vec, dtype=np.float64)
        if np.count_nonzero(v) < 2:
            v = np.zeros(m)
        pattern = np.outer(v, v)
        np.fill_diagonal(pattern, 0.0)
        key = pattern.tobytes()
        if key not in seen:
            v.setflags(write=False)
            seen[key] = v
    return tuple(seen.values())  # cached: every episode of a multivariate rule asks for it


class CorrelationRule(_CrossRule):
    """Smooth noise in a region on several channels; class k = its correlation structure (which channels
    co-move, and with which sign). Every channel has the same marginal variance in every class."""

    name = "correlation"

    def capacity(self, n_channels, length):
        if n_channels < 2 or length < 16:
            return 0
        return min(10, len(correlation_patterns(min(n_channels, 4))))

    def build(self, ctx: RuleContext) -> RuleOutput:
        rng, K, L, C = ctx.rng, ctx.n_classes, ctx.length, ctx.n_channels
        m = min(C, 4)
        while len(correlation_patterns(m)) < K:  # pragma: no cover - guarded by capacity
            m += 1
        patterns = correlation_patterns(m)
        chosen = np.stack([patterns[i] for i in rng.choice(len(patterns), size=K, replace=False)])
        channels = _pick_channels(rng, C, m)
        start, stop = sample_region(rng, L, (0.4, 0.9), min_width=16)
        n = stop - start
        rho = 0.55 + 0.4 * float(ctx.strength)
        n_knots = int(np.clip(n / 5, 4, 40))
        env = ctx.amplitude * np.hanning(n + 2)[1:-1] ** 0.5
        ch = np.array(channels)

        def render(labels: np.ndarray, g: np.random.Generator | None) -> np.ndarray:
            gen = g if g is not None else np.random.default_rng(0)  # canonical draw for display
            N = len(labels)
            z = smooth_curves(gen, (N, 1), n, n_knots)
            e = smooth_curves(gen, (N, m), n, n_knots)
            z /= z.std(axis=-1, keepdims=True) + 1e-12
            e /= e.std(axis=-1, keepdims=True) + 1e-12
            load = chosen[labels][:, :, None]  # (N, m, 1)
            x = np.sqrt(rho) * load * z + np.sqrt(1.0 - rho * load**2) * e
            out = np.zeros((N, C, L))
            out[:, ch, start:stop] = env * x
            return out

        return RuleOutput(self.name, K, channels, (start, stop), render,
                          params={"loadings": chosen, "rho": rho}, stochastic=True)


CROSS_CHANNEL_RULES: dict[str, Rule] = {r.name: r for r in (ChannelSelectionRule(), ChannelMotifsRule(),
                                                            RelativeDelayRule(), PhaseRule(), CorrelationRule())}
