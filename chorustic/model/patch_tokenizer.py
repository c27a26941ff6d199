"""Patch tokenization (paper App. B.2).

Per channel: the series and its first difference (zero-padded at the end) are each standardised over
the whole series, ``(z - mean) / (std_unbiased + 1e-5)``, passed through a ``Conv1d(1 -> P, kernel
patch+1)``, layer-normalised per time step and averaged inside each of the M patches. In parallel,
each patch's mean and unbiased std go through multi-scale scalar encoders. The four pieces are
concatenated and projected to P (``Linear`` + ``LayerNorm(eps=1e-15)``). The series is not normalised
anywhere else: absolute level and scale reach the model only through the scalar encoders.

This is exactly the Mantis v1 token generator at width P, composed from ``mantis-tsfm``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from chorustic.model._mantis_adapter import MantisTokenGenerator
from chorustic.model.config import ChorusTICConfig

__all__ = ["PatchTokenizer", "resample_length"]


def resample_length(x: Tensor, length: int) -> Tensor:
    """Linearly resample the last axis to ``length`` (half-pixel, ``align_corners=False``).

    The official model does this inside its forward; a no-op when the length already matches.
    """
    if x.shape[-1] == length:
        return x
    lead = x.shape[:-1]
    out = F.interpolate(
        x.reshape(-1, 1, x.shape[-1]).float(), size=length, mode="linear", align_corners=False
    )
    return out.reshape(*lead, length)


class PatchTokenizer(MantisTokenGenerator):
    """``(N, L_0) -> (N, M, P)``: one token per patch for each of N single-channel series."""

    def __init__(self, config: ChorusTICConfig) -> None:
        super().__init__(
            hidden_dim=config.hidden_dim,
            num_patches=config.num_patches,
            patch_window_size=config.patch_size,
            scalar_scales=list(config.scalar_scales),
            hidden_dim_scalar_enc=config.hidden_dim_scalar_enc,
            epsilon_scalar_enc=config.epsilon_scalar_enc,
        )
        self.seq_len = config.seq_len

    def forward(self, x: Tensor) -> Tensor:  # type: ignore[override]
        if x.ndim != 2 or x.shape[-1] != self.seq_len:
            raise ValueError(f"PatchTokenizer expects (N, {self.seq_len}) series, got {tuple(x.shape)}")
        return super().forward(x.unsqueeze(1))

    def tokenize_chunked(self, x: Tensor, chunk: int | None) -> Tensor:
        """Tokenize ``(N, L_0)`` in chunks of ``chunk`` series (the conv maps are P x L_0 per series)."""
        if chunk is None or x.shape[0] <= chunk:
            return self(x)
        return torch.cat([self(x[i : i + chunk]) for i in range(0, x.shape[0], chunk)], dim=0)
