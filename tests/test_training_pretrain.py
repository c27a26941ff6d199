"""Pretraining: the loss falls, resume is exact, checkpoints/logs/curves are written, options work."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
import torch

from chorustic.cli import main
from chorustic.model import load_checkpoint, save_checkpoint
from chorustic.model.chorustic import ChorusTIC
from chorustic.training import Trainer, TrainingAborted, build_validation_set, evaluate
from chorustic.training.validation import reference_accuracies
from chorustic.training.loss import query_cross_entropy
from chorustic.testing.training import MICRO, MICRO_PRIOR, micro_train

pytestmark = pytest.mark.usefixtures("torch_single_thread")  # tests/conftest.py


@pytest.mark.slow(reason="trains for a few seconds (~5 s)")
def test_training_loss_falls_within_a_minute(tmp_path):
    tr = Trainer(MICRO, micro_train(steps=60, micro_batch_size=8, val_episodes=16, val_batch_size=8,
                                    checkpoint_every=1000, val_every=1000, log_every=1000), tmp_path,
                 progress=False)
    before = tr.validate()["val_loss"]
    losses = [tr.train_step()["loss"] for _ in range(60)]
    after = tr.validate()["val_loss"]
    first, last = np.mean(losses[:10]), np.mean(losses[-10:])
    assert last < first - 0.1, (first, last)
    assert after < before - 0.05, (before, after)


def test_resume_reproduces_the_uninterrupted_run_exactly(tmp_path):
    cfg = micro_train()
    a = Trainer(MICRO, cfg, tmp_path / "a", progress=False)
    uninterrupted = [a.train_step()["loss"] for _ in range(6)]

    b = Trainer(MICRO, cfg, tmp_path / "b", progress=False)
    b.train(steps=3)  # validates at steps 0 and 3 and checkpoints at step 3
    del b
    resumed = Trainer.resume(tmp_path / "b", progress=False)
    assert resumed.step == 3 and resumed.episodes_seen == 24
    after = [resumed.train_step()["loss"] for _ in range(3)]
    assert after == uninterrupted[3:]  # exactly, not approximately
    # and the weights are identical too
    for (ka, va), (kb, vb) in zip(a.model.state_dict().items(), resumed.model.state_dict().items()):
        assert ka == kb and torch.equal(va, vb), ka


def test_run_directory_log_curve_and_model_checkpoint(tmp_path):
    tr = Trainer(MICRO, micro_train(), tmp_path, progress=False, notes={"purpose": "test"})
    summary = tr.train()
    assert summary["step"] == 6 and summary["episodes_seen"] == 48
    for name in ("run.json", "log.jsonl", "summary.json", "curve.png", "model.safetensors"):
        assert (tmp_path / name).is_file(), name
    assert sorted(p.name for p in (tmp_path / "state").glob("*.pt")) == ["step_0000003.pt", "step_0000006.pt"]
    recs = [json.loads(line) for line in (tmp_path / "log.jsonl").read_text().splitlines()]
    train = [r for r in recs if r["kind"] == "train"]
    val = [r for r in recs if r["kind"] == "val"]
    assert [r["step"] for r in train] == [1, 2, 3, 4, 5, 6]
    assert [r["step"] for r in val] == [0, 3, 6]
    assert all(np.isfinite(r["loss"]) and 0 <= r["acc"] <= 1 and r["episodes_per_s"] > 0 for r in train)
    model = load_checkpoint(tmp_path / "model.safetensors")
    assert model.config == MICRO
    prov = model.provenance["training"]
    assert prov["step"] == 6 and prov["episodes_seen"] == 48 and prov["validation"]["val_acc"] == val[-1]["val_acc"]
    for k, v in model.state_dict().items():
        assert torch.equal(v, tr.model.state_dict()[k].cpu()), k
    with pytest.raises(FileExistsError, match="--resume"):
        Trainer(MICRO, micro_train(), tmp_path, progress=False)


def test_validation_set_is_fixed_and_evaluation_does_not_touch_training_rngs():
    v1 = build_validation_set(MICRO_PRIOR, 8, 4, seed=5)
    v2 = build_validation_set(MICRO_PRIOR, 8, 4, seed=5)
    assert all(np.array_equal(a.X, b.X) and np.array_equal(a.y, b.y) for a, b in zip(v1, v2))
    torch.manual_seed(0)
    model = ChorusTIC(dataclasses.replace(MICRO, seq_len=512))
    state = torch.get_rng_state()
    r1 = evaluate(model, v1, seed=3)
    assert torch.equal(state, torch.get_rng_state())
    assert evaluate(model, v1, seed=3) == r1
    assert set(r1) >= {"val_loss", "val_acc"} and 0 <= r1["val_acc"] <= 1
    refs = reference_accuracies(v1)
    assert 0 < refs["context_majority"] <= 1 and 0 < refs["one_nn"] <= 1


def test_reference_accuracies_on_a_hand_made_episode():
    from chorustic.prior import EpisodeBatch

    t = np.linspace(0, 1, 16)
    shapes = [np.sin(2 * np.pi * t), np.cos(2 * np.pi * t)]
    y = np.array([[0, 0, 1, 0, 1, 1]])  # context 0,0,1 (majority 0); queries 0,1,1
    X = np.stack([shapes[k] + 0.01 * i for i, k in enumerate(y[0])])[None, :, None, :].astype(np.float32)
    X = np.concatenate([X, np.zeros_like(X)], axis=2)  # a padding channel, masked out
    batch = EpisodeBatch(X, y, np.array([[True, False]]), 3, np.array([2]), [None])
    refs = reference_accuracies([batch])
    assert refs["context_majority"] == pytest.approx(1 / 3) and refs["one_nn"] == 1.0


def test_query_cross_entropy_masks_labels_beyond_k():
    torch.manual_seed(0)
    logits = torch.randn(3, 5, 10)
    y = torch.tensor([[0, 1, 1, 0, 1], [2, 0, 1, 2, 2], [3, 3, 0, 1, 2]])
    k = torch.tensor([2, 3, 4])
    loss, correct = query_cross_entropy(logits, y, k)
    for b in range(3):
        ref = torch.nn.functional.cross_entropy(logits[b, :, : k[b]], y[b])
        assert torch.allclose(loss[b], ref)
        assert correct[b] == (logits[b, :, : k[b]].argmax(-1) == y[b]).sum()
    unmasked, _ = query_cross_entropy(logits, y, k, mask_unused=False)
    assert (unmasked > loss).all()


def test_frozen_signal_encoder_and_partial_initialization(tmp_path):
    torch.manual_seed(123)
    donor = ChorusTIC(MICRO)
    src = save_checkpoint(tmp_path / "donor.safetensors", donor, provenance={"note": "random donor"})
    frozen = dataclasses.replace(MICRO, freeze_signal_encoder=True)
    with pytest.raises(ValueError, match="would stay at its random initialization"):
        Trainer(frozen, micro_train(steps=2), tmp_path / "random_frozen", progress=False)
    with pytest.warns(UserWarning, match="would stay at its random initialization"):  # only on purpose
        Trainer(frozen, micro_train(steps=2), tmp_path / "random_frozen", progress=False, allow_random_frozen=True)
    tr = Trainer(frozen, micro_train(steps=2), tmp_path / "run", progress=False,
                 init=[{"kind": "checkpoint", "spec": str(src), "parts": ["encoder"]}])
    enc0 = {k: v.clone() for k, v in tr.model.signal_encoder.state_dict().items()}
    icl0 = {k: v.clone() for k, v in tr.model.icl.state_dict().items()}
    for k, v in donor.signal_encoder.state_dict().items():
        assert torch.equal(enc0[k], v), k  # initialized from the donor
    assert not all(torch.equal(icl0[k], v) for k, v in donor.icl.state_dict().items())  # not copied
    tr.train()
    for k, v in tr.model.signal_encoder.state_dict().items():
        assert torch.equal(enc0[k], v), k  # frozen: unchanged by training
    assert not all(torch.equal(icl0[k], v) for k, v in tr.model.icl.state_dict().items())  # trained
    bad = dataclasses.replace(MICRO, hidden_dim=32)
    with pytest.raises(ValueError, match="architecture differs"):
        Trainer(bad, micro_train(), tmp_path / "bad", progress=False,
                init=[{"kind": "checkpoint", "spec": str(src), "parts": ["signal"]}])


def test_non_finite_losses_abort_with_a_clear_error(tmp_path, monkeypatch):
    tr = Trainer(MICRO, micro_train(max_consecutive_bad_steps=2), tmp_path, progress=False)
    monkeypatch.setattr(tr.model, "episode_logits", lambda X, y, gi=None, **kw: torch.full(
        (X.shape[0], X.shape[1] - y.shape[1], 10), float("nan"), requires_grad=True))
    tr.train_step()
    with pytest.raises(TrainingAborted, match="non-finite"):
        tr.train_step()


def test_pretrain_cli_with_ablations_then_resume(tmp_path, capsys):
    mcfg = tmp_path / "micro.json"
    mcfg.write_text(json.dumps(MICRO.to_dict()))
    tcfg = tmp_path / "train.json"
    tcfg.write_text(json.dumps(micro_train(steps=2, checkpoint_every=1, val_every=2).to_dict()))
    out = tmp_path / "run"
    args = ["pretrain", "--model-config", str(mcfg), "--train-config", str(tcfg), "--out-dir", str(out),
            "--no-channel-axis-attention", "--no-calibration", "--no-cross-channel-rules", "--no-progress",
            "--threads", "1"]
    assert main(args) == 0
    info = json.loads((out / "run.json").read_text())
    assert info["model_config"]["use_channel_axis_attention"] is False
    assert info["model_config"]["col_embedding_mode"] == "linear"
    assert info["train_config"]["prior"]["cross_channel_rules"] is False
    assert main(["pretrain", "--out-dir", str(out), "--resume", "--steps", "3", "--no-progress"]) == 0
    assert json.loads((out / "summary.json").read_text())["step"] == 3
    assert main(args) == 2  # refuses to overwrite an existing run
    assert "already holds a training run" in capsys.readouterr().err
    assert main(["pretrain", "--out-dir", str(tmp_path / "none"), "--resume"]) == 2
    # --auto-resume: continues the same run (to the new step count), refuses different settings
    base = ["pretrain", "--model-config", str(mcfg), "--train-config", str(tcfg), "--no-progress", "--auto-resume"]
    auto = tmp_path / "auto"
    assert main(base + ["--out-dir", str(auto)]) == 0
    assert main(base + ["--out-dir", str(auto), "--steps", "3"]) == 2  # steps is part of the settings
    assert "other settings" in capsys.readouterr().err
    assert main(base + ["--out-dir", str(auto)]) == 0  # same settings: resumes (nothing left to do)
    assert json.loads((auto / "summary.json").read_text())["step"] == 2
    assert main(base + ["--out-dir", str(auto), "--no-calibration"]) == 2


def test_task_level_initialized_from_a_tabicl_v1_checkpoint(tmp_path):
    """A TabICL v1-layout checkpoint (random weights here; the real one is tabicl-classifier-v1.1-0506.ckpt)
    initializes the task level through the model package's loader; the signal level is untouched."""
    from tabicl._model.tabicl import TabICL

    c = MICRO
    kw = dict(max_classes=c.max_classes, embed_dim=c.embed_dim, col_num_blocks=c.col_num_blocks,
              col_nhead=c.col_nhead, col_num_inds=c.col_num_inds, col_affine=True, col_feature_group=False,
              col_target_aware=False, col_ssmax=False, row_num_blocks=c.row_num_blocks, row_nhead=c.row_nhead,
              row_num_cls=c.row_num_cls, row_rope_base=c.row_rope_base, icl_num_blocks=c.icl_num_blocks,
              icl_nhead=c.icl_nhead, icl_ssmax=False, ff_factor=c.ff_factor, zero_init=False)
    torch.manual_seed(7)
    tab = TabICL(**kw)
    torch.save({"config": kw, "state_dict": tab.state_dict()}, tmp_path / "tabicl-v1.ckpt")
    tr = Trainer(MICRO, micro_train(steps=1), tmp_path / "run", progress=False,
                 init=[{"kind": "tabicl", "path": str(tmp_path / "tabicl-v1.ckpt")}])
    torch.manual_seed(0)
    ref = ChorusTIC(MICRO)
    from chorustic.model import load_task_level_from_tabicl

    load_task_level_from_tabicl(ref, tmp_path / "tabicl-v1.ckpt")
    for part in ("column_distribution_modeling", "row_interaction", "icl"):
        for k, v in getattr(ref, part).state_dict().items():
            assert torch.equal(getattr(tr.model, part).state_dict()[k], v), (part, k)
    info = json.loads((tmp_path / "run" / "run.json").read_text())
    assert info["init"][0]["kind"] == "tabicl" and info["init_info"][0]["parts"][-1] == "icl"


def test_curriculum_widens_difficulty_and_classes_then_uses_the_full_prior(tmp_path):
    cfg = micro_train(curriculum_steps=4, curriculum_start_difficulty=0.1, curriculum_start_classes=2,
                      prior=dataclasses.replace(MICRO_PRIOR, max_classes=6, difficulty=(0.0, 1.0)))
    assert cfg.prior_at(0).difficulty == (0.0, 0.1) and cfg.prior_at(0).max_classes == 2
    assert cfg.prior_at(2).difficulty == (0.0, pytest.approx(0.55)) and cfg.prior_at(2).max_classes == 4
    assert cfg.prior_at(4) == cfg.prior and cfg.prior_at(100) == cfg.prior
    tr = Trainer(MICRO, cfg, tmp_path, progress=False)
    seen = []
    from chorustic.training import data

    orig = data.generate_micro_batch

    def spy(*a, **kw):
        mb = orig(*a, **kw)
        seen.append((mb.step, mb.omegas))
        return mb

    data.generate_micro_batch = spy
    try:
        for _ in range(5):
            tr.train_step()
    finally:
        data.generate_micro_batch = orig
    for step, omegas in seen:
        bound = cfg.prior_at(step)
        assert all(o.difficulty <= bound.difficulty[1] and o.n_classes <= bound.max_classes for o in omegas)
    assert max(o.n_classes for s, oms in seen if s == 0 for o in oms) == 2


def test_a_restored_rng_state_replays_every_stream():
    """Exact resume: the Python, numpy and torch streams continue as they would have."""
    import random

    import numpy as np
    import torch

    from chorustic.training.rng import capture_rng_state, restore_rng_state

    random.seed(1), np.random.seed(1), torch.manual_seed(1)
    state = capture_rng_state()
    first = (random.random(), np.random.rand(3).tolist(), torch.rand(3).tolist())
    random.seed(2), np.random.seed(2), torch.manual_seed(2)
    restore_rng_state(state)
    assert (random.random(), np.random.rand(3).tolist(), torch.rand(3).tolist()) == first
