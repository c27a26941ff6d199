"""ChorusTIC: the top module composing the stages (paper Sec. 3, Fig. 1).

    H = R_psi(X; I)          signal level: RSSC assignment I, shared group encoder, slot composition
    U = A_phi(H; N_c)        task level: column distribution modeling, row-wise interaction
    O = G_theta(U, Y_c; N_c) leakage-protected in-context learning + decoder

``ChorusTIC.forward`` is the reference computation of one forward pass (every row of every episode in
one pass, as the official model); :mod:`chorustic.inference` runs the same stages through the
context-once / queries-in-chunks methods below (``encode_signal(row_chunk=...)``,
``row_representations(row_chunk=...)``, ``icl_logits(query_chunk=...)``). ``episode_logits`` is the
pretraining computation: the same function with static shapes, no host synchronisation, and optional
activation checkpointing over independent slices (row-episodes of the signal level, feature columns
of column distribution modeling, rows of the row interaction, blocks of the ICL transformer).

Children (state-dict prefixes): ``signal_encoder`` (``patch_tokenizer``, ``dual_axis_encoder``,
``slot_readout``), ``rssc``, ``column_distribution_modeling``, ``row_interaction``, ``icl``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from typing import Any

import torch
import torch.fx.experimental._config as fx_config
from torch import Tensor, nn
from torch.utils.checkpoint import checkpoint

from chorustic.model.column_distribution_modeling import ColumnDistributionModeling
from chorustic.model.config import ChorusTICConfig
from chorustic.model.context_standardization import standardize_by_context
from chorustic.model.hierarchical import hierarchical_probabilities
from chorustic.model.icl import InContextLearning
from chorustic.model.patch_tokenizer import resample_length
from chorustic.model.row_interaction import RowInteraction
from chorustic.model.rssc import RSSC, check_group_idx
from chorustic.model.signal_encoder import GROUP_CHUNK, SignalEncoder, SlotPlan, plan_slots

__all__ = ["ChorusTIC"]

#: Graphs one compiled stage (:meth:`ChorusTIC.compile_stages`) may hold. Its sizes are dynamic, yet a
#: stage still meets a bounded set of variants: a slot count of 1 (dynamo specializes sizes of 1), a channel
#: bias or none, grad or no-grad, inductor's size thresholds and the layouts of its input views. The
#: signal encoder's chunk alone holds 12 graphs after 18 steps of the ``small`` prior; at torch's default
#: (``torch._dynamo.config.recompile_limit``, 8) every later variant would run eager, with a warning.
STAGE_RECOMPILE_LIMIT = 64

#: Offset inside the hierarchical "logits" T * log(p + eps) (official value).
HIERARCHICAL_EPS = 1e-6


def _all_finite(X: Tensor, block_values: int = 1 << 24) -> bool:
    """Whether every value of ``X`` is finite, with no temporary of ``X``'s size (``torch.isfinite(X).all()``
    on CPU held ~7 bytes per value a while: ``benchmarks/chorustic_memory.py --stage inputs``). A NaN or
    an infinity makes the sum NaN or infinite; a finite sum means every value is finite. Only when the sum
    is not finite (a bad value, or finite values overflowing float32) are the values checked, row block by
    row block."""
    if bool(torch.isfinite(X.sum())):
        return True
    rows = max(1, block_values // max(1, X[:, :1].numel()))
    return all(bool(torch.isfinite(part).all()) for part in X.split(rows, dim=1))


class ChorusTIC(nn.Module):
    def __init__(self, config: ChorusTICConfig | None = None) -> None:
        super().__init__()
        self.config = config if config is not None else ChorusTICConfig.paper()
        c = self.config
        self.signal_encoder = SignalEncoder(c)
        self.rssc = RSSC(c)
        self.column_distribution_modeling = ColumnDistributionModeling(c)
        self.row_interaction = RowInteraction(c)
        self.icl = InContextLearning(c)
        self._signal_encoder_frozen = False
        if c.freeze_signal_encoder:
            self.freeze_signal_encoder(True)
        #: Free-form information attached by the checkpoint loaders (provenance, source file, ...).
        self.provenance: dict[str, Any] = {}

    # ------------------------------------------------------------------ freezing / modes
    def freeze_signal_encoder(self, frozen: bool = True) -> ChorusTIC:
        """Freeze (or unfreeze) tokenizer, dual-axis encoder and readout: ``requires_grad`` off, eval
        mode even inside ``model.train()`` (dropout off), and encoder calls under ``no_grad``."""
        self._signal_encoder_frozen = bool(frozen)
        for p in self.signal_encoder.parameters():
            p.requires_grad_(not frozen)
        if frozen:
            self.signal_encoder.eval()
        else:
            self.signal_encoder.train(self.training)
        return self

    @property
    def signal_encoder_frozen(self) -> bool:
        return self._signal_encoder_frozen

    def train(self, mode: bool = True) -> ChorusTIC:
        super().train(mode)
        if self._signal_encoder_frozen:
            self.signal_encoder.eval()
        return self

    def parameter_counts(self) -> dict[str, int]:
        """Number of parameters per child module and in total."""
        counts = {name: sum(p.numel() for p in child.parameters()) for name, child in self.named_children()}
        counts["total"] = sum(counts.values())
        counts["trainable"] = sum(p.numel() for p in self.parameters() if p.requires_grad)
        return counts

    # ------------------------------------------------------------------ input handling
    def prepare_inputs(self, X: Tensor, channel_mask: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """``X (B, T, L)`` or ``(B, T, C, L)`` -> float ``(B, T, C, L_0)`` and a bool mask ``(B, C)``."""
        if not torch.is_tensor(X):
            X = torch.as_tensor(X)
        if X.ndim == 3:
            X = X.unsqueeze(2)
        if X.ndim != 4:
            raise ValueError(f"X must be (B, T, L) or (B, T, C, L); got shape {tuple(X.shape)}")
        if X.shape[-1] < 2:
            raise ValueError(f"series length must be at least 2, got {X.shape[-1]}")
        X = X.float()
        if not _all_finite(X):
            raise ValueError("X contains NaN or infinite values; replace missing values (e.g. by 0) first")
        b, _, c, _ = X.shape
        if channel_mask is None:
            channel_mask = torch.ones(b, c, dtype=torch.bool, device=X.device)
        else:
            channel_mask = torch.as_tensor(channel_mask, device=X.device).bool()
            if tuple(channel_mask.shape) != (b, c):
                raise ValueError(
                    f"channel_mask must have shape (B={b}, C={c}), got {tuple(channel_mask.shape)}"
                )
            if not bool(channel_mask.any(dim=1).all()):
                raise ValueError("every episode needs at least one valid channel in channel_mask")
        return resample_length(X, self.config.seq_len), channel_mask

    @staticmethod
    def _labels(y_context: Tensor, batch: int, n_rows: int) -> Tensor:
        y = torch.as_tensor(y_context)
        if y.ndim == 1:
            y = y.unsqueeze(0)
        if y.ndim != 2 or y.shape[0] != batch:
            raise ValueError(f"y_context must be (B={batch}, n_ctx), got shape {tuple(y.shape)}")
        if y.is_floating_point() and not bool((y == y.round()).all()):
            raise ValueError("y_context must hold integer class ids")
        y = y.long()
        if y.shape[1] < 1 or y.shape[1] > n_rows:
            raise ValueError(f"n_ctx = y_context.shape[1] = {y.shape[1]} must be in 1..T={n_rows}")
        if bool((y < 0).any()):
            raise ValueError("y_context holds negative class ids")
        return y

    def num_classes(self, y: Tensor) -> int:
        """K of a batch of tables: the number of distinct context labels, labels 0..K-1, same K for all."""
        ks = []
        for b in range(y.shape[0]):
            uniq = torch.unique(y[b])
            k = uniq.numel()
            if int(uniq[-1]) != k - 1:
                raise ValueError(
                    f"context labels of table {b} are {uniq.tolist()}: encode them as 0..K-1 with every class "
                    "present in the context"
                )
            ks.append(k)
        if len(set(ks)) != 1:
            raise ValueError(f"all tables of a batch must have the same number of classes, got {ks}")
        return ks[0]

    # ------------------------------------------------------------------ signal level
    def sample_assignment(
        self, channel_mask: Tensor, n_draws: int = 1, generator: torch.Generator | None = None
    ) -> Tensor:
        """RSSC assignments ``(B, n_draws, G, S)`` over the valid channels of each episode."""
        return self.rssc.sample(channel_mask, n_draws=n_draws, generator=generator)

    def encode_signal(
        self,
        X: Tensor,
        group_idx: Tensor,
        *,
        dedupe: bool | None = None,
        row_chunk: int | None = None,
        group_chunk: int | None = GROUP_CHUNK,
        token_chunk: int | None = 256,
        return_intermediates: bool = False,
    ):
        """``X (B, T, C, L_0)`` (see :meth:`prepare_inputs`), ``group_idx (B, E, G, S)`` -> ``H (B, E, T, d_h)``.

        ``dedupe`` (default: whenever no dropout is active) encodes each distinct channel of a group
        once; ``row_chunk`` bounds memory (rows are independent). With ``return_intermediates`` also
        returns ``{"z": (B, E, T, G, S, P), "H_prenorm": (B, E, T, d_h)}``.
        """
        if dedupe is None:
            dedupe = not self.signal_encoder.dropout_active()
        grad_ctx = torch.no_grad() if self._signal_encoder_frozen else contextlib.nullcontext()
        t = X.shape[1]
        step = t if not row_chunk else row_chunk
        hs, zs, pres = [], [], []
        for r0 in range(0, t, step):
            with grad_ctx:
                z = self.signal_encoder.encode_slots(
                    X[:, r0 : r0 + step],
                    group_idx,
                    dedupe=dedupe,
                    group_chunk=group_chunk,
                    token_chunk=token_chunk,
                )
            h, pre = self.rssc(z, return_prenorm=True)
            hs.append(h)
            if return_intermediates:
                zs.append(z)
                pres.append(pre)
        H = torch.cat(hs, dim=2)
        if return_intermediates:
            return H, {"z": torch.cat(zs, dim=2), "H_prenorm": torch.cat(pres, dim=2)}
        return H

    # ------------------------------------------------------------------ task level
    def row_representations(
        self, H: Tensor, n_ctx: int, *, row_chunk: int | None = None, return_embeddings: bool = False
    ):
        """``H (B, T, d_h)`` -> row representations ``U (B, T, d_u)``.

        ``row_chunk=None``: one pass over all rows. Otherwise the context bank of every column is
        built once and rows (context and queries alike) are embedded and interacted in chunks.
        """
        if self.config.context_standardization:
            H = standardize_by_context(H, n_ctx)
        cdm = self.column_distribution_modeling
        if row_chunk is None or H.shape[1] <= row_chunk:
            emb = cdm(H, n_ctx)
            R = self.row_interaction(emb)
            return (R, emb) if return_embeddings else R
        _, cache = cdm.embed_context(H[:, :n_ctx])
        parts = []
        for r0 in range(0, H.shape[1], row_chunk):
            parts.append(self.row_interaction(cdm.embed_rows(H[:, r0 : r0 + row_chunk], cache)))
        return torch.cat(parts, dim=1)

    def icl_logits(
        self,
        R: Tensor,
        y: Tensor,
        *,
        num_classes: int | None = None,
        query_chunk: int | None = None,
        temperature: float = 0.9,
        trace: dict | None = None,
    ) -> Tensor:
        """Query logits ``(B, q, K)`` from row representations ``R (B, T, d_u)`` and labels ``y (B, n_ctx)``.

        K <= K_max: the decoder outputs of the K classes. K > K_max: the hierarchical extension,
        ``temperature * log(p + 1e-6)`` (the official "logits" of that path). ``query_chunk``:
        context once, queries in chunks (same function).
        """
        k = self.num_classes(y) if num_classes is None else num_classes
        n = y.shape[1]

        def raw(R_tab: Tensor, y_tab: Tensor, ctx_rows: Tensor | None = None) -> Tensor:
            if ctx_rows is not None:
                R_ctx = R_tab[:, ctx_rows]
            else:
                R_ctx = R_tab[:, :n]
            R_q = R_tab[:, n:]
            if query_chunk is None or R_q.shape[1] <= query_chunk:
                return self.icl(torch.cat([R_ctx, R_q], dim=1), y_tab)
            return self.icl.forward_cached(R_ctx, y_tab, R_q, query_chunk)

        if k <= self.config.max_classes:
            return raw(R, y)[..., :k]
        outs = []
        for b in range(R.shape[0]):
            R_b = R[b : b + 1]

            def predict(rows: Tensor, labels: Tensor, R_b=R_b) -> Tensor:
                rows = rows.to(R_b.device)
                return raw(R_b, labels.to(R_b.device)[None], ctx_rows=rows)[0]

            p = hierarchical_probabilities(
                predict, y[b], self.config.max_classes, temperature, trace=trace if b == 0 else None
            )
            outs.append(temperature * torch.log(p + HIERARCHICAL_EPS))
        return torch.stack(outs)  # float32 log-probabilities (also under AMP)

    # ------------------------------------------------------------------ pretraining
    def episode_logits(
        self,
        X: Tensor,
        y_context: Tensor,
        group_idx: Tensor | None = None,
        *,
        plan: SlotPlan | None = None,
        recompute: bool = False,
        signal_rows: int | None = 64,
        cdm_columns: int | None = 1024,
        interaction_rows: int | None = 512,
        group_chunk: int | None = None,
        stages: Mapping[str, Callable[..., Tensor]] | None = None,
    ) -> Tensor:
        """Decoder outputs ``(B, n_query, K_max)`` of a pretraining micro-batch.

        ``X (B, T, C, L_0)`` float at the model's input length (padding channels are never drawn),
        ``y_context (B, n_ctx)`` int64 in ``0..K_max-1``, and either ``group_idx (B, G, S)`` (one RSSC
        draw per episode, from the episode's own random stream) or its :class:`SlotPlan` ``plan`` made
        ahead (by a data-loader worker; de-duplicating unless the signal encoder trains with dropout).
        The function of ``forward(X, y_context, group_idx=group_idx, return_all_classes=True)``,
        computed without input checks or host synchronisation.

        ``recompute``: activation checkpointing (non-reentrant; dropout masks are replayed) of each chunk
        of ``signal_rows`` row-episodes (``signal_rows // B`` rows of every episode), ``cdm_columns``
        column-episodes of column distribution modeling and ``interaction_rows`` row-episodes of the row
        interaction, and of each ICL block: only the chunk inputs and outputs stay in memory, and the
        chunk sizes bound the transient memory of one recomputation independently of B. The chunks are
        processed the same way with or without ``recompute`` (same dropout draws, so the gradients of
        both are identical); ``None`` = one chunk. ``group_chunk``: group instances per dual-axis/readout
        call inside a signal chunk (a cache knob: see :data:`~chorustic.model.signal_encoder.GROUP_CHUNK`;
        ``None`` = one call per slot-count bucket). ``stages``: compiled versions of the stages
        (:meth:`compile_stages`), the same function.
        """
        if plan is None:
            gi = group_idx if group_idx.ndim == 4 else group_idx[:, None]
            plan = plan_slots(gi, dedupe=not self.signal_encoder.dropout_active()).to(X.device)
        H = self.signal_representations(X, plan, recompute=recompute, signal_rows=signal_rows,
                                        group_chunk=group_chunk, stages=stages)
        return self.task_logits(H, y_context, recompute=recompute, cdm_columns=cdm_columns,
                                interaction_rows=interaction_rows, stages=stages)

    def compile_stages(self, **options: Any) -> dict[str, Callable[..., Tensor]]:
        """``torch.compile`` the stages of :meth:`episode_logits` whose code does not depend on the episode
        shapes (regional compilation): the patch tokenizer, one dual-axis + readout call
        (``encode_chunk``), column distribution modeling, the row interaction and the ICL transformer
        (a frozen signal encoder runs its stages compiled too, as no-grad graphs).

        Returns the ``stages`` mapping :meth:`episode_logits` takes; the module itself is unchanged (its
        state dict, inference and validation stay eager). Sizes are dynamic from the first call
        (``dynamic=True``; override with ``options``): rows, context sizes, slot counts and chunk tails
        reuse a handful of graphs instead of recompiling per episode shape, as compiling the whole
        micro-batch computation would (its slot plan changes the code path every micro-batch); sizes that
        happen to be equal in one call stay separate symbols (no duck sizing, which would recompile when they
        part: the tests' four episodes of the tiny model compile 11 graphs instead of 13); each
        stage may hold up to :data:`STAGE_RECOMPILE_LIMIT` graphs. Each compiled stage computes the
        same function (tests/test_model_training.py); inductor fuses the layout copies,
        normalisations, activations and small attentions between the matrix products.
        """
        se = self.signal_encoder
        opts = {"dynamic": True, **options}
        # both settings are read when a call misses every cached graph: scope them to the calls of the stages
        limit = torch._dynamo.config.patch(recompile_limit=STAGE_RECOMPILE_LIMIT)
        no_duck = fx_config.patch(use_duck_shape=False)
        return {
            name: limit(no_duck(torch.compile(fn, **opts)))
            for name, fn in (
                ("tokenize", se.patch_tokenizer.forward),
                ("encode_chunk", se.encode_chunk),
                ("column_embedding", self.column_distribution_modeling.forward),
                ("row_interaction", self.row_interaction.forward),
                ("icl", self.icl.forward),
            )
        }

    @staticmethod
    def _runner(recompute: bool):
        use_ckpt = recompute and torch.is_grad_enabled()

        def run(fn, *args):
            return checkpoint(fn, *args, use_reentrant=False) if use_ckpt else fn(*args)

        return run, use_ckpt

    def signal_representations(self, X: Tensor, plan: SlotPlan, *, recompute: bool = False,
                               signal_rows: int | None = 64, group_chunk: int | None = None,
                               stages: Mapping[str, Callable[..., Tensor]] | None = None) -> Tensor:
        """The signal level of :meth:`episode_logits`: ``X (B, T, C, L_0)`` -> ``H (B, T, d_h)`` (one draw)."""
        b, t = X.shape[:2]
        run, _ = self._runner(recompute)

        def encode(x_rows: Tensor) -> Tensor:  # rows are independent (the plan is per episode)
            z = self.signal_encoder.encode_with_plan(x_rows, plan, group_chunk=group_chunk, stages=stages)
            return self.rssc(z[:, 0])  # (B, rows, d_h)

        step = max(1, signal_rows // b) if signal_rows else t
        hs = []
        for r0 in range(0, t, step):
            if self._signal_encoder_frozen:
                with torch.no_grad():
                    z = self.signal_encoder.encode_with_plan(X[:, r0 : r0 + step], plan, group_chunk=group_chunk,
                                                             stages=stages)[:, 0]
                hs.append(self.rssc(z))
            else:
                hs.append(run(encode, X[:, r0 : r0 + step]))
        return torch.cat(hs, dim=1)

    def task_logits(self, H: Tensor, y_context: Tensor, *, recompute: bool = False, cdm_columns: int | None = 1024,
                    interaction_rows: int | None = 512,
                    stages: Mapping[str, Callable[..., Tensor]] | None = None) -> Tensor:
        """The task level of :meth:`episode_logits`: ``H (B, T, d_h)`` -> decoder outputs ``(B, q, K_max)``."""
        stages = stages or {}
        b, t, d_h = H.shape
        n = y_context.shape[1]
        cfg = self.config
        run, use_ckpt = self._runner(recompute)
        if cfg.context_standardization:
            H = standardize_by_context(H, n)
        cdm = stages.get("column_embedding", self.column_distribution_modeling)
        interact = stages.get("row_interaction", self.row_interaction)
        icl = stages.get("icl", self.icl)

        def embed_columns(h_cols: Tensor) -> Tensor:  # (N, T, 1) -> (N, T, d_e): one feature axis each
            return cdm(h_cols, n)[:, :, 0]

        cols = H.transpose(1, 2).reshape(b * d_h, t, 1)  # column-episodes are independent
        step = cdm_columns or b * d_h
        E = torch.cat([run(embed_columns, cols[c0 : c0 + step]) for c0 in range(0, b * d_h, step)], dim=0)
        E_rows = E.view(b, d_h, t, -1).transpose(1, 2).reshape(b * t, 1, d_h, -1)
        step = interaction_rows or b * t  # row-episodes are independent
        R = torch.cat([run(interact, E_rows[r0 : r0 + step]) for r0 in range(0, b * t, step)], dim=0)
        R = R.view(b, t, cfg.d_u)
        tf_icl = self.icl.tf_icl
        before = tf_icl.recompute
        tf_icl.recompute = use_ckpt
        try:
            return icl(R, y_context)
        finally:
            tf_icl.recompute = before

    # ------------------------------------------------------------------ forward
    def forward(
        self,
        X: Tensor,
        y_context: Tensor,
        *,
        channel_mask: Tensor | None = None,
        group_idx: Tensor | None = None,
        return_all_classes: bool = False,
        n_rssc_draws: int = 1,
        generator: torch.Generator | None = None,
        temperature: float = 0.9,
        dedupe: bool | None = None,
    ) -> Tensor:
        """Query logits of a batch of episodes.

        X: ``(B, T, C, L)`` or ``(B, T, L)``; rows ``0..n_ctx-1`` are the context, ``n_ctx =
        y_context.shape[1]``; series of another length than ``seq_len`` are linearly resampled.
        y_context: ``(B, n_ctx)`` class ids. channel_mask: ``(B, C)`` bool, False = absent/padding
        (RSSC draws valid channels only). group_idx: injected RSSC assignment ``(B, G, S)`` or
        ``(B, E, G, S)``; otherwise ``n_rssc_draws`` assignments are drawn with ``generator`` (or the
        global torch RNG). With several draws the logits are averaged over draws.

        Returns ``(B, n_query, K)``, K = number of distinct context classes (labels 0..K-1, the same K
        for every episode; K > K_max uses the hierarchical extension), or ``(B, n_query, K_max)``
        decoder outputs with ``return_all_classes=True`` (pretraining).
        """
        X, channel_mask = self.prepare_inputs(X, channel_mask)
        b, t, c, _ = X.shape
        y = self._labels(y_context, b, t).to(X.device)
        n = y.shape[1]
        cfg = self.config
        if return_all_classes:
            if int(y.max()) >= cfg.max_classes:
                raise ValueError(f"return_all_classes needs labels < max_classes={cfg.max_classes}")
            k = None
        else:
            k = self.num_classes(y)
            if self.training and k > cfg.max_classes:
                raise ValueError(f"training supports at most max_classes={cfg.max_classes} classes, got {k}")
        if group_idx is None:
            group_idx = self.sample_assignment(channel_mask, n_draws=n_rssc_draws, generator=generator)
        group_idx = check_group_idx(
            torch.as_tensor(group_idx), b, c, cfg.num_groups, cfg.group_size, channel_mask
        ).to(X.device)
        e = group_idx.shape[1]
        H = self.encode_signal(X, group_idx, dedupe=dedupe)  # (B, E, T, d_h)
        R = self.row_representations(H.reshape(b * e, t, cfg.d_h), n)
        y_rep = y.repeat_interleave(e, dim=0)
        if return_all_classes:
            out = self.icl(R, y_rep)
        else:
            out = self.icl_logits(R, y_rep, num_classes=k, temperature=temperature)
        return out.view(b, e, t - n, -1).mean(dim=1)
