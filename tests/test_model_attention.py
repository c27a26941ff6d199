"""The signal encoder's attention (chorustic/model/attention.py): both kernels compute the same function,
and the packed self-attention layer is ``nn.MultiheadAttention`` with the same parameters."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from chorustic.model.attention import CPU_EXPLICIT_MAX_SEQ, PackedSelfAttention, attention, kernels_of

pytestmark = pytest.mark.usefixtures("torch_single_thread")  # tests/conftest.py


def _grads(fn, *inputs):
    inputs = [t.detach().clone().requires_grad_() for t in inputs]
    out = fn(*inputs)
    out.backward(torch.linspace(-1, 1, out.numel()).view_as(out))
    return out.detach(), [t.grad for t in inputs]


@pytest.mark.parametrize("seq", [4, 17, CPU_EXPLICIT_MAX_SEQ, CPU_EXPLICIT_MAX_SEQ + 1])
def test_explicit_and_sdpa_kernels_agree_with_key_bias(seq):
    torch.manual_seed(0)
    q, k, v = (torch.randn(5, 3, seq, 8, dtype=torch.float64) for _ in range(3))
    bias = torch.zeros(5, 1, 1, seq, dtype=torch.float64)
    bias[:, ..., -1] = float("-inf")  # an absent key
    bias[:, ..., 0] = torch.tensor(3.0).log()  # a key standing for three copies
    ref = _grads(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=bias, scale=0.3), q, k, v)
    for device in ("cpu", "cuda"):  # the explicit form on CPU for short sequences, SDPA otherwise
        with kernels_of(device):
            out, grads = _grads(lambda q, k, v: attention(q, k, v, bias=bias, scale=0.3), q, k, v)
        torch.testing.assert_close(out, ref[0])
        for g, r in zip(grads, ref[1]):
            torch.testing.assert_close(g, r)


def test_explicit_kernel_only_for_short_sequences_on_cpu(monkeypatch):
    calls = []
    real = F.scaled_dot_product_attention
    monkeypatch.setattr(F, "scaled_dot_product_attention", lambda *a, **kw: calls.append(1) or real(*a, **kw))
    short = torch.randn(2, 2, CPU_EXPLICIT_MAX_SEQ, 4)
    long = torch.randn(2, 2, CPU_EXPLICIT_MAX_SEQ + 1, 4)
    attention(short, short, short)
    assert calls == []
    attention(long, long, long)
    assert calls == [1]
    with kernels_of("cuda"):  # what the planner traces for a GPU run
        attention(short, short, short)
    assert calls == [1, 1]


def test_explicit_kernel_drops_attention_weights_in_training():
    torch.manual_seed(0)
    q = torch.randn(4, 2, 6, 8)
    v = torch.randn(4, 2, 6, 8)
    plain = attention(q, q, v)
    torch.manual_seed(1)
    dropped = attention(q, q, v, dropout_p=0.5)
    torch.manual_seed(1)
    again = attention(q, q, v, dropout_p=0.5)
    assert not torch.allclose(plain, dropped)
    torch.testing.assert_close(dropped, again)  # the same seed draws the same masks


@pytest.mark.parametrize("seq,heads", [(16, 4), (3, 2)])
@pytest.mark.parametrize("with_bias", [False, True])
def test_packed_self_attention_is_multihead_attention(seq, heads, with_bias):
    torch.manual_seed(0)
    ours = PackedSelfAttention(32, heads).double()
    ref = nn.MultiheadAttention(32, heads, batch_first=True).double()
    ref.load_state_dict(ours.state_dict())  # same parameter names
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in ref.named_parameters()]
    x = torch.randn(6, seq, 32, dtype=torch.float64)
    bias = None
    if with_bias:
        bias = torch.zeros(6, seq, dtype=torch.float64)
        bias[:, -1] = float("-inf")
        bias[:, 0] = torch.tensor(2.0).log()
    out, (gx,) = _grads(lambda x: ours(x, bias), x)
    ref_out, (ref_gx,) = _grads(lambda x: ref(x, x, x, key_padding_mask=bias, need_weights=False)[0], x)
    torch.testing.assert_close(out, ref_out)
    torch.testing.assert_close(gx, ref_gx)
    for (name, p), (_, r) in zip(ours.named_parameters(), ref.named_parameters()):
        torch.testing.assert_close(p.grad, r.grad, msg=name)


@pytest.mark.parametrize("bias_shape", [None, (3, 5, 1, 1, 40), (1, 1, 40), (3, 1, 1, 1, 40), (5, 2, 1, 40)])
def test_sdpa_calls_are_sliced_to_the_largest_batch_a_cuda_grid_holds(monkeypatch, bias_shape):
    """More leading rows than a CUDA grid dimension holds (SDPA_MAX_BATCH): SDPA on slices, the same
    function and gradients, whatever the bias broadcasts over."""
    import chorustic.model.attention as attn

    torch.manual_seed(0)
    q, k, v = (torch.randn(3, 5, 2, 40, 8, dtype=torch.float64) for _ in range(3))
    bias = None if bias_shape is None else torch.randn(bias_shape, dtype=torch.float64)
    ref = _grads(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=bias, scale=0.3), q, k, v)
    calls = []
    real = F.scaled_dot_product_attention
    monkeypatch.setattr(F, "scaled_dot_product_attention", lambda *a, **kw: calls.append(a[0].shape[0]) or real(*a, **kw))
    monkeypatch.setattr(attn, "SDPA_MAX_BATCH", 4)
    with kernels_of("cuda"):
        out, grads = _grads(lambda q, k, v: attention(q, k, v, bias=bias, scale=0.3), q, k, v)
    assert calls == [4, 4, 4, 3]
    torch.testing.assert_close(out, ref[0])
    for g, r in zip(grads, ref[1]):
        torch.testing.assert_close(g, r)
