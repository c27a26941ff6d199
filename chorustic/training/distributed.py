"""Data-parallel pretraining with ``torchrun`` (torch.distributed + DistributedDataParallel).

``torchrun --standalone --nproc-per-node N -m chorustic pretrain ...`` starts N processes with
``RANK``/``WORLD_SIZE``/``LOCAL_RANK`` in their environment; :func:`context_from_env` joins the
process group (NCCL on CUDA, gloo on CPU) and gives each process its device (``cuda:LOCAL_RANK``).
Without those variables the context is a single process. Multi-node runs are the same command with
``--nnodes``/``--rdzv-endpoint`` (torchrun's own options).
"""

from __future__ import annotations

import dataclasses
import os
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
    return DistContext(rank=rank, world_size=world, local_rank=local, device=device, initialized_here=here)


def launch_prefix(nproc: int) -> str:
    """The command that starts ``chorustic`` with ``nproc`` data-parallel processes on this node:
    ``chorustic`` itself for one, ``torchrun --standalone --nproc-per-node N -m chorustic`` otherwise."""
    if nproc <= 1:
        return "chorustic"
    return f"torchrun --standalone --nproc-per-node {int(nproc)} -m chorustic"
