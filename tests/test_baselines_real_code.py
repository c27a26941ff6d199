"""The UniShape and NuTime plugins against the authors' real code (not the stand-ins of
``chorustic.testing.checkpoints``): the full ``check-method`` contract, and the plugins' features compared with
the authors' own classes, loaders and resamplers run as their scripts run them
(``unishape_zeroshot.py``; NuTime's classification experiment).

Needs clones of https://github.com/ZLiu21/UniShape and https://github.com/chenguolin/NuTime in the folder
``$CHORUSTIC_CHECKOUTS`` or, where that is unset, ``<the repository's parent>/../shared/checkouts`` (code only:
the weights are random, written by their classes in the released files' layout,
:func:`chorustic.testing.checkpoints.write_real_unishape_checkpoint` and ``write_real_nutime_checkpoint``).
Every test skips, saying why, where a clone is absent.

Their code imports ``timm`` (both), ``einops`` and ``fastai`` (UniShape). Each test runs once, in one of two
cases: ``installed`` (the real packages; skipped where one does not import, e.g. ``timm`` without a
``torchvision`` that loads with this torch) or, only where they do not import, ``stand-in`` (the few names
the authors import, :mod:`chorustic.testing.authors_deps`, so that their classes still run here).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import sys
import types
from pathlib import Path
from unittest import mock

import numpy as np
import pytest

from chorustic.methods import discover, import_plugin_module
from chorustic.methods.check import check_method
from chorustic.methods.checkout import checkout_imports
from chorustic.paths import REPO_ROOT
from chorustic.resampling import resample_linear
from chorustic.testing import checkpoints as ck
from chorustic.testing.authors_deps import PROBES, authors_deps, importable

pytestmark = pytest.mark.usefixtures("torch_single_thread")


def checkouts_root() -> Path:
    env = os.environ.get("CHORUSTIC_CHECKOUTS")
    return Path(env).expanduser() if env else Path(__file__).resolve().parents[2] / "shared" / "checkouts"


#: plugin -> (checkout folder, the packages their code imports, a file the plugin needs there)
PLUGINS = {
    "unishape_rf": ("UniShape", ("timm", "einops", "fastai"), "models/unishapemodel_zeroshot.py"),
    "nutime_rf": ("NuTime", ("timm",), "src/models/build.py"),
}


def checkout(name: str) -> Path:
    folder, _, probe = PLUGINS[name]
    root = checkouts_root() / folder
    if not (root / probe).is_file():
        pytest.skip(f"no checkout of the authors' {folder} code at {root} (set CHORUSTIC_CHECKOUTS to the folder "
                    f"holding their clones)")
    return root


@pytest.fixture(params=["installed", "stand-in"])
def deps(request):
    """A context manager making the authors' imports work: the real packages, or their stand-ins."""

    def enter(name: str):
        pkgs = PLUGINS[name][1]
        if request.param == "installed":
            for pkg in pkgs:
                pytest.importorskip(PROBES.get(pkg, pkg), reason=(
                    f"the authors' {PLUGINS[name][0]} code imports {pkg!r}, which does not import here "
                    f"({importable(PROBES.get(pkg, pkg))}); the 'stand-in' case runs their code instead"))
            return contextlib.nullcontext({p: "installed" for p in pkgs})
        broken = [p for p in pkgs if p in PROBES and importable(PROBES[p]) is not None]
        if not broken:
            pytest.skip("every package the authors' code imports is installed: the 'installed' case runs them")
        if "einops" in pkgs:
            pytest.importorskip("einops", reason="UniShape's code imports einops (it has no stand-in)")
        return authors_deps([p for p in pkgs if p in PROBES])

    return enter


@pytest.fixture(scope="module")
def real_checkpoints(tmp_path_factory):
    """Random-weight checkpoints in the released layout, written by the real classes (once per module)."""
    made: dict[str, Path] = {}
    folder = tmp_path_factory.mktemp("real-checkpoints")

    def get(name: str) -> Path:
        if name not in made:
            root = checkout(name)
            with authors_deps([p for p in PLUGINS[name][1] if p in PROBES]):
                writer = ck.write_real_unishape_checkpoint if name == "unishape_rf" else ck.write_real_nutime_checkpoint
                made[name] = writer(root, folder / f"{name}.pth", seed=1)
        return made[name]

    return get


def plugin(name: str):
    return import_plugin_module(name, REPO_ROOT / "baselines" / f"{name}.py")


def native_series(n: int, length: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = np.linspace(0, 6 * np.pi, length)
    return (rng.normal(0, 0.3, (n, 1, length)) + 5 * np.sin(t * rng.uniform(0.5, 2, (n, 1, 1))) + 10).astype(np.float32)


def cpu_load(real_load):
    """``torch.load`` with their ``map_location="cuda:0"`` replaced by the CPU."""

    def load(f, *args, **kwargs):
        kwargs["map_location"] = "cpu"
        return real_load(f, *args, **kwargs)

    return load


# --------------------------------------------------------------------------------------------------
# the contract
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(PLUGINS))
def test_plugin_passes_the_contract_on_the_authors_code(name, deps, real_checkpoints):
    root = checkout(name)
    with deps(name):
        ckpt = real_checkpoints(name)
        method = discover().get(name)
        run = check_method(method, {"checkout": str(root), "checkpoint": str(ckpt)})
        assert run.ok, f"{name} breaks {', '.join(c.name for c in run.failed)}:\n{run.report()}"
        est = method.build(seed=0, **method.params({"checkout": str(root), "checkpoint": str(ckpt)}))
        X = native_series(6, 512, seed=0)
        info = est.fit(X, [0, 1] * 3).run_info_
    assert info["embedding_dim"] == 128
    if name == "nutime_rf":  # every tensor of their model but the class head
        assert info["tensors_missing"] == 2 and info["tensors_skipped_shape"] == 0, info
    else:  # all but the unused classification head (9), the class prototypes and the positional table (shapes)
        assert info["tensors_missing"] == 11 and info["tensors_skipped_shape"] == 2, info


# --------------------------------------------------------------------------------------------------
# the features, against the authors' own pipeline
# --------------------------------------------------------------------------------------------------


def test_unishape_features_are_their_zero_shot_scripts(deps, real_checkpoints):
    """Their script's pipeline on native series of length 150: ``getInteSet`` (resampling to 512),
    ``UniShapeModel`` built with their arguments, ``load_pretrained_model``, the model's forward; the plugin's
    features are the same numbers (eval mode: see the plugin's known differences)."""
    import torch

    root = checkout("unishape_rf")
    mod = plugin("unishape_rf")
    X = native_series(5, 150, seed=3)
    with deps("unishape_rf"):
        ckpt = real_checkpoints("unishape_rf")
        method = discover().get("unishape_rf")
        est = method.build(seed=0, **method.params({"checkout": str(root), "checkpoint": str(ckpt)}))
        ours = est.transform(X)
        backbone = est._backbone()
        with checkout_imports(root, mod.TOP_LEVEL), mod.cuda_calls_stay_on_cpu():
            from models.unishapemodel_zeroshot import UniShapeModel
            from utils.util import getInteSet, load_pretrained_model

            args = argparse.Namespace(in_channels=128, window_emb_dim=128, window_size=16, stride=16, scale_len=4,
                                      model_series_size=512, seq_len=512, out_channels=3,
                                      load_checkpoint_path=str(ckpt))
            model = UniShapeModel(config=args, series_size=args.model_series_size, in_channels=args.in_channels,
                                  window_emb_dim=args.window_emb_dim, out_channels=args.out_channels,
                                  window_size=args.window_size, stride=args.stride, shape_alpha=0.01,
                                  shape_sparse_ratio=0.6, scale_len=args.scale_len)
            with mock.patch.object(torch, "load", cpu_load(torch.load)):
                model = load_pretrained_model(args, model)
            data = np.squeeze(getInteSet(X), axis=2)  # their script's (n, 1, 512)
    theirs_state, ours_state = model.state_dict(), backbone.network.state_dict()
    assert theirs_state.keys() == ours_state.keys()
    # every tensor but the classification head and the class prototypes (sized by the class count, unused by
    # the features, and filled by neither from this checkpoint)
    used = [k for k in theirs_state if not k.startswith(("fc.", "class_proto_centers"))]
    assert len(used) == len(theirs_state) - 10
    assert [k for k in used if not torch.equal(theirs_state[k], ours_state[k])] == []
    model.eval()
    with torch.no_grad():
        theirs = model(torch.from_numpy(data).type(torch.FloatTensor)).numpy()
    assert ours.shape == theirs.shape == (5, 128)
    np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-4)  # resampling: float32 rounding apart


def test_nutime_features_are_their_classification_experiments(deps, real_checkpoints):
    """Their classification experiment's model (``get_encoder``, ``get_model``, ``nn.Sequential``), filled by
    its ``load_pretrained_model``, on their test transform's input (``TSResize`` to 512): WinT's normalised
    CLS token equals the plugin's features on the harness' resampled series."""
    import torch
    from torch import nn

    root = checkout("nutime_rf")
    X = native_series(5, 150, seed=4)
    with deps("nutime_rf"):
        ckpt = real_checkpoints("nutime_rf")
        method = discover().get("nutime_rf")
        est = method.build(seed=0, **method.params({"checkout": str(root), "checkpoint": str(ckpt)}))
        ours = est.transform(resample_linear(X, 512))  # the harness' input (App. C.2)
        with checkout_imports(root, ("src",)), contextlib.redirect_stdout(sys.stderr):
            from src.config import Config
            from src.data.transforms import TSResize
            from src.experiments.cls_exp import ClassificationExp
            from src.models.build import get_model
            from src.models.encoders.build import get_encoder

            config = Config()
            config.update_by_dict(json.loads((root / "configs/demo_ft_epilepsy.json").read_text()))
            # what their get_dataloader sets for a univariate 2-class dataset resized to 512
            config.update_by_dict({"transform_size": 512, "model_series_size": 512, "num_classes": 2,
                                   "num_channels": 1, "load_checkpoint_path": str(ckpt)})
            encoder = get_encoder(config, types.SimpleNamespace(samples=None, targets=None))
            model = nn.Sequential(encoder, get_model(config))
            exp = types.SimpleNamespace(config=config, logger=logging.getLogger("nutime-reference"))
            model = ClassificationExp.load_pretrained_model(exp, model)
            resize = TSResize(size=config.transform_size, mode=config.interpolate_mode)
            data = torch.stack([resize(torch.from_numpy(x)) for x in X])
    model.eval()
    with torch.no_grad():
        model(data)
    theirs = model[1].features.numpy()
    assert ours.shape == theirs.shape == (5, 128)
    np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-4)  # resampling: float32 rounding apart


def test_unishape_refuses_a_checkpoint_in_the_pretraining_classes_names(deps, real_checkpoints, tmp_path):
    """Their pretraining and fine-tuning classes name the token generators and the transformer
    ``unit_scale_list`` and ``transformer_enc``; their zero-shot class ``encoder_scale_list`` and ``vit_unit``.
    A file in the former names fills almost nothing of the zero-shot model: refused, not run half random."""
    import torch

    from chorustic.methods import MethodNotReady

    root = checkout("unishape_rf")
    with deps("unishape_rf"):
        ckpt = torch.load(real_checkpoints("unishape_rf"), map_location="cpu", weights_only=True)
        renamed = {k.replace("encoder_scale_list", "unit_scale_list").replace("vit_unit", "transformer_enc"): v
                   for k, v in ckpt["state_dict"].items()}
        torch.save({"epoch": 30, "state_dict": renamed}, tmp_path / "pretrain-names.pth")
        method = discover().get("unishape_rf")
        with pytest.raises(MethodNotReady, match="does not fit the UniShapeModel"):
            method.check_ready(**method.params({"checkout": str(root), "checkpoint": str(tmp_path / "pretrain-names.pth")}))


# --------------------------------------------------------------------------------------------------
# a real job
# --------------------------------------------------------------------------------------------------


@pytest.mark.slow(reason="a GunPoint job (200 series) through the authors' UniShape (~5 s on 2 busy cores)")
@pytest.mark.parametrize("name", sorted(PLUGINS))
def test_a_gunpoint_job_on_the_authors_code(name, deps, real_checkpoints, tmp_path):
    from chorustic.data import load_dataset
    from chorustic.evaluation.job import JobSpec, run_job
    from chorustic.protocols.contexts import build_contexts, write_contexts

    root = checkout(name)
    ds = load_dataset("GunPoint", tmp_path / "raw", cache_dir=tmp_path / "cache", offline=True)
    ctx = tmp_path / "contexts" / "GunPoint.json"
    write_contexts(ctx, build_contexts(ds.y_train, dataset="GunPoint", archive="UCR"))
    with deps(name):
        spec = JobSpec(method=name, plugin=name, dataset="GunPoint", archive="UCR",
                       results_dir=str(tmp_path / "results"), contexts_file=str(ctx), data_dir=str(tmp_path / "raw"),
                       cache_dir=str(tmp_path / "cache"),
                       params={"checkout": str(root), "checkpoint": str(real_checkpoints(name))},
                       protocols=["full"])
        manifest = run_job(spec)
        (run,) = manifest["runs"]
        assert run["status"] == "ok" and 0.0 <= run["accuracy"] <= 1.0, run
        # the estimator itself on the job's input (its embeddings are the job's, kept for the process)
        method = discover().get(name)
        est = method.build(seed=0, **method.params(spec.params))
        native = method.info.input_kind == "native"
        Xtr, Xte = (ds.X_train_native, ds.X_test_native) if native else (ds.X_train, ds.X_test)
        proba = est.fit(Xtr, ds.y_train).predict_proba(Xte)
    assert proba.shape == (len(ds.y_test), 2) and np.all(proba >= 0)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-9)
    assert np.isclose((proba.argmax(axis=1) == ds.y_test).mean(), run["accuracy"])


# --------------------------------------------------------------------------------------------------
# the scaffolding (no checkout needed)
# --------------------------------------------------------------------------------------------------


def test_the_stand_in_packages_and_the_cuda_shim_leave_no_trace(tmp_path):
    """The stand-ins answer imports inside the block only; the plugin's ``Tensor.cuda`` shim (their
    ``TransformerEnc`` calls ``.cuda()``, as the UniShape stand-in does) lasts while the model is built."""
    import torch

    before = {k for k in sys.modules if k.split(".")[0] in ("timm", "fastai")}
    with authors_deps(force=True) as used:
        from fastai.basics import Module
        from timm.models.layers import DropPath, trunc_normal_

        assert used == {"timm": "stand-in (forced)", "fastai": "stand-in (forced)"}

        class Block(Module):  # fastai's Module: no super().__init__() needed
            def __init__(self):
                self.lin = torch.nn.Linear(2, 2)

        assert list(Block().state_dict()) == ["lin.weight", "lin.bias"]
        assert isinstance(DropPath(0.1).eval()(torch.ones(2)), torch.Tensor)
        assert float(trunc_normal_(torch.empty(1000), std=1.0, a=-0.5, b=0.5).abs().max()) <= 0.5  # absolute bounds
    assert {k for k in sys.modules if k.split(".")[0] in ("timm", "fastai")} == before
    root = ck.write_unishape(tmp_path / "UniShape")
    method = discover().get("unishape_rf")
    method.check_ready(**method.params({"checkout": str(root), "in_channels": 16, "window_emb_dim": 16}))
    if not torch.cuda.is_available():
        assert "cuda" not in torch.Tensor.__dict__
        with pytest.raises((AssertionError, RuntimeError)):  # torch without CUDA refuses, as before
            torch.zeros(1).cuda()
