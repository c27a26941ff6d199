"""Pretraining configurations.

``paper`` is the paper's configuration table (App. C.3): AdamW, learning rate 1e-4, weight decay 0,
36 episodes per step, 6000 steps, gradient clipping 1.0, FP32 with AMP on CUDA, constant learning
rate (the paper lists no schedule). ``small`` is the CPU configuration used for the committed small
checkpoint (fewer rows per episode, a warm-up and cosine decay, a higher learning rate for the much
smaller model; see its docstring). ``tiny`` is for tests.

Two kinds of fields: those that define the optimisation problem (steps, batch, learning rate, prior,
``shape_group_size``, seed, ...) and operational ones that only decide how the same computation is
laid out on the hardware (``micro_batch_size``, activation checkpointing and its chunk sizes, data
workers, ``compile``, ``fused_optimizer``, logging and checkpoint cadence): the latter may be changed
when a run is resumed (``OPERATIONAL_FIELDS``). ``micro_batch_size`` is operational for the gradient
(the loss is normalised by the global batch) but the dropout masks are drawn per micro-batch.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from chorustic.prior import PriorConfig

__all__ = ["CPU_CHUNKS", "LAYOUT_FIELDS", "OPERATIONAL_FIELDS", "TrainConfig", "TRAIN_PRESETS"]

_SCHEDULES = ("constant", "cosine")

#: Chunks of the task level in a training step on a CPU, with or without activation checkpointing
#: (``forward_kwargs``; the signal encoder runs in calls of ``chorustic.model.signal_encoder.GROUP_CHUNK``
#: groups there): the same function, computed in pieces whose activations stay in the cache between a
#: block's operations instead of streaming every operation through main memory. Measured on the ``small``
#: model, one thread, forward + backward of four prior micro-batches: 256 column-episodes of column
#: distribution modeling and 64 row-episodes of the row interaction 1.67 s, one pass each 2.0 s. A GPU runs
#: each stage in one pass (the fewest kernel launches).
CPU_CHUNKS = {"cdm_columns": 256, "interaction_rows": 64}


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    name: str = "paper"
    steps: int = 6000
    batch_size: int = 36  # episodes per optimizer step (global: over all processes)
    #: episodes per forward/backward pass and process (gradient accumulation over the rest); must divide
    #: ``shape_group_size``; None = ``shape_group_size``
    micro_batch_size: int | None = None
    #: consecutive episodes of a step that share (T, N_c, L); None = micro_batch_size (or batch_size)
    shape_group_size: int | None = None
    lr: float = 1e-4
    weight_decay: float = 0.0
    betas: tuple[float, float] = (0.9, 0.999)
    schedule: str = "constant"  # "constant" | "cosine" (to min_lr_ratio * lr at the last step)
    warmup_steps: int = 0
    min_lr_ratio: float = 0.1
    grad_clip: float = 1.0
    amp: bool = True  # autocast on CUDA (fp32 master weights); CPU runs FP32 unless cpu_amp
    amp_dtype: str = "bfloat16"  # float16 adds a GradScaler; bfloat16 falls back to float16 on GPUs without it
    cpu_amp: bool = False  # bf16 autocast on CPU too (CPUs with AVX512-BF16/AMX)
    #: activation checkpointing (chorustic.model.ChorusTIC.episode_logits): chunks of row-episodes of the
    #: signal level, of feature columns (x episodes) of column distribution modeling, of row-episodes of the
    #: row interaction, and each ICL block, are recomputed in the backward pass (the chunk sizes apply only
    #: then; without checkpointing each stage runs in one pass)
    activation_checkpointing: bool = False
    signal_chunk_rows: int | None = 64
    cdm_chunk_columns: int | None = 1024
    interaction_chunk_rows: int | None = 512
    num_workers: int | None = None  # prior worker processes; None = automatic (chorustic.training.data.auto_workers)
    prefetch_factor: int = 4  # micro-batches each worker keeps ready
    compile: bool = False  # torch.compile the shape-stable stages (chorustic.model.ChorusTIC.compile_stages)
    fused_optimizer: bool = True  # fused AdamW kernel where the device has one
    export_dtype: str = "float32"  # precision of the exported model.safetensors (float16: half the file)
    mask_unused_classes: bool = True  # logits of labels >= K are excluded from the softmax (as at inference)
    seed: int = 0
    checkpoint_every: int = 500
    keep_checkpoints: int = 3
    log_every: int = 10
    val_every: int = 250
    val_episodes: int = 64
    val_batch_size: int = 8
    val_seed: int = 1_000_003  # the fixed synthetic validation set (independent of the training stream)
    max_consecutive_bad_steps: int = 20  # non-finite losses/gradients in a row before aborting
    #: curriculum (not in the paper; 0 = off): over the first ``curriculum_steps`` steps the prior's upper
    #: difficulty bound rises linearly from ``curriculum_start_difficulty`` to ``prior.difficulty[1]`` and
    #: the largest class count from ``curriculum_start_classes`` to ``prior.max_classes``; the full prior after
    curriculum_steps: int = 0
    curriculum_start_difficulty: float = 0.3
    curriculum_start_classes: int = 4
    prior: PriorConfig = dataclasses.field(default_factory=PriorConfig)

    def __post_init__(self) -> None:
        problems = []
        if self.steps < 1 or self.batch_size < 1:
            problems.append("steps and batch_size must be >= 1")
        if self.micro_batch_size is not None and not 1 <= self.micro_batch_size <= self.batch_size:
            problems.append(f"micro_batch_size must be in [1, batch_size], got {self.micro_batch_size}")
        group = self.shape_group_size if self.shape_group_size is not None else (self.micro_batch_size or self.batch_size)
        if not 1 <= group <= self.batch_size or self.batch_size % group:
            problems.append(f"shape_group_size {group} must divide batch_size {self.batch_size}")
        elif self.micro_batch_size is not None and group % self.micro_batch_size:
            problems.append(f"micro_batch_size {self.micro_batch_size} must divide shape_group_size {group} "
                            "(a micro-batch never mixes episode shapes)")
        for name in ("signal_chunk_rows", "cdm_chunk_columns", "interaction_chunk_rows"):
            v = getattr(self, name)
            if v is not None and v < 1:
                problems.append(f"{name} must be >= 1 or None")
        if self.num_workers is not None and self.num_workers < 0:
            problems.append("num_workers must be >= 0")
        if self.schedule not in _SCHEDULES:
            problems.append(f"schedule {self.schedule!r} not in {_SCHEDULES}")
        if self.export_dtype not in ("float32", "float16", "bfloat16"):
            problems.append(f"export_dtype {self.export_dtype!r} must be float32, float16 or bfloat16")
        if self.amp_dtype not in ("float16", "bfloat16"):
            problems.append(f"amp_dtype {self.amp_dtype!r} must be float16 or bfloat16")
        if self.val_episodes % self.val_batch_size:
            problems.append("val_episodes must be a multiple of val_batch_size")
        if self.checkpoint_every < 1 or self.log_every < 1 or self.val_every < 1:
            problems.append("checkpoint_every, log_every and val_every must be >= 1")
        if self.curriculum_steps < 0 or not 0 <= self.curriculum_start_difficulty <= 1:
            problems.append("curriculum_steps must be >= 0 and curriculum_start_difficulty in [0, 1]")
        if self.curriculum_start_classes < self.prior.min_classes:
            problems.append("curriculum_start_classes must be >= prior.min_classes")
        if problems:
            raise ValueError("invalid TrainConfig: " + "; ".join(problems))

    @property
    def group_size(self) -> int:
        """Episodes per shape group (resolved)."""
        return self.shape_group_size if self.shape_group_size is not None else (self.micro_batch_size or self.batch_size)

    # ------------------------------------------------------------------ presets
    @classmethod
    def paper(cls) -> "TrainConfig":
        """The paper's pretraining configuration (App. C.3): 36 episodes per step in 3 shape groups of 12
        (each one micro-batch; ``chorustic pretrain --plan`` says what fits a device), bf16 autocast with
        fp32 master weights (the paper: "FP32 with AMP"), activation checkpointing of the trainable model."""
        return cls(micro_batch_size=12, shape_group_size=12, activation_checkpointing=True)

    @classmethod
    def small(cls) -> "TrainConfig":
        """CPU pretraining of the small model on a couple of shared cores.

        Episodes of 32-64 rows (the paper does not state its row range), 12 episodes per step (two
        micro-batches of 6) instead of 36 so that a budget of a few tens of thousands of episodes gives
        more optimizer steps; ~1 M parameters instead of 53 M, so a larger peak learning rate (1e-3)
        with 100 warm-up steps and a cosine decay to 1e-4 over 2,500 steps (30,000 episodes). Weight decay 0 and gradient
        clipping 1.0 as in the paper; the prior is the paper's (all families, 0.2 univariate), reached through
        a curriculum over the first 1000 steps (difficulty <= 0.3 and at most 4 classes at the start): without
        it, a first run learned almost nothing in 320 steps (validation accuracy 0.28, below the 0.36 of
        predicting the context-majority class), the full prior being too hard a signal for so few episodes.
        """
        return cls(
            name="small",
            steps=2500,
            batch_size=12,
            micro_batch_size=6,
            lr=1e-3,
            schedule="cosine",
            warmup_steps=100,
            min_lr_ratio=0.1,
            checkpoint_every=25,
            keep_checkpoints=3,
            log_every=5,
            val_every=100,
            curriculum_steps=1000,
            curriculum_start_difficulty=0.3,
            curriculum_start_classes=4,
            prior=PriorConfig(min_rows=32, max_rows=64),
        )

    @classmethod
    def base(cls) -> "TrainConfig":
        """GPU pretraining of the ``base`` model (about half an hour of one H100; see ``--plan``): the paper's
        prior and episode sizes, 48 episodes per step in 3 shape groups of 16 (micro-batches of 8: 48 GB at
        the largest episodes, no activation checkpointing), AdamW 5e-4 with 300 warm-up steps and a cosine
        decay to 5e-5 over 6,000 steps (288,000 episodes), the small run's curriculum over the first 1,000
        steps, bf16 autocast."""
        return cls(
            name="base",
            steps=6000,
            batch_size=48,
            micro_batch_size=8,
            shape_group_size=16,
            lr=5e-4,
            schedule="cosine",
            warmup_steps=300,
            min_lr_ratio=0.1,
            checkpoint_every=250,
            keep_checkpoints=2,
            log_every=25,
            val_every=250,
            curriculum_steps=1000,
            curriculum_start_difficulty=0.3,
            curriculum_start_classes=4,
            export_dtype="float16",
        )

    @classmethod
    def tiny(cls) -> "TrainConfig":
        """Seconds-long runs for tests: few rows, short series, small batches."""
        return cls(
            name="tiny",
            steps=40,
            batch_size=8,
            micro_batch_size=4,
            lr=3e-3,
            schedule="constant",
            checkpoint_every=10,
            keep_checkpoints=2,
            log_every=5,
            val_every=20,
            val_episodes=16,
            val_batch_size=8,
            prior=PriorConfig(min_rows=16, max_rows=24, min_length=32, max_length=64, max_classes=10,
                              max_channels=4),
        )

    @classmethod
    def preset(cls, name: str) -> "TrainConfig":
        try:
            return TRAIN_PRESETS[name]()
        except KeyError:
            raise ValueError(f"unknown training preset {name!r}; known: {sorted(TRAIN_PRESETS)} "
                             f"(or a path to a JSON file)") from None

    @classmethod
    def resolve(cls, spec: str | Path) -> "TrainConfig":
        """A preset name or a JSON file (``to_dict`` format; missing keys take the defaults)."""
        if str(spec) in TRAIN_PRESETS:
            return cls.preset(str(spec))
        path = Path(spec)
        if not path.is_file():
            raise ValueError(f"training config {str(spec)!r} is neither a preset ({sorted(TRAIN_PRESETS)}) "
                             f"nor an existing JSON file")
        try:
            data = json.loads(path.read_text())
        except json.JSONDecodeError as exc:
            raise ValueError(f"training config {path}: invalid JSON ({exc})") from None
        return cls.from_dict(data)

    # ------------------------------------------------------------------ (de)serialisation
    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["prior"] = self.prior.to_dict()
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "TrainConfig":
        d = dict(d)
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ValueError(f"unknown TrainConfig keys {unknown}; known: {sorted(known)}")
        if "prior" in d and isinstance(d["prior"], dict):
            d["prior"] = PriorConfig.from_dict(d["prior"])
        if "betas" in d:
            d["betas"] = tuple(d["betas"])
        return cls(**d)

    def prior_at(self, step: int) -> PriorConfig:
        """The prior used at optimizer step ``step`` (the curriculum, or ``prior`` itself)."""
        if self.curriculum_steps <= 0 or step >= self.curriculum_steps:
            return self.prior
        f = step / self.curriculum_steps
        lo, hi = self.prior.difficulty
        d_hi = max(lo, self.curriculum_start_difficulty + f * (hi - self.curriculum_start_difficulty))
        k0 = min(self.curriculum_start_classes, self.prior.max_classes)
        k = int(round(k0 + f * (self.prior.max_classes - k0)))
        return dataclasses.replace(self.prior, difficulty=(lo, min(d_hi, hi)), max_classes=max(k, self.prior.min_classes))

    def forward_kwargs(self, device_type: str) -> dict[str, Any]:
        """Keyword arguments of ``ChorusTIC.episode_logits`` for this layout on a ``device_type`` ("cpu",
        "cuda") device: the checkpointing switch and its chunks (None without checkpointing: each stage in
        one pass, the fewest kernel launches on a GPU); on a CPU the stages always run in the cache-sized
        pieces of :data:`CPU_CHUNKS` (or the smaller checkpointing chunks)."""
        ckpt = self.activation_checkpointing
        kw = {"recompute": ckpt, "signal_rows": self.signal_chunk_rows if ckpt else None,
              "cdm_columns": self.cdm_chunk_columns if ckpt else None,
              "interaction_rows": self.interaction_chunk_rows if ckpt else None, "group_chunk": None}
        if device_type == "cpu":
            from chorustic.model.signal_encoder import GROUP_CHUNK

            for key, size in {**CPU_CHUNKS, "group_chunk": GROUP_CHUNK}.items():
                kw[key] = size if kw[key] is None else min(kw[key], size)
        return kw

    def sized_to(self, steps: int, *, continued: bool = False, checkpoints: int = 4) -> "TrainConfig":
        """This configuration for a run of ``steps`` steps (a GPU window of a few minutes), its schedule
        ending with the run instead of being cut by the time limit: warm-up and curriculum shrink in
        proportion; a ``continued`` run (weights from an earlier window, ``--init-from``) gets a short
        warm-up (2 % of the steps, at most 50: the optimizer's moments start from zero) and no curriculum
        (the model has seen the full prior). Checkpoints (each one exports the model) and validations at
        least ``checkpoints`` times in the run, so that a run cut short still leaves a recent model."""
        steps = max(int(steps), 1)
        if continued:
            warmup, curriculum = min(50, max(1, steps // 50)), 0
        else:
            f = min(1.0, steps / self.steps)
            warmup, curriculum = int(round(self.warmup_steps * f)), int(round(self.curriculum_steps * f))
        every = max(1, min(self.checkpoint_every, -(-steps // checkpoints)))
        return dataclasses.replace(self, steps=steps, warmup_steps=warmup, curriculum_steps=curriculum,
                                   checkpoint_every=every, val_every=min(self.val_every, every))

    @property
    def micro_batches(self) -> list[int]:
        """Episode counts of the micro-batches of one optimizer step (one process)."""
        mb = self.micro_batch_size or self.group_size
        return [mb] * (self.batch_size // mb)


#: Fields that only lay the same computation out on the hardware (memory, workers, kernels).
LAYOUT_FIELDS = frozenset({
    "micro_batch_size", "activation_checkpointing", "signal_chunk_rows", "cdm_chunk_columns",
    "interaction_chunk_rows", "num_workers", "prefetch_factor", "compile", "fused_optimizer",
})
#: Fields that may change when a run is resumed: the layout, the length of the run and the cadences.
OPERATIONAL_FIELDS = LAYOUT_FIELDS | frozenset({
    "steps", "checkpoint_every", "log_every", "val_every", "keep_checkpoints", "max_consecutive_bad_steps",
    "export_dtype",
})


TRAIN_PRESETS = {"paper": TrainConfig.paper, "base": TrainConfig.base, "small": TrainConfig.small,
                 "tiny": TrainConfig.tiny}
