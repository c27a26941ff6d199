"""UniShape + random forest (Liu et al., AAAI 2026), checkpoint ``unishape_checkpoint_zeroshot``
(paper App. C.4: frozen feature + RF).

No package exists: the plugin imports the authors' code from a user-supplied checkout of
https://github.com/ZLiu21/UniShape (``params.checkout``; default
``$CHORUSTIC_CHECKOUTS/UniShape``, see :func:`chorustic.methods.weights.default_checkout_root`) and
the checkpoint from ``params.checkpoint`` (default
``<checkout>/pretrained_model_ckpt/unishape_checkpoint_zeroshot.pth``, where the authors' script
expects it). Nothing of theirs is vendored here. Their model code imports ``timm``, ``einops`` and
``fastai`` (``models/networks.py``: ``from fastai.basics import *``); ``workflow/envs/unishape_rf.yaml``
installs them.

Protocol (the authors' ``unishape_zeroshot.py``):

* input: the **native** series, each resampled to 512 points by linear interpolation on
  ``linspace(0, 1)`` grids (the authors' ``getInteSet``, i.e. ``align_corners=True``); no other
  normalisation (the model's token generators standardise each series and encode window means and
  standard deviations themselves);
* model: ``models.unishapemodel_zeroshot.UniShapeModel(config, series_size=512, in_channels=128,
  window_emb_dim=128, out_channels, window_size=16, stride=16, shape_alpha=0.01,
  shape_sparse_ratio=0.6, scale_len=4)``, ``config`` an ``argparse.Namespace`` with
  ``seq_len = model_series_size = 512``, as their script builds it. The model fixes its own token
  windows (64, 32, 16 and 8 points, stride 4, the last ``scale_len`` of them used) and overwrites
  ``config.window_size``/``config.stride``: ``window_size``, ``stride`` and ``window_emb_dim`` are
  accepted and ignored by their class, and ``in_channels`` must stay 128 (their token generators and
  inception blocks hard-code 128 channels). ``out_channels`` (their script: the dataset's class count)
  sizes only the classification head and class prototypes, which the features never use: 2 here;
* weights: the checkpoint's ``state_dict`` (the pretraining wrapper's: ``backbone.*``,
  ``momentum_backbone.*``, ``predictor.*``, ``class_centers``), ``backbone.`` stripped and
  ``backbone.fc.*`` dropped, tensors whose name or shape do not match skipped, as the authors'
  ``load_pretrained_model`` does; the run log records how many tensors were loaded and skipped. A
  checkpoint that fills fewer of the model's tensors than it leaves missing (for example one saved
  with the pretraining class's module names, ``unit_scale_list``/``transformer_enc``, which the
  authors' zero-shot script would load almost nothing of) is refused;
* features: the model's output ``forward(x)`` (the transformer's class token, 128 values) for each
  channel on its own, channels concatenated for multivariate data (the model is univariate);
* classifier: ``RandomForestClassifier(n_estimators=200, random_state=seed)`` (the authors use
  ``random_state=0``, our seed for the paper's full-context runs).

Known differences from the authors' zero-shot script (``tests/test_baselines_real_code.py`` checks the
rest against their classes):

* eval mode: their script extracts features without ``model.eval()`` (dropout active, so features
  are random); here the frozen backbone runs in eval mode, the standard frozen-feature protocol, so
  the same seed gives the same predictions;
* CPU: their ``TransformerEnc`` creates its class token with ``.cuda()``; on a machine without CUDA
  the plugin builds the model with ``Tensor.cuda`` returning the tensor itself (the token is then
  overwritten by the checkpoint and moved to the job's device with the model);
* multivariate and missing values: their script takes univariate series without missing values; here
  every channel is embedded on its own (concatenated) and missing values are 0 (the harness' rule);
* their random forest uses ``n_jobs=-1``; here the job's thread count (same trees).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from chorustic.methods import CostModel, MethodInfo, MethodNotReady, import_plugin_module, register
from chorustic.methods.checkout import CheckoutMethod, backbone_state_dict, checkout_imports
from chorustic.methods.estimators import FrozenBackbone, FrozenEmbeddingClassifier, torch_device
from chorustic.methods.inputs import to_fixed_length
from chorustic.methods.weights import cached, file_key, frozen, load_state_dict_report, load_torch_checkpoint

_mantis = import_plugin_module("mantis_rf", __file__)

REPO_URL = "https://github.com/ZLiu21/UniShape"
MODEL_FILE = "models/unishapemodel_zeroshot.py"
NETWORKS_FILE = "models/networks.py"  # the layers MODEL_FILE imports
CKPT_NAME = "pretrained_model_ckpt/unishape_checkpoint_zeroshot.pth"
TOP_LEVEL = ("models", "utils", "datapre")
LABEL = "UniShape+RF (unishape_rf)"


def authors_state_dict(ckpt: Any) -> dict[str, Any]:
    """The authors' key mapping (:func:`~chorustic.methods.checkout.backbone_state_dict`), without the fixed
    positional table."""
    out = backbone_state_dict(ckpt, LABEL)
    out.pop("transformer_enc.pos_encoder.pe", None)
    return out


class UniShapeBackbone(FrozenBackbone):
    def embed(self, series) -> np.ndarray:
        import torch

        with torch.no_grad():
            out = self.network(self.channels_first(series))
        if isinstance(out, (tuple, list)):
            out = out[0]
        return out.reshape(out.shape[0], -1).float().cpu().numpy()


@contextlib.contextmanager
def cuda_calls_stay_on_cpu():
    """Their ``TransformerEnc`` creates its class token with ``torch.randn(d).cuda()``, which fails where CUDA
    is not available. Without CUDA, inside this block ``Tensor.cuda`` returns the tensor itself (the token is
    then drawn on the CPU as before); with CUDA nothing changes."""
    import torch

    if torch.cuda.is_available():
        yield
        return
    had = "cuda" in torch.Tensor.__dict__
    before = torch.Tensor.__dict__.get("cuda")
    torch.Tensor.cuda = lambda self, *args, **kwargs: self
    try:
        yield
    finally:
        if had:
            torch.Tensor.cuda = before
        else:
            del torch.Tensor.cuda


def model_config(arch: dict[str, Any]) -> argparse.Namespace:
    """The ``args`` namespace their zero-shot script passes as ``config`` (the fields their class reads)."""
    return argparse.Namespace(
        window_size=arch["window_size"], stride=arch["stride"], seq_len=512, model_series_size=512
    )


def build_unishape(checkout: Path, arch: dict[str, Any], *, out_channels: int = 2):
    """Their ``UniShapeModel`` as ``unishape_zeroshot.py`` builds it (their initialisation, no weights loaded)."""
    with checkout_imports(checkout, TOP_LEVEL, label=LABEL), cuda_calls_stay_on_cpu():
        from models.unishapemodel_zeroshot import UniShapeModel  # the authors' module

        return UniShapeModel(
            config=model_config(arch),
            series_size=512,
            in_channels=arch["in_channels"],
            window_emb_dim=arch["window_emb_dim"],
            out_channels=out_channels,
            window_size=arch["window_size"],
            stride=arch["stride"],
            shape_alpha=arch["shape_alpha"],
            shape_sparse_ratio=arch["shape_sparse_ratio"],
            scale_len=arch["scale_len"],
        )


def load_unishape(checkout: Path, checkpoint: Path, *, arch: dict[str, Any], device: str) -> UniShapeBackbone:
    dev = torch_device(device)

    def load():
        model = build_unishape(checkout, arch)
        report = load_state_dict_report(
            model, authors_state_dict(load_torch_checkpoint(checkpoint, label=LABEL))
        )
        if report["tensors_loaded"] == 0 or report["tensors_missing"] > report["tensors_loaded"]:
            raise MethodNotReady(
                f"{LABEL}: {checkpoint} does not fit the UniShapeModel of {checkout} (loaded "
                f"{report['tensors_loaded']} tensors, {report['tensors_missing']} missing, e.g. "
                f"{report['missing'][:3]}); use unishape_checkpoint_zeroshot.pth from the authors' release"
            )
        model = frozen(model, dev)
        info = {
            "checkout": str(checkout),
            "checkpoint": str(checkpoint),
            "device": str(dev),
            **{k: v for k, v in report.items() if k.startswith("tensors_")},
            "skipped": (report["skipped_unexpected"] + report["skipped_shape"])[:10],
        }
        return UniShapeBackbone(
            model, key=("unishape", file_key(checkpoint), str(checkout), tuple(sorted(arch.items())), str(dev)),
            info=info, device=dev,
        )

    return cached(
        ("unishape", file_key(checkpoint), str(checkout), tuple(sorted(arch.items())), str(dev)), load
    )


#: The model's architecture parameters (the authors' zero-shot configuration by default).
ARCH_KEYS = ("in_channels", "window_emb_dim", "window_size", "stride", "scale_len", "shape_alpha", "shape_sparse_ratio")


class UniShapeRFClassifier(FrozenEmbeddingClassifier):
    """UniShape's frozen features per channel, a random forest on top (parameters: the plugin's)."""

    head = "rf"
    series_length: ClassVar[int] = 512
    default_batch_size: ClassVar[dict[str, int]] = {"cpu": 16, "gpu": 64}

    # checkout: a clone of https://github.com/ZLiu21/UniShape (None: $CHORUSTIC_CHECKOUTS/UniShape);
    # checkpoint: None: <checkout>/pretrained_model_ckpt/unishape_checkpoint_zeroshot.pth.
    # in_channels .. shape_sparse_ratio: their UniShapeModel's arguments, unishape_zeroshot.py's values; their
    # class uses in_channels (128 only: its token generators hard-code 128) and scale_len, and ignores the rest.
    def __init__(
        self,
        checkout: str | Path | None = None,
        checkpoint: str | Path | None = None,
        in_channels: int = 128,
        window_emb_dim: int = 128,
        window_size: int = 16,
        stride: int = 16,
        scale_len: int = 4,
        shape_alpha: float = 0.01,
        shape_sparse_ratio: float = 0.6,
        *,
        channel_fusion: str = "concat",
        batch_size: int | None = None,
        random_state: int = 0,
        device: str = "cpu",
        n_jobs: int = 1,
        verbose: bool = False,
    ):
        self._set(locals())

    def _prepare(self, X):
        return to_fixed_length(X, 512, method="linspace")  # the authors' getInteSet

    def _backbone(self):
        arch = {k: getattr(self, k) for k in ARCH_KEYS}
        return load_unishape(Path(self.checkout), Path(self.checkpoint), arch=arch, device=self.device)


@register
class UniShapeRF(CheckoutMethod):
    info = MethodInfo(
        name="unishape_rf",
        display_name="UniShape+RF",
        group="Frozen TSFM",
        fits_on_target=True,
        input_kind="native",
        description="frozen UniShape (unishape_checkpoint_zeroshot) per channel, concatenated, random forest (200 trees)",
        reference="Liu et al. A unified shape-aware foundation model for time series classification. AAAI 2026",
        pretraining_data="the same 1.89 M series: UCR archive, UEA archive and TFC-8 (the authors' README, "
        "'Pretraining Source Dataset')",
        benchmark_in_pretraining="yes",
    )
    estimator = UniShapeRFClassifier
    repo_url = REPO_URL
    checkout_name = "UniShape"
    checkout_files = (MODEL_FILE, NETWORKS_FILE)
    checkpoint_in_checkout = CKPT_NAME
    checkpoint_source = f"The authors distribute unishape_checkpoint_zeroshot.pth separately from the code (see {REPO_URL})."
    resources: ClassVar[dict[str, Any]] = {"threads": 4, "mem_mb": 20000, "runtime": 2880, "gpu": 1}  # Mantis-8M's
    #: Cost model not measured (its code and weights are not available offline): Mantis-8M's fitted model
    #: (baselines/mantis_rf.py, benchmarks/results/archive_scale.md), the measured method closest to it: each
    #: channel of each series through a small frozen encoder once per job (the embeddings kept), then a random
    #: forest on the embeddings; its thread scaling is not measured. An estimate.
    cost: ClassVar[CostModel] = dataclasses.replace(_mantis.MantisBase.cost, model_length=512, gpu_speedup=50, parallel_fraction=None)

    def load(self, params: dict[str, Any], resolved: dict[str, Any]):
        arch = {k: params[k] for k in ARCH_KEYS}
        return load_unishape(resolved["checkout"], resolved["checkpoint"], arch=arch, device="cpu")
