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
#: (8 label shifts x 4 RSSC draws). The paper configuration (53 M parameters, random weights): time refitted on its
#: 11 jobs on stand-ins (benchmarks/results/archive_scale.md; 0.84-1.19 of each, PenDigits' 749 context series of
#: 10 classes at 10 % among them: 3,465 CPU-s, 2.16x the model before; a 12th since, StarLightCurves at 10 % with its
#: 824 queries in one call, at 1.28): ~55 ms per channel encoding of a series
#: (108 us x 512 values; a row of c channels encodes what its RSSC draws ask for, channel_encodings: 1 for 1
#: channel, 2 for 2, ~44 for 6, 64 from ~17 on), ~7.7 ms per series and distinct (label shift, RSSC draw) of the
#: ensemble (CostModel.members: 32 on a multivariate dataset of 10 classes), and ~725 ns per (context series,
#: series) and member: its in-context attention, which its jobs here cannot separate, from its predictions at 500
#: and 2,000 context series (benchmarks/chorustic_memory.py: 50.6 and 203.1 CPU-s; the ICL alone, --stage icl:
#: 516 ns). Each prediction call runs the context again (context_per_call). Memory, from one prediction by context
#: size: ~2.3 MB per series held (the context and the 512 rows its task level computes on at once, query_rows:
#: a context of 2,000 series peaks at 6.1 GB) and ~1 KB per value encoded (the signal level encodes 128 rows at a
#: time: ChorusTICClassifier's signal_batch_size), within 0.65-1.06 of the jobs. A query of a call beyond those rows
#: holds ~16 KB until the call returns: its signal representations of 4 draws (8 KB), its row representations (2 KB) and
#: its 32 members' logits (~2.6 KB); 300 context series with 1,064 and 3,064 queries peaked at 2,376 and 2,357 MB
#: (benchmarks/chorustic_memory.py), so a call takes a whole test split (Crop's 16,800 queries: 16 MB a 1,000) and
#: its context runs once. More than K_max = 10 classes: ~25 ms per
#: query and extra pass of the class tree (60 context and 60 query rows took 31.2 CPU-s against 21.9 with 10
#: classes, under the evaluation workers' pinned numerics: benchmarks/many_classes.py). Reading the data cache:
#: ~20 ns per value (PEMS-SF's 217 M resampled values and the job's start: 11.6 CPU-s). The input held: 8 bytes per
#: value, the job's arrays (4) and the one episode a prediction writes at the model's length (4: `python
#: benchmarks/chorustic_memory.py --stage inputs --shapes 267x173x963`, 4.01 held and at the peak; 6.44 and 13.43
#: before that episode replaced a concatenation, the context's copy and torch.isfinite's temporaries), set from that
#: measurement (15.1 before): the paper configuration's jobs here, at most 10 % of a shape, hold too few values to
#: fit it. On a GPU: the estimated gpu_speedup until one is measured.
PAPER_COST = CostModel(time_job_s=37.5, time_base_s=0, time_ns_per_value=108000,
                       time_ns_per_member_series=7.72e6, time_ns_per_member_pair=725, time_ns_per_tree_query=2.5e7,
                       tree_max_classes=K_MAX, mem_base_mb=1040, mem_bytes_per_value=8.0,
                       mem_kb_per_series=2260, mem_bytes_per_model_value=942, gpu_speedup=100, model_channels=64,
                       model_rows=128, parallel_fraction=0.88, context_per_call=True, mem_kb_per_query=16,
                       query_rows=512,
                       channel_encodings=(1.0, 2.0, 11.5, 4.0, 38.0, 43.75, 54.0, 52.0, 60.62, 61.62, 61.38, 63.0,
                                          63.5, 62.75, 62.75, 63.5) + (64.0,) * 16)
#: The committed small model (1.1 M parameters): refitted on its first 18 jobs on stand-ins of the largest shapes
#: (PenDigits' 7,494 context rows in full among them; 0.81-1.23 of each), which then predicted its 8 other full
#: jobs at 0.71-1.20 (benchmarks/results/archive_scale.md), the input read from the data cache
#: (~20 ns per value: PEMS-SF's 217 M resampled values and the job's start took 11.6 of its 165 CPU-s). Its
#: ensemble runs the ICL per distinct (label shift, RSSC draw): ~45 us per series and ~164 ns per (context series,
#: series) and member (the ICL alone, one member: 52 ns; the row stage attends to the context too), 32 members
#: on PenDigits' 10 classes and 2 channels (1,218 CPU-s in full: 3.7x the model before, which charged the
#: series once and no pair; its 19-minute request stopped it); ~0.4 ms per value encoded (815 ns x 512 per
#: channel encoding). Its class tree ~0.7 ms per query and extra pass (one context of 60 + 60 rows: ~1.1 ms,
#: benchmarks/many_classes.py). A query of a call beyond the 512 rows its task level computes on at once holds ~6 KB
#: (4 draws' 128-dim representations and the members' logits; 1 channel, 1,064 and 3,064 queries: 619 and 627 MB).
#: The input: ~6 bytes per value, the job's arrays (4) and the one episode a prediction writes at the model's length
#: of 128 (~1 per 512-point value: `benchmarks/chorustic_memory.py --config small --stage inputs --shapes
#: 267x173x963`, 1.13 held and 1.40 at the peak; 21.3 before, with the context's copy, a concatenation and a float64
#: resample of the whole episode). Memory refitted on its 15 jobs in full measured again with that and its 13 jobs
#: at fractions (0.82-1.16 of each; FaceDetection in full 5,453 MB, 16,648 before): ~163 KB per series held.
SMALL_COST = CostModel(time_job_s=10.4, time_base_s=0, time_ns_per_value=815,
                       time_ns_per_series=628000, time_ns_per_member_series=44900, time_ns_per_member_pair=164,
                       time_ns_per_tree_query=684000, tree_max_classes=K_MAX,
                       mem_base_mb=572, mem_bytes_per_value=6.07, mem_kb_per_series=163,
                       mem_bytes_per_model_value=63.7, gpu_speedup=20, model_channels=64, model_rows=128,
                       parallel_fraction=0.64, context_per_call=True, mem_kb_per_query=6, query_rows=512,
                       channel_encodings=PAPER_COST.channel_encodings)
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
        pretraining_data="synthetic episodes of its episodic prior only; no real series (the paper, App. B: 'No "
        "real-world time series are used to pretrain ChorusTIC')",
        benchmark_in_pretraining="no",
    )
    #: The parameters are the classifier's (checkpoint, ensemble sizes, temperature, batch sizes ...).
    estimator = ChorusTICClassifier
    fixed_params: ClassVar[dict[str, Any]] = {"model": None}  # always loaded from `checkpoint`
    # The model is used through the inference code: both are part of the method, and the resampler that brings a
    # series to the model's length (the classifier's episode, the model's own length fix).
    code: ClassVar[tuple[str, ...]] = ("chorustic.model", "chorustic.inference", "chorustic.class_tree",
                                       "chorustic.resampling")
    # On CPU the paper model takes minutes per small dataset and hours for the largest ones. Memory: what its cost
    # model asks for the largest context (FaceDetection's 5,890 series of 144 channels: 37.1 GB with the safety
    # margin; SpokenArabicDigits 32.1 GB, PenDigits 29.1 GB); the paper's machine had 251 GiB for its four GPUs.
    resources: ClassVar[dict[str, Any]] = {"threads": 2, "mem_mb": 48000, "runtime": 720, "gpu": 1}
    cost: ClassVar[CostModel] = PAPER_COST

    def cost_model(self, **params: Any) -> CostModel:
        """The paper configuration's cost, or the small model's for a local checkpoint file under
        :data:`SMALL_CHECKPOINT_BYTES` (a checkpoint still to be pretrained, or on the hub, is costed
        as the paper configuration), with the run's ensemble: its label shifts and RSSC draws (the in-context
        stage runs once per distinct pair, :meth:`CostModel.members`), for other than 4 draws what a row's
        signal level encodes under them (``channel_encodings``, as the models' literal has it for 4), and the
        rows its task level computes on at once (``task_batch_size``: ``query_rows``), beyond which a query
        of a prediction call holds only its input, representations and logits."""
        import dataclasses

        p = self.params(params)
        ckpt = p["checkpoint"]
        path = Path(ckpt) if isinstance(ckpt, str) and "://" not in ckpt else None
        small = path is not None and path.is_file() and path.stat().st_size < SMALL_CHECKPOINT_BYTES
        model = SMALL_COST if small else self.cost
        draws = int(p["n_rssc_draws"])
        encodings = model.channel_encodings
        # the signal level's plan for 1 .. 32 channels under other draws (8 seeds' mean): ~0.4 s, once per plugin
        # instance and number of draws (a plan asks its cost model for every job)
        known = self.__dict__.setdefault("_channel_encodings", {4: encodings})
        if draws not in known:
            import torch

            from chorustic.model import ChorusTICConfig
            from chorustic.model.rssc import sample_rssc_assignment
            from chorustic.model.signal_encoder import plan_slots

            config, rows = ChorusTICConfig.paper(), []
            for c in range(1, len(encodings) + 1):
                slots = [plan_slots(sample_rssc_assignment(
                    torch.ones(1, c, dtype=torch.bool), num_groups=config.num_groups, group_size=config.group_size,
                    n_draws=draws, mode=config.rssc_sampling, generator=torch.Generator().manual_seed(seed)),
                    dedupe=True).items_per_size() for seed in range(8)]
                rows.append(round(sum(u * n for s in slots for u, n in s.items()) / 8, 2))
            known[draws] = tuple(rows)
        return dataclasses.replace(model, ensemble_shifts=int(p["n_label_shifts"]), ensemble_draws=draws,
                                   channel_encodings=known[draws], query_rows=int(p["task_batch_size"]))

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
