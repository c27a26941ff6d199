"""Context standardization of the RSSC features (an option of this project, not of the released model).

The released ChorusTIC feeds the RSSC representation H to the task level as it is: its only
normalization is RSSC's row-wise LayerNorm (``ChorusTICConfig.context_standardization=False``, the
``paper`` preset). A model trained from scratch on a CPU budget has neither a pretrained signal
encoder nor a pretrained task level; there H varies across the rows of an episode by a small fraction
of its magnitude, and TabICL's zero-initialized blocks pass almost nothing of that variation on.
With ``context_standardization=True`` each column of H is standardized with the mean and standard
deviation of the episode's context rows (the queries are scaled with the context's statistics, so no
query information leaks into the context). It is parameter-free and uses only the context, like
TabICL's scikit-learn preprocessing of tabular features.
"""

from __future__ import annotations

from torch import Tensor

__all__ = ["standardize_by_context"]

#: Added to the context standard deviation (a constant column stays finite).
STD_EPS = 1e-3
#: Standardized values are clipped to +-CLIP (one outlying query cannot dominate a column).
CLIP = 10.0


def standardize_by_context(H: Tensor, n_ctx: int) -> Tensor:
    """``H (B, T, d_h)`` with rows ``0..n_ctx-1`` the context -> ``(H - mean_ctx) / (std_ctx + eps)``,
    clipped to ``+-CLIP``; mean and (unbiased) standard deviation per episode and column."""
    if n_ctx < 1:
        raise ValueError("context standardization needs at least one context row")
    ctx = H[:, :n_ctx]
    mu = ctx.mean(dim=1, keepdim=True)
    sd = ctx.std(dim=1, keepdim=True) if n_ctx > 1 else ctx.new_zeros(mu.shape)
    return ((H - mu) / (sd + STD_EPS)).clamp(-CLIP, CLIP)
