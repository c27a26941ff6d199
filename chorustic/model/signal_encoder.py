"""The shared group encoder of the signal level: patch tokenizer -> dual-axis encoder -> slot readout.

:meth:`SignalEncoder.encode_slots` turns an episode batch ``X (B, T, C, L_0)`` and RSSC assignments
``group_idx (B, E, G, S)`` (E draws) into slot representations ``z (B, E, T, G, S, P)``.

Two schedules compute the same function:

* ``dedupe=False`` (the official computation): every group of every draw gathers its S channel
  series, tokenizes them and runs the dual-axis encoder and readout on S slots, duplicates included.
* ``dedupe=True``: the tokenizer runs once per (episode, channel) actually drawn; a group is reduced
  to its distinct channels with multiplicities (channel attention with a ``log count`` key bias, exact,
  see :mod:`chorustic.model.dual_axis_encoder`); groups with the same multiset of channels, within a
  draw or across draws, are encoded once (the channel block is permutation-equivariant and the
  temporal block and readout are per slot). For one-channel data every group of every draw is one
  series: the row is encoded once instead of ``16 * E`` times. Used whenever no dropout is active.

Rows never interact here, so callers may process rows in chunks.

:meth:`SignalEncoder.encode_rows` is the pretraining schedule: row-episodes flattened, every channel of
a row tokenized once (the tokenizer has no dropout, so slots that share a channel share its tokens
exactly), the G*S slots gathered from those tokens and every group encoded in full (with active
dropout each slot draws its own masks, as in the official computation). All shapes are static (no
host synchronisation, works on fake tensors), and a chunk of rows is one activation-checkpointing
segment (``ChorusTIC.episode_logits``).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from chorustic.model.config import ChorusTICConfig
from chorustic.model.dual_axis_encoder import DualAxisEncoder
from chorustic.model.patch_tokenizer import PatchTokenizer
from chorustic.model.slot_readout import SlotReadout

__all__ = ["SignalEncoder"]


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

    def encode_groups(
        self, tokens: Tensor, channel_bias: Tensor | None = None, chunk: int | None = None
    ) -> Tensor:
        """``tokens (N, U, M, P)`` of N group instances -> slot representations ``(N, U, P)``."""
        n, u, m, p = tokens.shape
        if chunk is None or n <= chunk:
            x = self.dual_axis_encoder(tokens, channel_bias)
            return self.slot_readout(x.reshape(n * u, m, p)).view(n, u, p)
        outs = []
        for i in range(0, n, chunk):
            bias = None if channel_bias is None else channel_bias[i : i + chunk]
            outs.append(self.encode_groups(tokens[i : i + chunk], bias, None))
        return torch.cat(outs, dim=0)

    # ------------------------------------------------------------------------------------------
    def encode_rows(self, X_rows: Tensor, group_idx_rows: Tensor) -> Tensor:
        """``X_rows (N, C, L_0)`` row-episodes, ``group_idx_rows (N, G, S)`` -> ``z (N, G, S, P)``."""
        n, c, length = X_rows.shape
        _, g, s = group_idx_rows.shape
        tokens = self.patch_tokenizer(X_rows.reshape(n * c, length))
        m, p = tokens.shape[-2:]
        tokens = tokens.view(n, c, m, p)
        rows = torch.arange(n, device=X_rows.device)[:, None, None]
        slots = tokens[rows, group_idx_rows]  # (N, G, S, M, P)
        z = self.encode_groups(slots.reshape(n * g, s, m, p))
        return z.view(n, g, s, p)

    def encode_slots(
        self,
        X: Tensor,
        group_idx: Tensor,
        *,
        dedupe: bool = True,
        group_chunk: int | None = 256,
        token_chunk: int | None = 256,
    ) -> Tensor:
        """``X (B, T, C, L_0)``, ``group_idx (B, E, G, S)`` -> ``z (B, E, T, G, S, P)``.

        ``group_chunk``: group instances per dual-axis/readout call; ``token_chunk``: series per
        tokenizer call (memory knobs only).
        """
        if X.ndim != 4:
            raise ValueError(f"X must be (B, T, C, L), got {tuple(X.shape)}")
        if dedupe:
            return self._encode_slots_dedupe(X, group_idx, group_chunk, token_chunk)
        return self._encode_slots_full(X, group_idx, group_chunk, token_chunk)

    def _encode_slots_full(
        self, X: Tensor, group_idx: Tensor, group_chunk: int | None, token_chunk: int | None
    ) -> Tensor:
        b, t, _, length = X.shape
        _, e, g, s = group_idx.shape
        gi = group_idx.to(X.device)
        # gather (B, E, G, S, T, L): every slot of every group of every draw
        flat = gi.reshape(b, e * g * s)
        series = torch.stack([X[i][:, flat[i]] for i in range(b)])  # (B, T, E*G*S, L)
        series = series.view(b, t, e, g, s, length).permute(0, 2, 3, 1, 4, 5)  # (B, E, G, T, S, L)
        tokens = self.patch_tokenizer.tokenize_chunked(series.reshape(-1, length), token_chunk)
        m, p = tokens.shape[-2:]
        z = self.encode_groups(tokens.view(b * e * g * t, s, m, p), None, group_chunk)
        return z.view(b, e, g, t, s, p).permute(0, 1, 3, 2, 4, 5).contiguous()

    def _encode_slots_dedupe(
        self, X: Tensor, group_idx: Tensor, group_chunk: int | None, token_chunk: int | None
    ) -> Tensor:
        b, t, _, length = X.shape
        _, e, g, s = group_idx.shape
        device = X.device
        gi = group_idx.detach().cpu().tolist()

        # 1. tokenize each (episode, channel) that any draw uses, once
        pair_id: dict[tuple[int, int], int] = {}
        for bi in range(b):
            for ch in sorted({ch for draw in gi[bi] for grp in draw for ch in grp}):
                pair_id[(bi, ch)] = len(pair_id)
        pb = torch.tensor([k[0] for k in pair_id], device=device)
        pc = torch.tensor([k[1] for k in pair_id], device=device)
        series = X[pb, :, pc]  # (n_pairs, T, L)
        tokens = self.patch_tokenizer.tokenize_chunked(series.reshape(-1, length), token_chunk)
        m, p = tokens.shape[-2:]
        tokens = tokens.view(len(pair_id), t, m, p)

        # 2. distinct channel multisets per episode; bucket them by number of distinct channels
        item_of: dict[tuple[int, tuple[int, ...], tuple[int, ...]], tuple[int, int]] = {}
        buckets: dict[int, list[tuple[list[int], list[int]]]] = {}
        slot_item: list[tuple[int, int, int]] = []  # per (b, e, g, s): (U, item index in bucket, position)
        for bi in range(b):
            for ei in range(e):
                for gj in range(g):
                    chans = gi[bi][ei][gj]
                    uniq = sorted(set(chans))
                    counts = [chans.count(ch) for ch in uniq]
                    key = (bi, tuple(uniq), tuple(counts))
                    if key not in item_of:
                        bucket = buckets.setdefault(len(uniq), [])
                        item_of[key] = (len(uniq), len(bucket))
                        bucket.append(([pair_id[(bi, ch)] for ch in uniq], counts))
                    u_count, item = item_of[key]
                    for ch in chans:
                        slot_item.append((u_count, item, uniq.index(ch)))

        # 3. encode every bucket; lay the outputs out as one table of (distinct slot, T, P)
        tables, offsets, offset = [], {}, 0
        for u_count in sorted(buckets):
            items = buckets[u_count]
            idx = torch.tensor([it[0] for it in items], device=device)  # (N, U)
            tok = tokens[idx].transpose(1, 2).reshape(len(items) * t, u_count, m, p)  # (N*T, U, M, P)
            counts = torch.tensor([it[1] for it in items], dtype=torch.float32, device=device)
            bias = None
            if bool((counts != 1).any()):
                bias = counts.log().repeat_interleave(t, dim=0).to(tok.dtype)  # (N*T, U)
            zb = self.encode_groups(tok, bias, group_chunk).view(len(items), t, u_count, p)
            tables.append(zb.transpose(1, 2).reshape(len(items) * u_count, t, p))
            offsets[u_count] = offset
            offset += len(items) * u_count
        table = torch.cat(tables, dim=0)
        src = torch.tensor([offsets[u] + item * u + pos for (u, item, pos) in slot_item], device=device)
        z = table[src].view(b, e, g, s, t, p)
        return z.permute(0, 1, 4, 2, 3, 5).contiguous()
