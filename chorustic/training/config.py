"""Pretraining configurations.

``paper`` is the paper's configuration table (App. C.3): AdamW, learning rate 1e-4, weight decay 0,
36 episodes per step, 6000 steps, gradient clipping 1.0, FP32 with AMP on CUDA, constant learning
rate (the paper lists no schedule). ``small`` is the CPU configuration used for the committed small
checkpoint (fewer rows per episode, a warm-up and cosine decay, a higher learning rate for the much
smaller model; see its docstring). ``tiny`` is for tests.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from chorustic.prior import PriorConfig

__all__ = ["TrainConfig", "TRAIN_PRESETS"]

_SCHEDULES = ("constant", "cosine")


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    name: str = "paper"
    steps: int = 6000
    batch_size: int = 36  # episodes per optimizer step
    micro_batch_size: int | None = None  # episodes per forward/backward (gradient accumulation); None = all
    lr: float = 1e-4
    weight_decay: float = 0.0
    betas: tuple[float, float] = (0.9, 0.999)
    schedule: str = "constant"  # "constant" | "cosine" (to min_lr_ratio * lr at the last step)
    warmup_steps: int = 0
    min_lr_ratio: float = 0.1
    grad_clip: float = 1.0
    amp: bool = True  # autocast on CUDA only; CPU always runs FP32
    amp_dtype: str = "float16"
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
        if self.schedule not in _SCHEDULES:
            problems.append(f"schedule {self.schedule!r} not in {_SCHEDULES}")
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

    # ------------------------------------------------------------------ presets
    @classmethod
    def paper(cls) -> "TrainConfig":
        """The paper's pretraining configuration (App. C.3): 36 episodes per step (as 3 micro-batches of 12
        with gradient accumulation, the same objective, to bound activation memory of the 53 M model)."""
        return cls(micro_batch_size=12)

    @classmethod
    def small(cls) -> "TrainConfig":
        """CPU pretraining of the small model on a couple of shared cores.

        Episodes of 32-64 rows (the paper does not state its row range), 12 episodes per step (two
        micro-batches of 6) instead of 36 so that a budget of a few tens of thousands of episodes gives
        more optimizer steps; ~1 M parameters instead of 53 M, so a larger peak learning rate (1e-3)
        with 100 warm-up steps and a cosine decay to 1e-4 over 2000 steps. Weight decay 0 and gradient
        clipping 1.0 as in the paper; the prior is the paper's (all families, 0.2 univariate), reached through
        a curriculum over the first 1000 steps (difficulty <= 0.3 and at most 4 classes at the start): without
        it, a first run learned almost nothing in 320 steps (validation accuracy 0.28, below the 0.36 of
        predicting the context-majority class), the full prior being too hard a signal for so few episodes.
        """
        return cls(
            name="small",
            steps=2000,
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

    @property
    def micro_batches(self) -> list[int]:
        """Episode counts of the micro-batches of one optimizer step."""
        mb = self.micro_batch_size or self.batch_size
        sizes = [mb] * (self.batch_size // mb)
        if self.batch_size % mb:
            sizes.append(self.batch_size % mb)
        return sizes


TRAIN_PRESETS = {"paper": TrainConfig.paper, "small": TrainConfig.small, "tiny": TrainConfig.tiny}
