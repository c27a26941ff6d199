"""Dual-axis encoder (paper Sec. 3.2, App. B.3): temporal block, then channel block, L_D times.

Input: the patch tokens of one RSSC group, ``(N, S, M, P)`` (N group instances, S slots, M patches).

* Temporal block: pre-norm multi-head self-attention over the M patches of each slot, residual; then
  a pre-norm MLP (P -> mlp -> P, GELU), residual. No positional encoding.
* Channel block: the same structure over the S slots at each aligned patch position; an optional
  additive key bias removes unavailable channels (``-inf``) or weights repeated ones (``log count``).

Repeated slots. Channel attention has no positional encoding, so it is permutation-equivariant, and S
slots holding only U distinct series give, for each distinct series, exactly the result of attention
over U keys whose logits are shifted by ``log(multiplicity)``:
``sum_j c_j e^{s_j} v_j / sum_j c_j e^{s_j}``. The signal encoder uses this to encode each distinct
channel of a group once (for one-channel data: one series instead of 16 identical slots, where the
channel block collapses to its value path). The shortcut is exact in eval mode; with active dropout
the copies would draw different masks, so it is then not used.

``use_channel_axis_attention=False`` (ablation) builds no channel blocks: identity on the channel axis.
"""

from __future__ import annotations

from torch import Tensor, nn

from chorustic.model.attention import PackedSelfAttention
from chorustic.model.config import ChorusTICConfig

__all__ = ["AxisBlock", "DualAxisEncoder"]


class AxisBlock(nn.Module):
    """Pre-norm self-attention + MLP block over the second-to-last axis of ``(batch, seq, P)``.

    Parameter names follow the released checkpoint: ``norm1``, ``attn`` (``nn.MultiheadAttention``'s
    packed ``in_proj_weight``/``in_proj_bias``, ``out_proj``; computed by
    :class:`~chorustic.model.attention.PackedSelfAttention`), ``norm2``, ``mlp.0``, ``mlp.3``.
    """

    def __init__(self, dim: int, heads: int, mlp_dim: int, dropout: float) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = PackedSelfAttention(dim, heads, dropout=dropout)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(
            nn.Linear(dim, mlp_dim),
            nn.GELU(),
            nn.Dropout(dropout),
            nn.Linear(mlp_dim, dim),
            nn.Dropout(dropout),
        )

    def forward(self, x: Tensor, key_bias: Tensor | None = None) -> Tensor:
        """``key_bias``: ``(batch, seq)`` float, added to the attention logits of each key."""
        h = self.norm1(x)
        x = x + self.attn(h, key_bias)
        return x + self.mlp(self.norm2(x))


class DualAxisEncoder(nn.Module):
    """``(N, S, M, P) -> (N, S, M, P)``: L_D x [temporal block -> channel block]."""

    def __init__(self, config: ChorusTICConfig) -> None:
        super().__init__()
        p, drop = config.hidden_dim, config.dual_axis_dropout
        self.dropout = drop
        self.temporal_blocks = nn.ModuleList(
            [
                AxisBlock(p, config.temporal_heads, config.temporal_mlp_dim, drop)
                for _ in range(config.num_dual_axis_layers)
            ]
        )
        self.use_channel_axis_attention = config.use_channel_axis_attention
        if self.use_channel_axis_attention:
            self.channel_blocks = nn.ModuleList(
                [
                    AxisBlock(p, config.channel_heads, config.channel_mlp_dim, drop)
                    for _ in range(config.num_dual_axis_layers)
                ]
            )

    def forward(self, tokens: Tensor, channel_bias: Tensor | None = None) -> Tensor:
        """``channel_bias``: optional ``(N, S)`` additive key bias of the channel attention
        (0 = an ordinary slot, ``log c`` = a slot standing for c identical copies, ``-inf`` = absent)."""
        n, s, m, p = tokens.shape
        x = tokens
        bias = None
        if channel_bias is not None and self.use_channel_axis_attention:
            bias = channel_bias.to(tokens.dtype)[:, None, :].expand(n, m, s).reshape(n * m, s)
        for layer in range(len(self.temporal_blocks)):
            x = self.temporal_blocks[layer](x.reshape(n * s, m, p)).reshape(n, s, m, p)
            if self.use_channel_axis_attention:
                xc = x.transpose(1, 2).reshape(n * m, s, p)
                xc = self.channel_blocks[layer](xc, bias)
                x = xc.reshape(n, m, s, p).transpose(1, 2)
        return x.contiguous()
