"""Labeled multivariate episodes: omega = (K, C, L, N_c, N_q, kappa, r, d) (paper Sec. 3.3, App. B.8).

One episode:

1. ``omega``: task type ``kappa`` (univariate with probability 0.2: C = 1 and a temporal rule;
   multivariate: 2 <= C <= 10 and a cross-channel rule, or a channel-wise temporal rule in the
   ``cross_channel_rules=False`` ablation), rule family ``r``, number of classes ``K`` (at most the
   rule's capacity for this C and L), background family, difficulty ``d``.
2. A shared background ``W ~ P_a`` (C, L), robustly normalized.
3. The rule operator builds the class-conditional parts (prototypes P_k = Gamma_{r,k}(W; S_k, T_k, eta_k)).
4. Class proportions ``rho ~ Dirichlet(alpha 1_K)``; context counts give every class at least one
   example; query labels follow ``rho`` (so every query class is in the context).
5. Instances ``X_i = A_xi(P_{y_i}) + eps_i`` (nuisance severity and class margin set by ``d``).
6. Context and query rows are shuffled independently and an episode-wise random label bijection
   ``sigma`` is applied to all labels.

:class:`EpisodePrior` owns a numpy ``Generator``; the same seed gives the same episodes, and its state
can be saved and restored (:meth:`EpisodePrior.get_state` / :meth:`EpisodePrior.set_state`) for exact
training resume. :meth:`EpisodePrior.sample_batch` returns episodes sharing (T, N_c, L), padded to a
common channel count with a boolean channel mask, resampled to ``output_length`` (512 by default, as
real datasets are) with ``align_corners=False`` linear interpolation.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import numpy as np

from chorustic.prior._ops import loguniform
from chorustic.prior.backgrounds import BACKGROUND_FAMILIES, sample_process
from chorustic.prior.nuisance import NuisanceConfig, apply_nuisance
from chorustic.prior.rules import CROSS_CHANNEL_RULES, TEMPORAL_RULES, RuleContext, get_rule
from chorustic.resampling import resample_linear

__all__ = ["PriorConfig", "Omega", "Episode", "EpisodeBatch", "EpisodePrior", "label_counts"]


@dataclasses.dataclass(frozen=True)
class PriorConfig:
    """Every knob of the episodic prior. Defaults follow the paper where it gives a value."""

    max_classes: int = 10  # K_max of the model
    min_classes: int = 2
    p_univariate: float = 0.2  # paper: univariate 0.2, multivariate 0.8
    min_channels: int = 2  # multivariate episodes: 2 <= C <= 10
    max_channels: int = 10
    min_length: int = 32  # native series length L ~ log-uniform [min_length, max_length]
    max_length: int = 512
    output_length: int | None = 512  # model input length L0 (None: keep the native length)
    min_rows: int = 32  # T = N_c + N_q per episode
    max_rows: int = 256
    context_fraction: tuple[float, float] = (0.3, 0.8)
    dirichlet_alpha: float = 2.0  # class proportions ~ Dirichlet(alpha 1_K)
    cross_channel_rules: bool = True  # False: the Table 4 prior ablation (channel-wise temporal rules)
    max_channelwise_informative: int = 3  # channel-wise temporal rules act on 1..this many channels
    temporal_rules: tuple[str, ...] = tuple(TEMPORAL_RULES)
    cross_channel_rule_names: tuple[str, ...] = tuple(CROSS_CHANNEL_RULES)
    background_families: tuple[str, ...] = tuple(BACKGROUND_FAMILIES)
    background_weights: tuple[float, ...] | None = None  # lambda; None = uniform
    difficulty: tuple[float, float] = (0.0, 1.0)  # d ~ U(difficulty)
    amplitude: tuple[float, float] = (3.0, 0.8)  # class margin (robust-std units) at d = 0 and d = 1
    severity: tuple[float, float] = (0.05, 0.85)  # nuisance severity at d = 0 and d = 1
    background_variation: tuple[float, float] = (0.5, 0.35)  # (probability, max weight) of per-instance
    # background variation drawn from the same process (keeps the shared structure, varies details)
    channel_scale_log10: float = 0.5  # per-episode channel scale 10**U(-x, x)
    channel_offset_sd: float = 1.0  # per-episode channel offset, in units of that channel's scale
    nuisance: NuisanceConfig = dataclasses.field(default_factory=NuisanceConfig)

    def __post_init__(self) -> None:
        if not 2 <= self.min_classes <= self.max_classes:
            raise ValueError(f"need 2 <= min_classes <= max_classes, got {self.min_classes}, {self.max_classes}")
        if not 2 <= self.min_channels <= self.max_channels:
            raise ValueError(f"need 2 <= min_channels <= max_channels, got {self.min_channels}, {self.max_channels}")
        if self.min_rows < self.min_classes + 1 or self.max_rows < self.min_rows:
            raise ValueError(f"rows range [{self.min_rows}, {self.max_rows}] must allow a context with "
                             f"{self.min_classes} classes and at least one query")
        if self.min_length < 16 or self.max_length < self.min_length:
            raise ValueError(f"length range [{self.min_length}, {self.max_length}] must start at >= 16")
        for name in self.temporal_rules:
            if name not in TEMPORAL_RULES:
                raise ValueError(f"unknown temporal rule {name!r}; known: {sorted(TEMPORAL_RULES)}")
        for name in self.cross_channel_rule_names:
            if name not in CROSS_CHANNEL_RULES:
                raise ValueError(f"unknown cross-channel rule {name!r}; known: {sorted(CROSS_CHANNEL_RULES)}")
        for name in self.background_families:
            if name not in BACKGROUND_FAMILIES:
                raise ValueError(f"unknown background family {name!r}; known: {sorted(BACKGROUND_FAMILIES)}")
        if self.background_weights is not None and len(self.background_weights) != len(self.background_families):
            raise ValueError("background_weights must have one weight per background family")

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "PriorConfig":
        d = dict(d)
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"unknown prior config keys {sorted(unknown)}; known: {sorted(known)}")
        if isinstance(d.get("nuisance"), dict):
            d["nuisance"] = NuisanceConfig(**{k: tuple(v) if isinstance(v, list) else v
                                              for k, v in d["nuisance"].items()})
        for k, v in list(d.items()):
            if isinstance(v, list):
                d[k] = tuple(v)
        return cls(**d)


@dataclasses.dataclass(frozen=True)
class Omega:
    """The episode configuration omega = (K, C, L, N_c, N_q, kappa, r, d) plus the background family."""

    n_classes: int
    n_channels: int
    length: int
    n_context: int
    n_query: int
    task_type: str  # "uni" | "multi"
    rule: str
    difficulty: float
    background: str
    informative_channels: tuple[int, ...] | None = None  # set for channel-wise temporal rules


@dataclasses.dataclass
class Episode:
    """One generated episode. Rows ``0..n_context-1`` are the context, the rest the query."""

    X: np.ndarray  # float32 (T, C, L)
    y: np.ndarray  # int64 (T,), already permuted by label_map
    omega: Omega
    label_map: np.ndarray  # sigma: internal class k -> observed label label_map[k]
    channels: tuple[int, ...]  # informative channels
    region: tuple[int, int]  # informative region (native time axis)
    rule_params: dict[str, Any] = dataclasses.field(default_factory=dict, repr=False)
    #: (K, C, L) class prototypes indexed by *observed* label, in the same units as ``X`` (only with
    #: ``generate(..., keep_prototypes=True)``; used by the gallery)
    prototypes: np.ndarray | None = dataclasses.field(default=None, repr=False)

    @property
    def n_context(self) -> int:
        return self.omega.n_context

    @property
    def n_classes(self) -> int:
        return self.omega.n_classes


@dataclasses.dataclass
class EpisodeBatch:
    """Episodes sharing (T, N_c, L), channels padded to a common C.

    ``X`` float32 (B, T, C, L); ``y`` int64 (B, T) in 0..K_b-1; ``channel_mask`` bool (B, C), False for
    padding channels (their values are 0); ``n_classes`` int64 (B,).
    """

    X: np.ndarray
    y: np.ndarray
    channel_mask: np.ndarray
    n_context: int
    n_classes: np.ndarray
    omegas: list[Omega]

    @property
    def batch_size(self) -> int:
        return int(self.X.shape[0])

    @property
    def y_context(self) -> np.ndarray:
        return self.y[:, : self.n_context]

    @property
    def y_query(self) -> np.ndarray:
        return self.y[:, self.n_context:]

    def to_torch(self, device: Any = "cpu") -> dict[str, Any]:
        import torch

        return {
            "X": torch.from_numpy(self.X).to(device),
            "y_context": torch.from_numpy(np.ascontiguousarray(self.y_context)).to(device),
            "y_query": torch.from_numpy(np.ascontiguousarray(self.y_query)).to(device),
            "channel_mask": torch.from_numpy(self.channel_mask).to(device),
            "n_classes": torch.from_numpy(self.n_classes).to(device),
        }


def label_counts(rng: np.random.Generator, n_classes: int, n_context: int, n_query: int,
                 alpha: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Proportions ``rho ~ Dirichlet(alpha 1_K)``; context counts with every class at least once;
    query counts ~ Multinomial(N_q, rho). Returns (rho, context_counts, query_counts)."""
    if n_context < n_classes:
        raise ValueError(f"a context of {n_context} rows cannot hold all {n_classes} classes")
    rho = rng.dirichlet(np.full(n_classes, float(alpha)))
    ctx = 1 + rng.multinomial(n_context - n_classes, rho)
    qry = rng.multinomial(n_query, rho)
    return rho, ctx, qry


class EpisodePrior:
    """Seeded generator of labeled episodes and episode batches."""

    def __init__(self, config: PriorConfig | None = None, seed: int | np.random.Generator | None = 0):
        self.config = config or PriorConfig()
        self.rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)

    # ------------------------------------------------------------------ state (exact resume)
    def get_state(self) -> dict[str, Any]:
        return copy.deepcopy(self.rng.bit_generator.state)

    def set_state(self, state: dict[str, Any]) -> None:
        self.rng.bit_generator.state = copy.deepcopy(state)

    # ------------------------------------------------------------------ omega
    def sample_shape(self) -> tuple[int, int, int]:
        """(T, N_c, L) shared by the episodes of one batch."""
        cfg, rng = self.config, self.rng
        T = int(rng.integers(cfg.min_rows, cfg.max_rows + 1))
        n_ctx = int(round(T * rng.uniform(*cfg.context_fraction)))
        n_ctx = int(np.clip(n_ctx, cfg.min_classes, T - 1))
        L = int(round(loguniform(rng, cfg.min_length, cfg.max_length)))
        return T, n_ctx, L

    def sample_omega(self, n_rows: int, n_context: int, length: int, *, rule: str | None = None,
                     n_classes: int | None = None, n_channels: int | None = None,
                     difficulty: float | None = None, background: str | None = None) -> Omega:
        """Draw omega for an episode of the given (T, N_c, L); keyword arguments pin components."""
        cfg, rng = self.config, self.rng
        if n_channels is None:
            if rule is not None:
                uni = get_rule(rule).kind == "temporal" and (cfg.cross_channel_rules or rng.random() < cfg.p_univariate)
            else:
                uni = rng.random() < cfg.p_univariate
            n_channels = 1 if uni else int(rng.integers(cfg.min_channels, cfg.max_channels + 1))
        C = int(n_channels)
        task = "uni" if C == 1 else "multi"
        if rule is None:
            if C == 1 or not cfg.cross_channel_rules:
                names = list(cfg.temporal_rules)
            else:
                names = list(cfg.cross_channel_rule_names)
            names = [n for n in names if get_rule(n).capacity(C, length) >= cfg.min_classes]
            if not names:
                raise ValueError(f"no rule family can make {cfg.min_classes} classes with C={C}, L={length}")
            rule = str(names[rng.integers(len(names))])
        r = get_rule(rule)
        if C < r.min_channels:
            raise ValueError(f"rule {rule!r} needs at least {r.min_channels} channels, got C={C}")
        k_max = min(cfg.max_classes, r.capacity(C, length), n_context)
        if n_classes is None:
            if k_max < cfg.min_classes:
                raise ValueError(f"rule {rule!r} cannot make {cfg.min_classes} classes with C={C}, L={length}, "
                                 f"N_c={n_context}")
            n_classes = int(rng.integers(cfg.min_classes, k_max + 1))
        elif n_classes > k_max:
            raise ValueError(f"rule {rule!r} supports at most {k_max} classes here (C={C}, L={length}, "
                             f"N_c={n_context}), asked for {n_classes}")
        if background is None:
            lam = np.asarray(cfg.background_weights or np.ones(len(cfg.background_families)), dtype=np.float64)
            background = str(cfg.background_families[rng.choice(len(lam), p=lam / lam.sum())])
        d = float(rng.uniform(*cfg.difficulty)) if difficulty is None else float(difficulty)
        informative = None
        if r.kind == "temporal":
            if C == 1:
                informative = (0,)
            else:
                n_inf = int(rng.integers(1, min(cfg.max_channelwise_informative, C) + 1))
                informative = tuple(int(c) for c in np.sort(rng.choice(C, size=n_inf, replace=False)))
        return Omega(int(n_classes), C, int(length), int(n_context), int(n_rows - n_context), task, rule, d,
                     background, informative)

    # ------------------------------------------------------------------ one episode
    def generate(self, omega: Omega, keep_prototypes: bool = False) -> Episode:
        """Generate the episode described by ``omega`` (native length, float32)."""
        cfg, rng = self.config, self.rng
        K, C, L, n_ctx, n_q = omega.n_classes, omega.n_channels, omega.length, omega.n_context, omega.n_query
        d = omega.difficulty
        amplitude = cfg.amplitude[0] + (cfg.amplitude[1] - cfg.amplitude[0]) * d
        severity = cfg.severity[0] + (cfg.severity[1] - cfg.severity[0]) * d

        process = sample_process(rng, omega.background, C, L)
        W = process.realize(rng, 1)[0]
        rule = get_rule(omega.rule).build(RuleContext(rng, W, K, amplitude, 1.0 - d, omega.informative_channels))

        _, ctx_counts, q_counts = label_counts(rng, K, n_ctx, n_q, cfg.dirichlet_alpha)
        y_ctx = rng.permutation(np.repeat(np.arange(K), ctx_counts))
        y_q = rng.permutation(np.repeat(np.arange(K), q_counts))
        y = np.concatenate([y_ctx, y_q]).astype(np.int64)

        clean = W[None] + rule.render(y, rng)
        p_var, max_var = cfg.background_variation
        if max_var > 0 and rng.random() < p_var:
            beta = rng.uniform(0.0, max_var)
            clean = np.sqrt(1.0 - beta**2) * clean + beta * process.realize(rng, len(y))
        X = apply_nuisance(rng, clean, severity, rule.channels, amplitude, cfg.nuisance)
        scale = 10.0 ** rng.uniform(-cfg.channel_scale_log10, cfg.channel_scale_log10, size=(1, C, 1))
        offset = rng.normal(0.0, cfg.channel_offset_sd, size=(1, C, 1))
        nonzero = X != 0.0  # zero-filled tails stay exactly zero, as in zero-filled recordings
        X = np.where(nonzero, (X + offset) * scale, 0.0)

        label_map = rng.permutation(K).astype(np.int64)
        protos = None
        if keep_prototypes:
            protos = np.empty((K, C, L))
            protos[label_map] = (rule.prototypes(W) + offset) * scale
        return Episode(
            X=np.ascontiguousarray(X, dtype=np.float32),
            y=label_map[y],
            omega=omega,
            label_map=label_map,
            channels=tuple(rule.channels),
            region=tuple(rule.region),
            rule_params=rule.params,
            prototypes=protos,
        )

    def sample_episode(self, n_rows: int | None = None, n_context: int | None = None,
                       length: int | None = None, **pins: Any) -> Episode:
        T, n_ctx, L = self.sample_shape()
        T = T if n_rows is None else int(n_rows)
        n_ctx = int(np.clip(n_ctx, self.config.min_classes, T - 1)) if n_context is None else int(n_context)
        L = L if length is None else int(length)
        return self.generate(self.sample_omega(T, n_ctx, L, **pins))

    # ------------------------------------------------------------------ batches
    def sample_batch(self, batch_size: int, *, n_rows: int | None = None, n_context: int | None = None,
                     length: int | None = None, **pins: Any) -> EpisodeBatch:
        """``batch_size`` episodes sharing (T, N_c, L); see :class:`EpisodeBatch`."""
        T, n_ctx, L = self.sample_shape()
        T = T if n_rows is None else int(n_rows)
        if n_context is not None:
            n_ctx = int(n_context)
        n_ctx = int(np.clip(n_ctx, self.config.min_classes, T - 1))
        L = L if length is None else int(length)
        episodes = [self.generate(self.sample_omega(T, n_ctx, L, **pins)) for _ in range(int(batch_size))]
        return collate(episodes, self.config.output_length)


def collate(episodes: list[Episode], output_length: int | None = 512) -> EpisodeBatch:
    """Stack episodes sharing (T, N_c, L): pad channels with zeros, build the channel mask, resample."""
    if not episodes:
        raise ValueError("cannot collate an empty list of episodes")
    T, _, L = episodes[0].X.shape
    n_ctx = episodes[0].n_context
    for e in episodes:
        if e.X.shape[0] != T or e.X.shape[2] != L or e.n_context != n_ctx:
            raise ValueError("episodes of one batch must share (T, N_c, L)")
    c_max = max(e.X.shape[1] for e in episodes)
    L_out = L if output_length is None else int(output_length)
    X = np.zeros((len(episodes), T, c_max, L_out), dtype=np.float32)
    mask = np.zeros((len(episodes), c_max), dtype=bool)
    for b, e in enumerate(episodes):
        C = e.X.shape[1]
        X[b, :, :C] = resample_linear(e.X, L_out) if L_out != L else e.X
        mask[b, :C] = True
    y = np.stack([e.y for e in episodes]).astype(np.int64)
    K = np.array([e.n_classes for e in episodes], dtype=np.int64)
    return EpisodeBatch(X, y, mask, n_ctx, K, [e.omega for e in episodes])
