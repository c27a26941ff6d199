"""The one place that imports ``mantis-tsfm``: the Mantis v1 blocks ChorusTIC is built from.

ChorusTIC's patch tokenizer and slot readout ARE Mantis v1 blocks at width P (the released model:
P = 512): the ``TokenGeneratorUnit`` (convolution branches over the normalized series and its first
difference, LayerNorm, patch mean pooling, multi-scale scalar encoders of patch mean and std,
projection) and the ``TransformerUnit`` (learnable summary token, sinusoidal positions, pre-norm
ViT layers, summary-token output). Their parameter names are the ones of the released checkpoint
(``tokgen_unit.*``, ``vit_unit.*``), and with the golden weights they reproduce the official
tensors (tests/test_model_golden.py). An upgrade of ``mantis-tsfm`` that changes these classes
touches this file only.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

import torch.nn.functional as F
from mantis.architecture.transformer_v1_utils.transformer import Attention
from mantis.architecture.version1 import TokenGeneratorUnit, TransformerUnit

from chorustic.model.attention import attention, scale_query_rows

__all__ = ["MANTIS_VERSION", "MantisTokenGenerator", "MantisTransformerUnit", "SDPAAttention"]

try:
    MANTIS_VERSION = version("mantis-tsfm")
except PackageNotFoundError:  # pragma: no cover - editable/vendored installs
    MANTIS_VERSION = "unknown"


class MantisTokenGenerator(TokenGeneratorUnit):
    """Mantis v1 ``TokenGeneratorUnit``: ``(N, 1, L) -> (N, num_patches, hidden_dim)``."""


class SDPAAttention(Attention):
    """Mantis v1 ``Attention`` computed by :func:`chorustic.model.attention.attention`.

    Same parameters (``to_qkv`` without bias, ``to_out``), same function: softmax(Q K' / sqrt(d)) V with
    dropout on the attention weights in training mode; on CUDA the fused SDPA kernels never materialise
    the score tensor that the hand-written version keeps for its backward pass (on CPU the readout's
    M + 1 tokens take the explicit form, see that module).
    """

    def forward(self, x, n_queries: int | None = None):  # type: ignore[override]
        """``x (B, N, P) -> (B, N, P)``; with ``n_queries``, the outputs of the first ``n_queries`` tokens
        only (every token is still a key and a value), ``(B, n_queries, P)``."""
        b, n, _ = x.shape
        p = self.dropout.p if self.training else 0.0
        if n_queries is None:
            w, _ = scale_query_rows(self.to_qkv.weight, None, self.scale)
            q, k, v = F.linear(x, w).view(b, n, 3, self.heads, -1).permute(2, 0, 3, 1, 4).unbind(0)
        else:
            inner = self.to_qkv.weight.shape[0] // 3
            w_q, w_kv = self.to_qkv.weight.split((inner, 2 * inner))
            q = F.linear(x[:, :n_queries], w_q * self.scale).view(b, n_queries, self.heads, -1).transpose(1, 2)
            k, v = F.linear(x, w_kv).view(b, n, 2, self.heads, -1).permute(2, 0, 3, 1, 4).unbind(0)
        out = attention(q, k, v, dropout_p=p, scale=1.0)
        return self.to_out(out.transpose(1, 2).reshape(b, q.shape[2], -1))


class MantisTransformerUnit(TransformerUnit):
    """Mantis v1 ``TransformerUnit`` (formerly ``ViTUnit``): ``(N, M, P) -> (N, P)`` summary token.

    Built on CPU; move the whole model with ``.to(device)`` afterwards. The attention layers run
    through :class:`SDPAAttention` (same parameters and function as Mantis's hand-written attention).
    """

    def __init__(
        self,
        *,
        hidden_dim: int,
        num_patches: int,
        depth: int,
        heads: int,
        mlp_dim: int,
        dim_head: int,
        dropout: float,
    ) -> None:
        super().__init__(
            hidden_dim=hidden_dim,
            num_patches=num_patches,
            depth=depth,
            heads=heads,
            mlp_dim=mlp_dim,
            dim_head=dim_head,
            dropout=dropout,
            device="cpu",
        )
        for attn, _ in self.transformer.layers:
            if type(attn.fn) is Attention:
                attn.fn.__class__ = SDPAAttention
