"""One contract suite for every plugin in baselines/: each discovered plugin (a new file included, with
no list to edit) runs the full contract of ``chorustic check-method`` on generated data.

Pretrained methods run on SMALL random-weight checkpoints this module writes to a temporary folder
in the real format (TabICL ``{config, state_dict}`` checkpoints built with tabicl's own model class;
MOMENT and Mantis folders written by the packages' ``save_pretrained``), loaded through the plugins'
real local-path loaders. The checkout-based plugins (UniShape, NuTime, TIC-FM) run against minimal
stand-in checkouts with the authors' module layout and entry points (contract only: the stand-ins
are not the authors' models). No network, no real weights.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import numpy as np
import pytest

from chorustic.methods import GROUPS, Method, discover
from chorustic.methods.check import check_method, synthetic_task
from chorustic.methods.estimators import EMBEDDING_CACHE
from chorustic.methods.weights import clear_cache

# --------------------------------------------------------------------------------------------------
# tiny checkpoints in the real formats
# --------------------------------------------------------------------------------------------------

TABICL_TINY = {
    "max_classes": 10,
    "embed_dim": 16,
    "col_num_blocks": 1,
    "col_nhead": 2,
    "col_num_inds": 8,
    "row_num_blocks": 1,
    "row_nhead": 2,
    "row_num_cls": 2,
    "icl_num_blocks": 1,
    "icl_nhead": 2,
    "zero_init": False,
}


def write_tabicl(path: Path, seed: int = 0, **overrides) -> Path:
    import torch
    from tabicl._model.tabicl import TabICL

    torch.manual_seed(seed)
    cfg = {**TABICL_TINY, **overrides}
    torch.save({"config": cfg, "state_dict": TabICL(**cfg).state_dict()}, path)
    return path


def write_mantis(folder: Path, version: str, seed: int = 0) -> Path:
    import torch
    from mantis.architecture import Mantis8M, MantisV2

    torch.manual_seed(seed)
    if version == "v1":  # the published Mantis-8M checkpoint uses the legacy class (vit_unit.* names)
        net = Mantis8M(
            seq_len=512,
            hidden_dim=32,
            num_patches=32,
            transf_depth=1,
            transf_num_heads=2,
            transf_mlp_dim=32,
            transf_dim_head=16,
            device="cpu",
        )
    else:
        net = MantisV2(
            hidden_dim=32,
            num_patches=32,
            kernel_size=5,
            transf_depth=2,
            transf_num_heads=2,
            transf_mlp_dim=32,
            transf_dim_head=16,
            device="cpu",
        )
    net.save_pretrained(str(folder))
    return folder


MOMENT_T5 = {
    "d_model": 32,
    "d_ff": 64,
    "d_kv": 8,
    "num_heads": 4,
    "num_layers": 2,
    "feed_forward_proj": "gated-gelu",
    "vocab_size": 32,
    "relative_attention_num_buckets": 32,
    "relative_attention_max_distance": 128,
    "dropout_rate": 0.1,
    "layer_norm_epsilon": 1e-6,
    "is_encoder_decoder": True,
    "model_type": "t5",
}


def write_moment(folder: Path, seed: int = 0) -> Path:
    import warnings

    import torch
    from momentfm import MOMENTPipeline

    cfg = {
        "task_name": "reconstruction",
        "model_name": "MOMENT",
        "transformer_type": "encoder_only",
        "d_model": None,
        "seq_len": 512,
        "patch_len": 8,
        "patch_stride_len": 8,
        "device": "cpu",
        "transformer_backbone": "google/flan-t5-base",
        "model_kwargs": {},
        "t5_config": MOMENT_T5,
    }
    torch.manual_seed(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        MOMENTPipeline(config=cfg, model_kwargs={"task_name": "reconstruction"}).save_pretrained(str(folder))
    return folder


# --------------------------------------------------------------------------------------------------
# stand-in checkouts (the authors' layout and entry points; tiny models)
# --------------------------------------------------------------------------------------------------

UNISHAPE_FILES = {
    "models/__init__.py": "",
    "utils/__init__.py": "",  # a generic top-level name another checkout may also have
    "models/unishapemodel_zeroshot.py": '''
        import torch
        from torch import nn

        class UniShapeModel(nn.Module):
            """Stand-in with the authors' constructor signature and forward(x, labels=None)."""
            def __init__(self, config, series_size, in_channels, window_emb_dim, out_channels, window_size=16,
                         stride=16, shape_alpha=0.01, shape_sparse_ratio=0.4, scale_len=4, **kwargs):
                super().__init__()
                config.window_size = window_size  # the authors' model mutates its config
                self.embed = nn.Conv1d(1, in_channels, kernel_size=window_size, stride=stride)
                self.norm = nn.LayerNorm(in_channels)
                self.drop = nn.Dropout(0.5)  # active in train mode: eval mode must be used
                self.fc = nn.Linear(in_channels, out_channels)
                self.class_proto_centers = nn.Parameter(torch.zeros(out_channels, in_channels))

            def forward(self, x, labels=None):
                assert labels is None, "labels must never reach the feature extractor"
                return self.drop(self.norm(torch.tanh(self.embed(x)).mean(-1)))
    ''',
}

NUTIME_FILES = {
    "src/__init__.py": "",
    "src/config.py": """
        class Config:
            def __init__(self):
                self.transformer_mask_type = "none"
                self.wne_use_in = False
            def update_by_dict(self, d):
                for k, v in d.items():
                    setattr(self, k, v)
    """,
    "src/models/__init__.py": "",
    "src/models/build.py": """
        import torch
        from torch import nn

        class WinT(nn.Module):
            def __init__(self, config):
                super().__init__()
                d = config.num_channels
                self.cls_token = nn.Parameter(torch.randn(1, 1, d))
                self.mix = nn.Linear(d, d)
                self.norm = nn.LayerNorm(d)
                self.fc = nn.Linear(d, config.out_dim)
                self.features = None
            def forward(self, x):  # (B, d, N) from the encoder
                h = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x.transpose(1, 2)], dim=1)
                h = h + torch.tanh(self.mix(h)).mean(dim=1, keepdim=True)
                self.features = self.norm(h)[:, 0]
                return self.fc(self.features)

        def get_model(config):
            if config.task == "cls":
                config.out_dim = config.num_classes
            return WinT(config)
    """,
    "src/models/encoders/__init__.py": "",
    "src/models/encoders/build.py": """
        from torch import nn

        class WindowEncoder(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.conv = nn.Conv1d(1, config.window_emb_dim, config.window_size, stride=config.window_size)
            def forward(self, x):
                B, C, L = x.shape
                return self.conv(x.reshape(B * C, 1, L))

        def get_encoder(config, dataset):
            encoder = WindowEncoder(config)
            config.num_channels = config.window_emb_dim
            config.model_series_size = config.model_series_size // config.window_size
            return encoder
    """,
    "configs/demo_ft_epilepsy.json": json.dumps({"window_emb_dim": 16, "window_size": 16, "model": "wint"}),
}

TICFM_FILES = {
    "src/TIC/__init__.py": "",
    "src/TIC/tiny.py": '''
        import torch
        from torch import nn

        class TinyICL(nn.Module):
            """Prototype classifier over the context rows of each table (query rows independent)."""
            def __init__(self, d, max_classes=10):
                super().__init__()
                self.proj = nn.Linear(d, d)
                self.max_classes = max_classes
            def forward(self, reps, y_train, return_logits=True, softmax_temperature=0.9, mgr_config=None):
                h = self.proj(reps)
                n = y_train.shape[1]
                k = int(y_train.max().item()) + 1
                ctx, qry = h[:, :n], h[:, n:]
                onehot = torch.nn.functional.one_hot(y_train.long(), k).float()
                means = onehot.transpose(1, 2) @ ctx / onehot.sum(1).clamp(min=1).unsqueeze(-1)
                logits = -torch.cdist(qry, means)
                return logits if return_logits else torch.softmax(logits / softmax_temperature, -1)
    ''',
    "scripts/eval_TSEncoder_orion_icl_classifier_ucr_full.py": """
        import random
        import sys
        from pathlib import Path

        _SRC_DIR = Path(__file__).resolve().parents[1] / "src"
        if str(_SRC_DIR) not in sys.path:
            sys.path.insert(0, str(_SRC_DIR))

        import numpy as np
        import torch
        from sklearn.base import BaseEstimator, ClassifierMixin
        from sklearn.preprocessing import LabelEncoder
        from torch import nn

        from TIC.tiny import TinyICL

        def build_TSEncoder(tsencoder_checkpoint=None, device=None, hidden_dim=512, seq_len=512):
            return nn.Sequential(nn.Flatten(), nn.Linear(seq_len, hidden_dim), nn.Tanh())

        class TokenMLPAdapter(nn.Module):
            def __init__(self, tsencoder_dim, icl_dim, hidden_dim=None, dropout=0.0, use_layernorm=True):
                super().__init__()
                self.net = nn.Sequential(nn.LayerNorm(tsencoder_dim), nn.Linear(tsencoder_dim, icl_dim))
            def forward(self, x):
                return self.net(x)

        def _build_icl_predictor_from_hparams(hparams):
            return TinyICL(int(hparams["adapter"]["icl_dim"]))

        class _TSEncoderAdapterPlusOrionICL(nn.Module):
            def __init__(self, *, tsencoder_model, adapter, icl_predictor, tsencoder_seq_len=512, tsencoder_batch_size=64):
                super().__init__()
                self.tsencoder_model, self.adapter, self.icl_predictor = tsencoder_model, adapter, icl_predictor
                self.tsencoder_seq_len = tsencoder_seq_len
                self.max_classes = 10
            def forward(self, X, y_train, d=None, feature_shuffles=None, embed_with_test=False, return_logits=True,
                        softmax_temperature=0.9, inference_config=None):
                B, T, L = X.shape
                reps = self.tsencoder_model(X.reshape(B * T, 1, L)).reshape(B, T, -1)
                return self.icl_predictor(self.adapter(reps), y_train=y_train, return_logits=return_logits,
                                          softmax_temperature=softmax_temperature)

        def _extract_full_state_dict(ckpt_obj):
            return ckpt_obj.get("state_dict", ckpt_obj)

        class TSEncoderICLClassifierV2(ClassifierMixin, BaseEstimator):
            def __init__(self, n_estimators=32, class_shift=True, crop_rate_range=(0.0, 0.2), n_augmentations=2,
                         softmax_temperature=0.9, average_logits=True, use_hierarchical=True, use_amp=True,
                         batch_size=8, model_path=None, allow_auto_download=True,
                         checkpoint_version="tabicl-classifier-v1.1-0506.ckpt", device=None, random_state=42,
                         n_jobs=None, verbose=False, inference_config=None):
                self.n_estimators, self.class_shift, self.crop_rate_range = n_estimators, class_shift, crop_rate_range
                self.n_augmentations, self.softmax_temperature, self.average_logits = n_augmentations, softmax_temperature, average_logits
                self.use_hierarchical, self.use_amp, self.batch_size, self.model_path = use_hierarchical, use_amp, batch_size, model_path
                self.allow_auto_download, self.checkpoint_version, self.device = allow_auto_download, checkpoint_version, device
                self.random_state, self.n_jobs, self.verbose, self.inference_config = random_state, n_jobs, verbose, inference_config

            def fit(self, X, y):
                X, y = self._validate_data(X, y, dtype=None, skip_check_array=True)  # as the authors' code
                self.y_encoder_ = LabelEncoder()
                y = self.y_encoder_.fit_transform(y)
                self.classes_ = self.y_encoder_.classes_
                self.n_classes_ = len(self.classes_)
                self.X_train_ = np.asarray(X, dtype=np.float32)
                self.y_train_ = y
                self.rng_ = random.Random(self.random_state)
                return self

            def predict_proba(self, X):
                X = np.asarray(self._validate_data(X, reset=False, dtype=None, skip_check_array=True), dtype=np.float32)
                offsets = list(range(self.n_classes_))
                self.rng_.shuffle(offsets)
                members = [offsets[i % len(offsets)] for i in range(self.n_estimators)]
                X_all = torch.from_numpy(np.concatenate([self.X_train_, X]))[None]
                avg = 0
                with torch.no_grad():
                    for off in members:
                        y = torch.from_numpy(((self.y_train_ + off) % self.n_classes_).astype(np.float32))[None]
                        out = self.model_(X_all, y)[0].numpy()
                        avg = avg + np.concatenate([out[:, off:], out[:, :off]], axis=1)
                avg = avg / len(members) / self.softmax_temperature
                e = np.exp(avg - avg.max(1, keepdims=True))
                return e / e.sum(1, keepdims=True)
    """,
}


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text).lstrip("\n"))
    return root


def write_unishape(root: Path) -> Path:
    import importlib.util

    import torch

    write_tree(root, UNISHAPE_FILES)
    spec = importlib.util.spec_from_file_location(
        "_unishape_standin", root / "models/unishapemodel_zeroshot.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    import argparse

    torch.manual_seed(0)
    model = mod.UniShapeModel(argparse.Namespace(), 512, 16, 16, out_channels=7, window_size=16, stride=16)
    state = {f"backbone.{k}": v for k, v in model.state_dict().items()}
    state["backbone.fc.weight"] = torch.zeros(3, 3)  # the pretraining head: dropped by the authors' mapping
    state["queue"] = torch.zeros(4)  # pretraining state: unexpected, reported as skipped
    (root / "pretrained_model_ckpt").mkdir(exist_ok=True)
    torch.save(
        {"epoch": 99, "state_dict": state}, root / "pretrained_model_ckpt/unishape_checkpoint_zeroshot.pth"
    )
    return root


def write_nutime(root: Path) -> Path:
    import sys
    import types

    import torch

    write_tree(root, NUTIME_FILES)
    sys.path.insert(0, str(root))
    try:
        for k in [k for k in sys.modules if k == "src" or k.startswith("src.")]:
            del sys.modules[k]
        from src.config import Config
        from src.models.build import get_model
        from src.models.encoders.build import get_encoder

        cfg = Config()
        cfg.update_by_dict(
            {
                "window_emb_dim": 16,
                "window_size": 16,
                "task": "cls",
                "num_classes": 4,
                "num_channels": 1,
                "model_series_size": 512,
            }
        )
        torch.manual_seed(0)
        net = torch.nn.Sequential(get_encoder(cfg, types.SimpleNamespace(samples=None)), get_model(cfg))
    finally:
        sys.path.remove(str(root))
        for k in [k for k in sys.modules if k == "src" or k.startswith("src.")]:
            del sys.modules[k]
    state = {f"backbone.{k}": v for k, v in net.state_dict().items()}
    state["online_projector.weight"] = torch.zeros(2, 2)  # BYOL head: unexpected, skipped and reported
    (root / "ckpt").mkdir(exist_ok=True)
    torch.save({"epoch": 10, "state_dict": state}, root / "ckpt/checkpoint_bias9.pth")
    return root


def write_ticfm(root: Path) -> Path:
    import importlib.util
    import sys

    import torch

    write_tree(root, TICFM_FILES)
    hp = {
        "tsencoder": {"hidden_dim": 24, "seq_len": 512, "tsencoder_dim": 24, "batch_size": 64},
        "adapter": {"icl_dim": 16, "hidden_dim": None, "dropout": 0.0, "use_layernorm": True},
        "orion": {"icl_predictor": {"config": {"icl_num_blocks": 1, "icl_nhead": 2}}},
    }
    (root / "checkpoints").mkdir(exist_ok=True)
    (root / "checkpoints/TSEncoder_orion_icl_model_hparams.json").write_text(json.dumps(hp))
    spec = importlib.util.spec_from_file_location("_ticfm_standin", root / TICFM_SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    torch.manual_seed(0)
    model = mod._TSEncoderAdapterPlusOrionICL(
        tsencoder_model=mod.build_TSEncoder(hidden_dim=24, seq_len=512),
        adapter=mod.TokenMLPAdapter(24, 16),
        icl_predictor=mod._build_icl_predictor_from_hparams(hp),
    )
    torch.save({"state_dict": model.state_dict()}, root / "checkpoints/TSEncoder_orion_icl_full.pt")
    for k in [k for k in sys.modules if k == "TIC" or k.startswith("TIC.")]:
        del sys.modules[k]
    return root


TICFM_SCRIPT = "scripts/eval_TSEncoder_orion_icl_classifier_ucr_full.py"


def write_chorustic(path: Path) -> Path:
    import torch

    from chorustic.model import ChorusTIC, ChorusTICConfig, save_checkpoint

    torch.manual_seed(0)
    return save_checkpoint(path, ChorusTIC(ChorusTICConfig.tiny()), provenance={"training": "random weights (test)"})


# --------------------------------------------------------------------------------------------------
# fixtures
# --------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def discovery():
    d = discover()
    assert not d.broken, f"plugin files failed to load: {d.broken}"
    return d


@pytest.fixture(scope="module")
def assets(tmp_path_factory):
    """name -> build params pointing the plugin at tiny local assets."""
    root = tmp_path_factory.mktemp("baseline_assets")
    tab1 = write_tabicl(root / "tabicl-classifier-v1.1-20250506.ckpt", seed=0)
    tab2 = write_tabicl(root / "tabicl-classifier-v2-20260212.ckpt", seed=1, row_rope_interleaved=False)
    m1 = write_mantis(root / "mantis8m", "v1")
    m2 = write_mantis(root / "mantisv2", "v2")
    mom = write_moment(root / "moment")
    uni = write_unishape(root / "UniShape")
    nut = write_nutime(root / "NuTime")
    tic = write_ticfm(root / "TIC-FM")
    chorus = write_chorustic(root / "chorustic-tiny.safetensors")
    return {
        "chorustic": {"checkpoint": str(chorus), "n_label_shifts": 2, "n_rssc_draws": 1},
        "tabicl": {"checkpoint": str(tab1), "n_estimators": 4},
        "tabicl_v2": {"checkpoint": str(root), "n_estimators": 4},  # a folder holding the file works too
        "mantis_rf": {"weights": str(m1)},
        "mantisv2_lr": {"weights": str(m2)},
        "mantisv2_rf": {"weights": str(m2)},
        "moment_svm": {"weights": str(mom)},
        "unishape_rf": {"checkout": str(uni), "in_channels": 16, "window_emb_dim": 16},
        "nutime_rf": {"checkout": str(nut)},
        "tic_fm": {"checkout": str(tic), "n_estimators": 4},
        "minirocket": {"n_kernels": 840},
        "multirocket_hydra": {"n_kernels": 4, "n_groups": 16},
        "quant": {},
        "dtw_1nn": {},
        "_root": root,
        "_paths": {
            "tabicl_v1": tab1,
            "tabicl_v2": tab2,
            "mantis_v1": m1,
            "mantis_v2": m2,
            "moment": mom,
            "unishape": uni,
            "nutime": nut,
            "ticfm": tic,
        },
    }


make_data = synthetic_task  # separable classes, length 512 (resampled) or 64 (native)


#: Every plugin file in baselines/, discovered as the harness discovers them: a plugin added to the folder is
#: checked with no change here. Plugins that need weights or a checkout get tiny local assets (fixture
#: ``assets``); any other plugin runs with its default parameters and must then be runnable offline.
PLUGINS = sorted(discover().methods)


# --------------------------------------------------------------------------------------------------
# the suite
# --------------------------------------------------------------------------------------------------

EXPECTED = {  # name: (display name, group, fits_on_target) -- the paper's columns (assignment table)
    "tabicl": ("TabICL", "Generic ICL", False),
    "tabicl_v2": ("TabICLv2", "Generic ICL", False),
    "moment_svm": ("MOMENT+SVM", "Frozen TSFM", True),
    "mantis_rf": ("Mantis+RF", "Frozen TSFM", True),
    "mantisv2_lr": ("MantisV2+LR", "Frozen TSFM", True),
    "mantisv2_rf": ("MantisV2+RF", "Frozen TSFM", True),
    "unishape_rf": ("UniShape+RF", "Frozen TSFM", True),
    "nutime_rf": ("NuTime+RF", "Frozen TSFM", True),
    "tic_fm": ("TIC-FM", "Time-series ICL", False),
    "tict": ("TiCT", "Time-series ICL", False),
    "minirocket": ("MiniRocket", "Classical", True),
    "multirocket_hydra": ("MultiRocket-Hydra", "Classical", True),
    "quant": ("QUANT", "Classical", True),
    "dtw_1nn": ("1NN-DTW", "Classical", True),
}


def test_every_paper_method_is_discovered_with_its_table_metadata(discovery):
    for name, (display, group, target_fit) in EXPECTED.items():
        m = discovery.get(name)
        assert (m.info.display_name, m.info.group, m.info.fits_on_target) == (display, group, target_fit), (
            name
        )
        assert m.info.group in GROUPS
        assert discovery.sources[name] == f"{name}.py"
        if isinstance(m, Method):
            res = m.resources
            assert (
                set(res) == {"threads", "mem_mb", "runtime", "gpu"}
                and res["threads"] >= 1
                and res["runtime"] >= 1
            )
    assert discovery.get("tict").info.reported


def test_every_paper_method_has_a_conda_environment():
    import yaml

    from chorustic.paths import REPO_ROOT

    for name in EXPECTED:
        env = yaml.safe_load((REPO_ROOT / "workflow" / "envs" / f"{name}.yaml").read_text())
        pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
        assert "-e ${CHORUSTIC_REPO}" in pip and any(p.startswith("torch==") for p in pip), name


@pytest.mark.parametrize("name", PLUGINS)
def test_plugin_passes_the_contract(name, discovery, assets):
    """The full contract of `chorustic check-method` (metadata, resources, parameters, readiness; fit /
    predict_proba / classes_ / determinism / query order / a missing class / univariate and, for native
    input, variable-length series) on generated data."""
    method = discovery.get(name)
    run = check_method(method, assets.get(name, {}))
    if any(c.name == "ready" and c.status == "fail" for c in run.clauses):
        pytest.fail(
            f"plugin {name!r} is not runnable offline with its default parameters "
            f"({next(c.detail for c in run.clauses if c.name == 'ready')}); give it tiny local assets in the "
            "`assets` fixture of tests/test_baselines_contract.py so its contract is checked"
        )
    assert run.ok, f"{name} violates the method contract:\n{run.report()}"
    if isinstance(method, Method):
        assert {c.name for c in run.clauses if c.passed} >= {"fit returns self", "probabilities", "missing class"}
        assert run.observed["proba_missing_class"].shape == (9, 2)
    if name in ("unishape_rf", "nutime_rf"):  # checkout plugins log loaded / skipped tensors
        X, y = make_data("resampled", 12, 2, seed=0)
        est = method.build(seed=0, **method.params(assets[name])).fit(X, y)
        info = est.run_info_
        assert info["tensors_loaded"] > 0 and info["tensors_skipped_unexpected"] >= 1, info


def test_plugins_of_the_paper_are_all_discovered():
    assert set(EXPECTED) | {"chorustic"} <= set(PLUGINS)
    native = {n for n in PLUGINS if getattr(discover().methods[n].info, "input_kind", None) == "native"}
    assert native >= {"tabicl", "moment_svm", "minirocket", "quant", "dtw_1nn", "unishape_rf"}


def test_frozen_features_learn_separable_classes(discovery, assets):
    """Random backbones still carry signal: RF on their features separates an easy synthetic task."""
    for name in ("mantis_rf", "mantisv2_lr"):
        method = discovery.get(name)
        X, y = make_data("resampled", 60, 1, seed=5)
        Xq, yq = make_data("resampled", 30, 1, seed=6)
        est = method.build(seed=0, **method.params(assets[name])).fit(X, y)
        assert (est.predict(Xq) == yq).mean() >= 0.8, name


def test_test_split_embeddings_are_cached_across_contexts(discovery, assets):
    method = discovery.get("mantis_rf")
    params = method.params(assets["mantis_rf"])
    X, y = make_data("resampled", 20, 2, seed=7)
    Xq, _ = make_data("resampled", 10, 2, seed=8)
    EMBEDDING_CACHE.clear()
    a = method.build(seed=0, **params).fit(X[:12], y[:12]).predict_proba(Xq)
    hits = EMBEDDING_CACHE.hits
    b = method.build(seed=0, **params).fit(X[:12], y[:12]).predict_proba(Xq)
    assert EMBEDDING_CACHE.hits >= hits + 2  # context and query both reused
    assert np.array_equal(a, b)


def test_readout_switch_changes_features(discovery, assets):
    method = discovery.get("mantisv2_rf")
    X, _ = make_data("resampled", 4, 1, seed=9)
    base = method.build(seed=0, **method.params(assets["mantisv2_rf"]))
    combined = method.build(
        seed=0, **method.params({**assets["mantisv2_rf"], "layer": 0, "token": "combined"})
    )
    assert base.transform(X).shape == (4, 32)
    assert combined.transform(X).shape == (4, 64)  # CLS and mean token concatenated


def test_tabicl_chunks_queries_to_fit_memory_and_refuses_impossible_tables(discovery, assets):
    method = discovery.get("tabicl")
    params = method.params(assets["tabicl"])
    X, y = make_data("native", 20, 2, seed=10)
    Xq, _ = make_data("native", 30, 2, seed=11)
    full = method.build(seed=0, **params).fit(X, y)
    p_full = full.predict_proba(Xq)
    # one row costs 128 features x 16 dims x 4 B = 8 KiB per member; half of 0.6 MiB holds 38 rows:
    # one member, the 20 context rows and 18 of the 30 query rows per forward pass
    tight = method.build(seed=0, **{**params, "max_memory_mb": 0.6}).fit(X, y)
    p_tight = tight.predict_proba(Xq)
    assert tight.run_info_["ensemble_batch"] == 1 and tight.run_info_["query_chunk"] == 18
    assert np.allclose(p_full, p_tight, atol=1e-5)
    with pytest.raises(MemoryError, match="GiB are available"):
        method.build(seed=0, **{**params, "max_memory_mb": 0.01}).fit(X, y).predict_proba(Xq)


def test_tabicl_respects_the_job_memory_limit_exported_by_the_harness(discovery, assets, monkeypatch):
    method = discovery.get("tabicl")
    X, y = make_data("native", 20, 2, seed=10)
    est = method.build(seed=0, **method.params(assets["tabicl"])).fit(X, y)
    monkeypatch.setenv("CHORUSTIC_MEM_LIMIT_MB", "1")  # far below this process' resident memory
    with pytest.raises(MemoryError, match="more memory"):
        est.predict_proba(X[:3])


def test_single_class_context_predicts_that_class(discovery, assets):
    method = discovery.get("minirocket")
    X, _ = make_data("native", 6, 1, seed=12)
    est = method.build(seed=0, **method.params(assets["minirocket"])).fit(X, np.full(6, 2))
    assert np.array_equal(est.classes_, [2]) and np.array_equal(est.predict(X[:3]), [2, 2, 2])


def test_unknown_parameter_is_rejected(discovery):
    with pytest.raises(ValueError, match="no parameter 'n_trees'"):
        discovery.get("mantis_rf").params({"n_trees": 10})


def test_caches_can_be_cleared():
    clear_cache()
    EMBEDDING_CACHE.clear()
