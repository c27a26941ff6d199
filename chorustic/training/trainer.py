"""Episodic pretraining of ChorusTIC (paper Sec. 3.3, App. C.3).

A run lives in one directory::

    run.json            model config, training config (with the prior config), initialization, creation info
    log.jsonl           one JSON record per logged step ("kind": "train") and per validation ("kind": "val")
    state/step_*.pt     resume states: model, optimizer, scheduler, AMP scaler, every RNG stream (python,
                        numpy, torch, CUDA) and the prior generator; the newest ``keep_checkpoints`` are kept
    model.safetensors   the model in the model package's own format (chorustic.model.save_checkpoint),
                        rewritten at every checkpoint, with the training provenance
    summary.json        where the run stands (step, episodes seen, wall time, last validation)
    curve.png           loss / accuracy curves

Resuming (``Trainer.resume(dir)``) restores everything, so the resumed run's next losses are exactly
those of an uninterrupted run (same machine, same thread count). The validation pass runs under a
forked torch RNG and never perturbs the training streams.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as _dt
import json
import math
import signal
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch

from chorustic.io import atomic_open, atomic_write_json
from chorustic.prior import EpisodePrior
from chorustic.training.config import TrainConfig
from chorustic.training.curves import plot_curves, read_log
from chorustic.training.loss import query_cross_entropy
from chorustic.training.rng import capture_rng_state, restore_rng_state
from chorustic.training.validation import build_validation_set, evaluate, reference_accuracies

__all__ = ["Trainer", "TrainingAborted", "resolve_device"]

STATE_FORMAT = "chorustic-train-state-v1"


class TrainingAborted(RuntimeError):
    """Training cannot continue (e.g. persistent non-finite losses); the message says why."""


def resolve_device(device: str | torch.device | None) -> torch.device:
    if device in (None, "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError("device 'cuda' requested but no CUDA device is available; use --device cpu")
    return dev


def _lr_lambda(cfg: TrainConfig):
    def f(step: int) -> float:  # step = number of optimizer steps taken so far
        if cfg.warmup_steps and step < cfg.warmup_steps:
            return (step + 1) / cfg.warmup_steps
        if cfg.schedule == "constant":
            return 1.0
        span = max(1, cfg.steps - cfg.warmup_steps)
        progress = min(1.0, (step - cfg.warmup_steps) / span)
        return cfg.min_lr_ratio + (1 - cfg.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * progress))

    return f


class Trainer:
    """Pretrains a :class:`chorustic.model.ChorusTIC` on episodes of the prior.

    ``model_config``: a :class:`chorustic.model.ChorusTICConfig`; ``train_config``: a :class:`TrainConfig`;
    ``out_dir``: the run directory (created; must not hold another run unless ``overwrite``).
    ``init``: list of initialization specs ``{"kind": "checkpoint", "spec": ..., "parts": [...]}`` or
    ``{"kind": "tabicl", "path": ...}`` applied after construction.
    """

    def __init__(self, model_config, train_config: TrainConfig, out_dir: str | Path, *, device: Any = "auto",
                 init: list[dict] | None = None, progress: bool = True, overwrite: bool = False,
                 notes: dict | None = None, _resuming: bool = False) -> None:
        from chorustic.model import ChorusTIC

        self.cfg = train_config
        self.model_config = model_config
        self.out = Path(out_dir)
        self.device = resolve_device(device)
        self.progress = progress
        self.init_specs = list(init or [])
        self.notes = dict(notes or {})
        if not _resuming:
            if (self.out / "run.json").exists() and not overwrite:
                raise FileExistsError(f"{self.out} already holds a training run; pass --resume to continue it "
                                      f"or choose another --out")
            self.out.mkdir(parents=True, exist_ok=True)
            if overwrite:
                for p in list((self.out / "state").glob("step_*.pt")) + [self.out / "log.jsonl"]:
                    p.unlink(missing_ok=True)

        # the prior generates at the model's input length (the model would resample to it anyway)
        self.prior_config = dataclasses.replace(self.cfg.prior, output_length=model_config.seq_len,
                                                max_classes=min(self.cfg.prior.max_classes, model_config.max_classes))
        self._seed_everything(self.cfg.seed)
        self.model = ChorusTIC(model_config).to(self.device)
        self.init_info = [self._apply_init(spec) for spec in self.init_specs]
        if model_config.freeze_signal_encoder and not self._encoder_initialized():
            msg = ("the signal encoder is frozen but not initialized from a checkpoint: it stays at its random "
                   "initialization. The released model froze an encoder pretrained beforehand; pass "
                   "--init-from <checkpoint> --init-parts encoder, or train it with --train-signal-encoder.")
            warnings.warn(msg, stacklevel=2)
            self.notes.setdefault("warnings", []).append(msg)
        self.model.train()
        params = [p for p in self.model.parameters() if p.requires_grad]
        if not params:
            raise ValueError("the model has no trainable parameters")
        self.params = params
        self.optimizer = torch.optim.AdamW(params, lr=self.cfg.lr, betas=tuple(self.cfg.betas),
                                           weight_decay=self.cfg.weight_decay)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, _lr_lambda(self.cfg))
        self.use_amp = bool(self.cfg.amp and self.device.type == "cuda")
        self.amp_dtype = getattr(torch, self.cfg.amp_dtype) if self.use_amp else None
        self.scaler = torch.amp.GradScaler("cuda", enabled=self.use_amp and self.amp_dtype == torch.float16)
        self.prior = EpisodePrior(self.prior_config, seed=np.random.default_rng([self.cfg.seed, 1]))
        self.val_set = build_validation_set(self.prior_config, self.cfg.val_episodes, self.cfg.val_batch_size,
                                            self.cfg.val_seed)
        self.val_references = reference_accuracies(self.val_set)
        self.step = 0
        self.episodes_seen = 0
        self.elapsed_s = 0.0
        self.bad_steps = 0
        self.last_val: dict[str, float] = {}
        self._window = self._new_window()
        self._stop_reason: str | None = None
        if not _resuming:
            atomic_write_json(self.out / "run.json", self._run_info())

    # ------------------------------------------------------------------ construction helpers
    @staticmethod
    def _seed_everything(seed: int) -> None:
        import random

        random.seed(seed)
        np.random.seed(seed % 2**32)
        torch.manual_seed(seed)

    def _encoder_initialized(self) -> bool:
        from chorustic.training.init import expand_parts

        return any(spec.get("kind") == "checkpoint" and "signal_encoder" in expand_parts(spec.get("parts", ("all",)))
                   for spec in self.init_specs)

    def _apply_init(self, spec: dict) -> dict:
        from chorustic.training.init import init_from_checkpoint, init_task_level_from_tabicl

        kind = spec.get("kind")
        if kind == "checkpoint":
            return init_from_checkpoint(self.model, spec["spec"], spec.get("parts", ("all",)), spec.get("hparams"))
        if kind == "tabicl":
            return init_task_level_from_tabicl(self.model, spec["path"])
        raise ValueError(f"unknown initialization kind {kind!r} (use 'checkpoint' or 'tabicl')")

    def _run_info(self) -> dict:
        from chorustic.model.checkpoint import _git_info

        return {
            "format": "chorustic-pretraining-run-v1",
            "created_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "model_config": self.model_config.to_dict(),
            "train_config": self.cfg.to_dict(),
            "init": self.init_specs,
            "init_info": self.init_info,
            "device": str(self.device),
            "torch_threads": torch.get_num_threads(),
            "parameters": self.model.parameter_counts(),
            "validation_references": self.val_references,
            "notes": self.notes,
            **_git_info(),
        }

    @staticmethod
    def _new_window() -> dict[str, float]:
        return {"loss": 0.0, "correct": 0.0, "queries": 0.0, "episodes": 0.0, "steps": 0.0, "grad_norm": 0.0,
                "time": 0.0, "prior_time": 0.0}

    # ------------------------------------------------------------------ resume
    @classmethod
    def resume(cls, out_dir: str | Path, *, device: Any = "auto", progress: bool = True,
               overrides: dict | None = None) -> "Trainer":
        """Continue the run in ``out_dir`` from its newest state. ``overrides`` may change operational
        training settings (``steps``, ``checkpoint_every``, ``log_every``, ``val_every``, ``keep_checkpoints``)."""
        from chorustic.model import ChorusTICConfig

        out = Path(out_dir)
        info_path = out / "run.json"
        if not info_path.exists():
            raise FileNotFoundError(f"{out} holds no training run (no run.json); start one without --resume")
        info = json.loads(info_path.read_text())
        model_config = ChorusTICConfig.from_dict(info["model_config"])
        train_config = TrainConfig.from_dict(info["train_config"])
        allowed = {"steps", "checkpoint_every", "log_every", "val_every", "keep_checkpoints", "max_consecutive_bad_steps"}
        overrides = {k: v for k, v in (overrides or {}).items() if v is not None}
        bad = sorted(set(overrides) - allowed)
        if bad:
            raise ValueError(f"cannot change {bad} when resuming (allowed: {sorted(allowed)})")
        if overrides:
            train_config = dataclasses.replace(train_config, **overrides)
        # initialization specs are not re-applied: the state holds the weights
        trainer = cls(model_config, train_config, out, device=device, init=None, progress=progress, _resuming=True)
        trainer.init_specs, trainer.init_info = info.get("init", []), info.get("init_info", [])
        state_path = trainer.latest_state()
        if state_path is None:
            raise FileNotFoundError(f"{out} has no saved state (state/step_*.pt) to resume from")
        trainer.load_state(state_path)
        if overrides:
            info["train_config"] = train_config.to_dict()
            info.setdefault("resume_overrides", []).append({"at_step": trainer.step, **overrides})
            atomic_write_json(info_path, info)
        return trainer

    def latest_state(self) -> Path | None:
        states = sorted((self.out / "state").glob("step_*.pt"))
        return states[-1] if states else None

    def state_dict(self) -> dict:
        return {
            "format": STATE_FORMAT,
            "step": self.step,
            "episodes_seen": self.episodes_seen,
            "elapsed_s": self.elapsed_s,
            "bad_steps": self.bad_steps,
            "last_val": self.last_val,
            "window": dict(self._window),
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(),
            "scaler": self.scaler.state_dict(),
            "rng": capture_rng_state(),
            "prior_rng": self.prior.get_state(),
            "model_config": self.model_config.to_dict(),
            "train_config": self.cfg.to_dict(),
        }

    def save_state(self) -> Path:
        path = self.out / "state" / f"step_{self.step:07d}.pt"
        with atomic_open(path, "wb") as fh:
            torch.save(self.state_dict(), fh)
        states = sorted((self.out / "state").glob("step_*.pt"))
        for old in states[: max(0, len(states) - self.cfg.keep_checkpoints)]:
            old.unlink(missing_ok=True)
        return path

    def load_state(self, path: str | Path) -> None:
        try:
            st = torch.load(path, map_location=self.device, weights_only=False)
        except Exception as exc:
            raise ValueError(f"cannot read training state {path}: {exc}") from exc
        if st.get("format") != STATE_FORMAT:
            raise ValueError(f"{path} is not a training state of this project (format {st.get('format')!r})")
        if st["model_config"] != self.model_config.to_dict():
            raise ValueError(f"{path}: saved with another model configuration than run.json")
        self.model.load_state_dict(st["model"], strict=True)
        self.optimizer.load_state_dict(st["optimizer"])
        self.scheduler.load_state_dict(st["scheduler"])
        self.scheduler.lr_lambdas = [_lr_lambda(self.cfg)]  # the (possibly extended) schedule of this config
        self.scaler.load_state_dict(st["scaler"])
        self.prior.set_state(st["prior_rng"])
        restore_rng_state(st["rng"])
        self.step = int(st["step"])
        self.episodes_seen = int(st["episodes_seen"])
        self.elapsed_s = float(st["elapsed_s"])
        self.bad_steps = int(st["bad_steps"])
        self.last_val = dict(st.get("last_val", {}))
        self._window = dict(st.get("window", self._new_window()))
        self._truncate_log(self.step)

    def _truncate_log(self, step: int) -> None:
        """Drop log records written after ``step`` (a crash after the last checkpoint)."""
        path = self.out / "log.jsonl"
        recs = read_log(path)
        keep = [r for r in recs if r.get("step", 0) <= step]
        if len(keep) != len(recs):
            with atomic_open(path, "w") as fh:
                for r in keep:
                    fh.write(json.dumps(r) + "\n")

    def _prior_at(self, step: int):
        """The training prior at ``step`` (curriculum), at the model's input length and class limit."""
        p = self.cfg.prior_at(step)
        return dataclasses.replace(p, output_length=self.prior_config.output_length,
                                   max_classes=min(p.max_classes, self.prior_config.max_classes))

    # ------------------------------------------------------------------ one step
    def train_step(self) -> dict[str, float]:
        """One optimizer step over ``batch_size`` freshly generated episodes."""
        cfg = self.cfg
        self.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        tot_loss, tot_correct, tot_q, prior_t = 0.0, 0, 0, 0.0
        finite = True
        self.prior.config = self._prior_at(self.step)
        for n_eps in cfg.micro_batches:
            t0 = time.perf_counter()
            batch = self.prior.sample_batch(n_eps)
            prior_t += time.perf_counter() - t0
            t = batch.to_torch(self.device)
            ctx = (torch.autocast(self.device.type, dtype=self.amp_dtype) if self.use_amp
                   else contextlib.nullcontext())
            with ctx:
                logits = self.model(t["X"], t["y_context"], channel_mask=t["channel_mask"], return_all_classes=True)
            per_ep, correct = query_cross_entropy(logits, t["y_query"], t["n_classes"], cfg.mask_unused_classes)
            loss = per_ep.sum() / cfg.batch_size
            if not bool(torch.isfinite(loss)):
                finite = False
                break
            self.scaler.scale(loss).backward()
            tot_loss += float(per_ep.detach().sum())
            tot_correct += int(correct.sum())
            tot_q += int(t["y_query"].numel())
        grad_norm = float("nan")
        if finite:
            self.scaler.unscale_(self.optimizer)
            grad_norm = float(torch.nn.utils.clip_grad_norm_(self.params, cfg.grad_clip))
            finite = math.isfinite(grad_norm)
        if finite:
            self.scaler.step(self.optimizer)
            self.scaler.update()
            self.bad_steps = 0
        else:
            self.optimizer.zero_grad(set_to_none=True)
            if self.use_amp:
                self.scaler.update(self.scaler.get_scale() / 2)
            self.bad_steps += 1
            if self.bad_steps >= cfg.max_consecutive_bad_steps:
                raise TrainingAborted(f"{self.bad_steps} consecutive steps with a non-finite loss or gradient "
                                      f"at step {self.step}; lower the learning rate or check the inputs")
        with warnings.catch_warnings():  # a skipped step still advances the schedule (step counter)
            warnings.filterwarnings("ignore", message="Detected call of", category=UserWarning)
            self.scheduler.step()
        self.step += 1
        self.episodes_seen += cfg.batch_size
        return {"loss": tot_loss / cfg.batch_size if finite else float("nan"),
                "acc": tot_correct / max(tot_q, 1), "grad_norm": grad_norm, "prior_time": prior_t,
                "queries": tot_q, "correct": tot_correct, "finite": finite}

    # ------------------------------------------------------------------ validation / export
    def validate(self) -> dict[str, float]:
        res = evaluate(self.model, self.val_set, device=self.device, seed=self.cfg.val_seed,
                       amp_dtype=self.amp_dtype, mask_unused=self.cfg.mask_unused_classes)
        self.last_val = res
        return res

    def export_model(self, path: str | Path | None = None) -> Path:
        from chorustic.model import save_checkpoint

        path = Path(path) if path is not None else self.out / "model.safetensors"
        prov = {"training": self.training_summary()}
        return save_checkpoint(path, self.model, provenance=prov)

    def training_summary(self) -> dict[str, Any]:
        return {
            "run_dir": str(self.out),
            "step": self.step,
            "planned_steps": self.cfg.steps,
            "episodes_seen": self.episodes_seen,
            "wall_time_s": round(self.elapsed_s, 1),
            "episodes_per_step": self.cfg.batch_size,
            "train_config": self.cfg.name,
            "lr": self.cfg.lr,
            "schedule": self.cfg.schedule,
            "device": str(self.device),
            "cross_channel_rules": self.prior_config.cross_channel_rules,
            "validation": self.last_val,
            "validation_references": self.val_references,
            "init": self.init_info,
            "notes": self.notes,
        }

    def checkpoint(self) -> None:
        self.save_state()
        self.export_model()
        atomic_write_json(self.out / "summary.json", self.training_summary())
        try:
            plot_curves(self.out / "log.jsonl", self.out / "curve.png", title=self._curve_title(),
                        references=self.val_references)
        except Exception as exc:  # a figure must never stop training
            print(f"warning: could not draw the training curve: {exc}")

    def _curve_title(self) -> str:
        hours = self.elapsed_s / 3600
        return (f"{self.out.name}: step {self.step}/{self.cfg.steps}, {self.episodes_seen} episodes, "
                f"{hours:.2f} h on {self.device}")

    def _log(self, rec: dict) -> None:
        with open(self.out / "log.jsonl", "a") as fh:
            fh.write(json.dumps(rec) + "\n")

    # ------------------------------------------------------------------ loop
    def request_stop(self, reason: str) -> None:
        self._stop_reason = reason

    def train(self, steps: int | None = None, *, max_minutes: float | None = None,
              handle_signals: bool = False) -> dict[str, Any]:
        """Train until ``steps`` (default: the config's) or ``max_minutes`` of wall time in this call;
        checkpoints every ``checkpoint_every`` steps and at the end. Returns :meth:`training_summary`."""
        target = int(steps if steps is not None else self.cfg.steps)
        cfg = self.cfg
        deadline = time.monotonic() + 60 * max_minutes if max_minutes else None
        old_handlers = {}
        if handle_signals:
            for sig in (signal.SIGTERM, signal.SIGINT):
                old_handlers[sig] = signal.signal(sig, lambda s, f: self.request_stop(f"signal {s}"))
        bar = None
        if self.progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=target, initial=self.step, desc="pretrain", unit="step", dynamic_ncols=True)
        if self.step == 0 and not (self.out / "log.jsonl").exists():
            self._log({"kind": "val", "step": 0, "episodes_seen": 0, "elapsed_s": 0.0, **self.validate()})
        try:
            while self.step < target:
                t0 = time.perf_counter()
                res = self.train_step()
                dt = time.perf_counter() - t0
                self.elapsed_s += dt
                w = self._window
                w["loss"] += res["loss"] if res["finite"] else 0.0
                w["correct"] += res["correct"]
                w["queries"] += res["queries"]
                w["episodes"] += cfg.batch_size
                w["steps"] += 1 if res["finite"] else 0
                w["grad_norm"] += res["grad_norm"] if res["finite"] else 0.0
                w["time"] += dt
                w["prior_time"] += res["prior_time"]
                if self.step % cfg.log_every == 0:
                    n = max(w["steps"], 1)
                    rec = {"kind": "train", "step": self.step, "episodes_seen": self.episodes_seen,
                           "elapsed_s": round(self.elapsed_s, 2), "loss": w["loss"] / n,
                           "acc": w["correct"] / max(w["queries"], 1), "grad_norm": w["grad_norm"] / n,
                           "lr": self.scheduler.get_last_lr()[0],
                           "episodes_per_s": w["episodes"] / max(w["time"], 1e-9),
                           "prior_share": w["prior_time"] / max(w["time"], 1e-9)}
                    self._log(rec)
                    self._window = self._new_window()
                    if bar is not None:
                        bar.set_postfix(loss=f"{rec['loss']:.3f}", acc=f"{rec['acc']:.3f}",
                                        eps=f"{rec['episodes_per_s']:.2f}/s")
                if self.step % cfg.val_every == 0 or self.step == target:
                    v = self.validate()
                    self._log({"kind": "val", "step": self.step, "episodes_seen": self.episodes_seen,
                               "elapsed_s": round(self.elapsed_s, 2), **v})
                    if bar is not None:
                        bar.write(f"step {self.step}: validation loss {v['val_loss']:.4f}, accuracy {v['val_acc']:.4f}")
                if bar is not None:
                    bar.update(1)
                if deadline is not None and time.monotonic() > deadline:
                    self.request_stop(f"time limit of {max_minutes} min reached")
                if self.step % cfg.checkpoint_every == 0 or self.step == target or self._stop_reason:
                    self.checkpoint()
                if self._stop_reason:
                    if bar is not None:
                        bar.write(f"stopping at step {self.step}: {self._stop_reason} (resume with --resume)")
                    break
        finally:
            if bar is not None:
                bar.close()
            for sig, h in old_handlers.items():
                signal.signal(sig, h)
        return self.training_summary()
