"""Mantis-8M + random forest (Feofanov et al., 2025): a frozen time-series foundation model with a
lightweight classifier fitted on the context (paper Sec. 4.1, "Frozen time series foundation models").

Protocol (the authors' zero-shot feature-extraction protocol, ``mantis-tsfm`` package):

* input: the harness' series **resampled to 512** points (linear, ``align_corners=False``): Mantis
  takes fixed-length 512 inputs (32 patches of 16);
* every channel is embedded on its own by the frozen network (eval mode, no gradient), as
  ``MantisTrainer.transform`` does; channel embeddings are concatenated (``channel_fusion``);
* readout: the model's default, the final transformer layer's CLS token (``layer=-1``,
  ``token="cls_token"``); the paper does not pin it, so both are parameters
  (``token``: ``cls_token`` | ``mean_token`` | ``combined``; ``layer``: index of the transformer layer);
* classifier: ``RandomForestClassifier(n_estimators=200, random_state=seed)`` on the embeddings;
* weights: ``paris-noah/Mantis-8M`` on Hugging Face (``model.safetensors`` + ``config.json``), loaded
  strictly through the package's own ``from_pretrained`` from ``params.weights`` (a folder) or the
  Hugging Face cache. ``chorustic fetch-weights mantis_rf`` downloads and verifies them.

The MantisV2 variants (``mantisv2_lr``, ``mantisv2_rf``) reuse this file's backbone and estimator.
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

TOKENS = ("cls_token", "mean_token", "combined")


class MantisBackbone(FrozenBackbone):
    """A loaded, frozen Mantis network and its readout; ``embed((m, 512)) -> (m, D)``."""

    def embed(self, series) -> np.ndarray:
        import torch

        with torch.no_grad():
            return self.network(self.channels_first(series)).float().cpu().numpy()


def load_mantis(
    version: str, weights_dir: Path, *, layer: int, token: str, device: str, label: str, repo_id: str
) -> MantisBackbone:
    """Load a Mantis checkpoint folder strictly with the package's ``from_pretrained`` (cached)."""
    if token not in TOKENS:
        raise ValueError(f"{label}: token must be one of {TOKENS}, not {token!r}")
    weights = Path(weights_dir) / "model.safetensors"
    dev = torch_device(device)

    def load():
        from mantis.architecture import MantisV1, MantisV2

        cls = {"v1": MantisV1, "v2": MantisV2}[version]
        try:
            shell = cls(device="cpu", return_transf_layer=int(layer), output_token=token)
            with contextlib.redirect_stdout(io.StringIO()):  # the hub mixin prints on local loads
                net = shell.from_pretrained(str(weights_dir), strict=True, map_location="cpu", device="cpu")
        except RuntimeError as exc:
            lines = str(exc).splitlines()
            raise MethodNotReady(
                f"{label}: {weights} is not a {repo_id} checkpoint for the installed mantis-tsfm "
                f"({' '.join(lines[:2])[:400]}). Use the files of https://huggingface.co/{repo_id}."
            ) from exc
        n_layers = len(net.transf_unit.transformer.layers)
        if not -n_layers <= int(layer) < n_layers:
            raise ValueError(f"{label}: layer {layer} out of range for a {n_layers}-layer transformer")
        net = frozen(net, dev)
        n_tensors = len(net.state_dict())
        info = {
            "weights": str(weights),
            "repo_id": repo_id,
            "readout_layer": int(layer),
            "readout_token": token,
            "tensors_loaded": n_tensors,
            "tensors_skipped": 0,
            "device": str(dev),
        }
        return MantisBackbone(
            net, key=(repo_id, file_key(weights), int(layer), token, str(dev)), info=info, device=dev
        )

    return cached(("mantis", version, file_key(weights), int(layer), token, str(dev)), load)


class MantisEmbeddingClassifier(FrozenEmbeddingClassifier):
    """Frozen Mantis / MantisV2 channel embeddings + a classifier head.

    ``weights``: the folder with ``model.safetensors`` (+ ``config.json``); None: the Hugging Face cache.
    Readout: ``layer`` (-1: the last one, the model's default) and ``token`` (cls_token | mean_token |
    combined). ``version``, ``repo_id`` and ``head`` are fixed by each plugin.
    """

    series_length: ClassVar[int] = 512

    def __init__(
        self,
        weights: str | Path | None = None,
        version: str = "v1",
        repo_id: str = "",
        layer: int = -1,
        token: str = "cls_token",
        *,
        head: str = "rf",
        channel_fusion: str = "concat",
        batch_size: int | None = None,
        random_state: int = 0,
        device: str = "cpu",
        n_jobs: int = 1,
        verbose: bool = False,
    ):
        self._set(locals())

    def _backbone(self) -> MantisBackbone:
        return load_mantis(
            self.version,
            Path(self.weights),
            layer=self.layer,
            token=self.token,
            device=self.device,
            label=f"Mantis ({self.repo_id})",
            repo_id=self.repo_id,
        )


class MantisBase(HubMethod):
    """Shared by mantis_rf, mantisv2_lr and mantisv2_rf: backbone version, Hub id and head differ
    (their ``fixed_params``)."""

    estimator = MantisEmbeddingClassifier
    #: Runtime: two days, a cluster's usual longest partition: FaceDetection's 9,414 series of 144 channels through
    #: the encoder take ~8 h on 16 cores and ask for 43 h on 4 threads (with the safety margin). Memory: that job
    #: asks for 16.5 GB where the jobs run torch's CUDA build (15.9 GB on the CPU build).
    resources: ClassVar[dict[str, Any]] = {"threads": 4, "mem_mb": 20000, "runtime": 2880, "gpu": 0}
    #: Fitted on jobs on stand-ins with random weights of Mantis-8M's architecture (benchmarks/archive_scale.py
    #: --fit, one CPU thread; benchmarks/results/archive_scale.md): each channel of each series the job uses
    #: through the frozen encoder once per job (~37 ms per channel and series in batches of 16, the embeddings
    #: kept: chorustic.methods.embedding_memo), then a forest or logistic regression on each context.
    #: Thread scaling (benchmarks/thread_scaling.py): Mantis-8M's, the lower of Mantis-8M's and MantisV2's.
    cost: ClassVar[CostModel] = CostModel(time_job_s=11.9, time_base_s=0.319, time_ns_per_value=72_600,
                                          time_ns_per_series_pair=897, mem_base_mb=504, mem_bytes_per_value=12.1,
                                          memo_embeddings=True, mem_bytes_per_memo_embedding=1280,
                                          parallel_fraction=0.58)

    def hub_files(self, p: dict[str, Any]) -> list[HubFile]:
        repo_id = self.fixed_params["repo_id"]
        return [
            HubFile(repo_id, "model.safetensors", revision=p["revision"]),
            HubFile(repo_id, "config.json", revision=p["revision"], required=False),
        ]

    def weights_path(self, found: dict[str, Path], files: list[HubFile]) -> Path:
        folder = found["model.safetensors"].parent
        if "config.json" in found and found["config.json"].parent != folder:  # pragma: no cover - hub layout
            raise MethodNotReady(f"{self.label}: model.safetensors and config.json are in different folders")
        return folder

    def load(self, params: dict[str, Any], resolved: dict[str, Any]) -> None:
        load_mantis(
            self.fixed_params["version"],
            resolved["weights"],
            layer=int(params["layer"]),
            token=params["token"],
            device="cpu",
            label=self.label,
            repo_id=self.fixed_params["repo_id"],
        )


@register
class MantisRF(MantisBase):
    info = MethodInfo(
        name="mantis_rf",
        display_name="Mantis+RF",
        group="Frozen TSFM",
        fits_on_target=True,
        input_kind="resampled",
        description="frozen Mantis-8M (final-layer CLS) per channel, concatenated, random forest (200 trees)",
        reference="Feofanov et al. Mantis: lightweight calibrated foundation model for TSC. 2025",
        pretraining_data="7 M real time series, contrastive (Feofanov et al. 2025); the sources checked here do not "
        "list them, so whether UCR/UEA series are among them is not known",
        benchmark_in_pretraining="unknown",
    )
    fixed_params: ClassVar[dict[str, Any]] = {"version": "v1", "repo_id": "paris-noah/Mantis-8M", "head": "rf"}
