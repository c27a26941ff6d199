"""The shared group encoder of the signal level: patch tokenizer -> dual-axis encoder -> slot readout.

:meth:`SignalEncoder.encode_slots` turns an episode batch ``X (B, T, C, L_0)`` and RSSC assignments
``group_idx (B, E, G, S)`` (E draws) into slot representations ``z (B, E, T, G, S, P)``.

The computation follows a :class:`SlotPlan`, made on the host from the assignments alone
(:func:`plan_slots`), so that a data-loader worker can make it ahead of the step:

* every (episode, channel) pair that some slot uses is tokenized once (the tokenizer is
  deterministic and has no dropout, so slots sharing a channel share its tokens exactly);
* ``dedupe=False`` (the official computation): every group of every draw is one item of S slots,
  duplicates included;
* ``dedupe=True``: a group is reduced to its distinct channels with multiplicities (channel attention
  with a ``log count`` key bias, exact, see :mod:`chorustic.model.dual_axis_encoder`), and groups with
  the same multiset of channels, within a draw or across draws, are encoded once (the channel block is
  permutation-equivariant, the temporal block and readout are per slot). For one-channel data every
  group of every draw is one series: the row is encoded once instead of ``16 * E`` times. Exact
  whenever no dropout is active (with dropout every slot must draw its own masks).

Items are bucketed by their number U of distinct slots and each bucket is encoded in one call; the
slot outputs are then gathered into ``(B, E, T, G, S, P)``. All shapes are static for a given plan (no
host synchronisation; the training path runs on fake tensors). Rows never interact here, so callers
may process rows in chunks with the same plan.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping

import torch
from torch import Tensor, nn

from chorustic.model.config import ChorusTICConfig
from chorustic.model.dual_axis_encoder import DualAxisEncoder
from chorustic.model.patch_tokenizer import PatchTokenizer
from chorustic.model.slot_readout import SlotReadout

__all__ = ["GROUP_CHUNK", "SignalEncoder", "SlotPlan", "plan_slots"]

#: Group instances (one RSSC group of one row: U <= S slot series of M patch tokens) per dual-axis/readout
#: call: the default of inference and of training on CPU. On a CPU, calls of this size keep a block's
#: activations (256 x 4 x 16 tokens x P = 64: 4 MB) in the cache between its operations; one call over a
#: whole micro-batch (thousands of groups) streams every operation through main memory (measured on the
#: ``small`` model, one thread, forward + backward of the signal encoder on prior micro-batches: 3.6 s in
#: chunks of 128-256 groups vs 4.2 s in one call; chunks of 64 are slower again).
GROUP_CHUNK = 256


@dataclasses.dataclass
class SlotPlan:
    """How to compute the slots of a batch of assignments ``(B, E, G, S)`` (see the module docstring).

    ``pair_b``/``pair_c`` ``(n_pairs,)``: the (episode, channel) series to tokenize; ``buckets``: per
    number U of slots of an item, ``(U, items (N_u, U) indices into the pairs, bias (N_u, U) log
    multiplicities or None)``; ``slot_src (B, E, G, S)``: the row of the concatenated bucket outputs
    (item-major, slot-minor, buckets in increasing U) that feeds each slot.
    """

    pair_b: Tensor
    pair_c: Tensor
    buckets: list[tuple[int, Tensor, Tensor | None]]
    slot_src: Tensor

    def to(self, device, non_blocking: bool = False) -> "SlotPlan":
        kw = {"non_blocking": non_blocking}
        return SlotPlan(
            self.pair_b.to(device, **kw), self.pair_c.to(device, **kw),
            [(u, it.to(device, **kw), None if bias is None else bias.to(device, **kw)) for u, it, bias in self.buckets],
            self.slot_src.to(device, **kw))

    def pin_memory(self) -> "SlotPlan":
        return SlotPlan(self.pair_b.pin_memory(), self.pair_c.pin_memory(),
                        [(u, it.pin_memory(), None if b is None else b.pin_memory()) for u, it, b in self.buckets],
                        self.slot_src.pin_memory())

    @property
    def n_pairs(self) -> int:
        return int(self.pair_b.shape[0])

    def items_per_size(self) -> dict[int, int]:
        """Number of encoded items per slot count U."""
        return {u: int(it.shape[0]) for u, it, _ in self.buckets}


def plan_slots(group_idx: Tensor, dedupe: bool) -> SlotPlan:
    """The :class:`SlotPlan` of assignments ``group_idx (B, E, G, S)`` (host-side, pure)."""
    gi = group_idx.detach().cpu().tolist()
    b_count = len(gi)
    pair_id: dict[tuple[int, int], int] = {}
    for bi in range(b_count):
        for ch in sorted({ch for draw in gi[bi] for grp in draw for ch in grp}):
            pair_id[(bi, ch)] = len(pair_id)
    item_of: dict[tuple, tuple[int, int]] = {}
    buckets: dict[int, list[tuple[list[int], list[int]]]] = {}
    slot_item: list[tuple[int, int, int]] = []  # per (b, e, g, s): (U, item index in bucket, position)
    for bi in range(b_count):
        for ei, draw in enumerate(gi[bi]):
            for gj, chans in enumerate(draw):
                if dedupe:
                    uniq = sorted(set(chans))
                    counts = [chans.count(ch) for ch in uniq]
                    key = (bi, tuple(uniq), tuple(counts))
                    positions = [uniq.index(ch) for ch in chans]
                else:
                    uniq, counts = list(chans), [1] * len(chans)
                    key = (bi, ei, gj)
                    positions = list(range(len(chans)))
                if key not in item_of:
                    bucket = buckets.setdefault(len(uniq), [])
                    item_of[key] = (len(uniq), len(bucket))
                    bucket.append(([pair_id[(bi, ch)] for ch in uniq], counts))
                u_count, item = item_of[key]
                slot_item.extend((u_count, item, pos) for pos in positions)
    out_buckets, offsets, offset = [], {}, 0
    for u_count in sorted(buckets):
        items = buckets[u_count]
        counts = torch.tensor([it[1] for it in items], dtype=torch.float32)
        bias = counts.log() if bool((counts != 1).any()) else None
        out_buckets.append((u_count, torch.tensor([it[0] for it in items], dtype=torch.long), bias))
        offsets[u_count] = offset
        offset += len(items) * u_count
    shape = tuple(group_idx.shape)
    src = torch.tensor([offsets[u] + item * u + pos for (u, item, pos) in slot_item], dtype=torch.long).view(shape)
    pairs = list(pair_id)
    return SlotPlan(torch.tensor([p[0] for p in pairs], dtype=torch.long),
                    torch.tensor([p[1] for p in pairs], dtype=torch.long), out_buckets, src)


class SignalEncoder(nn.Module):
    def __init__(self, config: ChorusTICConfig) -> None:
        super().__init__()
        self.config = config
        self.patch_tokenizer = PatchTokenizer(config)
        self.dual_axis_encoder = DualAxisEncoder(config)
        self.slot_readout = SlotReadout(config)

    # ------------------------------------------------------------------------------------------
    def dropout_active(self) -> bool:
        """True when a dropout layer would draw a random mask in the current mode."""
        if not self.training:
            return False
        for m in self.modules():
            if isinstance(m, nn.Dropout) and m.p > 0 and m.training:
                return True
            if isinstance(m, nn.MultiheadAttention) and m.dropout > 0 and m.training:
                return True
        return False

    def encode_chunk(self, tokens: Tensor, channel_bias: Tensor | None = None) -> Tensor:
        """Dual-axis encoder and slot readout of ``tokens (N, U, M, P)`` in one call -> ``(N, U, P)``."""
        n, u, m, p = tokens.shape
        x = self.dual_axis_encoder(tokens, channel_bias)
        return self.slot_readout(x.reshape(n * u, m, p)).view(n, u, p)

    def encode_groups(
        self, tokens: Tensor, channel_bias: Tensor | None = None, chunk: int | None = None,
        encode_chunk: Callable[..., Tensor] | None = None,
    ) -> Tensor:
        """``tokens (N, U, M, P)`` of N group instances -> slot representations ``(N, U, P)``, in calls of
        ``chunk`` groups of :meth:`encode_chunk` (or ``encode_chunk``: a compiled version of it)."""
        encode = encode_chunk or self.encode_chunk
        n = tokens.shape[0]
        if chunk is None or n <= chunk:
            return encode(tokens, channel_bias)
        outs = []
        for i in range(0, n, chunk):
            bias = None if channel_bias is None else channel_bias[i : i + chunk]
            outs.append(encode(tokens[i : i + chunk], bias))
        return torch.cat(outs, dim=0)

    # ------------------------------------------------------------------------------------------
    def encode_with_plan(
        self, X: Tensor, plan: SlotPlan, *, group_chunk: int | None = None, token_chunk: int | None = None,
        stages: Mapping[str, Callable[..., Tensor]] | None = None,
    ) -> Tensor:
        """``X (B, T, C, L_0)`` and a :class:`SlotPlan` of ``(B, E, G, S)`` -> ``z (B, E, T, G, S, P)``.

        ``group_chunk``: group instances per dual-axis/readout call; ``token_chunk``: series per
        tokenizer call (memory knobs only). ``stages``: compiled stages
        (:meth:`chorustic.model.ChorusTIC.compile_stages`: ``"tokenize"``, ``"encode_chunk"``)."""
        if X.ndim != 4:
            raise ValueError(f"X must be (B, T, C, L), got {tuple(X.shape)}")
        stages = stages or {}
        t, length = X.shape[1], X.shape[3]
        series = X[plan.pair_b, :, plan.pair_c]  # (n_pairs, T, L)
        tokens = self.patch_tokenizer.tokenize_chunked(series.reshape(-1, length), token_chunk,
                                                       stages.get("tokenize"))
        m, p = tokens.shape[-2:]
        tokens = tokens.view(plan.n_pairs, t, m, p)
        tables = []
        for u_count, items, bias in plan.buckets:
            n = items.shape[0]
            tok = tokens[items].transpose(1, 2).reshape(n * t, u_count, m, p)  # (N*T, U, M, P)
            row_bias = None if bias is None else bias.to(tok.dtype).repeat_interleave(t, dim=0)
            zb = self.encode_groups(tok, row_bias, group_chunk, stages.get("encode_chunk"))
            zb = zb.view(n, t, u_count, p)
            tables.append(zb.transpose(1, 2).reshape(n * u_count, t, p))
        table = torch.cat(tables, dim=0)
        z = table[plan.slot_src]  # (B, E, G, S, T, P)
        return z.permute(0, 1, 4, 2, 3, 5)

    def encode_slots(
        self,
        X: Tensor,
        group_idx: Tensor,
        *,
        dedupe: bool = True,
        group_chunk: int | None = GROUP_CHUNK,
        token_chunk: int | None = 256,
    ) -> Tensor:
        """``X (B, T, C, L_0)``, ``group_idx (B, E, G, S)`` -> ``z (B, E, T, G, S, P)``."""
        plan = plan_slots(group_idx, dedupe).to(X.device)
        return self.encode_with_plan(X, plan, group_chunk=group_chunk, token_chunk=token_chunk).contiguous()
