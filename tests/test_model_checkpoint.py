"""Checkpoints: the released format (strict key map), our format, hf:// resolution, TabICL task level."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from chorustic.model import (
    CheckpointError,
    CheckpointNotFoundError,
    ChorusTIC,
    ChorusTICConfig,
    load_checkpoint,
    load_model,
    load_official_checkpoint,
    load_task_level_from_tabicl,
    resolve_checkpoint,
    save_checkpoint,
)
from chorustic.model.checkpoint import parse_hf_spec, read_checkpoint_metadata
from chorustic.model.official import official_key_shapes

pytestmark = pytest.mark.usefixtures("torch_single_thread")  # tests/conftest.py


DATA = Path(__file__).parent / "data"
GOLDEN = DATA / "official_golden"
GOLDEN_CONFIG = json.loads((GOLDEN / "config.json").read_text())


def _tsv_shapes() -> dict[str, tuple[int, ...]]:
    shapes = {}
    for line in (DATA / "official_chorustic_state_dict.tsv").read_text().splitlines()[1:]:
        if not line.strip() or line.startswith("#"):
            continue
        name, shape = line.split("\t")
        shapes[name] = tuple(int(s) for s in shape.strip("()").split(",") if s.strip())
    return shapes


def _paper_hparams() -> dict:
    """``model_config`` of the released ``model_hparams_latest.json`` (values from the fact sheet, sec. 1.0)."""
    return {
        "model": "ChorusTIC",
        "signal_level_chorus": {
            "arch": "da",
            "seq_len": 512,
            "hidden_dim": 512,
            "num_patches": 32,
            "num_channels": 1,
            "use_dual_axis": True,
            "num_dual_axis_layers": 3,
            "temporal_heads": 8,
            "channel_heads": 4,
            "temporal_mlp_dim": 512,
            "channel_mlp_dim": 512,
            "dual_axis_dropout": 0.1,
            "use_channel_mask": True,
            "use_channel_axis_attention": True,
            "channel_pool_type": "gated_mean",
            "channel_set_aggregator": {
                "type": "random_subchannel_slot_concat",
                "dropout": 0.1,
                "random_subchannel_slot_concat": {
                    "input_dim": 512,
                    "output_dim": 512,
                    "num_groups": 4,
                    "group_size": 4,
                    "slot_dim": 32,
                    "slot_projector_type": "linear",
                    "sampling": "coverage",
                    "train_resample": True,
                    "use_group_embedding": True,
                    "use_slot_embedding": True,
                    "freeze_mantis": True,
                    "no_grad_mantis": True,
                    "mantis_batch_size": 36,
                    "group_chunk_size": 1,
                    "output_norm": True,
                },
            },
        },
        "adapter": {"icl_dim": 512},
        "task_level_chorus": {
            "max_classes": 10,
            "embed_dim": 128,
            "col_num_blocks": 3,
            "col_nhead": 4,
            "col_num_inds": 128,
            "row_num_blocks": 3,
            "row_nhead": 8,
            "row_num_cls": 4,
            "row_rope_base": 100000,
            "icl_num_blocks": 12,
            "icl_nhead": 4,
            "ff_factor": 2,
            "dropout": 0,
            "activation": "gelu",
            "norm_first": True,
            "col_embedding_mode": "distribution_aware",
        },
    }


def test_released_hparams_give_the_paper_config():
    from chorustic.model.official import config_from_official_hparams

    assert config_from_official_hparams({"model_config": _paper_hparams()}) == ChorusTICConfig.paper()
    assert config_from_official_hparams(_paper_hparams()) == ChorusTICConfig.paper()


def _golden_sd() -> dict[str, torch.Tensor]:
    return load_file(str(GOLDEN / "state_dict.safetensors"))


# --------------------------------------------------------------------------- released format
def test_key_map_covers_exactly_the_released_state_dict():
    """Our paper model, mapped to official names, has exactly the 521 keys and shapes of ChorusTIC.ckpt."""
    tsv = _tsv_shapes()
    assert len(tsv) == 521
    assert official_key_shapes(ChorusTICConfig.paper()) == tsv


def test_released_key_set_loads_strictly():
    """A state dict with exactly the official keys and shapes (random values) loads into the paper model."""
    gen = torch.Generator().manual_seed(0)
    sd = {k: torch.randn(s, generator=gen) for k, s in _tsv_shapes().items()}
    with pytest.warns(UserWarning, match="assuming the paper configuration"):
        model = load_official_checkpoint({"state_dict": sd})
    assert model.parameter_counts()["total"] == 52_874_162  # 53,402,035 minus the unused pool and prj
    assert model.provenance["unused_official_tensors"] == 10
    ours = model.state_dict()
    assert torch.equal(ours["rssc.group_embedding"], sd["pre_mantis_encoder.group_embedding"].reshape(4, 512))
    assert torch.equal(
        ours["signal_encoder.slot_readout.transformer.layers.5.0.fn.to_qkv.weight"],
        sd["mantis_model.vit_unit.transformer.layers.5.0.fn.to_qkv.weight"],
    )
    assert torch.equal(ours["icl.decoder.2.bias"], sd["task_level_chorus.in_context_learning.decoder.2.bias"])


def test_released_key_set_minus_or_plus_one_key_fails():
    gen = torch.Generator().manual_seed(0)
    full = {k: torch.randn(s, generator=gen) for k, s in _tsv_shapes().items()}
    missing = dict(full)
    del missing["mantis_model.vit_unit.pos_encoder.pe"]
    with pytest.raises(CheckpointError, match=r"missing keys \(1\): mantis_model.vit_unit.pos_encoder.pe"):
        load_official_checkpoint(missing, {"model_config": _paper_hparams()})
    extra = {**full, "task_level_chorus.in_context_learning.decoder.3.weight": torch.zeros(2)}
    with pytest.raises(
        CheckpointError, match=r"unexpected keys \(1\): task_level_chorus.in_context_learning.decoder.3"
    ):
        load_official_checkpoint(extra, {"model_config": _paper_hparams()})


def test_missing_key_fails_with_clear_message():
    sd = _golden_sd()
    del sd["task_level_chorus.in_context_learning.decoder.2.bias"]
    with pytest.raises(
        CheckpointError, match=r"missing keys \(1\): task_level_chorus.in_context_learning.decoder.2.bias"
    ):
        load_official_checkpoint(sd, GOLDEN_CONFIG)


def test_missing_unused_tensor_also_fails():
    """The official loader is strict about the encoder's unused tensors too."""
    sd = _golden_sd()
    del sd["mantis_model.prj.1.weight"]
    with pytest.raises(CheckpointError, match=r"missing keys \(1\): mantis_model.prj.1.weight"):
        load_official_checkpoint(sd, GOLDEN_CONFIG)


def test_unexpected_key_and_shape_mismatch_fail():
    sd = _golden_sd()
    sd["mantis_model.extra_head.weight"] = torch.zeros(3)
    sd["pre_mantis_encoder.slot_projector.1.weight"] = torch.zeros(5, 64)
    with pytest.raises(CheckpointError) as err:
        load_official_checkpoint({"state_dict": sd}, GOLDEN_CONFIG)
    msg = str(err.value)
    assert "unexpected keys (1): mantis_model.extra_head.weight" in msg
    assert "pre_mantis_encoder.slot_projector.1.weight: checkpoint (5, 64) vs model (4, 64)" in msg


def test_wrapper_prefixes_are_removed():
    sd = {f"module.{k}" if k.startswith("mantis") else f"_orig_mod.{k}": v for k, v in _golden_sd().items()}
    model = load_official_checkpoint(sd, GOLDEN_CONFIG)
    assert model.config.hidden_dim == 64


def test_released_ckpt_file_with_hparams_next_to_it(tmp_path):
    """The HF layout: ChorusTIC.ckpt (torch pickle) and model_hparams_latest.json side by side."""
    folder = tmp_path / "Checkpoints_ChorusTIC"
    folder.mkdir()
    torch.save({"state_dict": _golden_sd(), "config": {}}, folder / "ChorusTIC.ckpt")
    hp = dict(GOLDEN_CONFIG["model_hparams"])
    (folder / "model_hparams_latest.json").write_text(json.dumps(hp))
    # the readout sizes are not in the official JSON (code defaults): the golden model shrank them
    with pytest.raises(CheckpointError, match="shape mismatches"):
        load_model(folder / "ChorusTIC.ckpt")
    hp_full = {
        "model_hparams": hp,
        "mantis_da_constructor_args_not_in_hparams_json": GOLDEN_CONFIG[
            "mantis_da_constructor_args_not_in_hparams_json"
        ],
    }
    model = load_model(folder / "ChorusTIC.ckpt", hp_full)
    assert model.provenance["format"] == "official" and len(model.provenance["sha256"]) == 64


# --------------------------------------------------------------------------- our format
def test_save_load_roundtrip_with_provenance(tmp_path):
    torch.manual_seed(0)
    model = ChorusTIC(ChorusTICConfig.tiny()).eval()
    path = save_checkpoint(
        tmp_path / "m.safetensors", model, provenance={"training": {"steps": 3, "prior": "test"}}
    )
    assert [p.name for p in tmp_path.iterdir()] == ["m.safetensors"]  # atomic: no temp file left
    meta = read_checkpoint_metadata(path)
    assert meta["config"] == model.config.to_dict()
    prov = meta["provenance"]
    assert prov["training"] == {"steps": 3, "prior": "test"}
    assert {"created_at", "git_commit", "torch_version", "parameters"} <= set(prov)
    loaded = load_checkpoint(path)
    assert loaded.config == model.config
    for k, v in model.state_dict().items():
        assert torch.equal(v, loaded.state_dict()[k]), k
    X = torch.randn(1, 12, 2, 64)
    y = torch.tensor([[0, 1, 2, 0, 1, 2, 0, 1]])
    gi = torch.zeros(1, 4, 4, dtype=torch.long)
    with torch.no_grad():
        assert torch.equal(model(X, y, group_idx=gi), loaded(X, y, group_idx=gi))
    assert load_model(path).provenance["format"] == "chorustic-checkpoint"


def test_our_loader_rejects_foreign_files(tmp_path):
    save_file({"w": torch.zeros(2)}, str(tmp_path / "x.safetensors"))
    with pytest.raises(ValueError, match="not a ChorusTIC checkpoint of this project"):
        load_checkpoint(tmp_path / "x.safetensors")


def test_our_loader_is_strict(tmp_path):
    model = ChorusTIC(ChorusTICConfig.tiny())
    path = save_checkpoint(tmp_path / "m.safetensors", model)
    from safetensors import safe_open

    with safe_open(str(path), "pt") as f:
        meta = f.metadata()
        tensors = {k: f.get_tensor(k) for k in f.keys() if k != "icl.ln.bias"}  # noqa: SIM118
    save_file(tensors, str(tmp_path / "broken.safetensors"), metadata=meta)
    with pytest.raises(CheckpointError, match=r"missing keys \(1\): icl.ln.bias"):
        load_checkpoint(tmp_path / "broken.safetensors")


# --------------------------------------------------------------------------- resolution
def test_parse_hf_spec():
    assert parse_hf_spec("hf://JTF2000/ChorusTIC/ChorusTIC.ckpt") == (
        "JTF2000/ChorusTIC",
        "ChorusTIC.ckpt",
        None,
    )
    assert parse_hf_spec("hf://a/b@v1/sub/f.pt") == ("a/b", "sub/f.pt", "v1")
    with pytest.raises(ValueError):
        parse_hf_spec("hf://onlyrepo")


def test_resolve_local_path(tmp_path):
    f = tmp_path / "w.ckpt"
    f.write_bytes(b"x")
    assert resolve_checkpoint(str(f)) == f
    with pytest.raises(CheckpointNotFoundError, match=str(tmp_path / "nope.ckpt")):
        resolve_checkpoint(tmp_path / "nope.ckpt")


def test_resolve_offline_names_the_file_and_the_fix(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(CheckpointNotFoundError) as err:
        resolve_checkpoint("hf://JTF2000/ChorusTIC/ChorusTIC.ckpt", cache_dir=tmp_path)
    msg = str(err.value)
    assert "ChorusTIC.ckpt" in msg and "JTF2000/ChorusTIC" in msg
    assert "hf download JTF2000/ChorusTIC ChorusTIC.ckpt" in msg and "pass that path" in msg


def test_resolve_through_the_hub_cache(tmp_path, monkeypatch):
    """hf:// specs download through huggingface_hub (here from a local endpoint) and then work offline."""
    from chorustic.testing.hub import FakeHub

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    model = ChorusTIC(ChorusTICConfig.tiny())
    blob = save_checkpoint(tmp_path / "src.safetensors", model).read_bytes()
    cache = tmp_path / "hub"
    with FakeHub() as hub:
        hub.files[("someone/tiny", "model.safetensors")] = blob
        got = resolve_checkpoint("hf://someone/tiny/model.safetensors", cache_dir=cache, endpoint=hub.endpoint)
        assert got.read_bytes() == blob and cache in got.parents
        with pytest.raises(CheckpointNotFoundError, match="missing.ckpt"):
            resolve_checkpoint("hf://someone/tiny/missing.ckpt", cache_dir=cache, endpoint=hub.endpoint)
    again = resolve_checkpoint("hf://someone/tiny/model.safetensors", cache_dir=cache, local_files_only=True)
    assert again == got
    assert load_checkpoint(again).config == model.config


# --------------------------------------------------------------------------- TabICL task level
def _tabicl_v1(cfg: ChorusTICConfig):
    from tabicl._model.tabicl import TabICL

    kw = {
        "max_classes": cfg.max_classes,
        "embed_dim": cfg.embed_dim,
        "col_num_blocks": cfg.col_num_blocks,
        "col_nhead": cfg.col_nhead,
        "col_num_inds": cfg.col_num_inds,
        "col_affine": True,
        "col_feature_group": False,
        "col_target_aware": False,
        "col_ssmax": False,
        "row_num_blocks": cfg.row_num_blocks,
        "row_nhead": cfg.row_nhead,
        "row_num_cls": cfg.row_num_cls,
        "row_rope_base": cfg.row_rope_base,
        "icl_num_blocks": cfg.icl_num_blocks,
        "icl_nhead": cfg.icl_nhead,
        "icl_ssmax": False,
        "ff_factor": cfg.ff_factor,
        "zero_init": False,
    }
    torch.manual_seed(1)
    return TabICL(**kw), kw


def test_task_level_from_tabicl_equals_tabicl(tmp_path):
    """A TabICL v1-layout checkpoint loads into the task level, and our task level then computes exactly
    what tabicl's own model computes (AMP off)."""
    from tabicl import InferenceConfig

    cfg = ChorusTICConfig.tiny()
    tab, kw = _tabicl_v1(cfg)
    torch.save(
        {"config": kw, "state_dict": {f"tabicl_model.{k}": v for k, v in tab.state_dict().items()}},
        tmp_path / "tabicl-v1.ckpt",
    )
    model = ChorusTIC(cfg).eval()
    before = {k: v.clone() for k, v in model.state_dict().items() if k.startswith("signal_encoder.")}
    info = load_task_level_from_tabicl(model, tmp_path / "tabicl-v1.ckpt")
    assert info["task_level_tensors"] == len(tab.state_dict())
    for k, v in before.items():
        assert torch.equal(v, model.state_dict()[k])
    H = torch.randn(2, 25, cfg.d_h)
    for k_cls in (
        2,
        7,
    ):  # (tabicl's own hierarchical path fails with a custom InferenceConfig; golden covers K > 10)
        y = torch.arange(18).remainder(k_cls).repeat(2, 1)
        no_amp = InferenceConfig(
            COL_CONFIG={"use_amp": False, "device": "cpu"},
            ROW_CONFIG={"use_amp": False, "device": "cpu"},
            ICL_CONFIG={"use_amp": False, "device": "cpu"},
        )
        with torch.no_grad():
            ref = tab.eval()(H, y.float(), inference_config=no_amp)
            ours = model.icl_logits(model.row_representations(H, 18), y)
        assert torch.allclose(ref, ours, atol=1e-6), (ref - ours).abs().max()
    tab.train()
    model.train()
    with torch.no_grad():  # training path (no InferenceManager): identical as well
        assert torch.allclose(tab(H, y.float()), model.icl(model.row_representations(H, 18), y), atol=1e-6)


def test_tabicl_config_mismatch_and_v2_are_rejected():
    from tabicl._model.tabicl import TabICL

    cfg = ChorusTICConfig.tiny()
    tab, kw = _tabicl_v1(cfg)
    model = ChorusTIC(cfg)
    with pytest.raises(CheckpointError, match="icl_nhead: checkpoint 1 vs model 2"):
        load_task_level_from_tabicl(model, {"config": {**kw, "icl_nhead": 1}, "state_dict": tab.state_dict()})
    v2 = TabICL(
        embed_dim=8,
        col_num_blocks=1,
        col_nhead=2,
        col_num_inds=4,
        row_num_blocks=1,
        row_nhead=2,
        icl_num_blocks=1,
        icl_nhead=2,
    )
    with pytest.raises(CheckpointError, match="TabICL v2"):
        load_task_level_from_tabicl(model, {"state_dict": v2.state_dict()})
    sd = dict(tab.state_dict())
    sd.pop("icl_predictor.ln.weight")
    with pytest.raises(CheckpointError, match=r"missing keys \(1\): icl.ln.weight"):
        load_task_level_from_tabicl(model, {"state_dict": sd})


def test_half_precision_export_loads_as_float32(tmp_path):
    """``save_checkpoint(dtype=float16)``: half the file, loaded back into float32 parameters."""
    from chorustic.model import ChorusTIC, ChorusTICConfig, load_checkpoint, save_checkpoint

    torch.manual_seed(0)
    model = ChorusTIC(ChorusTICConfig.tiny())
    full = save_checkpoint(tmp_path / "full.safetensors", model)
    half = save_checkpoint(tmp_path / "half.safetensors", model, dtype=torch.float16)
    assert half.stat().st_size < 0.6 * full.stat().st_size
    back = load_checkpoint(half)
    assert back.provenance.get("stored_dtype") == "float16"
    for (k, a), b in zip(model.state_dict().items(), back.state_dict().values()):
        assert b.dtype == a.dtype, k
        assert torch.allclose(a, b, rtol=1e-3, atol=1e-4), k
