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

from chorustic.methods import CostModel, Method, MethodInfo, MethodNotReady, register

RELEASED_CHECKPOINT = "hf://JTF2000/ChorusTIC/ChorusTIC.ckpt"
RELEASED_HPARAMS = "hf://JTF2000/ChorusTIC/model_hparams_latest.json"

#: Cost of one evaluate job (chorustic.resources.CostModel), measured with benchmarks/job_costs.py on
#: one CPU thread with the full deployment ensemble: the paper configuration (53 M parameters, random
#: weights; per series and channel ~110 ms and ~2 MB, channel attention ~0.3x more per extra channel)
#: and the committed small model (1.1 M parameters, ~3 ms per series and channel).
PAPER_COST = CostModel(mem_base_mb=1100, mem_bytes_per_value=4000, time_job_s=20, time_base_s=15,
                       time_ns_per_value=150_000, time_ns_per_value_channel=70_000)
SMALL_COST = CostModel(mem_base_mb=600, mem_bytes_per_value=170, time_job_s=10, time_base_s=1,
                       time_ns_per_value=8_000)
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
    default_params: ClassVar[dict[str, Any]] = {
        "checkpoint": RELEASED_CHECKPOINT,
        "hparams_json": None,
        "n_label_shifts": 8,
        "n_rssc_draws": 4,
        "temperature": 0.9,
        "label_shift_rule": "official",
        "schedule": "shared",
        "signal_batch_size": 128,
        "task_batch_size": 512,
        "icl_batch_size": 8,
        "group_batch_size": 256,
        "use_amp": True,
        "oom_retry": True,
    }
    # The model and the inference code are imported lazily (inside build/check_ready): declared as code.
    code: ClassVar[tuple[str, ...]] = ("chorustic.model", "chorustic.inference")
    # On CPU the paper model takes minutes per small dataset and hours for the largest ones.
    resources: ClassVar[dict[str, Any]] = {"threads": 2, "mem_mb": 16000, "runtime": 720, "gpu": 0}
    cost: ClassVar[CostModel] = PAPER_COST

    def job_cost(self, size, **params: Any) -> tuple[float, float]:
        """The paper configuration's cost, or the small model's for a local checkpoint file under
        :data:`SMALL_CHECKPOINT_BYTES` (a checkpoint still to be pretrained, or on the hub, is costed
        as the paper configuration)."""
        ckpt = self.params(params)["checkpoint"]
        path = Path(ckpt) if isinstance(ckpt, str) and "://" not in ckpt else None
        if path is not None and path.is_file() and path.stat().st_size < SMALL_CHECKPOINT_BYTES:
            return SMALL_COST.estimate(size)
        return self.cost.estimate(size)

    def check_ready(self, **params: Any) -> None:
        from chorustic.model.checkpoint import CheckpointNotFoundError, resolve_checkpoint

        p = self.params(params)
        try:
            resolve_checkpoint(p["checkpoint"], local_files_only=True)
            if p["hparams_json"] is not None and not isinstance(p["hparams_json"], dict):
                resolve_checkpoint(p["hparams_json"], local_files_only=True)
        except CheckpointNotFoundError as exc:
            raise MethodNotReady(f"ChorusTIC weights missing: {exc}") from None

    def fetch_weights(self, **params: Any) -> list[Path]:
        from chorustic.model.checkpoint import resolve_checkpoint

        p = self.params(params)
        paths = [resolve_checkpoint(p["checkpoint"], local_files_only=False)]
        if p["checkpoint"] == RELEASED_CHECKPOINT and p["hparams_json"] is None:
            paths.append(resolve_checkpoint(RELEASED_HPARAMS, local_files_only=False))
        elif p["hparams_json"] is not None and not isinstance(p["hparams_json"], dict):
            paths.append(resolve_checkpoint(p["hparams_json"], local_files_only=False))
        return paths

    def build(self, *, seed: int, device: str = "cpu", n_jobs: int = 1, **params: Any):
        from chorustic.inference import ChorusTICClassifier

        p = self.params(params)
        self.check_ready(**p)
        return ChorusTICClassifier(seed=seed, device=device, n_jobs=n_jobs, **p)
