"""The one place that imports ``tabicl``: the TabICL attention blocks of ChorusTIC's task level.

ChorusTIC's task level IS the TabICL v1 architecture (column embedding by an induced-attention set
transformer, row interaction with rotary positions, split-masked ICL transformer). The installed
``tabicl`` (2.x) ships the TabICL v2 *stages*, but its *blocks* with their defaults (no scalable
softmax, no feature grouping, not target-aware) are the v1 blocks, with v1 parameter names:

* ``SetTransformer`` of ``InducedSelfAttentionBlock`` (``ind_vectors``, ``multihead_attn1/2``),
  inducing points reading the first ``train_size`` rows only;
* ``Encoder`` of pre-norm ``MultiheadAttentionBlock`` (``attn.in_proj_*``, ``attn.out_proj``,
  ``linear1/2``, ``norm1/2``) with optional interleaved RoPE (``rope.freqs``) and the
  ``train_size`` split (queries attend to the context rows only);
* ``KVCache`` for context-once / queries-in-chunks inference;
* ``OneHotAndLinear`` label embedding.

The v2 stage classes (``ColEmbedding``, ``RowInteraction``, ``ICLearning``) are not used: their
inference path runs through tabicl's ``InferenceManager`` (own batching, AMP and offloading), which
would take batching, mixed precision and out-of-memory handling out of our hands; ChorusTIC's stage
modules compose the blocks instead (chorustic/model/column_distribution_modeling.py, ...). An
upgrade of ``tabicl`` that changes these blocks touches this file only.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from tabicl._model.encoders import Encoder, SetTransformer
from tabicl._model.kv_cache import KVCache
from tabicl._model.layers import OneHotAndLinear

__all__ = ["TABICL_VERSION", "Encoder", "KVCache", "OneHotAndLinear", "SetTransformer"]

try:
    TABICL_VERSION = version("tabicl")
except PackageNotFoundError:  # pragma: no cover
    TABICL_VERSION = "unknown"
