"""ChorusTIC (the paper's method): a pretrained checkpoint, no fitting on the target task.

Runs :class:`chorustic.inference.ChorusTICClassifier` with the paper's deployment configuration
(App. C.3): 8 cyclic label shifts x 4 RSSC draws, temperature 0.9, hierarchical extension for
K > 10, on the 512-length resampled series. ``checkpoint`` is the released model by default
(``hf://JTF2000/ChorusTIC/ChorusTIC.ckpt``, with its ``model_hparams_latest.json``); any local file in
the released format or in this project's format (e.g. a checkpoint pretrained with ``chorustic
pretrain``) works too.

Variants are config entries of this plugin with other parameters, e.g. the ablation "no
label-permutation ensemble" is ``{"method": "chorustic", "params": {"n_label_shifts": 1}}``, an
ablation checkpoint is ``{"params": {"checkpoint": "models/<ablation>.safetensors"}}``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from chorustic.hub import CheckpointNotFoundError, resolve_checkpoint
from chorustic.inference import ChorusTICClassifier
from chorustic.methods import CostModel, Method, MethodInfo, MethodNotReady, register
from chorustic.model.checkpoint import DEFAULT_CHECKPOINT, DEFAULT_HPARAMS

#: Cost of one evaluate job (chorustic.resources.CostModel), measured with benchmarks/job_costs.py on
#: one CPU thread with the full deployment ensemble: the paper configuration (53 M parameters, random
#: weights; per series and channel ~110 ms and ~2 MB, channel attention ~0.3x more per extra channel)
#: and the committed small model (1.1 M parameters, ~3 ms per series and channel).
PAPER_COST = CostModel(mem_base_mb=1100, mem_bytes_per_value=16, mem_bytes_per_model_value=4000, mem_kb_per_series=100, time_job_s=20, time_base_s=15,
                       time_ns_per_value=150_000, time_ns_per_series=1_000_000,
                       time_ns_per_series_pair=1_000, model_channels=64,
                       gpu_speedup=100)
SMALL_COST = CostModel(mem_base_mb=600, mem_bytes_per_value=16, mem_bytes_per_model_value=170, mem_kb_per_series=10, time_job_s=10, time_base_s=1,
                       time_ns_per_value=8_000, time_ns_per_series=100_000, time_ns_per_series_pair=100,
                       model_channels=64, gpu_speedup=20)
#: Checkpoint files below this size (about 12 M float32 parameters) are costed as the small model.
SMALL_CHECKPOINT_BYTES = 50_000_000


@register
class ChorusTICMethod(Method):
    info = MethodInfo(
        name="chorustic",
        display_name="ChorusTIC",
        group="Time-series ICL",
        fits_on_target=False,
        input_kind="resampled",
        needs_gpu=True,
        description="Training-free multivariate TSC by chorus in-context learning (RSSC signal level, "
        "TabICL-v1 task level); 8 label shifts x 4 RSSC draws, T = 0.9.",
        reference="ChorusTIC: Training-Free Multivariate Time Series Classification via Chorus In-Context Learning",
    )
    #: The parameters are the classifier's (checkpoint, ensemble sizes, temperature, batch sizes ...).
    estimator = ChorusTICClassifier
    fixed_params: ClassVar[dict[str, Any]] = {"model": None}  # always loaded from `checkpoint`
    # The model is used through the inference code: both are part of the method.
    code: ClassVar[tuple[str, ...]] = ("chorustic.model", "chorustic.inference")
    # On CPU the paper model takes minutes per small dataset and hours for the largest ones.
    resources: ClassVar[dict[str, Any]] = {"threads": 2, "mem_mb": 16000, "runtime": 720, "gpu": 1}
    cost: ClassVar[CostModel] = PAPER_COST

    def cost_model(self, **params: Any) -> CostModel:
        """The paper configuration's cost, or the small model's for a local checkpoint file under
        :data:`SMALL_CHECKPOINT_BYTES` (a checkpoint still to be pretrained, or on the hub, is costed
        as the paper configuration)."""
        ckpt = self.params(params)["checkpoint"]
        path = Path(ckpt) if isinstance(ckpt, str) and "://" not in ckpt else None
        if path is not None and path.is_file() and path.stat().st_size < SMALL_CHECKPOINT_BYTES:
            return SMALL_COST
        return self.cost

    def _files(self, p: dict[str, Any], *, download: bool) -> dict[str, Any]:
        hparams = p["hparams_json"]
        if download and hparams is None and p["checkpoint"] == DEFAULT_CHECKPOINT:
            hparams = DEFAULT_HPARAMS  # fetched next to the released checkpoint, where the loader finds it
        try:
            ckpt = resolve_checkpoint(p["checkpoint"], local_files_only=not download)
            if hparams is not None and not isinstance(hparams, dict):
                hparams = resolve_checkpoint(hparams, local_files_only=not download)
        except CheckpointNotFoundError as exc:
            raise MethodNotReady(f"ChorusTIC weights missing: {exc}") from None
        return {"checkpoint": ckpt, "hparams_json": hparams}

    def resolve(self, params: dict[str, Any]) -> dict[str, Any]:
        """The checkpoint (and its hyper-parameter JSON) as local files, from the Hugging Face cache for
        ``hf://`` specs (never downloaded here): the classifier and the model loader read these files."""
        return self._files(params, download=False)

    def fetch_weights(self, **params: Any) -> list[Path]:
        files = self._files(self.params(params), download=True)
        return [v for v in files.values() if isinstance(v, Path)]
