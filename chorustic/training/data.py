"""The pretraining data stream: episodes of the prior, generated in worker processes.

Every random quantity of a step is a function of ``(seed, step, index)`` only, never of the process
that draws it:

* episode ``j`` of step ``s`` (``0 <= j < batch_size``) is generated from its own numpy stream
  ``SeedSequence([seed, 1, s, j])``, and its RSSC assignment from ``SeedSequence([seed, 3, s, j])``;
* the episodes of a step come in *shape groups* of ``shape_group_size`` consecutive episodes that
  share ``(T, N_c, L)`` (so that a micro-batch is one dense tensor), group ``g`` drawing its shape from
  ``SeedSequence([seed, 2, s, g])``;
* micro-batch ``i`` of step ``s`` holds episodes ``i*mb .. (i+1)*mb - 1`` (never across a shape
  group), and its dropout masks come from the torch seed :func:`dropout_seed` ``(seed, s, i)``.

Hence the same seed gives the same episodes, assignments and dropout masks whatever the number of
data-loader workers, of distributed ranks (rank ``r`` of ``W`` takes micro-batches ``i = r, r + W,
...``) or of resumptions: a resumed run regenerates exactly the stream it would have seen, without
saving any generator state.

:class:`EpisodeStream` is a ``torch.utils.data.IterableDataset``; :func:`make_loader` wraps it in a
``DataLoader`` with workers (each takes every ``num_workers``-th micro-batch, and the loader returns
them in order), prefetching and pinned memory.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any, Iterator

import numpy as np
import torch
from torch.utils.data import DataLoader, IterableDataset, get_worker_info

from chorustic.prior import EpisodePrior, PriorConfig, collate
from chorustic.processes import die_with_parent
from chorustic.training.config import TrainConfig

__all__ = ["MicroBatch", "EpisodeStream", "StreamLayout", "auto_workers", "dead_workers", "describe_exit",
           "dropout_seed", "generate_micro_batch", "make_loader", "settled_deaths", "usable_cpus",
           "worker_start_method"]

_EPISODE, _SHAPE, _RSSC, _DROPOUT = 1, 2, 3, 4


def _seed(*key: int) -> int:
    return int(np.random.SeedSequence([int(k) for k in key]).generate_state(1, dtype=np.uint64)[0] >> 1)


def dropout_seed(seed: int, step: int, micro: int) -> int:
    """The torch seed of the dropout masks of micro-batch ``micro`` of step ``step``."""
    return _seed(seed, _DROPOUT, step, micro)


@dataclasses.dataclass(frozen=True)
class StreamLayout:
    """How the ``batch_size`` episodes of a step are split into shape groups, micro-batches and ranks."""

    batch_size: int
    shape_group_size: int
    micro_batch_size: int
    world_size: int = 1

    def __post_init__(self) -> None:
        problems = []
        if self.batch_size % self.shape_group_size:
            problems.append(f"batch_size {self.batch_size} is not a multiple of shape_group_size {self.shape_group_size}")
        if self.shape_group_size % self.micro_batch_size:
            problems.append(f"micro_batch_size {self.micro_batch_size} does not divide shape_group_size "
                            f"{self.shape_group_size} (a micro-batch must not mix episode shapes)")
        elif self.micro_batches_per_step % self.world_size:
            problems.append(f"{self.micro_batches_per_step} micro-batches per step cannot be shared evenly by "
                            f"{self.world_size} ranks; choose a micro_batch_size so that batch_size / "
                            f"micro_batch_size is a multiple of the number of processes")
        if problems:
            raise ValueError("invalid batch layout: " + "; ".join(problems))

    @classmethod
    def of(cls, cfg: TrainConfig, world_size: int = 1) -> "StreamLayout":
        return cls(cfg.batch_size, cfg.group_size, cfg.micro_batch_size or cfg.group_size, world_size)

    @property
    def micro_batches_per_step(self) -> int:
        return self.batch_size // self.micro_batch_size

    def rank_micro_batches(self, rank: int) -> list[int]:
        return list(range(rank, self.micro_batches_per_step, self.world_size))

    @property
    def accumulation_steps(self) -> int:
        """Micro-batches (forward/backward passes) per optimizer step and rank."""
        return self.micro_batches_per_step // self.world_size


@dataclasses.dataclass
class MicroBatch:
    """One micro-batch: ``X (B, T, C, L_0)``, labels, channel mask, one RSSC draw per episode."""

    step: int
    index: int
    X: torch.Tensor
    y_context: torch.Tensor
    y_query: torch.Tensor
    n_classes: torch.Tensor
    channel_mask: torch.Tensor
    group_idx: torch.Tensor
    plan: Any  # chorustic.model.signal_encoder.SlotPlan of group_idx
    omegas: list  # the episodes' configurations (chorustic.prior.Omega)
    gen_seconds: float = 0.0

    @property
    def n_episodes(self) -> int:
        return int(self.X.shape[0])

    def pin_memory(self) -> "MicroBatch":
        for name in ("X", "y_context", "y_query", "n_classes", "channel_mask", "group_idx"):
            setattr(self, name, getattr(self, name).pin_memory())
        self.plan = self.plan.pin_memory()
        return self

    def to(self, device: torch.device, non_blocking: bool = False) -> "MicroBatch":
        kw = {"non_blocking": non_blocking}
        return dataclasses.replace(
            self, X=self.X.to(device, **kw), y_context=self.y_context.to(device, **kw),
            y_query=self.y_query.to(device, **kw), n_classes=self.n_classes.to(device, **kw),
            channel_mask=self.channel_mask.to(device, **kw), group_idx=self.group_idx.to(device, **kw),
            plan=self.plan.to(device, **kw))


def generate_micro_batch(prior: PriorConfig, seed: int, step: int, micro: int, layout: StreamLayout, *,
                         num_groups: int, group_size: int, rssc_sampling: str = "coverage",
                         dedupe: bool = True) -> MicroBatch:
    """Micro-batch ``micro`` of step ``step`` (a pure function of its arguments), with the slot plan of
    its RSSC draws (``dedupe``: the de-duplicating schedule, exact unless the encoder trains with dropout)."""
    from chorustic.model.rssc import sample_rssc_assignment
    from chorustic.model.signal_encoder import plan_slots

    t0 = time.perf_counter()
    mb = layout.micro_batch_size
    first = micro * mb
    group = first // layout.shape_group_size
    shaper = EpisodePrior(prior, seed=np.random.default_rng([seed, _SHAPE, step, group]))
    T, n_ctx, L = shaper.sample_shape()
    episodes = []
    for j in range(first, first + mb):
        gen = EpisodePrior(prior, seed=np.random.default_rng([seed, _EPISODE, step, j]))
        episodes.append(gen.generate(gen.sample_omega(T, n_ctx, L)))
    batch = collate(episodes, prior.output_length)
    mask = torch.from_numpy(batch.channel_mask)
    draws = []
    for b, j in enumerate(range(first, first + mb)):
        g = torch.Generator().manual_seed(_seed(seed, _RSSC, step, j))
        draws.append(sample_rssc_assignment(mask[b : b + 1], num_groups=num_groups, group_size=group_size,
                                            mode=rssc_sampling, generator=g)[:, 0])
    group_idx = torch.cat(draws)
    return MicroBatch(
        step=step,
        index=micro,
        X=torch.from_numpy(batch.X),
        y_context=torch.from_numpy(np.ascontiguousarray(batch.y_context)),
        y_query=torch.from_numpy(np.ascontiguousarray(batch.y_query)),
        n_classes=torch.from_numpy(batch.n_classes),
        channel_mask=mask,
        group_idx=group_idx,
        plan=plan_slots(group_idx[:, None], dedupe),
        omegas=list(batch.omegas),
        gen_seconds=time.perf_counter() - t0,
    )


class EpisodeStream(IterableDataset):
    """The micro-batches of rank ``rank`` for steps ``start_step .. stop_step - 1``, in order.

    ``prior_at(step)`` gives the prior of a step (a curriculum, or a constant prior); the model's RSSC
    layout (``num_groups``, ``group_size``, ``rssc_sampling``) is needed to draw the assignments.
    With ``num_workers`` data-loader workers, worker ``w`` generates every ``num_workers``-th item.
    """

    def __init__(self, train_config: TrainConfig, layout: StreamLayout, *, prior_at, num_groups: int,
                 group_size: int, rssc_sampling: str = "coverage", dedupe: bool = True, rank: int = 0,
                 start_step: int = 0, stop_step: int | None = None) -> None:
        super().__init__()
        self.cfg = train_config
        self.layout = layout
        self.prior_at = prior_at
        self.rssc = dict(num_groups=num_groups, group_size=group_size, rssc_sampling=rssc_sampling, dedupe=dedupe)
        self.rank = rank
        self.start_step = int(start_step)
        self.stop_step = stop_step

    def items(self) -> Iterator[tuple[int, int]]:
        micro = self.layout.rank_micro_batches(self.rank)
        step = self.start_step
        while self.stop_step is None or step < self.stop_step:
            for i in micro:
                yield step, i
            step += 1

    def micro_batch(self, step: int, index: int) -> MicroBatch:
        """Micro-batch ``index`` of step ``step``, generated here (what a worker would have made)."""
        return generate_micro_batch(self.prior_at(step), self.cfg.seed, step, index, self.layout, **self.rssc)

    def __iter__(self) -> Iterator[MicroBatch]:
        info = get_worker_info()
        n, w = (1, 0) if info is None else (info.num_workers, info.id)
        if info is not None:
            torch.set_num_threads(1)
        for k, (step, i) in enumerate(self.items()):
            if k % n == w:
                yield self.micro_batch(step, i)


def _identity(x):
    return x


def _init_worker(_worker_id: int, parent_pid: int) -> None:
    """A prior worker ends with the training process (:func:`~chorustic.processes.die_with_parent`), and
    leaves SIGINT/SIGTERM to it: Ctrl-C in a terminal, ``kill`` of the process group, or SLURM's SIGTERM at a
    job's time limit reach every process, and a worker that died of it would make the DataLoader raise in the
    middle of a step. The training process finishes its step, saves its state and shuts the workers down
    itself."""
    import signal

    die_with_parent(parent_pid)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)


def make_loader(stream: EpisodeStream, *, num_workers: int, pin_memory: bool, prefetch_factor: int = 4) -> DataLoader:
    """A DataLoader over ``stream``: ``num_workers`` processes (0 = in this process), each keeping
    ``prefetch_factor`` micro-batches ready, pinned for asynchronous host-to-device copies."""
    import functools
    import os

    kw: dict[str, Any] = {}
    if num_workers > 0:
        kw.update(prefetch_factor=prefetch_factor, persistent_workers=False,
                  worker_init_fn=functools.partial(_init_worker, parent_pid=os.getpid()),
                  multiprocessing_context=worker_start_method())
    return DataLoader(stream, batch_size=None, num_workers=num_workers, pin_memory=pin_memory,
                      collate_fn=_identity, **kw)


def dead_workers(batches) -> dict[int, int]:
    """``{pid: exit code}`` of the worker processes of a DataLoader iterator that have ended (a negative
    code: the signal that killed it); empty for a loader without workers."""
    gone = {}
    for w in getattr(batches, "_workers", None) or []:  # torch's _MultiProcessingDataLoaderIter
        code = w.exitcode  # polls (waitpid WNOHANG), as the DataLoader's own checks do
        if code is not None:
            gone[w.pid] = code
    return gone


def settled_deaths(batches, wait_s: float = 2.0) -> dict[int, int]:
    """:func:`dead_workers` after an error that a worker's death can cause, waiting up to ``wait_s`` for the
    exit to be reported: a killed process's connections are reset as it exits, a moment before it can be
    waited for. Empty if no worker died within ``wait_s`` (the error was not a death)."""
    import time

    deadline = time.monotonic() + wait_s
    while not (gone := dead_workers(batches)) and time.monotonic() < deadline:
        time.sleep(0.01)
    return gone


def describe_exit(code: int) -> str:
    """``killed by SIGKILL (...)`` / ``exited with status 3``: how a process ended, from its exit code."""
    import signal

    if code >= 0:
        return f"exited with status {code}"
    try:
        name = signal.Signals(-code).name
    except ValueError:
        name = f"signal {-code}"
    hint = " (the kernel's out-of-memory killer, or kill -9)" if -code == getattr(signal, "SIGKILL", 9) else ""
    return f"was killed by {name}{hint}"


def worker_start_method() -> str:
    """How worker processes start: forked on Linux (no re-import), spawned elsewhere."""
    import multiprocessing as mp
    import sys

    return "fork" if sys.platform.startswith("linux") and "fork" in mp.get_all_start_methods() else "spawn"


def usable_cpus() -> int:
    """The CPU cores this process may run on (its affinity mask where the platform has one)."""
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def auto_workers(device: torch.device, threads: int | None = None) -> int:
    """Default number of prior workers of one training process.

    On CUDA, the CPU cores of this process's share of the node (``LOCAL_WORLD_SIZE`` processes under
    torchrun) minus one for the process itself, at most 32: one worker makes 60-90 micro-batch episodes
    of the paper prior per second (RSSC draws and slot plans included; measured on the development
    machine), and the ``base`` model consumes 240 per second on one H100 at 20 % MFU
    (``tools/gpu/plans/base_h100_80gb_mfu20.json``), so a cap of 8 workers could leave the GPU waiting. On CPU one worker when at least 2 cores
    are available (the training math uses the rest)."""
    import os

    cpus = usable_cpus()
    if device.type == "cuda":
        per_process = cpus // max(1, int(os.environ.get("LOCAL_WORLD_SIZE", "1")))
        return max(1, min(32, per_process - 1))
    return 1 if cpus >= 2 else 0
