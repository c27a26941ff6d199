"""Slot readout with a shared summary token (paper App. B.3, Eq. "slot readout").

A learnable summary token ``q_ts`` is prepended to the M refined patch tokens of a slot, sinusoidal
positions are added, pre-norm Transformer layers run (attention: ``to_qkv`` without bias, heads x
dim_head inner width, ``to_out``; MLP with GELU), and the summary token's output (no final
LayerNorm) is the slot representation ``z`` in R^P. The same readout serves every slot.

This is exactly the Mantis v1 ``TransformerUnit`` (the released checkpoint's ``vit_unit``),
composed from ``mantis-tsfm``.
"""

from __future__ import annotations

import torch
from torch import Tensor

from chorustic.model._mantis_adapter import MantisTransformerUnit
from chorustic.model.config import ChorusTICConfig

__all__ = ["SlotReadout"]


class SlotReadout(MantisTransformerUnit):
    """``(N, M, P) -> (N, P)``."""

    def __init__(self, config: ChorusTICConfig) -> None:
        super().__init__(
            hidden_dim=config.hidden_dim,
            num_patches=config.num_patches,
            depth=config.readout_depth,
            heads=config.readout_heads,
            mlp_dim=config.readout_mlp_dim,
            dim_head=config.readout_dim_head,
            dropout=config.readout_dropout,
        )

    def forward(self, tokens: Tensor) -> Tensor:  # type: ignore[override]
        """Mantis's ``forward(tokens, output_token="cls_token")``, with the last layer computed for the
        summary token only: its attention reads every token as key and value, but no other token's
        output of that layer is used, so their queries, attention outputs, output projection, second
        LayerNorm and MLP are skipped (exact; about a third of the readout's FLOPs at M = 16)."""
        b = tokens.shape[0]
        x = torch.cat((self.cls_token.expand(b, 1, -1), tokens), dim=1)
        x = self.pos_encoder(x.transpose(0, 1)).transpose(0, 1)
        *layers, (attn, ff) = self.transformer.layers
        for a, f in layers:
            x = a(x) + x
            x = f(x) + x
        z = attn.fn(attn.norm(x), n_queries=1) + x[:, :1]
        return (ff(z) + z)[:, 0]

    def readout_chunked(self, tokens: Tensor, chunk: int | None) -> Tensor:
        if chunk is None or tokens.shape[0] <= chunk:
            return self(tokens)
        return torch.cat([self(tokens[i : i + chunk]) for i in range(0, tokens.shape[0], chunk)], dim=0)
