"""Column Distribution Modeling (paper Sec. 3.3, App. B.5): task-conditioned feature-axis calibration.

Each of the d_h feature axes of ``H (B, T, d_h)`` is a set of T scalars. A shared cell projection
``f_cell`` (Linear 1 -> d_e) embeds every cell; a set transformer of induced self-attention blocks
builds, at every layer, an axis-specific bank from the **context cells only** (inducing tokens attend
to rows ``< n_ctx``) that every cell then reads; the final states are decoded into a cell-wise affine
``E = W * H + B`` with ``W = LN_w(f_w(.))``, ``B = LN_b(f_b(.))``. Queries neither shape the bank
nor see each other. ``col_embedding_mode="linear"`` (ablation "no task-conditioned calibration")
keeps only ``f_cell`` (width and ICL unchanged).

The set transformer is TabICL's (``tabicl`` blocks via the adapter); parameter names are TabICL v1's
``col_embedder`` (``in_linear``, ``tf_col.blocks.*``, ``out_w``, ``ln_w``, ``out_b``, ``ln_b``).
TabICL pads the table with 4 placeholder columns for the row stage's summary tokens; those columns
are skipped by every layer and overwritten later, so this module does not create them.
"""

from __future__ import annotations

from torch import Tensor, nn

from chorustic.model._tabicl_adapter import KVCache, SetTransformer
from chorustic.model.config import ChorusTICConfig

__all__ = ["ColumnDistributionModeling"]


class ColumnDistributionModeling(nn.Module):
    """``H (B, T, d_h) -> E (B, T, d_h, d_e)``."""

    def __init__(self, config: ChorusTICConfig) -> None:
        super().__init__()
        e = config.embed_dim
        self.mode = config.col_embedding_mode
        self.in_linear = nn.Linear(1, e)
        if self.mode == "distribution_aware":
            self.tf_col = SetTransformer(
                num_blocks=config.col_num_blocks,
                d_model=e,
                nhead=config.col_nhead,
                dim_feedforward=e * config.ff_factor,
                num_inds=config.col_num_inds,
                dropout=config.task_dropout,
                activation=config.activation,
                norm_first=config.norm_first,
            )
            self.out_w = nn.Linear(e, e)
            self.ln_w = nn.LayerNorm(e) if config.norm_first else nn.Identity()
            self.out_b = nn.Linear(e, e)
            self.ln_b = nn.LayerNorm(e) if config.norm_first else nn.Identity()

    def _affine(self, cells: Tensor, states: Tensor) -> Tensor:
        return cells * self.ln_w(self.out_w(states)) + self.ln_b(self.out_b(states))

    def forward(self, H: Tensor, n_ctx: int) -> Tensor:
        """All rows in one pass; inducing points read rows ``< n_ctx`` only.

        The blocks' ``induced_attention`` is called directly: TabICL's block ``forward`` first looks for
        placeholder columns that are entirely -100 (a host synchronisation per block); this module never
        creates such columns, so the result is the same without the check."""
        cells = H.transpose(1, 2).unsqueeze(-1)  # (B, d_h, T, 1)
        src = self.in_linear(cells)
        if self.mode == "linear":
            return src.transpose(1, 2)
        states = src
        for block in self.tf_col.blocks:
            states = block.induced_attention(states, n_ctx)
        return self._affine(cells, states).transpose(1, 2)

    # --- context once, query rows in chunks -----------------------------------------------------
    def embed_context(self, H_ctx: Tensor) -> tuple[Tensor, KVCache | None]:
        """Embed the context rows ``(B, n_ctx, d_h)`` and return the per-layer bank cache."""
        cells = H_ctx.transpose(1, 2).unsqueeze(-1)
        src = self.in_linear(cells)
        if self.mode == "linear":
            return src.transpose(1, 2), None
        cache = KVCache()
        states = self.tf_col.forward_with_cache(
            src, col_cache=cache, train_size=H_ctx.shape[1], use_cache=False, store_cache=True
        )
        return self._affine(cells, states).transpose(1, 2), cache

    def embed_rows(self, H_rows: Tensor, cache: KVCache | None) -> Tensor:
        """Embed further rows ``(B, q, d_h)`` against the context bank of :meth:`embed_context`."""
        cells = H_rows.transpose(1, 2).unsqueeze(-1)
        src = self.in_linear(cells)
        if self.mode == "linear":
            return src.transpose(1, 2)
        states = self.tf_col.forward_with_cache(src, col_cache=cache, use_cache=True, store_cache=False)
        return self._affine(cells, states).transpose(1, 2)
