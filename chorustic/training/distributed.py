"""Data-parallel pretraining with ``torchrun`` (torch.distributed + DistributedDataParallel).

``torchrun --standalone --nproc-per-node N -m chorustic pretrain ...`` starts N processes with
``RANK``/``WORLD_SIZE``/``LOCAL_RANK`` in their environment; :func:`context_from_env` joins the
process group (NCCL on CUDA, gloo on CPU) and gives each process its device (``cuda:LOCAL_RANK``).
Without those variables the context is a single process. Multi-node runs are the same command with
``--nnodes``/``--rdzv-endpoint`` (torchrun's own options).

When a process of the job dies, the collectives of the others fail; :meth:`DistContext.lost_ranks` then
names the ranks that are gone (each process's host and pid are exchanged when the group is joined; a
process on another node cannot be checked from here).
"""

from __future__ import annotations

import dataclasses
import os
import socket
import time
from datetime import timedelta

import torch
import torch.distributed as dist

__all__ = ["DistContext", "context_from_env", "launch_prefix"]


@dataclasses.dataclass
class DistContext:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    device: torch.device = dataclasses.field(default_factory=lambda: torch.device("cpu"))
    initialized_here: bool = False
    #: (host name, pid) of every rank, exchanged when the process group is joined
    peers: list[tuple[str, int]] = dataclasses.field(default_factory=list)

    @property
    def distributed(self) -> bool:
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def barrier(self) -> None:
        if self.distributed:
            if self.device.type == "cuda":
                dist.barrier(device_ids=[self.device.index or 0])
            else:
                dist.barrier()

    def all_reduce_sum(self, t: torch.Tensor) -> torch.Tensor:
        if self.distributed:
            dist.all_reduce(t, op=dist.ReduceOp.SUM)
        return t

    def lost_ranks(self, wait_s: float = 10.0) -> dict[int, tuple[str, int]]:
        """``{rank: (host, pid)}`` of the other ranks on this node whose process has ended (or is ending:
        a process that raised may close its connections a moment before it exits; waits up to ``wait_s``
        for one to be gone). Empty when all are running, or when the job's other processes are on other
        nodes."""
        import psutil

        host = socket.gethostname()
        local = {r: peer for r, peer in enumerate(self.peers) if r != self.rank and peer[0] == host}

        def gone(pid: int) -> bool:
            try:
                return psutil.Process(pid).status() in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD)
            except psutil.NoSuchProcess:
                return True

        deadline = time.monotonic() + wait_s
        while True:
            lost = {r: peer for r, peer in local.items() if gone(peer[1])}
            if lost or not local or time.monotonic() > deadline:
                return lost
            time.sleep(0.1)

    def shutdown(self) -> None:
        if self.initialized_here and dist.is_initialized():
            dist.destroy_process_group()
            self.initialized_here = False


def context_from_env(device: torch.device) -> DistContext:
    """The process's place in a ``torchrun`` job (or a single-process context)."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return DistContext(device=device)
    rank = int(os.environ["RANK"])
    local = int(os.environ.get("LOCAL_RANK", "0"))
    if device.type == "cuda":
        if torch.cuda.device_count() <= local:
            raise ValueError(f"LOCAL_RANK {local} but only {torch.cuda.device_count()} CUDA devices are visible")
        device = torch.device("cuda", local)
        torch.cuda.set_device(device)
        backend = "nccl"
    else:
        backend = "gloo"
    here = False
    if not dist.is_initialized():
        kw = {"device_id": device} if device.type == "cuda" else {}
        dist.init_process_group(backend=backend, timeout=timedelta(minutes=30), **kw)
        here = True
    peers: list = [None] * world
    dist.all_gather_object(peers, (socket.gethostname(), os.getpid()))
    return DistContext(rank=rank, world_size=world, local_rank=local, device=device, initialized_here=here,
                       peers=[tuple(p) for p in peers])


def launch_prefix(nproc: int) -> str:
    """The command that starts ``chorustic`` with ``nproc`` data-parallel processes on this node:
    ``chorustic`` itself for one, ``torchrun --standalone --nproc-per-node N -m chorustic`` otherwise."""
    if nproc <= 1:
        return "chorustic"
    return f"torchrun --standalone --nproc-per-node {int(nproc)} -m chorustic"
