"""CUDA correctness: what a GPU pretraining run and GPU inference rely on, checked on the GPU itself.

Skipped where no CUDA device is present (CI, the development machine); run on a lent GPU by
``tools/gpu/session.sh`` (``python -m pytest -m cuda``). ``CHORUSTIC_CUDA_TESTS_DEVICE=cpu`` rehearses them
on the CPU (bf16 autocast there too) before a GPU session, so that a mistake in a test does not cost GPU
minutes. Each test compares two ways of computing the same thing on the GPU (or the GPU with the CPU), by
relative error ``|a - b| / |b|`` over a whole tensor:
bf16 autocast rounds every product to 8 bits of mantissa, so two orders of the same bf16 work differ by
about 1e-3 to 1e-2; float32 work by far less than 1e-3.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import torch

from chorustic.testing.training import MICRO, micro_train

DEVICE = os.environ.get("CHORUSTIC_CUDA_TESTS_DEVICE", "cuda")
pytestmark = [pytest.mark.cuda,
              pytest.mark.skipif(DEVICE == "cuda" and not torch.cuda.is_available(), reason="needs a CUDA GPU")]

REPO = Path(__file__).resolve().parents[1]


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.detach().double().cpu(), b.detach().double().cpu()
    assert torch.isfinite(a).all() and torch.isfinite(b).all()
    return float((a - b).norm() / b.norm().clamp_min(1e-30))


def _first_step(tmp_path: Path, name: str, **train_kw) -> tuple[dict, torch.Tensor, torch.Tensor]:
    """One optimizer step of the micro model on CUDA: the step's numbers, the gradients (after clipping)
    and the parameters after the update."""
    from chorustic.training import Trainer

    cfg = micro_train(cpu_amp=DEVICE == "cpu", **train_kw)
    tr = Trainer(MICRO, cfg, tmp_path / name, device=DEVICE, progress=False)
    try:
        assert tr.use_amp and tr.amp_dtype == torch.bfloat16  # the configuration GPU pretraining runs
        res = tr.train_step()
        grads = torch.cat([p.grad.float().flatten() for p in tr.params])
        weights = torch.cat([p.detach().float().flatten() for p in tr.params])
        return res, grads, weights
    finally:
        tr.close()


def test_bf16_step_with_activation_checkpointing_matches_the_step_without(tmp_path):
    """Recomputation in the backward pass (non-reentrant checkpoints replay autocast) changes memory, not the
    step: the same loss, gradient norm and gradients as keeping every activation."""
    ref, g_ref, w_ref = _first_step(tmp_path, "keep", activation_checkpointing=False)
    res, g, w = _first_step(tmp_path, "recompute", activation_checkpointing=True)
    assert res["finite"] and ref["finite"]
    assert res["correct"] == ref["correct"] and res["queries"] == ref["queries"]  # the same episodes
    assert abs(res["loss"] - ref["loss"]) <= 1e-3 * abs(ref["loss"])
    assert abs(res["grad_norm"] - ref["grad_norm"]) <= 1e-2 * ref["grad_norm"]
    assert g_ref.abs().max() > 0
    assert _rel(g, g_ref) < 2e-2
    assert _rel(w, w_ref) < 1e-3


@pytest.mark.parametrize("micro_batch_size", [2, 8])
def test_micro_batch_layouts_give_the_same_loss_and_gradients(tmp_path, micro_batch_size):
    """A step of 8 episodes (one shape group) in micro-batches of 2, 4 or 8 with gradient accumulation: the
    same episodes, loss and gradients (the layout a run may change on resume, e.g. after running out of
    memory)."""
    kw = dict(shape_group_size=8, activation_checkpointing=False)
    ref, g_ref, w_ref = _first_step(tmp_path, "mb4", micro_batch_size=4, **kw)
    res, g, w = _first_step(tmp_path, f"mb{micro_batch_size}", micro_batch_size=micro_batch_size, **kw)
    assert res["queries"] == ref["queries"]
    assert abs(res["loss"] - ref["loss"]) <= 5e-3 * abs(ref["loss"])
    assert _rel(g, g_ref) < 2e-2
    assert _rel(w, w_ref) < 1e-3


def test_chorustic_inference_on_cuda_predicts_what_the_cpu_predicts(tmp_path):
    """The committed ChorusTIC-small on BasicMotions (UEA, 6 channels; inside the aeon wheel), fitted on its
    training split and predicting its test split with the deployment ensemble: on CUDA in float32 the
    probabilities of the CPU, and with the official fp16 task level (``use_amp``) the same predictions
    wherever the CPU's two most likely classes are not within rounding of each other."""
    from chorustic.data import load_dataset
    from chorustic.inference.classifier import ChorusTICClassifier

    ds = load_dataset("BasicMotions", tmp_path / "raw", offline=True)
    ckpt = REPO / "models" / "chorustic-small" / "model.safetensors"
    proba = {}
    tf32 = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False  # float32 is float32
    try:
        for device, amp in (("cpu", False), (DEVICE, False), (DEVICE, True)):
            clf = ChorusTICClassifier(checkpoint=str(ckpt), device=device, use_amp=amp, seed=0)
            proba[device, amp] = clf.fit(ds.X_train, ds.y_train).predict_proba(ds.X_test)
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = tf32
    cpu = proba["cpu", False]
    assert np.abs(proba[DEVICE, False] - cpu).max() < 1e-3
    top2 = np.sort(cpu, axis=1)[:, -2:]
    clear = top2[:, 1] - top2[:, 0] > 0.02
    assert clear.mean() > 0.5
    assert (proba[DEVICE, True].argmax(1) == cpu.argmax(1))[clear].all()
    assert np.abs(proba[DEVICE, True] - cpu).max() < 0.02


def test_compiled_stages_on_cuda_match_eager(tmp_path):
    """``compile_stages`` with inductor (Triton kernels; what ``--compile`` trains with on a GPU): the same
    logits and parameter gradients as the eager stages, in float32 (TF32 off on both sides)."""
    from chorustic.model import sample_rssc_assignment
    from chorustic.model.signal_encoder import plan_slots
    from chorustic.testing.checkpoints import randomized_chorustic
    from chorustic.training import TrainConfig

    torch._dynamo.reset()
    tf32 = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    try:
        model = randomized_chorustic(MICRO).to(DEVICE).train()
        stages = model.compile_stages()
        g = torch.Generator().manual_seed(0)
        b, t, n, c = 2, 12, 7, 3
        X = torch.randn(b, t, c, MICRO.seq_len, generator=g).to(DEVICE)
        y = (torch.arange(n) % 3).repeat(b, 1).to(DEVICE)
        gi = sample_rssc_assignment(torch.ones(b, c, dtype=torch.bool), num_groups=MICRO.num_groups,
                                    group_size=MICRO.group_size, generator=g)[:, 0]
        plan = plan_slots(gi[:, None], True).to(DEVICE)  # built on the CPU, as the data pipeline does
        kw = TrainConfig.tiny().forward_kwargs(DEVICE)
        outs, grads = [], []
        for extra in ({}, {"stages": stages}):
            model.zero_grad()
            out = model.episode_logits(X, y, plan=plan, **kw, **extra)
            out.square().sum().backward()
            outs.append(out.detach())
            grads.append(torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None]))
        assert grads[0].abs().max() > 0
        assert _rel(outs[1], outs[0]) < 1e-4
        assert _rel(grads[1], grads[0]) < 1e-3
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = tf32
        torch._dynamo.reset()
