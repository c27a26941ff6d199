"""The resumable loop the pretraining stages before the episodic prior share (the released recipe's stages 1 and 2:
:mod:`~chorustic.training.encoder_pretraining`, :mod:`~chorustic.training.task_pretraining`).

A stage trains some parts of a whole ``ChorusTIC`` model on its own synthetic data, step by step, where every
step's data and random draws are a function of (seed, step) only: a run stopped anywhere (``max_minutes``, a
signal, a session's end) and resumed from its newest state (``state/step_*.pt``) trains the same weights. It
writes ``run.json``, ``log.jsonl`` (one line every ``log_every`` steps), ``summary.json`` and the whole model
(:func:`chorustic.model.save_checkpoint`) with the trained parts named in its provenance, for ``chorustic
pretrain --init-from FILE --init-parts PARTS``. A stage may start from an earlier stage's export
(``init_from``: every part from it, then the stage trains its own), so the last export holds them all. A
subclass says what it trains (:attr:`parts`,
:meth:`extra_modules`), its data (:meth:`dataset`: step -> batch) and its step (:meth:`loss`).
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
from pathlib import Path
from typing import Any, ClassVar

import torch
from torch import nn

from chorustic.io import atomic_open, atomic_write_json

__all__ = ["StageConfig", "StageTrainer", "warmup_cosine"]


@dataclasses.dataclass(frozen=True)
class StageConfig:
    """What every stage's configuration holds (a stage's subclass adds its own fields and defaults): the run's
    length, its optimizer (AdamW, warm-up then cosine), its seed, the data workers and the cadences."""

    steps: int = 2000
    batch_size: int = 16
    lr: float = 1e-4
    warmup_steps: int = 100
    weight_decay: float = 0.0
    seed: int = 0
    num_workers: int = 0  # DataLoader workers generating the data (0 = in the training process)
    checkpoint_every: int = 200
    keep_checkpoints: int = 2
    log_every: int = 10

    def problems(self) -> list[str]:
        """What is wrong with the settings (a subclass extends the list)."""
        out = []
        if self.steps < 1 or self.batch_size < 1:
            out.append("steps and batch_size must be >= 1")
        if self.checkpoint_every < 1 or self.log_every < 1:
            out.append("checkpoint_every and log_every must be >= 1")
        return out

    def __post_init__(self) -> None:
        problems = self.problems()
        if problems:
            raise ValueError(f"invalid {type(self).__name__}: " + "; ".join(problems))

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]):
        return cls(**data)


def warmup_cosine(step: int, steps: int, warmup: int) -> float:
    """The learning-rate factor of ``step``: linear warm-up over ``warmup`` steps, then a cosine to 0 at ``steps``."""
    if step < warmup:
        return (step + 1) / warmup
    frac = (step - warmup) / max(1, steps - warmup)
    return 0.5 * (1 + math.cos(math.pi * min(frac, 1.0)))


class StageTrainer:
    """A stage's run in ``out_dir`` (see the module docstring); ``cfg`` is a :class:`StageConfig`."""

    #: the kind written in run.json and checked on resume; the command that runs it
    kind: ClassVar[str] = ""
    command: ClassVar[str] = ""
    #: the model's parts (chorustic.training.init.PARTS) the stage trains
    parts: ClassVar[tuple[str, ...]] = ()
    config_class: ClassVar[type[StageConfig]] = StageConfig
    betas: ClassVar[tuple[float, float]] = (0.9, 0.999)

    def __init__(self, model_config, cfg, out_dir: str | Path, *, device: str = "cpu", progress: bool = True,
                 init_from: str | None = None) -> None:
        from chorustic.model import ChorusTIC

        self.model_config, self.cfg, self.out = model_config, cfg, Path(out_dir)
        self.device = torch.device(device)
        self.progress = progress
        torch.manual_seed(cfg.seed)
        self.model = ChorusTIC(model_config)
        self.init_from, self.init_info = init_from, None
        if init_from is not None:  # an earlier stage's export: every part starts from it (the stages chain)
            from chorustic.training.init import PARTS, init_from_checkpoint

            self.init_info = init_from_checkpoint(self.model, init_from, PARTS)
        self.model = self.model.to(self.device)
        for part in self.parts:  # trained here, whatever the config freezes in the next stage
            for prm in getattr(self.model, part).parameters():
                prm.requires_grad_(True)
        self.extra = nn.ModuleDict(self.extra_modules()).to(self.device)
        self.params = [p for part in self.parts for p in getattr(self.model, part).parameters()] + \
            list(self.extra.parameters())
        self.optimizer = torch.optim.AdamW(self.params, lr=cfg.lr, betas=self.betas, weight_decay=cfg.weight_decay)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, lambda s: warmup_cosine(s, self.cfg.steps, self.cfg.warmup_steps))
        self.step = 0

    # ------------------------------------------------------------------ what a stage defines
    def extra_modules(self) -> dict[str, nn.Module]:
        """Modules trained beside the model's parts and not exported (a projection head)."""
        return {}

    def dataset(self) -> torch.utils.data.Dataset:
        """A map-style dataset: index ``step`` -> that step's batch (a function of the seed and the step)."""
        raise NotImplementedError

    def loss(self, batch) -> tuple[torch.Tensor, dict[str, float]]:
        """The step's loss and the figures logged with it."""
        raise NotImplementedError

    def provenance(self) -> dict[str, Any]:
        """What the exported model's provenance says about the stage (besides its parts and steps)."""
        return {}

    # ------------------------------------------------------------------ state
    def save_state(self) -> Path:
        path = self.out / "state" / f"step_{self.step:07d}.pt"
        path.parent.mkdir(parents=True, exist_ok=True)
        state = {"kind": self.kind, "step": self.step, "init_from": self.init_from,
                 "parts": {part: getattr(self.model, part).state_dict() for part in self.parts},
                 "extra": self.extra.state_dict(), "optimizer": self.optimizer.state_dict(),
                 "scheduler": self.scheduler.state_dict(), "config": self.cfg.to_dict(),
                 "model_config": self.model_config.to_dict()}
        with atomic_open(path, "wb") as fh:
            torch.save(state, fh)
        for old in sorted(path.parent.glob("step_*.pt"))[:-self.cfg.keep_checkpoints]:
            old.unlink()
        return path

    @classmethod
    def resume(cls, out_dir: str | Path, *, device: str = "cpu", progress: bool = True, steps: int | None = None):
        """The run of ``out_dir`` from its newest state (``steps``: a new total length, which reshapes the
        learning-rate schedule from here on)."""
        from chorustic.model import ChorusTICConfig

        out = Path(out_dir)
        states = sorted((out / "state").glob("step_*.pt"))
        if not states:
            raise FileNotFoundError(f"{out}: no state/step_*.pt to resume from (start the run without --resume)")
        state = torch.load(states[-1], map_location="cpu", weights_only=False)
        if state.get("kind") != cls.kind:
            raise ValueError(f"{out} holds a {state.get('kind')!r} run, not a {cls.kind!r} run ({cls.command})")
        cfg = cls.config_class.from_dict(state["config"])
        if steps is not None:
            cfg = dataclasses.replace(cfg, steps=steps)
        run = cls(ChorusTICConfig.from_dict(state["model_config"]), cfg, out, device=device, progress=progress,
                  init_from=state.get("init_from"))
        for part, sd in state["parts"].items():
            getattr(run.model, part).load_state_dict(sd)
        run.extra.load_state_dict(state["extra"])
        run.optimizer.load_state_dict(state["optimizer"])
        run.scheduler.load_state_dict(state["scheduler"])
        run.step = int(state["step"])
        return run

    # ------------------------------------------------------------------ training
    def train_step(self, batch) -> dict[str, float]:
        for part in self.parts:
            getattr(self.model, part).train()
        self.extra.train()
        torch.manual_seed(self.cfg.seed * 1_000_003 + self.step)  # the step's random draws (dropout, crops)
        loss, figures = self.loss(batch)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(self.params, 1.0)
        self.optimizer.step()
        self.scheduler.step()
        self.step += 1
        return {"loss": float(loss.detach()), **figures, "grad_norm": float(norm),
                "lr": self.optimizer.param_groups[0]["lr"]}

    def run(self, *, max_minutes: float | None = None, until_step: int | None = None) -> dict[str, Any]:
        """Train to ``cfg.steps`` (or stop after ``max_minutes``, or at ``until_step``, with a resumable
        state), then export the model so far; the summary says whether the run finished."""
        cfg = self.cfg
        self.out.mkdir(parents=True, exist_ok=True)
        atomic_write_json(self.out / "run.json", {"kind": self.kind, "config": cfg.to_dict(),
                                                  "model_config": self.model_config.to_dict(),
                                                  "init": self.init_info})
        end = min(cfg.steps, until_step) if until_step is not None else cfg.steps
        loader = torch.utils.data.DataLoader(self.dataset(), batch_size=None, sampler=range(self.step, end),
                                             num_workers=cfg.num_workers)
        deadline = None if max_minutes is None else time.monotonic() + 60 * max_minutes
        bar = None
        if self.progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=cfg.steps, initial=self.step, desc=self.command, unit="step", dynamic_ncols=True)
        t0, last = time.perf_counter(), None
        with open(self.out / "log.jsonl", "a", encoding="utf-8") as log:
            for batch in loader:
                last = self.train_step(batch)
                if bar is not None:
                    bar.update(1)
                    bar.set_postfix(loss=f"{last['loss']:.3f}")
                if self.step % cfg.log_every == 0 or self.step == cfg.steps:
                    log.write(json.dumps({"step": self.step, **last, "elapsed_s": round(time.perf_counter() - t0, 2)})
                              + "\n")
                    log.flush()
                stop = deadline is not None and time.monotonic() > deadline
                if self.step % cfg.checkpoint_every == 0 or self.step in (cfg.steps, end) or stop:
                    self.save_state()
                if stop:
                    break
        if bar is not None:
            bar.close()
        path = self.export()
        summary = {"step": self.step, "steps": cfg.steps, "finished": self.step >= cfg.steps, "last": last,
                   "model": str(path), "seconds_this_call": round(time.perf_counter() - t0, 1)}
        atomic_write_json(self.out / "summary.json", summary)
        return summary

    #: the exported file's name in the run's folder
    export_name: ClassVar[str] = "model.safetensors"

    def export(self) -> Path:
        """The whole model: the stage's parts trained, the others as initialised."""
        from chorustic.model import save_checkpoint
        from chorustic.training.init import PARTS

        earlier = list((self.init_info or {}).get("source_provenance", {}).get("trained_parts", []))
        trained = [p for p in PARTS if p in self.parts or p in earlier]
        prov = {"stage": f"{self.kind} ({self.command})", "trained_parts": trained, "steps": self.step,
                "untrained_parts": [p for p in PARTS if p not in trained], **self.provenance()}
        if self.init_info is not None:
            prov["initialised_from"] = {"source": self.init_info["source"], "trained_parts": earlier,
                                        "stage": self.init_info["source_provenance"].get("stage")}
        return save_checkpoint(self.out / self.export_name, self.model, provenance=prov)
