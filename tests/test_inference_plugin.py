"""The ``chorustic`` method plugin and the checkpoint CLI."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from chorustic.cli import main as cli_main
from chorustic.methods import MethodNotReady, discover
from chorustic.model import ChorusTIC, ChorusTICConfig, save_checkpoint

pytestmark = pytest.mark.usefixtures("torch_single_thread")  # tests/conftest.py


ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def plugin(tmp_path_factory):
    folder = tmp_path_factory.mktemp("plugins")
    shutil.copy(ROOT / "baselines" / "chorustic.py", folder / "chorustic.py")
    found = discover(folder)
    assert not found.broken, found.broken
    return found.get("chorustic")


@pytest.fixture(scope="module")
def tiny_checkpoint(tmp_path_factory):
    torch.manual_seed(0)
    model = ChorusTIC(ChorusTICConfig.tiny())
    return save_checkpoint(
        tmp_path_factory.mktemp("ckpt") / "tiny.safetensors",
        model,
        provenance={"training": "random weights (test)"},
    )


def test_metadata(plugin):
    info = plugin.info
    assert (info.name, info.display_name, info.group) == ("chorustic", "ChorusTIC", "Time-series ICL")
    assert info.fits_on_target is False and info.input_kind == "resampled"
    p = plugin.params()
    assert p["checkpoint"] == "hf://JTF2000/ChorusTIC/ChorusTIC.ckpt"
    assert (p["n_label_shifts"], p["n_rssc_draws"], p["temperature"], p["schedule"]) == (8, 4, 0.9, "shared")
    with pytest.raises(ValueError, match="no parameter"):
        plugin.params({"n_estimators": 3})


def test_not_ready_names_the_missing_file(plugin, tmp_path, monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(MethodNotReady, match=r"ChorusTIC\.ckpt.*JTF2000/ChorusTIC"):
        plugin.check_ready()
    with pytest.raises(MethodNotReady, match="missing.safetensors"):
        plugin.build(seed=0, checkpoint=str(tmp_path / "missing.safetensors"))


def test_build_fit_predict_on_a_real_dataset(plugin, tiny_checkpoint):
    from aeon.datasets import load_basic_motions

    from chorustic.model.patch_tokenizer import resample_length

    X, y = load_basic_motions(split="train")
    Xq, _ = load_basic_motions(split="test")
    X = resample_length(torch.from_numpy(X[:20]).float(), 512).numpy()
    Xq = resample_length(torch.from_numpy(Xq[:6]).float(), 512).numpy()
    plugin.check_ready(checkpoint=str(tiny_checkpoint))
    est = plugin.build(seed=0, checkpoint=str(tiny_checkpoint), n_label_shifts=2, n_rssc_draws=2)
    est.fit(X, y[:20])
    proba = est.predict_proba(Xq)
    assert proba.shape == (6, len(np.unique(y[:20]))) and np.allclose(proba.sum(1), 1)
    assert list(est.classes_) == sorted(set(y[:20]))
    again = plugin.build(seed=0, checkpoint=str(tiny_checkpoint), n_label_shifts=2, n_rssc_draws=2).fit(
        X, y[:20]
    )
    assert np.array_equal(proba, again.predict_proba(Xq))
    assert est.run_info_["model"]["format"] == "chorustic-checkpoint"


def test_checkpoint_info_cli(tiny_checkpoint, capsys):
    assert cli_main(["checkpoint-info", str(tiny_checkpoint)]) == 0
    out = capsys.readouterr().out
    assert "d_h=32" in out and "random weights (test)" in out and "total" in out
    assert cli_main(["checkpoint-info", str(tiny_checkpoint), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["parameters"]["total"] == ChorusTIC(ChorusTICConfig.tiny()).parameter_counts()["total"]
    assert info["config"] == ChorusTICConfig.tiny().to_dict()
    assert cli_main(["checkpoint-info", "does-not-exist.ckpt"]) == 1
    assert "does not exist" in capsys.readouterr().err


def test_checkpoint_convert_cli(tmp_path, capsys):
    golden = ROOT / "tests" / "data" / "official_golden"
    from safetensors.torch import load_file

    folder = tmp_path / "released"
    folder.mkdir()
    torch.save({"state_dict": load_file(str(golden / "state_dict.safetensors"))}, folder / "ChorusTIC.ckpt")
    cfg = json.loads((golden / "config.json").read_text())
    (folder / "hp.json").write_text(json.dumps(cfg))
    out = tmp_path / "converted.safetensors"
    assert (
        cli_main(
            [
                "checkpoint-convert",
                str(folder / "ChorusTIC.ckpt"),
                str(out),
                "--hparams-json",
                str(folder / "hp.json"),
            ]
        )
        == 0
    )
    assert cli_main(["checkpoint-info", str(out), "--json"]) == 0
    capsys.readouterr()
    from chorustic.model import load_checkpoint

    converted = load_checkpoint(out)
    assert converted.config.hidden_dim == 64
    assert converted.provenance["source_provenance"]["format"] == "official"
