"""MOMENT-1-base + SVM (Goswami et al., ICML 2024): frozen embeddings and MOMENT's own SVM protocol
(paper Sec. 4.1, "Frozen time series foundation models"; App. C.4: ``MOMENT-1-base``, frozen feature + SVM).

Protocol (``momentfm``, installed with ``pip install --no-deps momentfm==0.1.4``; it works with
transformers 5):

* input: the **native** series. MOMENT reads 512 time steps with an input mask: a series shorter
  than 512 is zero-padded on the left and masked there (MOMENT's classification tutorial); a series
  longer than 512 is linearly resampled to 512 (``align_corners=False``; MOMENT publishes no rule for
  longer series and its paper evaluates only UCR datasets of length <= 512);
* every channel goes through the frozen encoder on its own (MOMENT treats channels independently);
  the embedding of a series is ``MOMENTPipeline.embed`` with the default ``reduction="mean"``
  (masked mean over patches), and a multivariate case is the mean over its channels, exactly what
  MOMENT's ``embed`` returns for a multichannel input (``channel_fusion="concat"`` is the alternative);
* classifier: ``momentfm.models.statistical_classifiers.fit_svm`` (RBF SVC, C grid-searched with
  5-fold CV, C=1e5 without search for tiny contexts); probabilities are a softmax of the SVC's
  decision values whose argmax is the SVC's prediction;
* weights: ``AutonLab/MOMENT-1-base`` on Hugging Face (``config.json`` + ``model.safetensors``), from
  ``params.weights`` (a folder) or the Hugging Face cache; ``chorustic fetch-weights moment_svm``
  downloads and verifies them. Loaded tensors are checked against the architecture; a checkpoint
  that lacks encoder tensors or has other shapes is rejected.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from chorustic.hub import HubFile
from chorustic.methods import CostModel, MethodInfo, MethodNotReady, register
from chorustic.methods.estimators import FrozenBackbone, FrozenEmbeddingClassifier, torch_device
from chorustic.methods.weights import HubMethod, cached, file_key, frozen
from chorustic.resampling import resample_linear

REPO_ID = "AutonLab/MOMENT-1-base"
SEQ_LEN = 512


def moment_inputs(series, seq_len: int = SEQ_LEN) -> tuple[np.ndarray, np.ndarray]:
    """Univariate series -> (x (m, 1, seq_len), mask (m, seq_len)): left zero-padding with mask 0 for
    short series, linear resampling for long ones."""
    m = len(series)
    x = np.zeros((m, 1, seq_len), dtype=np.float32)
    mask = np.zeros((m, seq_len), dtype=np.float32)
    for i, s in enumerate(series):
        s = np.asarray(s, dtype=np.float32).reshape(-1)
        if s.shape[0] > seq_len:
            s = resample_linear(s, seq_len)
        n = s.shape[0]
        x[i, 0, seq_len - n :] = s
        mask[i, seq_len - n :] = 1.0
    return x, mask


class MomentBackbone(FrozenBackbone):
    def embed(self, series) -> np.ndarray:
        import torch

        x, mask = moment_inputs(series)
        with torch.no_grad():
            out = self.network.embed(
                x_enc=torch.as_tensor(x, device=self.device),
                input_mask=torch.as_tensor(mask, device=self.device),
                reduction="mean",
            )
        return out.embeddings.float().cpu().numpy()


def load_moment(weights_dir: Path, *, device: str, label: str) -> MomentBackbone:
    weights = Path(weights_dir) / "model.safetensors"
    dev = torch_device(device)

    def load():
        import warnings

        from momentfm import MOMENTPipeline
        from safetensors import safe_open

        try:
            with safe_open(str(weights), "pt") as fh:
                file_keys = set(fh.keys())
        except Exception as exc:
            raise MethodNotReady(
                f"{label}: {weights} is not a safetensors file ({exc}); use the files of "
                f"https://huggingface.co/{REPO_ID}"
            ) from exc
        try:
            with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
                warnings.simplefilter("ignore")
                model = MOMENTPipeline.from_pretrained(
                    str(weights_dir), model_kwargs={"task_name": "embedding"}, map_location="cpu"
                )
        except Exception as exc:  # a config/weights that do not describe MOMENT fail in many ways
            raise MethodNotReady(
                f"{label}: {weights_dir} is not a {REPO_ID} checkpoint "
                f"({' '.join(str(exc).splitlines()[:2])[:400]})"
            ) from exc
        own = set(model.state_dict())
        missing = sorted(k for k in own - file_keys if not k.startswith("head."))
        if missing:
            raise MethodNotReady(
                f"{label}: {weights} lacks {len(missing)} tensors of the MOMENT architecture "
                f"(e.g. {missing[:3]}); it is not a {REPO_ID} checkpoint"
            )
        model.init()  # switch the reconstruction head for the embedding head
        model = frozen(model, dev)
        info = {
            "weights": str(weights),
            "repo_id": REPO_ID,
            "tensors_loaded": len(own & file_keys),
            "tensors_skipped": len(file_keys - own),
            "device": str(dev),
        }
        return MomentBackbone(model, key=(REPO_ID, file_key(weights), str(dev)), info=info, device=dev)

    return cached(("moment", file_key(weights), str(dev)), load)


class MomentSVMClassifier(FrozenEmbeddingClassifier):
    """Frozen MOMENT embeddings and MOMENT's SVM protocol.

    ``weights``: a folder with ``config.json`` + ``model.safetensors`` (None: the Hugging Face cache);
    ``channel_fusion``: ``mean`` (MOMENT's ``embed()`` default for multichannel input) or ``concat``.
    """

    head = "svm"
    series_length: ClassVar[int | None] = None  # native input; padding/masking per series in the backbone
    #: One CPU thread: ~0.5-0.57 s per series at 4-16 (a copy filling a last batch costs as much: 8, not 16).
    default_batch_size: ClassVar[dict[str, int]] = {"cpu": 8, "gpu": 64}

    def __init__(
        self,
        weights: str | Path | None = None,
        *,
        channel_fusion: str = "mean",
        batch_size: int | None = None,
        random_state: int = 0,
        device: str = "cpu",
        n_jobs: int = 1,
        verbose: bool = False,
    ):
        self._set(locals())

    def _backbone(self) -> MomentBackbone:
        return load_moment(Path(self.weights), device=self.device, label="MOMENT+SVM (moment_svm)")


@register
class MomentSVM(HubMethod):
    info = MethodInfo(
        name="moment_svm",
        display_name="MOMENT+SVM",
        group="Frozen TSFM",
        fits_on_target=True,
        input_kind="native",
        needs_gpu=True,
        description="frozen MOMENT-1-base embeddings (512 input + mask), momentfm fit_svm",
        reference="Goswami et al. MOMENT: a family of open time-series foundation models. ICML 2024",
        pretraining_data="the Time-series Pile, which includes the UCR/UEA classification archives (Goswami et al. "
        "2024, Sec. 3.1; the AutonLab/Timeseries-PILE dataset card)",
        benchmark_in_pretraining="yes",
    )
    estimator = MomentSVMClassifier
    #: Memory: what its cost model asks for FaceDetection (the embeddings of 9,414 series x 144 channels at 768
    #: dimensions and the SVM's kernel over 5,890 series: 52.7 GB with the safety margin).
    resources: ClassVar[dict[str, Any]] = {"threads": 4, "mem_mb": 56000, "runtime": 360, "gpu": 1}
    #: Fitted on jobs on stand-ins with random weights of MOMENT-1-base's architecture (benchmarks/archive_scale.py
    #: --fit, one CPU thread; benchmarks/results/archive_scale.md; 9 jobs within 0.97-1.09 in time and 0.98-0.99
    #: in memory): each channel of each series the job uses through the encoder once per job (125 M parameters,
    #: 512 steps: ~0.67 s per channel and series beside other jobs, the embeddings kept:
    #: chorustic.methods.embedding_memo), then an RBF SVM grid search on each context. The SVM's time per pair
    #: and the memory per value and per pair are kept from the earlier fit (the refit would drop them: these
    #: jobs, at most 180 context series, are too small to show them). On a GPU: the estimated gpu_speedup until
    #: one is measured.
    cost: ClassVar[CostModel] = CostModel(time_job_s=7.78, time_base_s=0.66, time_ns_per_value=1_310_000,
                                          time_ns_per_series_pair=503, mem_base_mb=1360, mem_bytes_per_value=43, mem_bytes_per_pair=10.8,
                                          gpu_speedup=50, model_length=512, parallel_fraction=0.94,
                                          memo_embeddings=True, mem_bytes_per_memo_embedding=3328)

    def hub_files(self, p) -> list[HubFile]:
        return [
            HubFile(REPO_ID, "config.json", revision=p["revision"]),
            HubFile(REPO_ID, "model.safetensors", revision=p["revision"]),
        ]

    def weights_path(self, found: dict[str, Path], files: list[HubFile]) -> Path:
        return found["model.safetensors"].parent

    def check_packages(self, params: dict[str, Any]) -> None:
        try:
            import momentfm  # noqa: F401
        except ImportError as exc:
            # not installed, or installed and failing to import (often a version clash): say which, with
            # the import's own words
            missing = isinstance(exc, ModuleNotFoundError) and (exc.name or "").split(".")[0] == "momentfm"
            what = "is not installed" if missing else f"failed to import ({type(exc).__name__}: {exc})"
            raise MethodNotReady(
                f"{self.label}: the momentfm package {what}; install it with "
                f"`pip install --no-deps momentfm==0.1.4` (or use workflow/envs/moment_svm.yaml)"
            ) from exc

    def load(self, params: dict[str, Any], resolved: dict[str, Any]) -> None:
        load_moment(resolved["weights"], device="cpu", label=self.label)
