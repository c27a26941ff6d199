"""NuTime + random forest on the frozen CLS representation (Lin et al., TMLR 2024), checkpoint
``checkpoint_bias9`` (paper Sec. 4.1: "Because NuTime is evaluated primarily through fine-tuning, we
fit a random forest to its frozen CLS representations"; App. C.4: frozen CLS + RF).

No package exists: the plugin imports the authors' code from a user-supplied checkout of
https://github.com/chenguolin/NuTime (``params.checkout``; default ``$CHORUSTIC_CHECKOUTS/NuTime``),
which also ships the checkpoint (``ckpt/checkpoint_bias9.pth``; ``params.checkpoint`` overrides it).
Nothing of theirs is vendored here. Their code needs ``timm`` (``workflow/envs/nutime_rf.yaml``).

Protocol:

* model: built by the authors' own factories exactly as their classification experiment does
  (``src.config.Config`` updated from ``params.config_file``, default ``configs/demo_ft_epilepsy.json``,
  the configuration of their fine-tuning demo of ``checkpoint_bias9``: window-norm encoder with 9
  numerically multi-scaled embeddings, 6-layer WinT, fixed positional encoding), then
  ``nn.Sequential(get_encoder(...), get_model(...))`` with ``task="cls"`` and one channel; what their
  constructors print (the encoder's scales) goes to the log (stderr), not stdout;
* weights: the checkpoint is their self-supervised (BYOL) experiment's save, ``{"epoch", "state_dict",
  "optimizer", "scheduler", "best_*"}`` with ``BYOLModel``'s ``state_dict`` (``backbone.0.*`` the
  encoder, ``backbone.1.*`` WinT whose ``fc`` is the BYOL projector, ``momentum_backbone.*``,
  ``predictor.*``); the ``backbone.`` prefix and the ``fc`` head are dropped as in their
  ``load_pretrained_model``; every tensor of the model but its class head must be filled; the run
  log records how many tensors were loaded and skipped;
* input: the harness' series **resampled to 512** points (App. C.2: missing values 0, then linear
  interpolation with ``align_corners=False`` from each series' own length, the rule of their test
  transform ``TSResize``, which resizes every series to ``transform_size``: 512 as in their
  fine-tuning configurations, 32 windows of 16); no normalisation (their ``norm: identity``); every
  channel embedded on its own (the checkpoint is univariate), channels concatenated;
* features: WinT's final normalised CLS token (``model[1].features``, 128 values), frozen, eval mode,
  as their kNN evaluation reads it;
* classifier: ``RandomForestClassifier(n_estimators=200, random_state=seed)``.

Known differences from the authors' code (``tests/test_baselines_real_code.py`` checks the rest against
their classes):

* multivariate: their classification experiment feeds all channels to one encoder with a learnt channel
  mixer (absent from the univariate checkpoint); here every channel is embedded on its own;
* resampling arithmetic: the harness resamples in float64 (:mod:`chorustic.resampling`), their
  ``F.interpolate`` in float32 (values differ by float32 rounding, ~1e-7 relative).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import sys
import types
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from chorustic.methods import CostModel, MethodInfo, MethodNotReady, import_plugin_module, register
from chorustic.methods.checkout import CheckoutMethod, backbone_state_dict, checkout_imports
from chorustic.methods.estimators import FrozenBackbone, FrozenEmbeddingClassifier, torch_device
from chorustic.methods.weights import cached, file_key, frozen, load_state_dict_report, load_torch_checkpoint

_mantis = import_plugin_module("mantis_rf", __file__)

REPO_URL = "https://github.com/chenguolin/NuTime"
REQUIRED = ("src/config.py", "src/models/build.py", "src/models/encoders/build.py")
CKPT_NAME = "ckpt/checkpoint_bias9.pth"
LABEL = "NuTime+RF (nutime_rf)"


def authors_state_dict(ckpt: Any) -> dict[str, Any]:
    """Their ``load_pretrained_model`` (:func:`~chorustic.methods.checkout.backbone_state_dict`), without the
    class head, which is not part of the features."""
    return {k: v for k, v in backbone_state_dict(ckpt, LABEL).items() if not k.startswith("1.fc.")}


class NuTimeBackbone(FrozenBackbone):
    def embed(self, series) -> np.ndarray:
        import torch

        with torch.no_grad():
            self.network(self.channels_first(series))
            feats = self.network[1].features  # WinT stores its normalised CLS token here
        return feats.reshape(feats.shape[0], -1).float().cpu().numpy()


def config_path(checkout: Path, config_file: str) -> Path:
    return Path(config_file) if Path(config_file).is_absolute() else checkout / config_file


def build_nutime(checkout: Path, config_file: str, *, series_length: int):
    """``nn.Sequential(encoder, WinT)`` built by the authors' factories from ``config_file`` (their
    initialisation, no weights loaded), as their classification experiment builds it."""
    import torch

    cfg_path = config_path(checkout, config_file)
    if not cfg_path.is_file():
        raise MethodNotReady(
            f"{LABEL}: configuration file {cfg_path} not found in the checkout; set "
            f"`config_file` to the JSON configuration matching checkpoint_bias9"
        )
    settings = json.loads(cfg_path.read_text())
    with checkout_imports(checkout, ("src",), label=LABEL), contextlib.redirect_stdout(sys.stderr):
        from src.config import Config
        from src.models.build import get_model
        from src.models.encoders.build import get_encoder

        config = Config()
        config.update_by_dict(settings)
        config.update_by_dict(
            {
                "task": "cls",
                "num_channels": 1,
                "num_classes": 2,
                "model_series_size": int(series_length),
                "transform_size": int(series_length),
                "transformer_mask_type": "none",
            }
        )
        encoder = get_encoder(config, types.SimpleNamespace(samples=None, targets=None))
        model = get_model(config)
    return torch.nn.Sequential(encoder, model)


def load_nutime(
    checkout: Path, checkpoint: Path, *, config_file: str, series_length: int, device: str
) -> NuTimeBackbone:
    dev = torch_device(device)
    cfg_path = config_path(checkout, config_file)

    def load():
        net = build_nutime(checkout, config_file, series_length=series_length)
        report = load_state_dict_report(
            net, authors_state_dict(load_torch_checkpoint(checkpoint, label=LABEL))
        )
        missing = [k for k in report["missing"] if not k.startswith("1.fc.")]
        if report["tensors_loaded"] == 0 or missing:
            raise MethodNotReady(
                f"{LABEL}: {checkpoint} does not fit the model built from {cfg_path} (loaded "
                f"{report['tensors_loaded']} tensors; missing e.g. {missing[:3]}, shape mismatches "
                f"{report['skipped_shape'][:3]}); use ckpt/checkpoint_bias9.pth with its configuration"
            )
        net = frozen(net, dev)
        info = {
            "checkout": str(checkout),
            "checkpoint": str(checkpoint),
            "config_file": str(cfg_path),
            "device": str(dev),
            **{k: v for k, v in report.items() if k.startswith("tensors_")},
            "skipped": (report["skipped_unexpected"] + report["skipped_shape"])[:10],
        }
        return NuTimeBackbone(
            net,
            key=("nutime", file_key(checkpoint), str(cfg_path), series_length, str(dev)),
            info=info,
            device=dev,
        )

    return cached(("nutime", file_key(checkpoint), str(cfg_path), int(series_length), str(dev)), load)


class NuTimeRFClassifier(FrozenEmbeddingClassifier):
    """NuTime's frozen CLS features per channel, a random forest on top (parameters: the plugin's)."""

    head = "rf"
    series_length: ClassVar[int] = 512

    # checkout: a clone of https://github.com/chenguolin/NuTime (None: $CHORUSTIC_CHECKOUTS/NuTime);
    # checkpoint: None: <checkout>/ckpt/checkpoint_bias9.pth; config_file: relative to the checkout.
    def __init__(
        self,
        checkout: str | Path | None = None,
        checkpoint: str | Path | None = None,
        config_file: str = "configs/demo_ft_epilepsy.json",
        *,
        channel_fusion: str = "concat",
        batch_size: int | None = None,
        random_state: int = 0,
        device: str = "cpu",
        n_jobs: int = 1,
        verbose: bool = False,
    ):
        self._set(locals())

    def _backbone(self):
        return load_nutime(
            Path(self.checkout),
            Path(self.checkpoint),
            config_file=self.config_file,
            series_length=self.series_length,
            device=self.device,
        )


@register
class NuTimeRF(CheckoutMethod):
    info = MethodInfo(
        name="nutime_rf",
        display_name="NuTime+RF",
        group="Frozen TSFM",
        fits_on_target=True,
        input_kind="resampled",
        description="frozen NuTime (checkpoint_bias9) final normalised CLS per channel, concatenated, random forest",
        reference="Lin et al. NuTime: numerically multi-scaled embedding for large-scale time-series pretraining. TMLR 2024",
        pretraining_data="1.89 M series merged from the UCR archive, the UEA archive and 8 datasets of TF-C (Lin et "
        "al. 2024, Sec. 4.1)",
        benchmark_in_pretraining="yes",
    )
    estimator = NuTimeRFClassifier
    repo_url = REPO_URL
    checkout_name = "NuTime"
    checkout_files = REQUIRED
    checkpoint_in_checkout = CKPT_NAME
    checkpoint_source = f"The authors ship it in their repository as {CKPT_NAME}."
    #: Memory: FaceDetection asks for 15.9 GB (16.4 where the jobs run torch's CUDA build).
    resources: ClassVar[dict[str, Any]] = {"threads": 4, "mem_mb": 20000, "runtime": 2880, "gpu": 0}
    #: Fitted on 66 jobs on stand-ins of the 15 largest shapes, 10 of them in full (benchmarks/archive_scale.py
    #: --fit, one thread, random weights of checkpoint_bias9's architecture built by the authors' code, torch's CUDA
    #: build: benchmarks/results/archive_scale.md, "NuTime with its authors' code"): Mantis-8M's form (each channel
    #: of each series through the frozen encoder once per job, the embeddings kept, then a random forest on them)
    #: with its own terms: 16.1 us per resampled value in the encoder (Mantis-8M: 72.6), 620 MB before any data
    #: (their code loads timm and torchvision too). Its thread scaling (benchmarks/thread_scaling.py, Crop at 10 %):
    #: 1.53x on 2 threads.
    cost: ClassVar[CostModel] = dataclasses.replace(_mantis.MantisBase.cost, time_job_s=11.5, time_base_s=0.526,
                                                    time_ns_per_value=16_100, time_ns_per_series_pair=202,
                                                    mem_base_mb=620, mem_bytes_per_value=11.9, parallel_fraction=0.69)

    def load(self, params: dict[str, Any], resolved: dict[str, Any]):
        return load_nutime(
            resolved["checkout"], resolved["checkpoint"], config_file=params["config_file"], series_length=512,
            device="cpu",
        )
