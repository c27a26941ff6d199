"""Out-of-memory handling: halve the batch sizes and retry the same computation.

Batch sizes only bound memory (every schedule computes the same function at any batch size), so on
an out-of-memory error the computation is retried with every batch size halved (down to its
minimum); when none can shrink any further the error is re-raised. The sizes that finally worked are
reported so the harness can record them next to the results (paper App. C.3).
"""

from __future__ import annotations

import dataclasses
import gc
from collections.abc import Callable
from typing import TypeVar

import torch

from chorustic.model.signal_encoder import GROUP_CHUNK

__all__ = ["BatchSizes", "is_oom_error", "run_with_oom_retry"]

T = TypeVar("T")


@dataclasses.dataclass
class BatchSizes:
    signal_rows: int = 128
    """Episode rows per signal-level chunk."""
    task_rows: int = 512
    """Rows per column/row-stage chunk and queries per ICL chunk."""
    icl_tables: int = 8
    """Label-shift tables per ICL call."""
    group_chunk: int = GROUP_CHUNK
    """Group instances per dual-axis/readout call."""

    MINIMUM = 1

    def halved(self) -> BatchSizes | None:
        new = BatchSizes(*(max(self.MINIMUM, v // 2) for v in dataclasses.astuple(self)))
        return None if new == self else new

    def as_dict(self) -> dict[str, int]:
        return dataclasses.asdict(self)


def is_oom_error(exc: BaseException) -> bool:
    if isinstance(exc, torch.cuda.OutOfMemoryError):
        return True
    if isinstance(exc, (RuntimeError, MemoryError)):
        msg = str(exc).lower()
        return isinstance(exc, MemoryError) or any(
            s in msg
            for s in (
                "out of memory",
                "can't allocate memory",
                "cublas_status_alloc_failed",
                "failed to allocate",
            )
        )
    return False


def _free_memory() -> None:
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def run_with_oom_retry(
    fn: Callable[[BatchSizes], T],
    sizes: BatchSizes,
    *,
    enabled: bool = True,
    on_retry: Callable[[BatchSizes, BaseException], None] | None = None,
) -> tuple[T, BatchSizes, int]:
    """``fn(sizes)``, retried with halved sizes on out-of-memory. Returns ``(result, sizes used, retries)``."""
    retries = 0
    while True:
        try:
            return fn(sizes), sizes, retries
        except Exception as exc:
            if not enabled or not is_oom_error(exc):
                raise
            smaller = sizes.halved()
            _free_memory()
            if smaller is None:
                raise RuntimeError(
                    f"out of memory even with the smallest batch sizes {sizes.as_dict()}"
                ) from exc
            if on_retry is not None:
                on_retry(smaller, exc)
            sizes, retries = smaller, retries + 1
