"""The closed-form patch tokenizer and the SDPA readout compute Mantis's functions (values and gradients)."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from mantis.architecture.transformer_v1_utils.transformer import Attention
from mantis.architecture.version1 import TransformerUnit

from chorustic.model import ChorusTICConfig
from chorustic.model.patch_tokenizer import PatchTokenizer
from chorustic.model.slot_readout import SlotReadout


pytestmark = pytest.mark.usefixtures("torch_single_thread")  # tests/conftest.py


def _series(n: int, length: int, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    x = (torch.randn(n, length, generator=g).cumsum(-1) * 3 + 5).double()
    x[0] = 0.0  # a constant series (std 0)
    x[1, : length // 4] = 0.0  # a zero-filled head
    return x


@pytest.mark.parametrize("config", [ChorusTICConfig.tiny(), ChorusTICConfig.small(),
                                    dataclasses.replace(ChorusTICConfig.tiny(), seq_len=96, num_patches=8)],
                         ids=["tiny", "small", "odd-patch"])
def test_closed_form_tokenizer_equals_mantis_forward_and_gradients(config):
    torch.manual_seed(0)
    tok = PatchTokenizer(config).double()
    with torch.no_grad():
        for p in tok.parameters():
            p.add_(0.1 * torch.randn_like(p))
    x = _series(6, config.seq_len)
    ours, ref = tok(x), tok.reference_forward(x)
    assert ours.dtype == torch.float64
    assert (ours - ref).abs().max() < 1e-9 * max(1.0, float(ref.detach().abs().max()))
    params = [p for p in tok.parameters()]
    g_ours = torch.autograd.grad((ours * torch.linspace(-1, 1, ours.numel()).view_as(ours).double()).sum(), params)
    g_ref = torch.autograd.grad((ref * torch.linspace(-1, 1, ref.numel()).view_as(ref).double()).sum(), params)
    for a, b in zip(g_ours, g_ref):
        assert (a - b).abs().max() <= 1e-8 * max(1.0, float(b.abs().max()))


def test_closed_form_tokenizer_in_float32_at_the_released_width():
    tok = PatchTokenizer(ChorusTICConfig.paper())
    x = _series(4, 512).float()
    assert torch.allclose(tok(x), tok.reference_forward(x), atol=2e-5)


def test_tokenizer_statistics_stay_float32_under_bf16_autocast():
    tok = PatchTokenizer(ChorusTICConfig.tiny())
    x = _series(3, 512).float()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = tok(x)
    # only the final projection runs in bf16: close to the float32 result at bf16 precision
    assert torch.allclose(out.float(), tok(x), atol=0.05)


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_readout_equals_mantis_transformer_unit_values_and_gradients(depth):
    """Our readout (SDPA/explicit attention, last layer for the summary token only) vs Mantis's own
    ``TransformerUnit.forward`` with Mantis's hand-written attention, on the same parameters."""
    torch.manual_seed(0)
    cfg = dataclasses.replace(ChorusTICConfig.tiny(), readout_depth=depth)
    ro = SlotReadout(cfg).double()
    mantis = SlotReadout(cfg).double()
    mantis.load_state_dict(ro.state_dict())
    for attn, _ in mantis.transformer.layers:
        attn.fn.__class__ = Attention
    x = torch.randn(5, cfg.num_patches, cfg.hidden_dim, dtype=torch.double)
    xs = [x.clone().requires_grad_(), x.clone().requires_grad_()]
    ours = ro(xs[0])
    ref = TransformerUnit.forward(mantis, xs[1], output_token="cls_token")
    torch.testing.assert_close(ours, ref, atol=1e-12, rtol=0)
    w = torch.linspace(-1, 1, ours.numel(), dtype=torch.double).view_as(ours)
    (ours * w).sum().backward()
    (ref * w).sum().backward()
    torch.testing.assert_close(xs[0].grad, xs[1].grad, atol=1e-12, rtol=0)
    for (name, p), q in zip(ro.named_parameters(), mantis.parameters()):
        torch.testing.assert_close(p.grad, q.grad, atol=1e-12, rtol=0, msg=name)
    ro.eval(), mantis.eval()
    with torch.no_grad():
        torch.testing.assert_close(ro(x), TransformerUnit.forward(mantis, x, output_token="cls_token"), atol=1e-12, rtol=0)
