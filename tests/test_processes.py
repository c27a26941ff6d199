"""Child processes end with their parent (chorustic.processes, the one home of PR_SET_PDEATHSIG): a child
started with die_with_parent_preexec dies when its parent is killed with kill -9, and a process whose parent
is already gone when it asks ends at once."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

import chorustic

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")

#: a parent that starts a sleeping child the way the evaluation supervisor starts its worker, prints the
#: child's pid and waits
_PARENT = """
import subprocess, sys
from chorustic.processes import die_with_parent_preexec
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                         preexec_fn=die_with_parent_preexec())
print(child.pid, flush=True)
child.wait()
"""


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_a_child_dies_with_its_parent_killed_with_sigkill():
    parent = subprocess.Popen([sys.executable, "-c", _PARENT], stdout=subprocess.PIPE, text=True)
    child = int(parent.stdout.readline())
    assert not _gone(child)
    parent.kill()  # kill -9: the parent cannot stop its child itself
    parent.wait(timeout=10)
    deadline = time.monotonic() + 5
    while not _gone(child):
        assert time.monotonic() < deadline, "the child outlived its parent"
        time.sleep(0.05)


def test_a_process_whose_parent_is_already_gone_ends_at_once():
    # parent_pid names a process that is not the parent: the parent "died before prctl", no signal will come
    code = ("import os; from chorustic.processes import die_with_parent; "
            "die_with_parent(os.getppid() + 1); print('alive')")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert proc.returncode == -signal.SIGKILL and "alive" not in proc.stdout


def test_only_chorustic_processes_sets_the_parent_death_signal():
    root = Path(chorustic.__file__).parent
    users = sorted(str(p.relative_to(root)) for p in root.rglob("*.py")
                   if "_PR_SET_PDEATHSIG" in p.read_text())
    assert users == ["processes.py"]
