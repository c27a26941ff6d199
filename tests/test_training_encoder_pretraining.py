"""Stage 1 of the released recipe: ``chorustic pretrain-encoder`` (chorustic/training/encoder_pretraining.py)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from chorustic.cli import main
from chorustic.model import ChorusTICConfig, load_model
from chorustic.prior.kernel_bank import sample_series
from chorustic.training.encoder_pretraining import EncoderPretrainConfig, EncoderPretrainer, SyntheticGroups

pytestmark = pytest.mark.usefixtures("torch_single_thread")  # tests/conftest.py

MC = ChorusTICConfig.tiny()
CFG = EncoderPretrainConfig(steps=6, batch_size=4, warmup_steps=2, checkpoint_every=3, log_every=1)


def test_a_steps_batch_is_groups_of_kernel_bank_series_and_depends_on_the_step_only():
    data = SyntheticGroups(CFG, MC.seq_len, MC.group_size)
    x = data[5]
    u = data.channels(5)
    assert x.shape == (4, u, MC.seq_len) and 1 <= u <= MC.group_size
    assert torch.equal(x, data[5]) and not torch.equal(data[4][:, :1], x[:, :1])
    start = 5 * 4 * MC.group_size  # each step its own slice of the prior's stream
    assert np.array_equal(x[0, 0].numpy(), sample_series(CFG.seed, start, data.bank)[0])
    assert np.array_equal(x[1, 0].numpy(), sample_series(CFG.seed, start + u, data.bank)[0])
    assert {data.channels(s) for s in range(50)} == set(range(1, MC.group_size + 1))


def _encoder_state(run):
    return {k: v.clone() for k, v in run.model.signal_encoder.state_dict().items()}


def test_a_resumed_run_trains_the_same_encoder_and_only_the_encoder(tmp_path):
    straight = EncoderPretrainer(MC, CFG, tmp_path / "a", progress=False)
    before = {k: v.clone() for k, v in straight.model.state_dict().items()}
    straight.run()
    first = EncoderPretrainer(MC, CFG, tmp_path / "b", progress=False)
    assert first.run(until_step=3)["finished"] is False  # stopped halfway, as a session's time limit would
    resumed = EncoderPretrainer.resume(tmp_path / "b", progress=False)
    assert resumed.step == 3
    resumed.run()
    a, b = _encoder_state(straight), _encoder_state(resumed)
    assert all(torch.equal(a[k], b[k]) for k in a)  # exact: data, crops and dropout are functions of the step
    after = straight.model.state_dict()
    changed = {k.split(".")[0] for k in after if not torch.equal(after[k], before[k])}
    assert changed == {"signal_encoder"}
    log = [json.loads(x) for x in (tmp_path / "a" / "log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in log] == [1, 2, 3, 4, 5, 6] and all(np.isfinite(r["loss"]) for r in log)
    assert log[0]["loss"] == pytest.approx(np.log(4), abs=0.7)  # InfoNCE over 4 samples starts near log 4
    states = sorted(p.name for p in (tmp_path / "a" / "state").glob("step_*.pt"))
    assert states == ["step_0000003.pt", "step_0000006.pt"]

    # the export is a whole model whose signal encoder is the trained one, for pretrain --init-from
    model = load_model(str(tmp_path / "a" / "encoder.safetensors"))
    assert all(torch.equal(model.signal_encoder.state_dict()[k], a[k]) for k in a)
    assert model.provenance["trained_parts"] == ["signal_encoder"] and model.provenance["steps"] == 6


def test_the_command_trains_resumes_and_refuses_what_would_mix_runs(tmp_path, capsys):
    out = tmp_path / "enc"
    base = ["pretrain-encoder", "--model-config", "tiny", "--out-dir", str(out), "--batch-size", "4",
            "--log-every", "1", "--checkpoint-every", "2", "--no-progress"]
    assert main([*base, "--steps", "2"]) == 0
    assert json.loads(capsys.readouterr().out)["step"] == 2
    assert main([*base, "--steps", "3"]) == 2  # a second start in the same folder: one line, the next step
    assert "holds a run: continue it with --resume" in capsys.readouterr().err
    assert main(["pretrain-encoder", "--out-dir", str(out), "--resume", "--batch-size", "8"]) == 2
    assert "only --steps may change, not --batch-size" in capsys.readouterr().err
    assert main(["pretrain-encoder", "--out-dir", str(out), "--resume", "--steps", "3", "--no-progress"]) == 0
    assert json.loads(capsys.readouterr().out)["step"] == 3


def test_a_bad_setting_is_one_clear_error():
    with pytest.raises(ValueError, match="batch_size >= 2"):
        EncoderPretrainConfig(batch_size=1)
    with pytest.raises(ValueError, match="crop_rate"):
        EncoderPretrainConfig(crop_rate=(0.3, 0.1))
    cfg = EncoderPretrainConfig(steps=7, crop_rate=(0.1, 0.3))
    assert EncoderPretrainConfig.from_dict(json.loads(json.dumps(cfg.to_dict()))) == cfg
