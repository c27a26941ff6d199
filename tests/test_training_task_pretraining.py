"""Stage 2 of the released recipe: ``chorustic pretrain-task`` (chorustic/training/task_pretraining.py)."""

from __future__ import annotations

import json

import pytest
import torch

from chorustic.cli import main
from chorustic.model import ChorusTIC, ChorusTICConfig, load_model
from chorustic.training.init import init_from_checkpoint
from chorustic.training.task_pretraining import TablePrior, TaskPretrainConfig, TaskPretrainer

pytestmark = pytest.mark.usefixtures("torch_single_thread")  # tests/conftest.py

MC = ChorusTICConfig.tiny()
CFG = TaskPretrainConfig(steps=4, batch_size=2, min_rows=16, max_rows=24, warmup_steps=1, checkpoint_every=2,
                         log_every=1)


def test_a_steps_tables_come_from_tabicls_prior_and_depend_on_the_step_only():
    data = TablePrior(CFG, max_features=MC.d_h, max_classes=MC.max_classes)
    X, y, d, n = data[1]
    assert X.shape[0] == 2 and X.shape[2] == MC.d_h and 16 <= X.shape[1] <= 24
    for i in range(2):
        assert 2 <= int(d[i]) <= MC.d_h and (X[i, :, int(d[i]):] == 0).all()  # columns past d are padding
        assert 0 < int(n[i]) < X.shape[1] and int(y[i].max()) < MC.max_classes and int(y[i].min()) == 0
    X2, y2, _, _ = data[1]
    assert torch.equal(X, X2) and torch.equal(y, y2)


def test_a_resumed_run_trains_the_same_task_level_and_only_it(tmp_path):
    straight = TaskPretrainer(MC, CFG, tmp_path / "a", progress=False)
    before = {k: v.clone() for k, v in straight.model.state_dict().items()}
    assert straight.run()["finished"]
    half = TaskPretrainer(MC, CFG, tmp_path / "b", progress=False)
    assert half.run(until_step=2)["finished"] is False
    resumed = TaskPretrainer.resume(tmp_path / "b", progress=False)
    resumed.run()
    a, b = straight.model.state_dict(), resumed.model.state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)  # exact: the tables and dropout are functions of the step
    changed = {k.split(".")[0] for k in a if not torch.equal(a[k], before[k])}
    assert changed == {"column_distribution_modeling", "row_interaction", "icl"}
    log = [json.loads(x) for x in (tmp_path / "a" / "log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in log] == [1, 2, 3, 4] and all(0 <= r["query_accuracy"] <= 1 for r in log)

    # the export's task level initialises the episodic stage (--init-from ... --init-parts task)
    exported = load_model(str(tmp_path / "a" / "task.safetensors"))
    assert exported.provenance["trained_parts"] == ["column_distribution_modeling", "row_interaction", "icl"]
    torch.manual_seed(5)
    target = ChorusTIC(MC)
    enc = {k: v.clone() for k, v in target.signal_encoder.state_dict().items()}
    init_from_checkpoint(target, str(tmp_path / "a" / "task.safetensors"), ["task"])
    assert all(torch.equal(target.icl.state_dict()[k], straight.model.icl.state_dict()[k])
               for k in target.icl.state_dict())
    assert all(torch.equal(target.signal_encoder.state_dict()[k], enc[k]) for k in enc)  # untouched


def test_a_stage_resumes_only_its_own_kind_of_run(tmp_path, capsys):
    out = tmp_path / "run"
    (out / "state").mkdir(parents=True)
    torch.save({"kind": "encoder_pretraining", "step": 1}, out / "state" / "step_0000001.pt")
    assert main(["pretrain-task", "--out-dir", str(out), "--resume"]) == 2
    err = capsys.readouterr().err
    assert "holds a 'encoder_pretraining' run, not a 'task_pretraining' run (pretrain-task)" in err
    assert len(err.strip().splitlines()) == 1


def test_a_bad_setting_is_one_clear_error():
    with pytest.raises(ValueError, match="prior_type 'gp' must be mlp_scm, tree_scm or mix_scm"):
        TaskPretrainConfig(prior_type="gp")
    with pytest.raises(ValueError, match="8 <= min_rows <= max_rows"):
        TaskPretrainConfig(min_rows=64, max_rows=32)
    assert TaskPretrainConfig.from_dict(json.loads(json.dumps(CFG.to_dict()))) == CFG


def test_the_stages_chain_into_the_episodic_pretraining(tmp_path, capsys):
    """Stage 1's export starts stage 2 (--init-from), whose export then holds the trained encoder and task
    level; the episodic stage starts from it with the encoder frozen."""
    enc, task, ep = tmp_path / "encoder", tmp_path / "task", tmp_path / "episodic"
    assert main(["pretrain-encoder", "--model-config", "tiny", "--out-dir", str(enc), "--steps", "2",
                 "--batch-size", "4", "--no-progress"]) == 0
    assert main(["pretrain-task", "--init-from", str(enc / "encoder.safetensors"), "--out-dir", str(task),
                 "--steps", "2", "--batch-size", "2", "--no-progress"]) == 0
    assert main(["pretrain-task", "--out-dir", str(task), "--resume", "--init-from", "x"]) == 2
    assert "not --init-from" in capsys.readouterr().err
    stage1, stage2 = load_model(str(enc / "encoder.safetensors")), load_model(str(task / "task.safetensors"))
    assert stage2.provenance["trained_parts"] == ["signal_encoder", "column_distribution_modeling",
                                                  "row_interaction", "icl"]
    assert stage2.provenance["initialised_from"]["trained_parts"] == ["signal_encoder"]
    e1, e2 = stage1.signal_encoder.state_dict(), stage2.signal_encoder.state_dict()
    assert all(torch.equal(e1[k], e2[k]) for k in e1)  # stage 2 trains the task level only
    assert main(["pretrain", "--model-config", "tiny", "--train-config", "tiny", "--init-from",
                 str(task / "task.safetensors"), "--init-parts", "encoder", "task", "--freeze-signal-encoder",
                 "--steps", "1", "--device", "cpu", "--no-progress", "--workers", "0", "--out-dir", str(ep)]) == 0
    staged = load_model(str(ep / "model.safetensors"))
    assert all(torch.equal(staged.signal_encoder.state_dict()[k], e1[k]) for k in e1)  # frozen all along
