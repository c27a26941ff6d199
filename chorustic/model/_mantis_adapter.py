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

from mantis.architecture.version1 import TokenGeneratorUnit, TransformerUnit

__all__ = ["MANTIS_VERSION", "MantisTokenGenerator", "MantisTransformerUnit"]

try:
    MANTIS_VERSION = version("mantis-tsfm")
except PackageNotFoundError:  # pragma: no cover - editable/vendored installs
    MANTIS_VERSION = "unknown"


class MantisTokenGenerator(TokenGeneratorUnit):
    """Mantis v1 ``TokenGeneratorUnit``: ``(N, 1, L) -> (N, num_patches, hidden_dim)``."""


class MantisTransformerUnit(TransformerUnit):
    """Mantis v1 ``TransformerUnit`` (formerly ``ViTUnit``): ``(N, M, P) -> (N, P)`` summary token.

    Built on CPU; move the whole model with ``.to(device)`` afterwards.
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
