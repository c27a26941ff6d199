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

from chorustic.class_tree import K_MAX
from chorustic.hub import DEFAULT_CHECKPOINT, DEFAULT_HPARAMS, CheckpointNotFoundError, resolve_checkpoint
from chorustic.inference import ChorusTICClassifier
from chorustic.methods import CostModel, Method, MethodInfo, MethodNotReady, register

#: Cost of one evaluate job (chorustic.methods.CostModel) on one CPU thread with the full deployment ensemble
#: (8 label shifts x 4 RSSC draws). The paper configuration (53 M parameters, random weights), from jobs on
#: stand-ins (benchmarks/results/archive_scale.md) and one prediction by context size
#: (benchmarks/chorustic_memory.py): ~27 ms per series and context plus ~77 ms per series and channel
#: encoded (at most 64: 4 draws of 16 RSSC slots); ~2.3 MB per series held (context and a chunk of
#: queries: a context of 2,000 series peaks at 6.1 GB) and ~1 KB per value encoded (the signal level
#: encodes 128 rows at a time: ChorusTICClassifier's signal_batch_size). More than K_max = 10 classes: ~30 ms
#: per query and extra pass of the class tree (60 classes: 7 passes; 60 context and 60 query rows took 31.2
#: CPU-s against 21.9 with 10 classes, under the evaluation workers' pinned numerics: benchmarks/many_classes.py).
#: On a GPU: the estimated gpu_speedup until one is measured.
PAPER_COST = CostModel(time_job_s=21.9, time_base_s=1.1, time_ns_per_value=150000, time_ns_per_series=2.74e+07,
                       time_ns_per_series_pair=1100, time_ns_per_tree_query=3.0e7, tree_max_classes=K_MAX,
                       mem_base_mb=1040, mem_bytes_per_value=15.1,
                       mem_kb_per_series=2260, mem_bytes_per_model_value=942, gpu_speedup=100, model_channels=64,
                       model_rows=128, parallel_fraction=0.88,
                       context_per_call=True)
#: The committed small model (1.1 M parameters): refitted on its jobs on stand-ins; its class tree ~0.5 ms per
#: query and extra pass: between its jobs' refit (0.38 ms) and one context of 60 + 60 rows (1.3 against 0.9 CPU-s
#: for 60 against 10 classes, ~1.1 ms; benchmarks/many_classes.py), a share of a second per context either way.
SMALL_COST = CostModel(time_job_s=7.21, time_base_s=0, time_ns_per_value=547, time_ns_per_series=3.34e+06,
                       time_ns_per_tree_query=5e5, tree_max_classes=K_MAX,
                       mem_base_mb=534, mem_bytes_per_value=31.4, mem_kb_per_series=51,
                       mem_bytes_per_model_value=4.17, gpu_speedup=20, model_channels=64, model_rows=128,
                       parallel_fraction=0.64, context_per_call=True)
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
    code: ClassVar[tuple[str, ...]] = ("chorustic.model", "chorustic.inference", "chorustic.class_tree")
    # On CPU the paper model takes minutes per small dataset and hours for the largest ones. Memory: what its cost
    # model asks for the largest context (FaceDetection's 5,890 series of 144 channels: 43.9 GB with the safety
    # margin; PenDigits and SpokenArabicDigits ~29 GB); the paper's machine had 251 GiB for its four GPUs.
    resources: ClassVar[dict[str, Any]] = {"threads": 2, "mem_mb": 48000, "runtime": 720, "gpu": 1}
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
