"""Row-wise feature interaction (paper Sec. 3.3, App. B.6).

For each row, K_cls learnable summary tokens are prepended to its d_h calibrated cell embeddings and a
pre-norm Transformer with rotary positions (summary tokens at positions 0..K_cls-1, feature axes
after them) mixes the feature axes; the summary tokens' outputs, layer-normalised and flattened, are
the row representation ``u`` in R^{K_cls * d_e}. Rows never attend to each other.

The encoder is TabICL's (``tabicl`` ``Encoder`` with interleaved RoPE, via the adapter); parameter
names are TabICL v1's ``row_interactor`` (``tf_row.blocks.*``, ``tf_row.rope.freqs``, ``cls_tokens``,
``out_ln``). The last block computes only the summary-token queries (the other positions are not
read), which is the same function with less work.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from chorustic.model._tabicl_adapter import Encoder
from chorustic.model.config import ChorusTICConfig

__all__ = ["RowInteraction"]


class RowInteraction(nn.Module):
    """``E (B, T, d_h, d_e) -> U (B, T, K_cls * d_e)``."""

    def __init__(self, config: ChorusTICConfig) -> None:
        super().__init__()
        e = config.embed_dim
        self.num_cls = config.row_num_cls
        self.tf_row = Encoder(
            num_blocks=config.row_num_blocks,
            d_model=e,
            nhead=config.row_nhead,
            dim_feedforward=e * config.ff_factor,
            dropout=config.task_dropout,
            activation=config.activation,
            norm_first=config.norm_first,
            use_rope=True,
            rope_base=config.row_rope_base,
        )
        self.cls_tokens = nn.Parameter(torch.empty(self.num_cls, e))
        nn.init.trunc_normal_(self.cls_tokens, std=0.02)
        self.out_ln = nn.LayerNorm(e) if config.norm_first else nn.Identity()

    def forward(self, emb: Tensor) -> Tensor:
        b, t, _, e = emb.shape
        x = torch.cat([self.cls_tokens.expand(b, t, self.num_cls, e).to(emb.dtype), emb], dim=2)
        rope = self.tf_row.rope
        blocks = self.tf_row.blocks
        for block in blocks[:-1]:
            x = block(x, rope=rope)
        cls_out = blocks[-1](q=x[..., : self.num_cls, :], k=x, v=x, rope=rope)
        return self.out_ln(cls_out).flatten(-2)
