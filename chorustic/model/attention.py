"""Multi-head attention of the signal encoder: one function, one kernel choice.

Every attention of the signal encoder (the dual-axis temporal and channel blocks, the slot readout)
computes ``softmax(Q K' * scale + bias) V`` with dropout on the attention weights in training mode,
heads laid out ``(batch, heads, seq, head_dim)``. :func:`attention` is that function, and it picks the
kernel:

* ``F.scaled_dot_product_attention`` (flash / memory-efficient kernels on CUDA, the flash kernel on
  CPU) everywhere, except
* on CPU, sequences of at most :data:`CPU_EXPLICIT_MAX_SEQ` keys (16 patches, 17 readout tokens, a few
  channels): the same formula as two batched matrix products and a softmax. At 8-32 keys the explicit
  form is 1.2-2x faster forward+backward than the CPU flash kernel (``python
  benchmarks/attention_kernels.py``, one thread: 1953 x 4 heads x 16 tokens x 16 dims, 41 ms SDPA vs 26
  ms explicit; 17 tokens, 48 vs 23 ms; from 48-64 keys on SDPA is as fast or faster), and its score
  tensor (``B x H x L x L``, L <= 32) is at most twice the size of Q. Longer sequences (row
  interaction over the columns, column embedding, ICL) stay on SDPA, which is faster there.

The two forms agree to float rounding (tests/test_model_attention.py).

SDPA's CUDA kernels launch one block per (batch, head, query tile) in a grid whose batch dimension
holds at most 65,535 (pytorch/pytorch#142228, #146704: 'invalid configuration argument'); the signal
encoder's attentions run over far more rows than that (episodes x rows x slots x patches), so
:func:`attention` calls SDPA on slices of at most :data:`SDPA_MAX_BATCH` of the flattened leading
dimensions (the same function; one call when they fit).

:class:`PackedSelfAttention` is the self-attention layer of the dual-axis blocks: the parameters of
``nn.MultiheadAttention`` (``in_proj_weight``/``in_proj_bias`` packed Q/K/V, ``out_proj``; the released
checkpoint's names and torch's initialisation), computed by one packed projection and
:func:`attention`, without the input transposes, copies and per-head reshapes of
``F.multi_head_attention_forward`` (whose backward also zero-fills a ``3 x`` buffer for each of Q, K, V).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch
import torch.nn.functional as F
from torch import Tensor, nn

__all__ = ["CPU_EXPLICIT_MAX_SEQ", "PackedSelfAttention", "SDPA_MAX_BATCH", "attention", "kernels_of",
           "scale_query_rows"]

#: On CPU, sequences of at most this many keys use the explicit matmul-softmax form.
CPU_EXPLICIT_MAX_SEQ = 32

#: Largest flattened batch (the dimensions before heads) of one SDPA call: a CUDA grid dimension.
SDPA_MAX_BATCH = 65_535

_kernel_device: str | None = None


@contextlib.contextmanager
def kernels_of(device_type: str) -> Iterator[None]:
    """Choose the attention kernels of ``device_type`` ("cpu", "cuda") whatever the tensors' device.

    The pretraining planner traces a GPU run on CPU fake tensors; inside ``kernels_of("cuda")`` it
    measures the memory of the kernels the GPU will run (SDPA everywhere).
    """
    global _kernel_device
    previous, _kernel_device = _kernel_device, device_type
    try:
        yield
    finally:
        _kernel_device = previous


def attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    *,
    bias: Tensor | None = None,
    dropout_p: float = 0.0,
    scale: float | None = None,
) -> Tensor:
    """``softmax(q k' * scale + bias) v`` over ``(..., heads, seq, head_dim)`` tensors.

    ``bias``: additive logits broadcastable to ``(..., heads, q_seq, k_seq)`` (e.g. ``(B, 1, 1, L)``
    key biases: ``-inf`` removes a key). ``dropout_p`` applies to the attention weights (pass 0 in eval).
    """
    if (_kernel_device or q.device.type) == "cpu" and k.shape[-2] <= CPU_EXPLICIT_MAX_SEQ:
        s = q.shape[-1] ** -0.5 if scale is None else scale
        scores = (q if s == 1.0 else q * s) @ k.transpose(-1, -2)
        if bias is not None:
            scores = scores + bias
        weights = scores.softmax(dim=-1)
        if dropout_p > 0.0:
            weights = F.dropout(weights, p=dropout_p)
        return weights @ v
    lead = q.shape[:-3]
    n = lead.numel()
    if n <= SDPA_MAX_BATCH:
        return F.scaled_dot_product_attention(q, k, v, attn_mask=bias, dropout_p=dropout_p, scale=scale)
    q, k, v = (t.reshape(n, *t.shape[-3:]) for t in (q, k, v))
    if bias is not None:
        bias = bias.reshape((1,) * (len(lead) + 3 - bias.dim()) + bias.shape)  # every leading dim explicit
        if bias.shape[: len(lead)].numel() != 1:  # one bias per leading index: slice it with q
            bias = bias.expand(*lead, *bias.shape[len(lead):])
        bias = bias.flatten(0, len(lead) - 1)
    step = SDPA_MAX_BATCH
    out = torch.cat([
        F.scaled_dot_product_attention(
            q[i : i + step], k[i : i + step], v[i : i + step], dropout_p=dropout_p, scale=scale,
            attn_mask=None if bias is None else bias if bias.shape[0] == 1 else bias[i : i + step])
        for i in range(0, n, step)
    ])
    return out.view(*lead, *out.shape[1:])


class PackedSelfAttention(nn.MultiheadAttention):
    """Batch-first multi-head self-attention with ``nn.MultiheadAttention``'s parameters.

    ``forward(x, key_bias=None)``: ``x (B, L, E) -> (B, L, E)``; ``key_bias (B, L)`` is added to the
    logits of each key (what a float ``key_padding_mask`` does in ``nn.MultiheadAttention``).
    """

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0) -> None:
        super().__init__(embed_dim, num_heads, dropout=dropout, batch_first=True)

    def forward(self, x: Tensor, key_bias: Tensor | None = None) -> Tensor:  # type: ignore[override]
        b, n, e = x.shape
        w, w_b = scale_query_rows(self.in_proj_weight, self.in_proj_bias, (e // self.num_heads) ** -0.5)
        q, k, v = F.linear(x, w, w_b).view(b, n, 3, self.num_heads, -1).permute(2, 0, 3, 1, 4).unbind(0)
        bias = None if key_bias is None else key_bias.to(q.dtype)[:, None, None, :]
        out = attention(q, k, v, bias=bias, dropout_p=self.dropout if self.training else 0.0, scale=1.0)
        return self.out_proj(out.transpose(1, 2).reshape(b, n, e))


def scale_query_rows(weight: Tensor, bias: Tensor | None, scale: float) -> tuple[Tensor, Tensor | None]:
    """The packed Q/K/V projection ``(3E, E)`` (and bias) with its query rows multiplied by ``scale``.

    ``softmax((x W_q' s) (x W_k')')`` is the attention of ``scale=s``; scaling the ``E x E`` weight instead
    of the ``(batch, seq, E)`` queries saves a pass over the activations forward and backward."""
    e = weight.shape[0] // 3
    weight = torch.cat((weight[:e] * scale, weight[e:]))
    if bias is not None:
        bias = torch.cat((bias[:e] * scale, bias[e:]))
    return weight, bias
