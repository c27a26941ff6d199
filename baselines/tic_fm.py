"""TIC-FM (Fang et al., 2026): time-series in-context classification with a latent-memory ICL learner
(paper Sec. 4.1, "Time series ICL classifiers", UCR only).

No package exists: the plugin imports the authors' code from a user-supplied checkout of
https://github.com/fangjuntao/TIC-FM (``params.checkout``; default ``$CHORUSTIC_CHECKOUTS/TIC-FM``).
The weights are the Hugging Face files of ``Jwpqkh/TIC-FM`` (the full model checkpoint and its
hyper-parameter JSON): ``params.checkpoint`` / ``params.hparams`` (files), else
``<checkout>/checkpoints/<file>`` (where the authors' script expects them), else the Hugging Face
cache (``chorustic fetch-weights tic_fm`` downloads them and clones the checkout). Nothing of theirs
is vendored here.

Protocol (the authors' ``scripts/eval_TSEncoder_orion_icl_classifier_ucr_full.py``, default
``classifier_v2`` mode):

* model: rebuilt from the hyper-parameter JSON with the script's own builders (TSEncoder, token MLP
  adapter, Orion ICL predictor, ``_TSEncoderAdapterPlusOrionICL``) and the full checkpoint loaded
  strictly;
* inference: the authors' ``TSEncoderICLClassifierV2`` with the script's defaults (32 ensemble
  members with class shifts, no crop augmentation, softmax temperature 0.9), the whole context as
  support, no parameter update;
* input: the harness' series **resampled to 512** points (their data reader resizes to 512);
  multivariate cases follow the script's default ``uea_fusion="concat"``: channels concatenated in
  time, then the centre 512 points (zero-padded if shorter). The paper evaluates TIC-FM on UCR only.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from chorustic.hub import HubFile
from chorustic.methods import CostModel, MethodInfo, MethodNotReady, register
from chorustic.methods.checkout import CheckoutMethod, checkout_imports
from chorustic.methods.estimators import ContractClassifier, torch_device
from chorustic.methods.inputs import to_fixed_length
from chorustic.methods.registry import load_module_file
from chorustic.methods.weights import (
    cached,
    download_hub_files,
    file_key,
    frozen,
    load_torch_checkpoint,
    resolve_hub_files,
)

REPO_URL = "https://github.com/fangjuntao/TIC-FM"
HF_REPO = "Jwpqkh/TIC-FM"
SCRIPT = "scripts/eval_TSEncoder_orion_icl_classifier_ucr_full.py"
REQUIRED = (SCRIPT, "src/TIC/__init__.py")
LABEL = "TIC-FM (tic_fm)"
SEQ_LEN = 512


def concat_center(X3: np.ndarray, length: int = SEQ_LEN) -> np.ndarray:
    """``(n, C, L) -> (n, length)``: channels concatenated in time, the centre ``length`` points kept
    (zero-padded at the end when shorter): the authors' ``uea_fusion='concat'``, ``uea_mode='center'``."""
    flat = X3.reshape(X3.shape[0], -1)
    total = flat.shape[1]
    if total == length:
        return np.ascontiguousarray(flat, dtype=np.float32)
    if total < length:
        return np.pad(flat, ((0, 0), (0, length - total))).astype(np.float32)
    start = (total - length) // 2
    return np.ascontiguousarray(flat[:, start : start + length], dtype=np.float32)


def _import_script(checkout: Path):
    module = load_module_file("chorustic_tic_fm_eval_script", checkout / SCRIPT)
    path = checkout / SCRIPT
    needed = [
        "build_TSEncoder",
        "TokenMLPAdapter",
        "_build_icl_predictor_from_hparams",
        "_TSEncoderAdapterPlusOrionICL",
        "_extract_full_state_dict",
        "TSEncoderICLClassifierV2",
    ]
    lacking = [n for n in needed if not hasattr(module, n)]
    if lacking:
        raise MethodNotReady(
            f"{LABEL}: {path} lacks {lacking}; this plugin follows the layout of {REPO_URL} "
            f"(update the checkout or adapt baselines/tic_fm.py)"
        )
    return module


def sklearn_compatible(cls):
    """The authors' classifier calls ``BaseEstimator._validate_data``, which scikit-learn removed in 1.7
    (their environment pins 1.6.1). On newer scikit-learn, give it that method back as a thin call of
    ``sklearn.utils.validation.validate_data`` (same checks); on older versions use the class as is."""
    if hasattr(cls, "_validate_data"):
        return cls
    from sklearn.utils.validation import validate_data

    def _validate_data(self, X="no_validation", y="no_validation", reset=True, **check_params):
        check_params.pop("cast_to_ndarray", None)
        return validate_data(self, X, y, reset=reset, **check_params)

    return type(
        cls.__name__,
        (cls,),
        {"_validate_data": _validate_data, "__module__": cls.__module__, "__doc__": cls.__doc__},
    )


def load_tic_fm(checkout: Path, checkpoint: Path, hparams: Path, *, device: str):
    """(script module, full model): the authors' model rebuilt from the JSON, checkpoint loaded strictly."""
    dev = torch_device(device)

    def load():
        import torch

        try:
            hp = json.loads(hparams.read_text())
        except (OSError, ValueError) as exc:
            raise MethodNotReady(f"{LABEL}: cannot read the hyper-parameter JSON {hparams}: {exc}") from exc
        with checkout_imports(checkout / "src", ("TIC",), label=LABEL):
            mod = _import_script(checkout)
            ts_cfg = hp.get("tsencoder", {})
            hidden = int(ts_cfg.get("hidden_dim", 512))
            seq_len = int(ts_cfg.get("seq_len", SEQ_LEN))
            ts_dim = int(ts_cfg.get("tsencoder_dim", hidden))
            tsencoder = mod.build_TSEncoder(
                tsencoder_checkpoint=None, device=torch.device("cpu"), hidden_dim=hidden, seq_len=seq_len
            )
            ad_cfg = hp.get("adapter", {})
            adapter = mod.TokenMLPAdapter(
                tsencoder_dim=ts_dim,
                icl_dim=int(ad_cfg.get("icl_dim", 512)),
                hidden_dim=None if ad_cfg.get("hidden_dim") is None else int(ad_cfg["hidden_dim"]),
                dropout=float(ad_cfg.get("dropout", 0.0)),
                use_layernorm=bool(ad_cfg.get("use_layernorm", True)),
            )
            icl = mod._build_icl_predictor_from_hparams(hp)
            model = mod._TSEncoderAdapterPlusOrionICL(
                tsencoder_model=tsencoder,
                adapter=adapter,
                icl_predictor=icl,
                tsencoder_seq_len=seq_len,
                tsencoder_batch_size=int(ts_cfg.get("batch_size", 64)),
            )
        state = mod._extract_full_state_dict(load_torch_checkpoint(checkpoint, label=LABEL))
        try:
            model.load_state_dict(state, strict=True)
        except RuntimeError as exc:
            raise MethodNotReady(
                f"{LABEL}: {checkpoint} does not match the model described by {hparams} "
                f"({' '.join(str(exc).splitlines()[:2])[:400]}); use the files of "
                f"https://huggingface.co/{HF_REPO}"
            ) from exc
        model = frozen(model, dev)
        info = {
            "checkout": str(checkout),
            "checkpoint": str(checkpoint),
            "hparams": str(hparams),
            "tensors_loaded": len(state),
            "tensors_skipped": 0,
            "device": str(dev),
            "seq_len": seq_len,
        }
        return mod, model, info

    return cached(("tic_fm", file_key(checkpoint), file_key(hparams), str(checkout), str(dev)), load)


class TICFMClassifier(ContractClassifier):
    """TIC-FM in context through the authors' ``TSEncoderICLClassifierV2`` (parameters: the plugin's)."""

    # checkout: a clone of https://github.com/fangjuntao/TIC-FM (None: $CHORUSTIC_CHECKOUTS/TIC-FM);
    # checkpoint, hparams: the full model checkpoint (.pt) and its hyper-parameter JSON; None:
    # <checkout>/checkpoints/<file>, else the Hugging Face cache.
    def __init__(
        self,
        checkout: str | Path | None = None,
        checkpoint: str | Path | None = None,
        hparams: str | Path | None = None,
        n_estimators: int = 32,
        class_shift: bool = True,
        softmax_temperature: float = 0.9,
        batch_size: int = 8,
        random_state: int = 0,
        device: str = "cpu",
        n_jobs: int = 1,
    ):
        self.checkout = checkout
        self.checkpoint = checkpoint
        self.hparams = hparams
        self.n_estimators = n_estimators
        self.class_shift = class_shift
        self.softmax_temperature = softmax_temperature
        self.batch_size = batch_size
        self.random_state = random_state
        self.device = device
        self.n_jobs = n_jobs

    def _rows(self, X) -> np.ndarray:
        return concat_center(to_fixed_length(X, self.seq_len_), self.seq_len_)

    def _fit(self, X, y):
        mod, model, info = load_tic_fm(
            Path(self.checkout), Path(self.checkpoint), Path(self.hparams), device=self.device
        )
        self.seq_len_ = int(info["seq_len"])
        dev = torch_device(self.device)
        self.clf_ = sklearn_compatible(mod.TSEncoderICLClassifierV2)(
            n_estimators=int(self.n_estimators),
            class_shift=bool(self.class_shift),
            crop_rate_range=(0.0, 0.0),
            n_augmentations=1,
            softmax_temperature=float(self.softmax_temperature),
            use_amp=dev.type == "cuda",
            batch_size=int(self.batch_size),
            device=dev,
            random_state=int(self.random_state),
            verbose=False,
            model_path=None,
            allow_auto_download=False,
            n_jobs=int(self.n_jobs) if self.n_jobs else None,
        )
        self.clf_.model_ = model
        self.clf_.fit(self._rows(X), y)
        self.run_info_.update(info)
        self.run_info_["multichannel"] = "concat-center" if self.n_channels_ > 1 else None

    def _predict_proba(self, X):
        import random

        # the authors' classifier draws its class-shift order from an RNG seeded in fit(); reseed so
        # every predict_proba call (and query chunk) uses the same ensemble as a fresh fit would
        self.clf_.rng_ = random.Random(self.random_state)
        proba = np.asarray(self.clf_.predict_proba(self._rows(X)), dtype=np.float64)
        out = np.zeros((proba.shape[0], len(self.classes_)))
        out[:, np.asarray(self.clf_.classes_, dtype=np.int64)] = proba
        return out


@register
class TICFM(CheckoutMethod):
    info = MethodInfo(
        name="tic_fm",
        display_name="TIC-FM",
        group="Time-series ICL",
        fits_on_target=False,
        input_kind="resampled",
        needs_gpu=True,
        description="TIC-FM (HF Jwpqkh/TIC-FM) in-context, the authors' TSEncoderICLClassifierV2",
        reference="Fang et al. Rethinking zero-shot time series classification: from task-specific classifiers "
        "to in-context inference. 2026",
        pretraining_data="a Mantis-8M-architecture encoder and an in-context predictor; the sources checked here do "
        "not say on what series (Fang et al. 2026)",
        benchmark_in_pretraining="unknown",
    )
    estimator = TICFMClassifier
    extra_params: ClassVar[dict[str, Any]] = {
        "hf_checkpoint_file": "TSEncoder_orion_icl_full.pt",
        "hf_hparams_file": "TSEncoder_orion_icl_model_hparams.json",
        "revision": "main",
    }
    repo_url = REPO_URL
    checkout_name = "TIC-FM"
    checkout_files = REQUIRED
    resources: ClassVar[dict[str, Any]] = {"threads": 4, "mem_mb": 24000, "runtime": 360, "gpu": 1}
    #: Cost model not measured (its weights are not available offline): estimated from the architecture on one CPU thread:
    #: the encoder over every series (channels concatenated into 512 steps) and 32 in-context ensemble
    #: members attending from every query to the context.
    cost: ClassVar[CostModel] = CostModel(mem_base_mb=1500, mem_bytes_per_value=64, mem_bytes_per_pair=64,
                                          time_job_s=60, time_base_s=2, time_ns_per_value=100_000,
                                          time_ns_per_pair=10_000, gpu_speedup=50,
                                          context_per_call=True)

    def _hub_files(self, p) -> list[HubFile]:
        return [HubFile(HF_REPO, p[f"hf_{k}_file"], revision=p["revision"]) for k in ("checkpoint", "hparams")]

    def weights(self, p, root: Path) -> dict[str, Path]:
        """``checkpoint`` and ``hparams``: the parameter, else ``<checkout>/checkpoints/<file>`` (where the
        authors' script expects them), else the Hugging Face cache."""
        out = {}
        for param, file in zip(("checkpoint", "hparams"), self._hub_files(p)):
            if p[param]:
                path = Path(p[param]).expanduser()
                if not path.is_file():
                    raise MethodNotReady(
                        f"{self.label}: `{param}` points to {path}, which does not exist; download {file.url()} there."
                    )
                out[param] = path
            elif (root / "checkpoints" / file.filename).is_file():
                out[param] = root / "checkpoints" / file.filename
            else:
                found = resolve_hub_files(self.label, [file], param=param, fetch_name=self.info.name)
                out[param] = found[file.filename]
        return out

    def load(self, params: dict[str, Any], resolved: dict[str, Any]):
        return load_tic_fm(resolved["checkout"], resolved["checkpoint"], resolved["hparams"], device="cpu")

    def download(self, params: dict[str, Any]) -> list[Path]:
        if params["checkpoint"] and params["hparams"]:
            return []
        got = download_hub_files(self.label, self._hub_files(params), param="checkpoint", fetch_name=self.info.name)
        return list(got.values())
