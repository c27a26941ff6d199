"""Episodic pretraining of ChorusTIC (paper Sec. 3.3, App. C.3).

A run lives in one directory::

    run.json            model config, training config (with the prior config), initialization, creation info
    log.jsonl           one JSON record per logged step ("kind": "train") and per validation ("kind": "val")
    state/step_*.pt     resume states: model, optimizer, scheduler, AMP scaler, counters; the newest
                        ``keep_checkpoints`` are kept
    model.safetensors   the model in the model package's own format (chorustic.model.save_checkpoint),
                        rewritten at every checkpoint, with the training provenance
    summary.json        where the run stands (step, episodes seen, wall time, last validation)
    curve.png           loss / accuracy curves

The step:

* the episodes come from :mod:`chorustic.training.data` (prior worker processes, prefetched and pinned;
  every episode, RSSC draw and dropout mask a function of ``(seed, step, index)``);
* each micro-batch runs :meth:`chorustic.model.ChorusTIC.episode_logits` (static shapes, optional
  activation checkpointing) under autocast (bf16 with fp32 master weights on CUDA; fp16 + GradScaler
  where bf16 is missing); the loss of an episode is its mean query cross-entropy, normalised by the
  global batch, so gradient accumulation and data parallelism give the gradient of the paper's
  objective over all ``batch_size`` episodes;
* one host synchronisation per step (loss, accuracy, gradient norm, stop requests, all-reduced across
  processes), gradient clipping, fused AdamW.

With ``torchrun`` the model is wrapped in ``DistributedDataParallel`` (no gradient sync but on each
process's last micro-batch); rank 0 validates, logs and writes checkpoints. Resuming
(``Trainer.resume(dir)``) restores model, optimizer, scheduler and counters; the data stream and the
dropout masks are functions of the step, so the resumed run continues exactly as an uninterrupted
one (same machine, same thread count, same process layout).

Faults end the run with the state of its last complete step saved and one line naming the cause
(:class:`TrainingInterrupted`; ``chorustic pretrain`` exits 1 and ``--resume`` continues):

* a prior worker process dies (the out-of-memory killer, ``kill -9``): the step in progress is finished
  with its remaining micro-batches generated in the training process (the stream is a function of the
  step), then every process stops after it as for Ctrl-C and its state is saved. A dead worker is noticed
  only where data is awaited, never in the middle of an optimizer step or a save (torch's own SIGCHLD
  handler raises wherever the training process happens to be);
* with ``torchrun``, another process dies: the collective of the step fails, so the step is incomplete;
  the survivors name the rank that is gone (ranks on the same node) and rank 0 saves the state of the
  step before, which no optimizer update has touched.

A prior worker dies with the training process (Linux: ``PR_SET_PDEATHSIG``, even after ``kill -9``), and a
resume removes the temporary files that a killed process's unfinished writes left in the run directory.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as _dt
import json
import math
import signal
import threading
import time
import warnings
from pathlib import Path
from typing import Any

import torch
from torch import nn

from chorustic.io import atomic_open, atomic_write_json, remove_unfinished_writes
from chorustic.training.config import OPERATIONAL_FIELDS, TrainConfig
from chorustic.training.curves import plot_curves, read_log
from chorustic.training.data import (EpisodeStream, StreamLayout, auto_workers, dead_workers, describe_exit,
                                     dropout_seed, make_loader, settled_deaths)
from chorustic.training.distributed import DistContext, context_from_env
from chorustic.training.loss import query_cross_entropy
from chorustic.training.validation import build_validation_set, evaluate, reference_accuracies

__all__ = ["Trainer", "TrainingAborted", "TrainingInterrupted", "resolve_device", "PriorSchedule"]

STATE_FORMAT = "chorustic-train-state-v2"

#: what the trainer writes in a run directory and in its ``state/`` (regular expressions of file names):
#: the temporary files of these writes are the ones a resume may remove (chorustic.io.remove_unfinished_writes)
_RUN_FILES = r"run\.json|log\.jsonl|summary\.json|curve\.png|model\.safetensors"
_STATE_FILES = r"step_\d{7}\.pt"


class TrainingAborted(RuntimeError):
    """Training cannot continue (e.g. persistent non-finite losses); the message says why."""


class TrainingInterrupted(RuntimeError):
    """A fault outside the training math stopped the run (a prior worker or another process died); the
    message names it, the state of the last complete step is saved, and ``--resume`` continues."""


class _WorkerLost(Exception):
    """Raised by the SIGCHLD handler into a wait for data when a prior worker has ended."""


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


@dataclasses.dataclass(frozen=True)
class PriorSchedule:
    """The prior of each step (the curriculum), at the model's input length and class limit.
    A small picklable object: it travels to the data-loader workers."""

    train_config: TrainConfig
    output_length: int
    max_classes: int

    def __call__(self, step: int):
        p = self.train_config.prior_at(step)
        return dataclasses.replace(p, output_length=self.output_length,
                                   max_classes=min(p.max_classes, self.max_classes))


class _PretrainForward(nn.Module):
    """The module DDP wraps: one micro-batch -> decoder outputs (with ``compile``: through the model's
    compiled stages, :meth:`chorustic.model.ChorusTIC.compile_stages`)."""

    def __init__(self, model: nn.Module, cfg: TrainConfig, device_type: str) -> None:
        super().__init__()
        self.model = model
        self.kw = cfg.forward_kwargs(device_type)
        self.stages = model.compile_stages() if cfg.compile else None

    def forward(self, X: torch.Tensor, y_context: torch.Tensor, plan) -> torch.Tensor:
        if self.stages is None:
            return self.model.episode_logits(X, y_context, plan=plan, **self.kw)
        # Under DDP, dynamo would hand every stage graph to its DDP optimizer, which splits a graph at
        # DDP's gradient buckets so that compiling the *whole* DDP-wrapped module keeps communication
        # overlapped. The stages are regions inside the module (DDP's hooks run outside them), so there
        # is nothing to split, and on stage graphs with size outputs it fails (torch 2.13:
        # "'int' object has no attribute 'meta'"): off while the stages are traced.
        with torch._dynamo.config.patch(optimize_ddp=False):
            return self.model.episode_logits(X, y_context, plan=plan, stages=self.stages, **self.kw)


class Trainer:
    """Pretrains a :class:`chorustic.model.ChorusTIC` on episodes of the prior.

    ``model_config``: a :class:`chorustic.model.ChorusTICConfig`; ``train_config``: a :class:`TrainConfig`;
    ``out_dir``: the run directory (created; must not hold another run unless ``overwrite``).
    ``init``: list of initialization specs ``{"kind": "checkpoint", "spec": ..., "parts": [...]}`` or
    ``{"kind": "tabicl", "path": ...}`` applied after construction. A frozen signal encoder must be
    initialized from a checkpoint: freezing it at its random initialization is an error unless
    ``allow_random_frozen`` says it is on purpose.
    """

    def __init__(self, model_config, train_config: TrainConfig, out_dir: str | Path, *, device: Any = "auto",
                 init: list[dict] | None = None, progress: bool = True, overwrite: bool = False,
                 notes: dict | None = None, allow_random_frozen: bool = False, _resuming: bool = False) -> None:
        from chorustic.model import ChorusTIC

        self.cfg = train_config
        self.model_config = model_config
        self.out = Path(out_dir)
        self.dist: DistContext = context_from_env(resolve_device(device))
        self.device = self.dist.device
        self.progress = progress and self.dist.is_main
        self.init_specs = list(init or [])
        self.notes = dict(notes or {})
        self.layout = StreamLayout.of(self.cfg, self.dist.world_size)
        if not _resuming and self.dist.is_main:
            if (self.out / "run.json").exists() and not overwrite:
                raise FileExistsError(f"{self.out} already holds a training run; pass --resume to continue it "
                                      f"or choose another --out-dir")
            self.out.mkdir(parents=True, exist_ok=True)
            if overwrite:
                for p in list((self.out / "state").glob("step_*.pt")) + [self.out / "log.jsonl"]:
                    p.unlink(missing_ok=True)
                self._remove_unfinished_writes()
        self.dist.barrier()

        self.prior_schedule = PriorSchedule(self.cfg, model_config.seq_len, model_config.max_classes)
        self.prior_config = self.prior_schedule(self.cfg.steps)  # the full prior (after any curriculum)
        torch.manual_seed(self.cfg.seed)  # the same initial weights in every process
        self.model = ChorusTIC(model_config).to(self.device)
        self.init_info = [self._apply_init(spec) for spec in self.init_specs]
        if model_config.freeze_signal_encoder and not self._encoder_initialized():
            msg = ("the signal encoder is frozen but not initialized from a checkpoint: it would stay at its random "
                   "initialization. Train it (--train-signal-encoder, the paper's 'pretrained solely on synthetic "
                   "episodes'), or initialize it from a pretrained encoder (--init-from CKPT --init-parts encoder, the "
                   "released model's recipe), or pass --allow-random-frozen-encoder if this is on purpose.")
            if not allow_random_frozen:
                raise ValueError(msg)
            warnings.warn(msg, stacklevel=2)
            self.notes.setdefault("warnings", []).append(msg)
        self.model.train()
        params = [p for p in self.model.parameters() if p.requires_grad]
        if not params:
            raise ValueError("the model has no trainable parameters")
        self.params = params
        opt_kw: dict[str, Any] = {}
        if self.cfg.fused_optimizer and self.device.type in ("cuda", "cpu"):
            opt_kw["fused"] = True
        self.optimizer = torch.optim.AdamW(params, lr=self.cfg.lr, betas=tuple(self.cfg.betas),
                                           weight_decay=self.cfg.weight_decay, **opt_kw)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, _lr_lambda(self.cfg))
        self.amp_dtype = self._amp_dtype()
        self.use_amp = self.amp_dtype is not None
        self.scaler = torch.amp.GradScaler("cuda", enabled=self.use_amp and self.amp_dtype == torch.float16
                                           and self.device.type == "cuda")
        if self.device.type == "cuda":
            torch.backends.cuda.matmul.allow_tf32 = True
            torch.backends.cudnn.allow_tf32 = True
            # cuDNN's SDPA kernel failed in the backward pass of the first CUDA run (torch 2.11, H200, base
            # model: "mha_graph.execute(...).is_good()"); the flash and memory-efficient kernels remain
            torch.backends.cuda.enable_cudnn_sdp(False)

        forward = _PretrainForward(self.model, self.cfg, self.device.type)
        if self.dist.distributed:
            from torch.nn.parallel import DistributedDataParallel

            ids = [self.device.index] if self.device.type == "cuda" else None
            # the model's buffers are constants (positional tables, scalar scales, rotary caches that
            # appear lazily after a first forward): nothing to broadcast, and broadcasting would compare
            # buffer sets that differ between rank 0 (which validates) and the others
            forward = DistributedDataParallel(forward, device_ids=ids, broadcast_buffers=False)
        self._ddp = forward if self.dist.distributed else None
        self._forward = forward

        self.val_set = None
        self.val_references: dict[str, float] = {}
        if self.dist.is_main:
            self.val_set = build_validation_set(self.prior_config, self.cfg.val_episodes, self.cfg.val_batch_size,
                                                self.cfg.val_seed)
            self.val_references = reference_accuracies(self.val_set)
        self.num_workers = self.cfg.num_workers if self.cfg.num_workers is not None else auto_workers(self.device)
        self.step = 0
        self.episodes_seen = 0
        self.elapsed_s = 0.0
        self.bad_steps = 0
        self.last_val: dict[str, float] = {}
        self._window = self._new_window()
        self._stop_reason: str | None = None
        self.fault: str | None = None  # why a fault stopped the run (TrainingInterrupted)
        self._loader = None
        self._batches = None
        self._stream: EpisodeStream | None = None
        self._awaiting_data = False
        if not _resuming and self.dist.is_main:
            atomic_write_json(self.out / "run.json", self._run_info())

    # ------------------------------------------------------------------ construction helpers
    def _amp_dtype(self) -> torch.dtype | None:
        if self.device.type == "cuda" and self.cfg.amp:
            dt = getattr(torch, self.cfg.amp_dtype)
            if dt == torch.bfloat16 and not torch.cuda.is_bf16_supported():
                dt = torch.float16
            return dt
        if self.device.type == "cpu" and self.cfg.cpu_amp:
            return torch.bfloat16
        return None

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
            "format": "chorustic-pretraining-run-v2",
            "created_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "model_config": self.model_config.to_dict(),
            "train_config": self.cfg.to_dict(),
            "init": self.init_specs,
            "init_info": self.init_info,
            "device": str(self.device),
            "world_size": self.dist.world_size,
            "amp_dtype": str(self.amp_dtype).replace("torch.", "") if self.amp_dtype else None,
            "torch_threads": torch.get_num_threads(),
            "data_workers": self.num_workers,
            "parameters": self.model.parameter_counts(),
            "validation_references": self.val_references,
            "notes": self.notes,
            **_git_info(),
        }

    @staticmethod
    def _new_window() -> dict[str, float]:
        return {"loss": 0.0, "correct": 0.0, "queries": 0.0, "episodes": 0.0, "steps": 0.0, "grad_norm": 0.0,
                "time": 0.0, "data_wait": 0.0, "prior_time": 0.0}

    # ------------------------------------------------------------------ resume
    @classmethod
    def resume(cls, out_dir: str | Path, *, device: Any = "auto", progress: bool = True,
               overrides: dict | None = None) -> "Trainer":
        """Continue the run in ``out_dir`` from its newest state. ``overrides`` may change the operational
        settings (``OPERATIONAL_FIELDS``: steps, cadences, micro-batch size, checkpointing, workers, ...)."""
        from chorustic.model import ChorusTICConfig

        out = Path(out_dir)
        info_path = out / "run.json"
        if not info_path.exists():
            raise FileNotFoundError(f"{out} holds no training run (no run.json); start one without --resume")
        info = json.loads(info_path.read_text())
        model_config = ChorusTICConfig.from_dict(info["model_config"])
        train_config = TrainConfig.from_dict(info["train_config"])
        overrides = {k: v for k, v in (overrides or {}).items() if v is not None}
        bad = sorted(set(overrides) - OPERATIONAL_FIELDS)
        if bad:
            raise ValueError(f"cannot change {bad} when resuming (allowed: {sorted(OPERATIONAL_FIELDS)})")
        if overrides:
            train_config = dataclasses.replace(train_config, **overrides)
        # initialization specs are not re-applied: the state holds the weights
        trainer = cls(model_config, train_config, out, device=device, init=None, progress=progress,
                      allow_random_frozen=True, _resuming=True)
        trainer.init_specs, trainer.init_info = info.get("init", []), info.get("init_info", [])
        trainer.notes = info.get("notes", {})
        if trainer.dist.is_main:
            trainer._remove_unfinished_writes()
        state_path = trainer.latest_state()
        if state_path is None:
            raise FileNotFoundError(f"{out} has no saved state (state/step_*.pt) to resume from")
        trainer.load_state(state_path)
        if overrides and trainer.dist.is_main:
            info["train_config"] = train_config.to_dict()
            info.setdefault("resume_overrides", []).append({"at_step": trainer.step, **overrides})
            atomic_write_json(info_path, info)
        return trainer

    def _remove_unfinished_writes(self) -> list[Path]:
        """Remove the temporary files of writes that a killed training process never finished (0-byte
        ``state/.step_*.pt.*.tmp`` after ``kill -9``): only the trainer's own, never another file."""
        return (remove_unfinished_writes(self.out, _RUN_FILES)
                + remove_unfinished_writes(self.out / "state", _STATE_FILES))

    def _state_path(self) -> Path:
        """Where the state of the current step is saved."""
        return self.out / "state" / f"step_{self.step:07d}.pt"

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
            "model_config": self.model_config.to_dict(),
            "train_config": self.cfg.to_dict(),
        }

    def save_state(self) -> Path:
        path = self._state_path()
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
            raise ValueError(f"{path} is not a training state of this trainer (format {st.get('format')!r}, expected "
                             f"{STATE_FORMAT!r}); states of older versions cannot be resumed: start a new run, or "
                             f"initialize one from its model.safetensors with --init-from")
        if st["model_config"] != self.model_config.to_dict():
            raise ValueError(f"{path}: saved with another model configuration than run.json")
        self.model.load_state_dict(st["model"], strict=True)
        self.optimizer.load_state_dict(st["optimizer"])
        self.scheduler.load_state_dict(st["scheduler"])
        self.scheduler.lr_lambdas = [_lr_lambda(self.cfg)]  # the (possibly extended) schedule of this config
        self.scaler.load_state_dict(st["scaler"])
        self.step = int(st["step"])
        self.episodes_seen = int(st["episodes_seen"])
        self.elapsed_s = float(st["elapsed_s"])
        self.bad_steps = int(st["bad_steps"])
        self.last_val = dict(st.get("last_val", {}))
        self._window = dict(st.get("window", self._new_window()))
        self._close_stream()
        if self.dist.is_main:
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

    # ------------------------------------------------------------------ data
    def _open_stream(self) -> None:
        self._stream = EpisodeStream(self.cfg, self.layout, prior_at=self.prior_schedule,
                                     num_groups=self.model_config.num_groups,
                                     group_size=self.model_config.group_size,
                                     rssc_sampling=self.model_config.rssc_sampling,
                                     dedupe=not self.model_config.signal_dropout_in_training, rank=self.dist.rank,
                                     start_step=self.step)
        self._loader = make_loader(self._stream, num_workers=self.num_workers,
                                   pin_memory=self.device.type == "cuda", prefetch_factor=self.cfg.prefetch_factor)
        self._batches = iter(self._loader)  # starts the workers (and torch's SIGCHLD handler, once per process)

    @contextlib.contextmanager
    def _worker_deaths_at_fetch(self):
        """While training: a prior worker's death surfaces only where data is awaited. torch's SIGCHLD handler
        raises "DataLoader worker ... exited unexpectedly" wherever this process is when a worker dies (in an
        optimizer step, in a save); this one interrupts a wait for data and lets anything else finish, the
        death being found at the next fetch (:meth:`_fetch`). Installed after the workers started (torch
        installs its handler then); only in the main thread, where a platform has SIGCHLD."""
        if (self._batches is None or self.num_workers == 0 or not hasattr(signal, "SIGCHLD")
                or threading.current_thread() is not threading.main_thread()):
            yield
            return
        previous = signal.signal(signal.SIGCHLD, self._on_child_exit)
        try:
            yield
        finally:
            self._close_stream()  # its workers' exits must not reach torch's handler
            signal.signal(signal.SIGCHLD, previous)

    def _on_child_exit(self, signum, frame) -> None:
        if self._awaiting_data and self._batches is not None and dead_workers(self._batches):
            raise _WorkerLost()

    def _close_stream(self) -> None:
        batches, self._batches, self._loader = self._batches, None, None
        shutdown = getattr(batches, "_shutdown_workers", None)  # now, not whenever the iterator is collected
        if shutdown is not None:
            shutdown()

    def _fetch(self, index: int):
        """Micro-batch ``index`` of the current step: from the workers, or, once a worker has died (then the
        loader is closed, the fault recorded and a stop requested), made in this process, so that the step
        is finished with exactly the data it would have had."""
        if self._batches is not None:
            try:
                try:
                    self._awaiting_data = True
                    if dead_workers(self._batches):  # a death noticed while no data was awaited
                        raise _WorkerLost()
                    batch = next(self._batches)
                finally:  # SIGCHLD's _WorkerLost may also come here, before the flag is down: the except takes it
                    self._awaiting_data = False
                return batch
            except (_WorkerLost, RuntimeError, OSError, EOFError):
                # torch raises RuntimeError for a worker it found dead; a worker killed while it hands over a
                # micro-batch breaks the hand-over of the batch's shared memory (the file descriptor is passed
                # on a connection to the worker: ConnectionResetError, EOFError), possibly a moment before the
                # kernel reports the worker's exit
                gone = settled_deaths(self._batches)
                if not gone:  # an error of the data itself (raised by a worker): not a lost worker
                    raise
            where = f"rank {self.dist.rank}: " if self.dist.distributed else ""
            deaths = "; ".join(f"prior worker process {pid} {describe_exit(code)}" for pid, code in gone.items())
            self.fault = f"{where}{deaths} during step {self.step + 1}"
            self._stop_reason = self._stop_reason or self.fault
            self._close_stream()  # the other workers too; the rest of the step is made here
        return self._stream.micro_batch(self.step, index)

    def close(self) -> None:
        """Stop the data workers (also done when the trainer is garbage-collected)."""
        self._close_stream()

    # ------------------------------------------------------------------ one step
    def train_step(self) -> dict[str, float]:
        """One optimizer step over the ``batch_size`` episodes of the current step (all processes)."""
        cfg, dev = self.cfg, self.device
        if self._batches is None:
            self._open_stream()
        self.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        stats = torch.zeros(5, dtype=torch.float64, device=dev)  # loss sum, correct, queries, episodes, stop
        wait, gen = 0.0, 0.0
        micro = self.layout.rank_micro_batches(self.dist.rank)
        n_micro = len(micro)
        scale = self.dist.world_size / cfg.batch_size
        autocast = (torch.autocast(dev.type, dtype=self.amp_dtype) if self.use_amp else contextlib.nullcontext())
        for k in range(n_micro):
            t0 = time.perf_counter()
            mb = self._fetch(micro[k])
            wait += time.perf_counter() - t0
            gen += mb.gen_seconds
            if mb.step != self.step:
                raise RuntimeError(f"data stream out of step: got step {mb.step}, training step {self.step}")
            mb = mb.to(dev, non_blocking=True)
            torch.manual_seed(dropout_seed(cfg.seed, self.step, mb.index))
            sync = self._ddp is None or k == n_micro - 1
            with (contextlib.nullcontext() if sync else self._ddp.no_sync()):
                with autocast:
                    logits = self._forward(mb.X, mb.y_context, mb.plan)
                per_ep, correct = query_cross_entropy(logits, mb.y_query, mb.n_classes, cfg.mask_unused_classes)
                loss = per_ep.sum() * scale
                self.scaler.scale(loss).backward()
            stats[0] += per_ep.detach().sum().double()
            stats[1] += correct.sum().double()
            stats[2] += mb.y_query.numel()
            stats[3] += mb.n_episodes
        if self._stop_reason:
            stats[4] += 1
        if self.scaler.is_enabled():
            self.scaler.unscale_(self.optimizer)
        grad_norm = torch.nn.utils.clip_grad_norm_(self.params, cfg.grad_clip)
        self.dist.all_reduce_sum(stats)
        vals = torch.cat([stats, grad_norm.detach().double().reshape(1)]).tolist()  # the step's one sync
        loss_sum, correct, queries, episodes, stop, norm = vals
        if stop and not self._stop_reason:
            self._stop_reason = "another process was asked to stop"
        finite = math.isfinite(loss_sum) and math.isfinite(norm)
        if finite:
            if self.scaler.is_enabled():
                self.scaler.step(self.optimizer)
                self.scaler.update()
            else:
                self.optimizer.step()
            self.bad_steps = 0
        else:
            self.optimizer.zero_grad(set_to_none=True)
            if self.scaler.is_enabled():
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
        return {"loss": loss_sum / max(episodes, 1) if finite else float("nan"),
                "acc": correct / max(queries, 1), "grad_norm": norm if finite else float("nan"),
                "data_wait": wait, "prior_time": gen, "queries": int(queries), "correct": int(correct),
                "finite": finite, "stop": bool(stop)}

    # ------------------------------------------------------------------ validation / export
    def validate(self) -> dict[str, float]:
        if self.val_set is None:
            return {}
        res = evaluate(self.model, self.val_set, device=self.device, seed=self.cfg.val_seed,
                       amp_dtype=self.amp_dtype, mask_unused=self.cfg.mask_unused_classes)
        self.last_val = res
        return res

    def export_model(self, path: str | Path | None = None) -> Path:
        from chorustic.model import save_checkpoint

        path = Path(path) if path is not None else self.out / "model.safetensors"
        prov = {"training": self.training_summary()}
        dtype = None if self.cfg.export_dtype == "float32" else getattr(torch, self.cfg.export_dtype)
        return save_checkpoint(path, self.model, provenance=prov, dtype=dtype)

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
            "world_size": self.dist.world_size,
            "cross_channel_rules": self.prior_config.cross_channel_rules,
            "validation": self.last_val,
            "validation_references": self.val_references,
            "init": self.init_info,
            "notes": self.notes,
        }

    def checkpoint(self) -> None:
        if not self.dist.is_main:
            return
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
        where = f"{self.dist.world_size} x {self.device.type}" if self.dist.distributed else str(self.device)
        return (f"{self.out.name}: step {self.step}/{self.cfg.steps}, {self.episodes_seen} episodes, "
                f"{hours:.2f} h on {where}")

    def _log(self, rec: dict) -> None:
        if self.dist.is_main:
            with open(self.out / "log.jsonl", "a") as fh:
                fh.write(json.dumps(rec) + "\n")

    # ------------------------------------------------------------------ loop
    def request_stop(self, reason: str) -> None:
        self._stop_reason = reason

    def train(self, steps: int | None = None, *, max_minutes: float | None = None,
              handle_signals: bool = False) -> dict[str, Any]:
        """Train until ``steps`` (default: the config's) or ``max_minutes`` of wall time in this call;
        checkpoints every ``checkpoint_every`` steps and at the end. Returns :meth:`training_summary`.
        Raises :class:`TrainingInterrupted` (the state of the last complete step saved) when a prior worker
        or another process of the job dies."""
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
        if self.step == 0 and self.dist.is_main and not (self.out / "log.jsonl").exists():
            self._log({"kind": "val", "step": 0, "episodes_seen": 0, "elapsed_s": 0.0, **self.validate()})
        watch = contextlib.ExitStack()
        try:
            if self.step < target and self._batches is None:
                self._open_stream()
            watch.enter_context(self._worker_deaths_at_fetch())
            while self.step < target:
                if deadline is not None and time.monotonic() > deadline and not self._stop_reason:
                    self.request_stop(f"time limit of {max_minutes} min reached")
                t0 = time.perf_counter()
                try:
                    res = self.train_step()
                except Exception as exc:
                    lost = self._lost_process(exc)
                    if lost is None:
                        raise
                    raise TrainingInterrupted(lost) from exc
                if self.device.type == "cuda":
                    torch.cuda.synchronize(self.device)
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
                w["data_wait"] += res["data_wait"]
                w["prior_time"] += res["prior_time"]
                if self.step % cfg.log_every == 0:
                    n = max(w["steps"], 1)
                    rec = {"kind": "train", "step": self.step, "episodes_seen": self.episodes_seen,
                           "elapsed_s": round(self.elapsed_s, 2), "loss": w["loss"] / n,
                           "acc": w["correct"] / max(w["queries"], 1), "grad_norm": w["grad_norm"] / n,
                           "lr": self.scheduler.get_last_lr()[0],
                           "episodes_per_s": w["episodes"] / max(w["time"], 1e-9),
                           "data_wait_share": w["data_wait"] / max(w["time"], 1e-9),
                           "prior_worker_s_per_step": w["prior_time"] / max(w["steps"], 1)}
                    if self.device.type == "cuda":
                        rec["peak_memory_gb"] = round(torch.cuda.max_memory_allocated(self.device) / 2**30, 2)
                    self._log(rec)
                    self._window = self._new_window()
                    if bar is not None:
                        bar.set_postfix(loss=f"{rec['loss']:.3f}", acc=f"{rec['acc']:.3f}",
                                        eps=f"{rec['episodes_per_s']:.2f}/s")
                if self.step % cfg.val_every == 0 or self.step == target:
                    v = self.validate()
                    if v:
                        self._log({"kind": "val", "step": self.step, "episodes_seen": self.episodes_seen,
                                   "elapsed_s": round(self.elapsed_s, 2), **v})
                        if bar is not None:
                            bar.write(f"step {self.step}: validation loss {v['val_loss']:.4f}, "
                                      f"accuracy {v['val_acc']:.4f}")
                if bar is not None:
                    bar.update(1)
                # every process stops after the same step: the request is all-reduced with the step's numbers
                stopping = res["stop"]
                if self.step % cfg.checkpoint_every == 0 or self.step == target or stopping:
                    self.checkpoint()
                if stopping:
                    self.dist.barrier()  # no process ends (and has torchrun stop the others) before the save
                    if bar is not None and not self.fault:
                        bar.write(f"stopping at step {self.step}: {self._stop_reason} (resume with --resume)")
                    break
        finally:
            watch.close()
            if bar is not None:
                bar.close()
            for sig, h in old_handlers.items():
                signal.signal(sig, h)
            self._close_stream()
        if self.fault:
            raise TrainingInterrupted(f"{self.fault}; the step was finished in the training process and its "
                                      f"state saved in {self._state_path()}: continue with --resume")
        return self.training_summary()

    def _lost_process(self, exc: BaseException) -> str | None:
        """After ``exc`` in a step of a distributed run: if another process of the job is gone (its collective
        failed), the message naming it, once rank 0 has saved the state of the last complete step (the failed
        step's optimizer update never ran: the collectives come before it); else None."""
        if not self.dist.distributed or isinstance(exc, (TrainingAborted, torch.cuda.OutOfMemoryError)):
            return None
        gone = self.dist.lost_ranks()
        if not gone:
            return None
        who = ", ".join(f"rank {r} of {self.dist.world_size} (pid {pid} on {host})" for r, (host, pid) in gone.items())
        what = f"{who} ended during step {self.step + 1} (its own output, or torchrun's report, says why)"
        if self.dist.is_main:
            if not self._state_path().exists():
                self.checkpoint()
            return (f"{what}; the state of step {self.step}, the last complete one, is in {self._state_path()}: "
                    f"continue with --resume")
        if 0 not in gone:
            return f"{what}; rank 0 saves the state of step {self.step}, the last complete one: continue with --resume"
        latest = self.latest_state()
        if latest is None:
            return f"{what}; no state was saved yet: start the run again (--overwrite)"
        return f"{what}; the newest saved state is {latest}: continue with --resume"
