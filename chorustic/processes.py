"""Child processes that end with their parent: one home for "this process dies when its parent dies".

Used by the evaluation supervisor for its method worker (:mod:`chorustic.evaluation.supervisor`, through
:func:`die_with_parent_preexec`) and by pretraining for its prior workers (:mod:`chorustic.training.data`,
from the DataLoader's ``worker_init_fn``): a parent ended with ``kill -9`` cannot stop its children itself,
and a killed run must leave no orphan computing on.
"""

from __future__ import annotations

import ctypes
import functools
import os
import signal
import sys
from typing import Callable

__all__ = ["die_with_parent", "die_with_parent_preexec"]

_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


@functools.cache
def _prctl() -> Callable[..., int] | None:
    """The C library's ``prctl``, looked up once (None where the C library has none)."""
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


def die_with_parent(parent_pid: int) -> None:
    """Linux: this process gets SIGKILL the moment its parent ends (``prctl(PR_SET_PDEATHSIG)``), even when
    the parent is killed with ``kill -9`` and cannot stop it; if the parent ``parent_pid`` is already gone,
    it ends now. Elsewhere a no-op (DataLoader workers then notice a dead parent within ~5 s themselves)."""
    if not sys.platform.startswith("linux"):
        return
    prctl = _prctl()
    if prctl is None:  # no prctl in this C library
        return
    prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent_pid:  # the parent died before prctl: no signal will come
        os.kill(os.getpid(), signal.SIGKILL)


def die_with_parent_preexec() -> Callable[[], None] | None:
    """The ``preexec_fn`` of :class:`subprocess.Popen` that makes the child die with this process (the
    setting survives the ``exec``); None where there is none to set (not Linux)."""
    if not sys.platform.startswith("linux"):
        return None
    _prctl()  # looked up here, so the child between fork and exec only calls it
    return functools.partial(die_with_parent, os.getpid())
