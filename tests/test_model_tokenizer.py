"""The closed-form patch tokenizer and the SDPA readout compute Mantis's functions (values and gradients)."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from mantis.architecture.transformer_v1_utils.transformer import Attention

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


def test_sdpa_readout_equals_mantis_attention_in_eval_and_train():
    torch.manual_seed(0)
    ro = SlotReadout(ChorusTICConfig.tiny()).double()
    x = torch.randn(5, 32, 16, dtype=torch.double)
    ro.eval()
    ours = ro(x)
    for attn, _ in ro.transformer.layers:
        attn.fn.__class__ = Attention
    assert torch.allclose(ours, ro(x), atol=1e-12)
