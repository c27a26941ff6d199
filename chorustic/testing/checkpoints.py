"""Tiny random-weight checkpoints in the real formats of the pretrained baselines, and stand-in checkouts.

TabICL ``{config, state_dict}`` checkpoints built with tabicl's own model class; MOMENT and Mantis folders
written by the packages' ``save_pretrained``; a ChorusTIC checkpoint in this project's format; stand-in
checkouts with the authors' module layout and entry points for UniShape, NuTime and TIC-FM (contract
only: the stand-ins are not the authors' models); random-weight checkpoints in the released files' layout built
by the authors' real UniShape and NuTime classes from a clone of their code
(:func:`write_real_unishape_checkpoint`, :func:`write_real_nutime_checkpoint`,
``tests/test_baselines_real_code.py``). No network, no real weights. The plugins load them
through their real local-path loaders (``tests/test_baselines_contract.py``, ``test_baselines_weights.py``).
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

__all__ = [
    "baseline_assets",
    "write_published",
    "randomized_chorustic",
    "write_chorustic",
    "write_mantis",
    "write_moment",
    "write_nutime",
    "write_nutime_checkpoint",
    "write_real_nutime_checkpoint",
    "write_real_unishape_checkpoint",
    "write_tabicl",
    "write_ticfm",
    "write_tree",
    "write_unishape",
]


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


#: TabICL at the released checkpoints' sizes (random weights, for measuring cost): v2 is the package's own
#: default architecture; v1.1 the TabICLv1 layout (no feature grouping, no target-aware columns, no
#: scalable softmax; 4 heads in the column and ICL transformers, as in the TabICL paper).
TABICL_V2_REAL = {"zero_init": False, "row_rope_interleaved": False}
TABICL_V1_REAL = {"zero_init": False, "col_nhead": 4, "icl_nhead": 4, "col_feature_group": False,
                  "col_target_aware": False, "col_ssmax": "none", "icl_ssmax": "none"}


def write_tabicl(path: Path, seed: int = 0, *, real_size: bool = False, **overrides) -> Path:
    """A TabICL ``{config, state_dict}`` checkpoint: tiny, or with ``real_size`` the package's full-size
    architecture (its defaults, e.g. :data:`TABICL_V1_REAL` / :data:`TABICL_V2_REAL` as ``overrides``)."""
    import torch
    from tabicl._model.tabicl import TabICL

    torch.manual_seed(seed)
    cfg = dict(overrides) if real_size else {**TABICL_TINY, **overrides}
    torch.save({"config": cfg, "state_dict": TabICL(**cfg).state_dict()}, path)
    return path


def write_mantis(folder: Path, version: str, seed: int = 0, *, real_size: bool = False) -> Path:
    """A Mantis folder (``save_pretrained``): tiny, or with ``real_size`` the published architecture
    (the classes' defaults: Mantis-8M, MantisV2) with random weights."""
    import torch
    from mantis.architecture import Mantis8M, MantisV2

    torch.manual_seed(seed)
    if real_size:
        net = Mantis8M(device="cpu") if version == "v1" else MantisV2(device="cpu")
    elif version == "v1":  # the published Mantis-8M checkpoint uses the legacy class (vit_unit.* names)
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


#: MOMENT-1-base's T5 encoder (google/flan-t5-base sizes).
MOMENT_T5_BASE = {**MOMENT_T5, "d_model": 768, "d_ff": 2048, "d_kv": 64, "num_heads": 12, "num_layers": 12,
                  "vocab_size": 32128}


def write_moment(folder: Path, seed: int = 0, *, real_size: bool = False) -> Path:
    """A MOMENT folder (``save_pretrained``): a tiny T5, or with ``real_size`` MOMENT-1-base's, random weights."""
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
        "t5_config": MOMENT_T5_BASE if real_size else MOMENT_T5,
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
    # the authors' layers module (theirs imports einops and fastai; the stand-in needs neither)
    "models/networks.py": '''
        import torch
        from torch import nn

        class TransformerEnc(nn.Module):
            def __init__(self, hidden_dim):
                super().__init__()
                # as the authors' TransformerEnc: created on the GPU, which fails without CUDA
                self.cls_token = nn.Parameter(torch.randn(hidden_dim).cuda())
                self.norm = nn.LayerNorm(hidden_dim)

            def forward(self, x):
                return self.norm(x.mean(1) + self.cls_token), x
    ''',
    "models/unishapemodel_zeroshot.py": '''
        import torch
        from torch import nn

        from .networks import TransformerEnc

        class UniShapeModel(nn.Module):
            """Stand-in with the authors' constructor signature and forward(x, labels=None) -> (B, in_channels)."""
            def __init__(self, config, series_size, in_channels, window_emb_dim, out_channels, window_size=16,
                         stride=16, shape_alpha=0.01, shape_sparse_ratio=0.4, scale_len=4, **kwargs):
                super().__init__()
                config.window_size, config.stride = 8, 4  # the authors' model mutates its config
                self.embed = nn.Conv1d(1, in_channels, kernel_size=window_size, stride=stride)
                self.vit_unit = TransformerEnc(in_channels)
                self.drop = nn.Dropout(0.5)  # active in train mode: eval mode must be used
                self.fc = nn.Linear(in_channels, out_channels)
                self.class_proto_centers = nn.Parameter(torch.zeros(out_channels, in_channels))

            def forward(self, x, labels=None):
                assert labels is None, "labels must never reach the feature extractor"
                tokens, _ = self.vit_unit(torch.tanh(self.embed(x)).transpose(1, 2))
                return self.drop(tokens)
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
    """The UniShape stand-in checkout, with a checkpoint in the released file's layout (the authors' pretraining
    wrapper's keys: ``backbone.*`` with the projector as ``backbone.fc``, ``momentum_backbone.*``, ``predictor.*``,
    ``class_centers``; ``{"epoch", "state_dict", "optimizer"}``)."""
    import argparse

    import torch

    from chorustic.methods import import_plugin_module
    from chorustic.methods.checkout import checkout_imports
    from chorustic.paths import REPO_ROOT

    write_tree(root, UNISHAPE_FILES)
    plugin = import_plugin_module("unishape_rf", REPO_ROOT / "baselines" / "unishape_rf.py")
    torch.manual_seed(0)
    with checkout_imports(root, plugin.TOP_LEVEL), plugin.cuda_calls_stay_on_cpu():
        from models.unishapemodel_zeroshot import UniShapeModel  # the stand-in's

        model = UniShapeModel(argparse.Namespace(), 512, 16, 16, out_channels=7, window_size=16, stride=16)
    own = {k: v for k, v in model.state_dict().items() if not k.startswith("fc.")}
    state = {f"backbone.{k}": v for k, v in own.items()}
    state["backbone.fc.0.weight"] = torch.zeros(3, 3)  # the pretraining projector: dropped by the authors' mapping
    state |= {f"momentum_backbone.{k}": v.clone() for k, v in own.items()}  # unexpected, reported as skipped
    state |= {"predictor.0.weight": torch.zeros(3, 3), "class_centers": torch.zeros(5, 16)}
    (root / "pretrained_model_ckpt").mkdir(exist_ok=True)
    torch.save(
        {"epoch": 99, "state_dict": state, "optimizer": {"state": {}, "param_groups": []}},
        root / "pretrained_model_ckpt/unishape_checkpoint_zeroshot.pth",
    )
    return root


def write_nutime(root: Path) -> Path:
    import torch

    write_tree(root, NUTIME_FILES)
    # the BYOL predictor the released file also holds: unexpected, skipped and reported
    write_nutime_checkpoint(root, root / "ckpt/checkpoint_bias9.pth", epoch=10,
                            extra={"predictor.0.weight": torch.zeros(2, 2)})
    return root


def write_nutime_checkpoint(checkout: Path, path: Path, *, config_file: str = "configs/demo_ft_epilepsy.json",
                            seed: int = 0, epoch: int = 0, extra: dict[str, Any] | None = None) -> Path:
    """A random-weight ``checkpoint_bias9.pth`` for a NuTime checkout (a real one, for measuring cost, or the
    stand-in): the model the plugin builds with the authors' factories from ``config_file`` (their
    initialisation, seeded), saved as ``{"epoch", "state_dict"}`` with the model's keys under ``backbone.``
    (``extra``: more entries of the state dict). The tensors the plugin loads are those of the released file;
    the file itself, a BYOL save, also holds the projector (as ``backbone.1.fc.*``), ``momentum_backbone.*``,
    ``predictor.*`` and the optimizer: :func:`write_real_nutime_checkpoint` writes that layout."""
    import torch

    from chorustic.methods import import_plugin_module
    from chorustic.paths import REPO_ROOT

    plugin = import_plugin_module("nutime_rf", REPO_ROOT / "baselines" / "nutime_rf.py")
    torch.manual_seed(seed)
    net = plugin.build_nutime(Path(checkout), config_file, series_length=plugin.NuTimeRFClassifier.series_length)
    state = {f"backbone.{k}": v for k, v in net.state_dict().items()} | dict(extra or {})
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"epoch": epoch, "state_dict": state}, path)
    return path


def write_real_unishape_checkpoint(checkout: Path, path: Path, *, seed: int = 0, epoch: int = 30) -> Path:
    """A random-weight ``unishape_checkpoint_zeroshot.pth`` built FROM a real UniShape checkout's classes.

    The layout of the file their pretraining script (``unishape_pretrain.py``) saves and their zero-shot
    script loads (``utils.util.load_pretrained_model``): ``{"epoch", "state_dict", "optimizer"}`` with the
    ``state_dict`` of their ``models.pretrain_mocov3.MoCoV3ModelPseudo`` around a backbone in pretraining mode
    (``pre_training=True``: stride = window, a linear ``fc`` that the wrapper replaces by its projector), built
    with their script's defaults (``series_size=512``, 128 channels, ``out_channels=10``, ``shape_ratio=0.6``,
    ``scale_len=5``, 1,402 class centres). The backbone is their zero-shot class
    (``models.unishapemodel_zeroshot.UniShapeModel``): the only one whose module names
    (``encoder_scale_list``, ``vit_unit``) that script fills from ``backbone.*``. Keys: ``backbone.*``,
    ``momentum_backbone.*``, ``predictor.*``, ``class_centers``. ``optimizer`` is a fresh AdamW's state (their
    optimizer, no steps); their timm scheduler's state is left out (nothing loads it). Their initialisation,
    seeded. Needs their dependencies (``timm``, ``einops``, ``fastai``; see
    :mod:`chorustic.testing.authors_deps`)."""
    import argparse

    import torch

    from chorustic.methods import import_plugin_module
    from chorustic.methods.checkout import checkout_imports
    from chorustic.paths import REPO_ROOT

    plugin = import_plugin_module("unishape_rf", REPO_ROOT / "baselines" / "unishape_rf.py")
    torch.manual_seed(seed)
    with checkout_imports(Path(checkout), plugin.TOP_LEVEL, label=plugin.LABEL), plugin.cuda_calls_stay_on_cpu():
        from models.pretrain_mocov3 import MoCoV3ModelPseudo
        from models.unishapemodel_zeroshot import UniShapeModel

        args = argparse.Namespace(model_series_size=512, in_channels=128, window_emb_dim=128, out_channels=10,
                                  patch_size=16, patch_stride=16, shape_ratio=0.6, scale_len=5)
        backbone = UniShapeModel(config=args, series_size=args.model_series_size, in_channels=args.in_channels,
                                 window_emb_dim=args.window_emb_dim, out_channels=args.out_channels,
                                 window_size=args.patch_size, stride=args.patch_stride, pre_training=True,
                                 shape_ratio=args.shape_ratio, scale_len=args.scale_len)
        model = MoCoV3ModelPseudo(backbone=backbone, tau=0.1, lamb=0.01, num_classes=1402, shape_ratio=0.6)
    optimizer = torch.optim.AdamW([{"params": model.parameters()}], lr=0.002, betas=(0.9, 0.999), weight_decay=0.05)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"epoch": epoch, "state_dict": model.state_dict(), "optimizer": optimizer.state_dict()}, path)
    return path


def write_real_nutime_checkpoint(checkout: Path, path: Path, *, config_file: str = "configs/demo_ft_epilepsy.json",
                                 seed: int = 0, epoch: int = 100) -> Path:
    """A random-weight ``ckpt/checkpoint_bias9.pth`` built FROM a real NuTime checkout's classes.

    The layout their self-supervised experiment saves (``src.experiments.base_exp.BaseExp.save_checkpoint`` of
    ``SelfSupervisedLearningExp``): ``{"epoch", "state_dict", "optimizer", "scheduler", "best_val_acc",
    "best_val_mf1", "best_test_acc", "best_test_mf1"}`` with the ``state_dict`` of their ``BYOLModel``
    (``src.models.build.get_ssl_model``, ``ssl_method="byol"``) around ``nn.Sequential(get_encoder(...),
    get_model(...))`` built from ``config_file`` (bias9's architecture) with ``task="ssl"``, one channel and
    512 points: keys ``backbone.0.*`` (encoder), ``backbone.1.*`` (WinT, its ``fc`` the BYOL projector),
    ``momentum_backbone.*``, ``predictor.*``. ``optimizer`` is a fresh AdamW's state (their optimizer, no
    steps) and ``scheduler`` an empty dict (their timm scheduler's state; nothing loads it). Their
    initialisation, seeded. Needs ``timm`` (see :mod:`chorustic.testing.authors_deps`)."""
    import contextlib
    import sys
    import types

    import torch
    from torch import nn

    from chorustic.methods import import_plugin_module
    from chorustic.methods.checkout import checkout_imports
    from chorustic.paths import REPO_ROOT

    plugin = import_plugin_module("nutime_rf", REPO_ROOT / "baselines" / "nutime_rf.py")
    settings = json.loads(plugin.config_path(Path(checkout), config_file).read_text())
    torch.manual_seed(seed)
    with checkout_imports(Path(checkout), ("src",), label=plugin.LABEL), contextlib.redirect_stdout(sys.stderr):
        from src.config import Config
        from src.models.build import get_model, get_ssl_model
        from src.models.encoders.build import get_encoder

        config = Config()
        config.update_by_dict(settings)
        config.update_by_dict({"task": "ssl", "ssl_method": "byol", "num_channels": 1, "model_series_size": 512,
                               "transform_size": 512})
        encoder = get_encoder(config, types.SimpleNamespace(samples=None, targets=None))
        model = get_ssl_model(config, backbone=nn.Sequential(encoder, get_model(config)))
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"epoch": epoch, "state_dict": model.state_dict(), "optimizer": optimizer.state_dict(),
                "scheduler": {}, "best_val_acc": 0.0, "best_val_mf1": 0.0, "best_test_acc": 0.0,
                "best_test_mf1": 0.0}, path)
    return path


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


def randomized_chorustic(config=None, *, scale: float = 0.1, seed: int = 0):
    """A ChorusTIC (default ``ChorusTICConfig.tiny()``) whose every trainable weight is moved by
    ``scale * N(0, 1)``: TabICL's initialisation zeroes each attention output and second feed-forward
    layer (blocks start as the identity, no gradient reaches the layers below at step 0, and outputs
    hardly depend on the inputs), which would hide what a test compares."""
    import torch

    from chorustic.model import ChorusTIC, ChorusTICConfig

    torch.manual_seed(seed)
    model = ChorusTIC(config if config is not None else ChorusTICConfig.tiny())
    with torch.no_grad():
        for p in model.parameters():
            if p.requires_grad:
                p.add_(scale * torch.randn_like(p))
    return model


def write_chorustic(path: Path) -> Path:
    import torch

    from chorustic.model import ChorusTIC, ChorusTICConfig, save_checkpoint

    torch.manual_seed(0)
    return save_checkpoint(path, ChorusTIC(ChorusTICConfig.tiny()), provenance={"training": "random weights (test)"})


def write_published(root: Path) -> Path:
    """Files in the format of the published reference results (chorustic.data.published) for every estimator
    of the published_* plugins: random accuracies of three datasets, three resamples; returns the folder."""
    import numpy as np

    from chorustic.data.published import PUBLISHED_ESTIMATORS, published_file

    rng = np.random.default_rng(0)
    for est in PUBLISHED_ESTIMATORS:
        f = published_file(root, est)
        f.parent.mkdir(parents=True, exist_ok=True)
        rows = [f"{d}," + ",".join(f"{v:.4f}" for v in rng.uniform(0.5, 1.0, 3)) for d in ("GunPoint", "ArrowHead", "Coffee")]
        f.write_text("Resamples:,0,1,2\n" + "\n".join(rows) + "\n")
    return root


def baseline_assets(root: Path) -> dict[str, Any]:
    """Write every tiny asset under ``root``; return plugin name -> build parameters pointing at them
    (``"_root"``: ``root``, ``"_paths"``: the assets by kind)."""
    tab1 = write_tabicl(root / "tabicl-classifier-v1.1-20250506.ckpt", seed=0)
    tab2 = write_tabicl(root / "tabicl-classifier-v2-20260212.ckpt", seed=1, row_rope_interleaved=False)
    m1 = write_mantis(root / "mantis8m", "v1")
    m2 = write_mantis(root / "mantisv2", "v2")
    mom = write_moment(root / "moment")
    uni = write_unishape(root / "UniShape")
    nut = write_nutime(root / "NuTime")
    tic = write_ticfm(root / "TIC-FM")
    chorus = write_chorustic(root / "chorustic-tiny.safetensors")
    published = write_published(root / "published")
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
        **{f"published_{n}": {"cache": str(published), "offline": True}
           for n in ("hc2", "multirocket_hydra", "quant", "minirocket", "dtw_1nn")},
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
