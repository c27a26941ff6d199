"""Leakage-protected in-context learning (paper Sec. 3.3, App. B.7) and the decoder.

The label embedding ``E_y`` (one-hot over K_max, then Linear) is added to the context rows only. The
ICL Transformer (pre-norm, no positional encoding) uses the context rows as its only keys and values:
context rows attend to the context, each query attends to the context with its own state as the
attention query, so no information flows between queries. ``LayerNorm`` and the decoder
``Linear(d_u, 2 d_u) -> GELU -> Linear(2 d_u, K_max)`` give logits over K_max classes.

The encoder is TabICL's (``tabicl`` ``Encoder`` with the ``train_size`` split, via the adapter);
parameter names are TabICL v1's ``icl_predictor`` (``tf_icl.blocks.*``, ``ln``, ``y_encoder``,
``decoder.0``, ``decoder.2``). :meth:`InContextLearning.forward_cached` runs the context once (keys
and values cached per layer) and the queries in chunks, which is the same function.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from chorustic.model._tabicl_adapter import Encoder, KVCache, OneHotAndLinear
from chorustic.model.config import ChorusTICConfig

__all__ = ["InContextLearning"]


class InContextLearning(nn.Module):
    """``R (B, T, d_u)``, context labels ``y (B, n_ctx)`` -> decoder outputs ``(B, T - n_ctx, K_max)``."""

    def __init__(self, config: ChorusTICConfig) -> None:
        super().__init__()
        d = config.d_u
        self.max_classes = config.max_classes
        self.tf_icl = Encoder(
            num_blocks=config.icl_num_blocks,
            d_model=d,
            nhead=config.icl_nhead,
            dim_feedforward=d * config.ff_factor,
            dropout=config.task_dropout,
            activation=config.activation,
            norm_first=config.norm_first,
        )
        self.ln = nn.LayerNorm(d) if config.norm_first else nn.Identity()
        self.y_encoder = OneHotAndLinear(config.max_classes, d)
        self.decoder = nn.Sequential(nn.Linear(d, d * 2), nn.GELU(), nn.Linear(d * 2, config.max_classes))

    def _with_labels(self, R_ctx: Tensor, y: Tensor) -> Tensor:
        return R_ctx + self.y_encoder(y.long()).to(R_ctx.dtype)

    def forward(self, R: Tensor, y: Tensor, return_context: bool = False) -> Tensor:
        """All rows in one pass (training, reference). ``return_context`` also returns context rows."""
        n = y.shape[1]
        src = torch.cat([self._with_labels(R[:, :n], y), R[:, n:]], dim=1)
        out = self.decoder(self.ln(self.tf_icl(src, train_size=n)))
        return out if return_context else out[:, n:]

    def forward_cached(
        self, R_ctx: Tensor, y: Tensor, R_query: Tensor, query_chunk: int | None = None
    ) -> Tensor:
        """Context once, queries in chunks of ``query_chunk``: ``(B, q, K_max)``."""
        cache = KVCache()
        self.tf_icl.forward_with_cache(
            self._with_labels(R_ctx, y),
            icl_cache=cache,
            train_size=R_ctx.shape[1],
            use_cache=False,
            store_cache=True,
        )
        q = R_query.shape[1]
        step = q if not query_chunk else query_chunk
        outs = []
        for i in range(0, q, max(step, 1)):
            h = self.tf_icl.forward_with_cache(
                R_query[:, i : i + step], icl_cache=cache, use_cache=True, store_cache=False
            )
            outs.append(self.decoder(self.ln(h)))
        if not outs:
            return R_query.new_zeros(R_query.shape[0], 0, self.max_classes)
        return torch.cat(outs, dim=1)
