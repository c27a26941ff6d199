"""Training-mode behaviour: gradients, freezing, leakage protection, padded batches of episodes."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from chorustic.model import ChorusTIC, ChorusTICConfig
from chorustic.testing.checkpoints import randomized_chorustic

pytestmark = pytest.mark.usefixtures("torch_single_thread")  # tests/conftest.py


TINY = ChorusTICConfig.tiny()


def _batch(b: int = 2, t: int = 10, n: int = 6, c: int = 3, k: int = 3, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(b, t, c, 64, generator=g)
    y = (torch.arange(n) % k).repeat(b, 1)
    return X, y


def test_train_forward_returns_all_classes_and_gradients_reach_every_trainable_parameter():
    model = randomized_chorustic(TINY).train()
    X, y = _batch()
    out = model(X, y, return_all_classes=True, generator=torch.Generator().manual_seed(0))
    assert out.shape == (2, 4, TINY.max_classes)
    loss = torch.nn.functional.cross_entropy(
        out.reshape(-1, TINY.max_classes), torch.tensor([0, 1, 2, 0] * 2)
    )
    loss.backward()
    no_grad = [
        n
        for n, p in model.named_parameters()
        if p.requires_grad and (p.grad is None or not p.grad.abs().sum())
    ]
    assert no_grad == []
    assert not model.row_interaction.tf_row.rope.freqs.requires_grad  # RoPE frequencies are fixed


def test_frozen_signal_encoder():
    model = ChorusTIC(dataclasses.replace(TINY, freeze_signal_encoder=True, dual_axis_dropout=0.1))
    model.train()
    assert model.signal_encoder_frozen and not model.signal_encoder.training and model.rssc.training
    assert not any(p.requires_grad for p in model.signal_encoder.parameters())
    X, y = _batch()
    out = model(X, y, return_all_classes=True, generator=torch.Generator().manual_seed(0))
    out.sum().backward()
    assert all(p.grad is None for p in model.signal_encoder.parameters())
    assert model.rssc.slot_projector[1].weight.grad is not None
    counts = model.parameter_counts()
    rope = model.row_interaction.tf_row.rope.freqs.numel()  # a fixed (non-trainable) parameter
    assert counts["trainable"] == counts["total"] - counts["signal_encoder"] - rope
    model.freeze_signal_encoder(False)
    model.train()
    assert model.signal_encoder.training and model.signal_encoder.dropout_active()


def test_queries_never_reach_other_queries_even_through_gradients():
    """d logits[query j] / d X[query k] == 0 for k != j; context rows do influence every query."""
    model = randomized_chorustic(TINY).train()
    X, y = _batch(b=1, t=9, n=6)
    X.requires_grad_(True)
    gi = torch.randint(0, 3, (1, 4, 4), generator=torch.Generator().manual_seed(1))
    out = model(X, y, group_idx=gi, return_all_classes=True)  # (1, 3, K_max)
    for j in range(3):
        (grad,) = torch.autograd.grad(out[0, j].sum(), X, retain_graph=True)
        per_row = grad[0].abs().sum(dim=(1, 2))
        assert bool((per_row[:6] > 0).all())  # context rows
        assert per_row[6 + j] > 0  # its own series
        others = [6 + i for i in range(3) if i != j]
        assert float(per_row[others].max()) == 0.0


def test_padded_batch_equals_separate_episodes():
    """Episodes with different channel counts, padded to a common C and masked, give the same logits as alone."""
    torch.manual_seed(0)
    model = ChorusTIC(TINY).eval()
    g = torch.Generator().manual_seed(0)
    a = torch.randn(1, 10, 2, 64, generator=g)
    b = torch.randn(1, 10, 5, 64, generator=g)
    X = torch.zeros(2, 10, 5, 64)
    X[0, :, :2], X[1] = a[0], b[0]
    mask = torch.tensor([[True, True, False, False, False], [True] * 5])
    y = torch.tensor([[0, 1, 0, 1, 0, 1], [0, 1, 2, 0, 1, 2]])
    gi = torch.stack([torch.randint(0, 2, (4, 4), generator=g), torch.randint(0, 5, (4, 4), generator=g)])
    with torch.no_grad():
        both = model(X, y, channel_mask=mask, group_idx=gi, return_all_classes=True)
        alone_a = model(a, y[:1], group_idx=gi[:1], return_all_classes=True)
        alone_b = model(b, y[1:], group_idx=gi[1:], return_all_classes=True)
    assert torch.allclose(both[0], alone_a[0], atol=1e-5)
    assert torch.allclose(both[1], alone_b[0], atol=1e-5)
    with pytest.raises(ValueError, match="same number of classes"):
        model(X, y, channel_mask=mask, group_idx=gi)  # K differs: only return_all_classes allows that


def test_dropout_disables_the_dedupe_shortcut_only_when_active():
    model = ChorusTIC(dataclasses.replace(TINY, dual_axis_dropout=0.2))
    model.train()
    assert model.signal_encoder.dropout_active()
    model.eval()
    assert not model.signal_encoder.dropout_active()
    X, y = _batch(b=1)
    model.train()
    out = model(X, y, return_all_classes=True, generator=torch.Generator().manual_seed(0))
    assert bool(torch.isfinite(out).all())


# ---------------------------------------------------------------------------------- pretraining path
def _episode_inputs(c: int = 3, seed: int = 0, b: int = 2, t: int = 10, n: int = 6):
    from chorustic.model import sample_rssc_assignment

    X, y = _batch(b=b, t=t, n=n, c=c, seed=seed)
    X = torch.nn.functional.interpolate(X.reshape(-1, 1, 64), size=TINY.seq_len, mode="linear").view(b, t, c, -1)
    gi = sample_rssc_assignment(torch.ones(b, c, dtype=torch.bool), num_groups=4, group_size=4,
                                generator=torch.Generator().manual_seed(seed))[:, 0]
    return X, y, gi


@pytest.mark.parametrize("channels", [1, 3, 20])
def test_episode_logits_is_the_forward_function(channels):
    """The pretraining computation (static shapes, slot plan, chunks) equals the reference forward."""
    from chorustic.model.signal_encoder import plan_slots

    model = randomized_chorustic(TINY).eval()
    X, y, gi = _episode_inputs(c=channels)
    with torch.no_grad():
        ref = model(X, y, group_idx=gi, return_all_classes=True)
        for dedupe in (False, True):
            plan = plan_slots(gi[:, None], dedupe)
            out = model.episode_logits(X, y, plan=plan, signal_rows=6, cdm_columns=7, interaction_rows=5,
                                       group_chunk=3)
            assert torch.allclose(out, ref, atol=1e-5), (dedupe, (out - ref).abs().max())


def test_cache_sized_chunks_give_the_same_gradients_as_one_pass():
    """The CPU layout of a training step (``TrainConfig.forward_kwargs("cpu")``: the signal encoder in calls of
    a few groups, column distribution modeling and the row interaction in slices) is the one-pass function."""
    from chorustic.training import TrainConfig

    model = randomized_chorustic(TINY).train()
    X, y, gi = _episode_inputs(c=5, seed=4)
    chunked = {**TrainConfig.tiny().forward_kwargs("cpu"), "group_chunk": 3, "cdm_columns": 7, "interaction_rows": 5}
    _assert_same_step(model, (X, y, gi), TrainConfig.tiny().forward_kwargs("cuda"), chunked)


def _assert_same_step(model, inputs, kw_a: dict, kw_b: dict) -> None:
    """``episode_logits(*inputs, **kw_a)`` and ``(**kw_b)``: the same outputs and parameter gradients."""
    grads, outs = [], []
    for kw in (kw_a, kw_b):
        model.zero_grad()
        out = model.episode_logits(*inputs, **kw)
        out.square().sum().backward()
        outs.append(out.detach())
        grads.append(torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None]))
    assert torch.allclose(outs[0], outs[1], atol=1e-5)
    assert grads[0].abs().max() > 0
    assert torch.allclose(grads[0], grads[1], rtol=1e-4, atol=1e-6), (grads[0] - grads[1]).abs().max()


def test_activation_checkpointing_gives_the_same_gradients_with_dropout():
    """Non-reentrant checkpointing of every chunk replays the dropout masks: gradients are identical."""
    model = randomized_chorustic(dataclasses.replace(TINY, dual_axis_dropout=0.2, readout_dropout=0.2)).train()
    X, y, gi = _episode_inputs(c=5, seed=3)
    grads = []
    for recompute in (False, True):
        model.zero_grad()
        torch.manual_seed(11)
        out = model.episode_logits(X, y, gi, recompute=recompute, signal_rows=6, cdm_columns=7, interaction_rows=5)
        out.square().sum().backward()
        grads.append(torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None]))
    assert grads[0].abs().max() > 0
    assert torch.allclose(grads[0], grads[1], rtol=0, atol=1e-6), (grads[0] - grads[1]).abs().max()


def test_signal_dropout_in_training_selects_the_full_slot_schedule():
    assert not TINY.signal_dropout_in_training
    assert dataclasses.replace(TINY, readout_dropout=0.1).signal_dropout_in_training
    assert not dataclasses.replace(TINY, readout_dropout=0.1, freeze_signal_encoder=True).signal_dropout_in_training
    assert ChorusTICConfig.paper().signal_dropout_in_training is False  # frozen (released configuration)
    assert dataclasses.replace(ChorusTICConfig.paper(), freeze_signal_encoder=False).signal_dropout_in_training


@pytest.mark.slow(reason="dynamo and AOTAutograd trace the 8 graphs of a training step (~70 s)")
def test_compiled_stages_give_the_same_gradients_and_leave_the_module_unchanged():
    """``compile_stages`` (what ``TrainConfig.compile`` uses): the stages are captured by dynamo with dynamic
    sizes and differentiated by AOTAutograd (``aot_eager``: the graphs inductor would compile, run by
    eager kernels, so the test needs no C++ toolchain), over episodes of different shapes and slot plans:
    the same outputs and gradients as the eager stages, with the signal encoder trained or frozen; the state
    dict and the eager path are untouched."""
    from chorustic.training import TrainConfig

    torch._dynamo.reset()
    model = randomized_chorustic(TINY).train()
    keys = list(model.state_dict())
    stages = model.compile_stages(backend="aot_eager")
    assert set(stages) == {"tokenize", "encode_chunk", "column_embedding", "row_interaction", "icl"}
    kw = {**TrainConfig.tiny().forward_kwargs("cpu"), "group_chunk": 3, "cdm_columns": 7, "interaction_rows": 5}
    for c, t, n, seed in ((5, 10, 6, 4), (1, 9, 4, 5), (3, 12, 7, 6)):
        _assert_same_step(model, _episode_inputs(c=c, seed=seed, t=t, n=n), kw, {**kw, "stages": stages})
    assert list(model.state_dict()) == keys
    model.freeze_signal_encoder(True)  # the frozen encoder (no-grad signal level) runs its stages compiled too
    from torch._dynamo.utils import counters

    graphs = counters["stats"]["unique_graphs"]
    _assert_same_step(model, _episode_inputs(c=4, seed=7), kw, {**kw, "stages": stages})
    assert counters["stats"]["unique_graphs"] > graphs  # no-grad graphs of the signal stages
    torch._dynamo.reset()


@pytest.mark.slow(reason="compiles the stages past torch's recompile limit (~12 s)")
def test_compiled_stages_keep_compiling_past_torchs_recompile_limit():
    """A stage meets more variants than torch's default limit of 8 graphs (size-1 slot counts, optional
    channel bias, grad modes, input layouts): each stage may hold ``STAGE_RECOMPILE_LIMIT`` graphs
    whatever the global limit, so a new variant compiles instead of silently running eager."""
    from torch._dynamo.testing import CompileCounter

    from chorustic.model.chorustic import STAGE_RECOMPILE_LIMIT

    torch._dynamo.reset()
    model = randomized_chorustic(TINY).train()
    counter = CompileCounter()
    encode = model.compile_stages(backend=counter)["encode_chunk"]
    g = torch.Generator().manual_seed(0)
    m, p = 4, TINY.hidden_dim
    with torch._dynamo.config.patch(recompile_limit=1):
        for u, with_bias in ((1, False), (3, False), (3, True)):  # three variants, one allowed globally
            tokens = torch.randn(5, u, m, p, generator=g)
            bias = torch.zeros(5, u) if with_bias else None
            before = counter.frame_count
            out = encode(tokens, bias)
            assert counter.frame_count == before + 1, (u, with_bias)  # compiled, not run eager
            torch.testing.assert_close(out, model.signal_encoder.encode_chunk(tokens, bias))
        assert torch._dynamo.config.recompile_limit == 1  # the limit is scoped to the stage calls
    assert STAGE_RECOMPILE_LIMIT > 8
    torch._dynamo.reset()


def test_compiled_stages_keep_one_graph_when_sizes_that_were_equal_part():
    """Sizes equal in the first call (3 slots of 3 group instances) are separate symbols: a call where they
    differ reuses the graph (torch's duck sizing would guard on their equality and compile a second)."""
    from torch._dynamo.testing import CompileCounter

    torch._dynamo.reset()
    model = randomized_chorustic(TINY).train()
    counter = CompileCounter()
    encode = model.compile_stages(backend=counter)["encode_chunk"]
    g = torch.Generator().manual_seed(0)
    for n, u in ((3, 3), (5, 2), (2, 4)):
        tokens = torch.randn(n, u, 4, TINY.hidden_dim, generator=g)
        torch.testing.assert_close(encode(tokens, None), model.signal_encoder.encode_chunk(tokens, None))
        assert counter.frame_count == 1, (n, u)
    torch._dynamo.reset()


def test_train_config_compile_routes_the_step_through_the_compiled_stages():
    """``TrainConfig.compile`` compiles the stages (lazily), not the whole step; off by default."""
    from chorustic.training import TrainConfig
    from chorustic.training.trainer import _PretrainForward

    model = randomized_chorustic(TINY)
    assert _PretrainForward(model, TrainConfig.tiny(), "cpu").stages is None
    fwd = _PretrainForward(model, dataclasses.replace(TrainConfig.tiny(), compile=True), "cpu")
    assert set(fwd.stages) == {"tokenize", "encode_chunk", "column_embedding", "row_interaction", "icl"}
    assert not any(name.startswith("stages") for name in fwd.state_dict())
