"""Fault table, pretraining side: processes that die under a training run, through the real CLI
(``python -m chorustic pretrain`` and ``torchrun`` with gloo on CPU, the ``tiny`` configs).

Each fault ends with the state of the last complete step on disk, one line from chorustic naming the
cause and ``--resume``, and a resume that continues exactly where an uninterrupted run would be. The
saved states are compared with a reference trained in this process from the run's own ``run.json``
(the data stream does not depend on the number of prior workers). docs/troubleshooting.md ("Pretraining")
lists the same faults.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest
import torch

from chorustic.io import atomic_open
from chorustic.model import ChorusTICConfig
from chorustic.prior import PriorConfig
from chorustic.training import Trainer, TrainConfig, TrainingInterrupted

pytestmark = [pytest.mark.usefixtures("torch_single_thread"),  # tests/conftest.py
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="kills processes the Linux way")]

ENV = {**os.environ, "OMP_NUM_THREADS": "1"}
#: log every step, never checkpoint or validate on the way: the only states are the ones a fault saves
RUN = ["--model-config", "tiny", "--train-config", "tiny", "--device", "cpu", "--threads", "1", "--no-progress",
       "--steps", "100000", "--log-every", "1", "--checkpoint-every", "100000", "--val-every", "100000"]


def _pretrain(out: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "chorustic", "pretrain", *RUN, "--out-dir", str(out), *args]


def _start(cmd: list[str]) -> subprocess.Popen:
    return subprocess.Popen(cmd, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def _train_records(out: Path) -> list[dict]:
    path = out / "log.jsonl"
    recs = [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []
    return [r for r in recs if r["kind"] == "train"]


def _wait_for_step(proc: subprocess.Popen, out: Path, step: int, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while not any(r["step"] >= step for r in _train_records(out)):
        if proc.poll() is not None:
            err = proc.communicate()[1]
            pytest.fail(f"training ended (status {proc.returncode}) before step {step}: {err[-3000:]}")
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"no step {step} within {timeout} s")
        time.sleep(0.05)


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD)
    except psutil.NoSuchProcess:
        return True


def _reference(out: Path, steps: int) -> tuple[list[dict], list[float]]:
    """The run of ``out``'s run.json trained here, without workers: (its state after each of ``steps``
    steps, the loss of each step)."""
    info = json.loads((out / "run.json").read_text())
    tcfg = dataclasses.replace(TrainConfig.from_dict(info["train_config"]), num_workers=0)
    ref = Trainer(ChorusTICConfig.from_dict(info["model_config"]), tcfg, out.parent / f"{out.name}-reference",
                  progress=False)
    states, losses = [], []
    for _ in range(steps):
        losses.append(ref.train_step()["loss"])
        states.append({"model": {k: v.clone() for k, v in ref.model.state_dict().items()},
                       "optimizer": {k: {n: t.clone() for n, t in v.items()}
                                     for k, v in ref.optimizer.state_dict()["state"].items()},
                       "scheduler": ref.scheduler.last_epoch})
    ref.close()
    return states, losses


def _assert_state(path: Path, expected: dict, step: int, atol: float = 0.0) -> None:
    st = torch.load(path, map_location="cpu", weights_only=False)
    assert st["step"] == step and st["scheduler"]["last_epoch"] == expected["scheduler"] == step
    for k, v in expected["model"].items():
        assert torch.allclose(st["model"][k], v, rtol=0, atol=atol), k
    # the optimizer of a complete step: as many updates as steps, moments of exactly those steps
    assert st["optimizer"]["state"].keys() == expected["optimizer"].keys()
    for k, moments in expected["optimizer"].items():
        saved = st["optimizer"]["state"][k]
        assert int(saved["step"]) == step
        for name in ("exp_avg", "exp_avg_sq"):
            assert torch.allclose(saved[name], moments[name], rtol=0, atol=atol), (k, name)


#: files in the run directory before a resume: (path, removed by the resume?). The temporary files of
#: writes that a ``kill -9`` interrupted go; a user's files stay, whatever they look like.
LEFTOVERS = [
    ("state/.step_0000099.pt.{tmp}.tmp", True),  # torch.save of a state, interrupted
    (".model.safetensors.{tmp}.tmp", True),  # the model export, interrupted
    (".summary.json.{tmp}.tmp", True),
    ("state/notes.tmp", False),
    ("state/.step_0000099.pt.backup.tmp", False),  # not atomic_open's 8-character tag
    ("state/.step_12.pt.k2j4h1ab.tmp", False),  # not a name the trainer writes
    ("state/.step_0000099.pt.k2j4h1ab.tmp.keep", False),
    (".my-notes.txt.k2j4h1ab.tmp", False),  # the pattern, but a user's name
]

_INTERRUPTED_WRITE = """
import os, signal, sys
from chorustic.io import atomic_open
with atomic_open(sys.argv[1], "wb"), atomic_open(sys.argv[2], "wb"), atomic_open(sys.argv[3], "w") as fh:
    fh.write("half")
    os.kill(os.getpid(), signal.SIGKILL)
"""


def _plant_leftovers(out: Path) -> dict[str, bool]:
    """The files of LEFTOVERS: the trainer's from writes really interrupted by SIGKILL, a user's written here."""
    kill = subprocess.run([sys.executable, "-c", _INTERRUPTED_WRITE, str(out / "state" / "step_0000099.pt"),
                           str(out / "model.safetensors"), str(out / "summary.json")], env=ENV)
    assert kill.returncode == -signal.SIGKILL
    interrupted = sorted(str(p.relative_to(out)) for p in out.rglob("*.tmp"))
    made = {}
    for pattern, removed in LEFTOVERS:
        if "{tmp}" in pattern:
            regex = re.escape(pattern).replace(r"\{tmp\}", ".{8}")
            (name,) = [x for x in interrupted if re.fullmatch(regex, x)]
            made[name] = removed
        else:
            (out / pattern).write_text("a user's file")
            made[pattern] = removed
    return made


@pytest.mark.slow(reason="three pretraining processes: killed, killed again, resumed (~13 s)")
def test_prior_worker_killed_then_training_process_killed_then_resumed(tmp_path):
    """kill -9 of a prior worker: the step in progress is finished in the training process, its state is
    saved and equals the reference's (a complete step: no half-updated optimizer), one line names the
    worker and --resume, exit status 1. A resume removes what killed writes left (never a user's file) and
    continues exactly (the losses of the next steps equal the reference's). kill -9 of the training process:
    its prior workers die with it at once (torch's own check takes up to 5 s)."""
    out = tmp_path / "run"
    proc = _start(_pretrain(out, "--workers", "1"))
    _wait_for_step(proc, out, 2)
    (worker,) = psutil.Process(proc.pid).children()
    worker.kill()
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 1, err[-3000:]
    step = json.loads((out / "summary.json").read_text())["step"]
    assert step >= 3 and [r["step"] for r in _train_records(out)] == list(range(1, step + 1))
    state = out / "state" / f"step_{step:07d}.pt"
    assert re.fullmatch(rf"chorustic pretrain: stopped: prior worker process {worker.pid} was killed by SIGKILL "
                        rf"\(the kernel's out-of-memory killer, or kill -9\) during step {step}; the step was "
                        rf"finished in the training process and its state saved in {re.escape(str(state))}: "
                        rf"continue with --resume", err.strip()), err[-3000:]
    assert sorted(p.name for p in (out / "state").iterdir()) == [state.name]
    expected, losses = _reference(out, step + 2)
    _assert_state(state, expected[step - 1], step)

    leftovers = _plant_leftovers(out)
    proc = _start(_pretrain(out, "--resume", "--workers", "1"))
    _wait_for_step(proc, out, step + 2)
    (worker,) = psutil.Process(proc.pid).children()
    proc.kill()  # kill -9 of the training process
    killed = time.monotonic()
    while not _gone(worker.pid) and time.monotonic() - killed < 6:
        time.sleep(0.02)
    worker_lived = time.monotonic() - killed
    proc.communicate(timeout=60)
    assert worker_lived < 2.0, f"the prior worker outlived the training process by {worker_lived:.1f} s"
    assert {name: not (out / name).exists() for name in leftovers} == leftovers
    assert all((out / p).read_text() == "a user's file" for p, removed in LEFTOVERS if not removed)
    logged = {r["step"]: r["loss"] for r in _train_records(out)}
    assert [logged[s] for s in (step + 1, step + 2)] == losses[step : step + 2]  # exactly


def _micro_run(tmp_path: Path) -> tuple[ChorusTICConfig, TrainConfig, Trainer]:
    """A trainer with one prior worker that checkpoints every 2 steps, small enough for this process."""
    mcfg = dataclasses.replace(ChorusTICConfig.tiny(), seq_len=32, num_patches=4, num_groups=2, group_size=2,
                               slot_dim=4)
    prior = PriorConfig(min_rows=12, max_rows=16, min_length=32, max_length=64, max_channels=3, max_classes=2)
    tcfg = TrainConfig(name="micro", steps=6, batch_size=8, micro_batch_size=4, checkpoint_every=2, val_every=100,
                       val_episodes=4, val_batch_size=4, log_every=1, prior=prior, num_workers=1)
    return mcfg, tcfg, Trainer(mcfg, tcfg, tmp_path / "run", progress=False)


def _interrupted_at_step_3_as_the_reference(tmp_path: Path, mcfg, tcfg, tr: Trainer) -> None:
    """Training ends with the worker's death named during step 3; the states of steps 2 and 3 are a reference
    run's (the step was finished in this process with the data the worker would have made)."""
    with pytest.raises(TrainingInterrupted, match=r"prior worker process \d+ was killed by SIGKILL .* step 3"):
        tr.train()
    assert tr.step == 3
    ref = Trainer(mcfg, dataclasses.replace(tcfg, num_workers=0), tmp_path / "ref", progress=False)
    for step in (1, 2, 3):
        ref.train_step()
        if step > 1:
            expected = {"model": ref.model.state_dict(), "optimizer": ref.optimizer.state_dict()["state"],
                        "scheduler": ref.scheduler.last_epoch}
            _assert_state(tmp_path / "run" / "state" / f"step_{step:07d}.pt", expected, step)


def test_a_dead_prior_worker_never_interrupts_a_save_or_a_step(tmp_path):
    """A worker killed during a checkpoint: the save completes (torch's SIGCHLD handler would raise "DataLoader
    worker ... is killed by signal" inside it), the next step is finished without the worker and saved, and
    both states equal a reference run's."""
    mcfg, tcfg, tr = _micro_run(tmp_path)
    before = {c.pid for c in psutil.Process().children()}
    save = tr.checkpoint

    def checkpoint_with_a_worker_death() -> None:
        if tr.step == 2:
            (worker,) = [c for c in psutil.Process().children() if c.pid not in before]
            worker.kill()
            while not _gone(worker.pid):
                time.sleep(0.01)
            time.sleep(0.3)  # SIGCHLD arrives during the save
        save()

    tr.checkpoint = checkpoint_with_a_worker_death
    _interrupted_at_step_3_as_the_reference(tmp_path, mcfg, tcfg, tr)


class _HandOverReset:
    """A DataLoader iterator whose next hand-over fails as it does when its worker is killed in the middle of
    one: the connection that passes the batch's shared memory is reset (ConnectionResetError), and the
    worker's exit is reported a moment later."""

    def __init__(self, batches, worker: psutil.Process):
        self._batches, self._workers, self._worker = batches, batches._workers, worker

    def __next__(self):
        threading.Timer(0.2, self._kill).start()
        raise ConnectionResetError(104, "Connection reset by peer")

    def _shutdown_workers(self) -> None:
        self._batches._shutdown_workers()

    def _kill(self) -> None:
        with contextlib.suppress(psutil.NoSuchProcess):  # gone already where the fetch failed without it
            self._worker.kill()


def test_a_worker_killed_while_it_hands_over_a_micro_batch_is_a_lost_worker(tmp_path):
    """The hand-over's ConnectionResetError, raised before the worker's exit can be waited for (1 run in about
    20 of the CLI test above): the worker's death is named, and step 3 is finished in this process as the
    reference's."""
    mcfg, tcfg, tr = _micro_run(tmp_path)
    before = {c.pid for c in psutil.Process().children()}
    save = tr.checkpoint

    def checkpoint_then_a_reset_hand_over() -> None:
        save()
        if tr.step == 2:
            (worker,) = [c for c in psutil.Process().children() if c.pid not in before]
            tr._batches = _HandOverReset(tr._batches, worker)

    tr.checkpoint = checkpoint_then_a_reset_hand_over
    _interrupted_at_step_3_as_the_reference(tmp_path, mcfg, tcfg, tr)


@pytest.mark.slow
def test_torchrun_rank_killed_the_survivor_names_it_and_saves_the_last_complete_step(tmp_path):
    """kill -9 of rank 1 of 2 (gloo): rank 0's collective fails; it names rank 1 and --resume in one line
    (no traceback) and saves the state of the step before the failed one, which equals one process's
    (the test of torchrun against one process: the same parameters to 1e-4)."""
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
           *_pretrain(out, "--workers", "0")[1:]]
    proc = _start(cmd)
    _wait_for_step(proc, out, 2)
    ranks = {int(p.environ()["RANK"]): p for p in psutil.Process(proc.pid).children()}
    ranks[1].kill()
    _, err = proc.communicate(timeout=300)
    assert proc.returncode != 0
    assert "[rank0]: Traceback" not in err, err[-3000:]
    step = json.loads((out / "summary.json").read_text())["step"]
    assert step >= 2 and max(r["step"] for r in _train_records(out)) == step
    state = out / "state" / f"step_{step:07d}.pt"
    lines = [x for x in err.splitlines() if x.startswith("chorustic pretrain:")]
    assert len(lines) == 1 and re.fullmatch(
        rf"chorustic pretrain: stopped: rank 1 of 2 \(pid {ranks[1].pid} on \S+\) ended during step {step + 1} "
        rf"\(its own output, or torchrun's report, says why\); the state of step {step}, the last complete one, "
        rf"is in {re.escape(str(state))}: continue with --resume", lines[0]), err[-3000:]
    assert sorted(p.name for p in (out / "state").iterdir()) == [state.name]
    expected, _ = _reference(out, step)
    _assert_state(state, expected[-1], step, atol=1e-4)
