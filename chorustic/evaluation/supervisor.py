"""Run an evaluation job in a worker process, with memory and time limits.

The supervisor turns the ways a job can die into recorded outcomes, so one failing method or dataset
never blocks anything downstream (the aggregate, the report):

* the worker exceeds the job's memory limit (resident memory of its process tree, polled) or time
  limit (:class:`chorustic.resources.WorkerLimits`: a local run has one only where the user set it; under
  a cluster scheduler the worker stops just before the scheduler would end the job) -> the worker is
  killed and the context it was running is recorded as ``failed`` with the reason, which names the
  limit as it was set and the setting to raise ("exceeded the job's memory limit of 16000 MB ...; raise
  methods.<run>.resources.mem_mb");
* the worker dies (killed by the operating system's OOM killer, a segfault in native code) -> the
  same, with the signal or exit code as the reason;
* then a new worker continues with the remaining contexts (a full context that does not fit in
  memory does not stop the 5-shot contexts).

Progress is taken from the job's progress file, which the worker rewrites atomically after every
context. Completed prediction files are kept; the context that killed the worker leaves none.

A job stopped from outside (Ctrl-C, SIGTERM from Snakemake or a cluster's scheduler, its parent gone)
records no outcome: it is not finished. Its progress file, prediction files and the partial predictions
of the context it was running (:mod:`chorustic.evaluation.checkpoints`) stay, and its next start continues
from them (:func:`resumable_state`) when they were made with the same method fingerprint and context
file (the worker checks the data and each kept file too); otherwise it starts over. A job whose manifest
recorded failed runs (``<dataset>.failed.json``) is continued the same way: its next start keeps the
finished runs and tries the failed contexts again from their partial predictions, so a job stopped at a
time limit gets further on each retry, even within one long context.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from chorustic.evaluation.checkpoints import MEMO_KINDS, memo_path, partial_files
from chorustic.evaluation.job import (
    MANIFEST_FORMAT,
    JobFailed,
    JobSpec,
    clear_job_outputs,
    failure_record_path,
    finished_manifest,
    job_contexts,
    manifest_path,
    no_contexts_error,
    progress_path,
    run_job,
    run_record,
    write_finished,
)
from chorustic.io import atomic_write_json
from chorustic.processes import die_with_parent_preexec
from chorustic.resources import WorkerLimits

__all__ = ["run_evaluation", "run_supervised", "resumable_state", "thread_env", "JobInterrupted"]

_POLL_S = 0.5


class JobInterrupted(RuntimeError):
    """The job was stopped from outside (Ctrl-C, SIGTERM, its parent died): no outcome is recorded; the runs
    it finished stay in its progress file for the next start."""


def resumable_state(spec: JobSpec, record: Path) -> dict[str, Any] | None:
    """An earlier attempt's record ``record`` (the job's progress file or failure record) with only its
    finished runs, which the job's next start can keep; None when it holds none, or was made with another
    method fingerprint (parameters, code) or another context file, or is not a worker's record (the worker
    compares the data's checksums)."""
    from chorustic.evaluation.integrity import fingerprint_text
    from chorustic.io import sha256_file

    try:
        state = json.loads(record.read_text(encoding="utf-8"))
        recorded = fingerprint_text(state["fingerprint"]) if state.get("fingerprint") is not None else None
        made_by = (state.get("method"), state.get("plugin"), state.get("dataset"), recorded,
                   state["inputs"].get("contexts_sha256"))
        same = made_by == (spec.method, spec.plugin, spec.dataset, spec.fingerprint or None,
                           sha256_file(spec.contexts_file))
        state["runs"] = [r for r in state["runs"] if r.get("status") == "ok"]  # a failed context is tried again
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return state if same and state["runs"] else None


def _kept_message(results_dir: Path, spec: JobSpec) -> str:
    """What an interrupted attempt of ``spec`` leaves for the next one (its finished runs, its partial
    predictions, its memos)."""
    prog = progress_path(results_dir, spec.method, spec.dataset)
    partials = partial_files(results_dir, spec.method, spec.dataset)
    try:
        n = sum(1 for r in json.loads(prog.read_text())["runs"] if r.get("status") == "ok")
    except (OSError, ValueError, KeyError, TypeError):
        n = 0
    kept = [f"its {n} finished run(s) stay in {prog}"] if n else []
    if partials:
        kept.append(f"the predictions of {len(partials)} unfinished context(s) stay in {partials[0].parent}"
                    + (f" ({partials[0].name})" if len(partials) == 1 else ""))
    for kind, keeps in MEMO_KINDS.items():
        memo = memo_path(results_dir, spec.method, spec.dataset, kind)
        if memo.is_file():
            kept.append(f"the {keeps} its {kind} memo computed stay in {memo}")
    if not kept:
        return "nothing recorded"
    return " and ".join(kept) + "; the next run of this job continues from them"


#: The evaluation workers' ``PYTHONHASHSEED`` (whatever the caller's): Python salts the hashes of strings per
#: process, so the iteration order of a set of strings, and any sum taken in that order, would differ between
#: two runs of the same job (TabICL's probabilities by ~3e-8 with tabicl 2.2.0).
WORKER_HASH_SEED = "0"


def thread_env(threads: int, base: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ if base is None else base)
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS",
                "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS"):
        env[var] = str(max(1, int(threads)))
    return env


def _tree_rss_mb(pid: int) -> float:
    import psutil

    try:
        proc = psutil.Process(pid)
        procs = [proc] + proc.children(recursive=True)
    except psutil.NoSuchProcess:
        return 0.0
    total = 0
    for p in procs:
        try:
            total += p.memory_info().rss
        except psutil.NoSuchProcess:
            pass
    return total / (1024 * 1024)


def _kill_tree(proc: subprocess.Popen) -> None:
    import psutil

    try:
        parent = psutil.Process(proc.pid)
        children = parent.children(recursive=True)
    except psutil.NoSuchProcess:
        children = []
    for p in children:
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass
    try:
        proc.kill()
    except ProcessLookupError:
        pass
    proc.wait()


def _describe_exit(returncode: int) -> str:
    if returncode < 0:
        sig = -returncode
        name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
        hint = " (killed by the operating system: probably out of memory)" if sig == signal.SIGKILL else ""
        return f"worker process died with signal {name}{hint}"
    return f"worker process exited with code {returncode}"


def _pending_contexts(spec: JobSpec, recorded: set[tuple[str, int]]) -> list[dict[str, Any]]:
    from chorustic.protocols.contexts import iter_contexts

    doc = json.loads(Path(spec.contexts_file).read_text())
    return [entry for ctx, entry in iter_contexts(doc, spec.protocols) if (ctx.protocol, ctx.seed) not in recorded]


#: A worker's output kept in the job's log, per stream and attempt: its first and its last bytes (a plugin that
#: prints 100 MiB per fit leaves a log of about 2 MiB that says how much was cut, not one of 200 MB).
LOG_HEAD_BYTES = 1 << 20
LOG_TAIL_BYTES = 1 << 20


def _bounded_copy(src: int, dest: int) -> None:
    """Copy the pipe ``src`` to the file descriptor ``dest`` until EOF: the first :data:`LOG_HEAD_BYTES` as they
    come, then only the last :data:`LOG_TAIL_BYTES` (from a line start), after one line saying how many bytes
    were cut. The head is in the log at once; the tail when the worker's output ends."""
    head, tail_max = LOG_HEAD_BYTES, LOG_TAIL_BYTES
    written, cut, tail = 0, 0, bytearray()

    def put(data: bytes) -> None:
        try:
            while data:
                data = data[os.write(dest, data):]
        except OSError:  # a closed or full log never stops the job
            pass

    try:
        while chunk := os.read(src, 1 << 16):
            if written < head:
                n = min(head - written, len(chunk))
                put(chunk[:n])
                written, chunk = written + n, chunk[n:]
            if chunk:
                tail += chunk
                if len(tail) > tail_max:
                    cut += len(tail) - tail_max
                    del tail[: len(tail) - tail_max]
    finally:
        os.close(src)
    if cut:
        nl = tail.find(b"\n")
        if 0 <= nl < len(tail) - 1:
            cut += nl + 1
            del tail[: nl + 1]
        put(f"\n[chorustic: {cut:,} bytes of this worker's output cut here; the log keeps its first "
            f"{head:,} and last {tail_max:,} bytes]\n".encode())
    put(bytes(tail))


def _start_bounded(proc: subprocess.Popen, out_fd: int, err_fd: int) -> list[threading.Thread]:
    """Threads copying the worker's stdout and stderr pipes to ``out_fd`` and ``err_fd``, bounded."""
    threads = [threading.Thread(target=_bounded_copy, args=(os.dup(pipe.fileno()), fd), daemon=True,
                                name=f"worker-{name}")
               for pipe, fd, name in ((proc.stdout, out_fd, "stdout"), (proc.stderr, err_fd, "stderr"))]
    proc.stdout.close()
    proc.stderr.close()
    for t in threads:
        t.start()
    return threads


def _finish_bounded(threads: list[threading.Thread]) -> None:
    for t in threads:
        t.join(timeout=10)  # the pipes close when the worker's process tree is gone


def run_supervised(
    spec: JobSpec,
    *,
    limits: WorkerLimits | None = None,
    mem_mb: float | None = None,
    runtime_min: float | None = None,
    threads: int = 1,
    log=None,
    log_file=None,
    max_restarts: int = 64,
) -> dict[str, Any]:
    """Run ``spec`` in worker processes until every context has a recorded outcome; return the manifest.

    ``limits``: what the worker may use and how a limit reached is recorded (``mem_mb`` / ``runtime_min``:
    plain limits on the worker, reported as they are). ``log_file``: an open file the workers' stdout and
    stderr go to (default: inherited).
    """
    log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
    limits = limits or WorkerLimits(mem_mb=mem_mb, minutes=runtime_min)
    results_dir = Path(spec.results_dir)
    mpath = manifest_path(results_dir, spec.method, spec.dataset)
    prog = progress_path(results_dir, spec.method, spec.dataset)
    selected = job_contexts(spec)
    if selected == []:  # nothing to run: the finished record (if any) stays as it is
        raise no_contexts_error(spec)
    if mpath.exists():
        mpath.unlink()
    failed_record = failure_record_path(results_dir, spec.method, spec.dataset)
    # an interrupted attempt's finished runs, else those of an attempt that recorded failed runs (a context
    # stopped at a memory or time limit); the worker checks each kept file and the data again
    source, state = next(((p, st) for p in (prog, failed_record) if selected and (st := resumable_state(spec, p))),
                         (None, None))
    kept = state is not None
    if kept:
        state["finished"] = None
        atomic_write_json(prog, state)
        failed_record.unlink(missing_ok=True)
        why = "an interrupted attempt" if source == prog else "an attempt with failed runs"
        log(f"[{spec.method}/{spec.dataset}] continuing from {why}: {len(state['runs'])} finished run(s) of "
            f"{source} are kept")
    else:
        # only the files of the contexts this job re-makes (none when its context file cannot be read: it fails)
        clear_job_outputs(results_dir, spec.method, spec.dataset, selected or [])
    started = time.monotonic()
    deadline = started + limits.minutes * 60 if limits.minutes else None
    # the worker spec of an earlier attempt that was killed (kill -9 leaves no chance to remove it)
    mpath.parent.mkdir(parents=True, exist_ok=True)
    for stale in [*mpath.parent.glob(f".{spec.dataset}.*.spec.json"),
                  *mpath.parent.glob(f".{spec.dataset}.*.spec.json.error")]:
        stale.unlink(missing_ok=True)
    fd, spec_file = tempfile.mkstemp(prefix=f".{spec.dataset}.", suffix=".spec.json", dir=mpath.parent)
    os.close(fd)
    Path(spec_file).write_text(json.dumps(spec.__dict__))
    error_file = Path(spec_file + ".error")  # the worker's reason when it fails outside a context
    env = thread_env(threads)
    # the order of a set of strings in the worker (tabicl's ensemble: its normalisations; the sums over members
    # follow it) is the same in every attempt and every run, whatever the caller's: str hashes are salted per process
    env["PYTHONHASHSEED"] = WORKER_HASH_SEED
    if getattr(spec, "portable_numerics", True):
        from chorustic.evaluation.numerics import portable_numerics_env

        for key, value in portable_numerics_env().items():
            env.setdefault(key, value)  # a value the user set explicitly wins
    parent = os.getppid()
    stop: list[int] = []

    def _on_signal(signum, frame):  # Ctrl-C / SIGTERM: stop the worker, record nothing
        stop.append(signum)

    previous = {sig: signal.signal(sig, _on_signal) for sig in (signal.SIGTERM, signal.SIGINT)} \
        if _in_main_thread() else {}
    if limits.mem_mb is not None:
        # Methods that plan their own batching (TabICL) size it to the job's limit, not the machine's.
        env["CHORUSTIC_MEM_LIMIT_MB"] = str(int(limits.mem_mb))
    try:
        for attempt in range(max_restarts + 1):
            cmd = [sys.executable, "-m", "chorustic.evaluation.worker", spec_file]
            if attempt > 0 or kept:
                cmd.append("--resume")
            proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    preexec_fn=die_with_parent_preexec())
            # the worker's output goes where it went when the worker inherited them: the log file, else fds 1 and 2
            out_fd, err_fd = (log_file.fileno(),) * 2 if log_file is not None else (1, 2)
            for stream in (sys.stdout, sys.stderr):
                stream.flush()
            pumps = _start_bounded(proc, out_fd, err_fd)
            reason = None
            while True:
                try:  # returns as soon as the worker exits; the checks below run every _POLL_S meanwhile
                    proc.wait(timeout=_POLL_S)
                    break
                except subprocess.TimeoutExpired:
                    pass
                if stop or os.getppid() != parent:
                    _kill_tree(proc)
                    _finish_bounded(pumps)
                    why = f"signal {signal.Signals(stop[0]).name}" if stop else "its parent process died"
                    raise JobInterrupted(f"{spec.method}/{spec.dataset}: stopped ({why}); "
                                         f"{_kept_message(results_dir, spec)}")
                if limits.mem_mb is not None:
                    rss = _tree_rss_mb(proc.pid)
                    if rss > limits.mem_mb:
                        reason = limits.mem_reason.format(limit=limits.mem_mb, rss=rss)
                if reason is None and deadline is not None and time.monotonic() > deadline:
                    elapsed = (time.monotonic() - started) / 60
                    reason = limits.time_reason.format(limit=limits.minutes, elapsed=elapsed)
                if reason is not None:
                    _kill_tree(proc)
                    break
            _finish_bounded(pumps)
            done = finished_manifest(results_dir, spec.method, spec.dataset)
            if reason is None and proc.returncode == 0 and done is not None:
                return json.loads(done.read_text())
            if reason is None and proc.returncode in (-signal.SIGTERM, -signal.SIGINT):
                # Terminated from outside (not by us, not by the OOM killer's SIGKILL): the run is being stopped.
                raise JobInterrupted(f"{spec.method}/{spec.dataset}: worker terminated by "
                                     f"{signal.Signals(-proc.returncode).name}; "
                                     f"{_kept_message(results_dir, spec)}")
            job_level_error = reason is None and proc.returncode > 0
            if reason is None:
                reason = _describe_exit(proc.returncode)
                if error_file.is_file():  # the worker's own reason (a bad parameter, unreadable data ...)
                    reason = error_file.read_text(encoding="utf-8").strip() or reason
                    error_file.unlink(missing_ok=True)
                if spec.fail_fast:
                    raise RuntimeError(f"{spec.method}/{spec.dataset}: {reason} (fail_fast is set)")
            state = json.loads(prog.read_text()) if prog.exists() else None
            if state is None:
                # The worker died before finishing its first context (or before loading the data).
                state = {"format": MANIFEST_FORMAT, "method": spec.method, "plugin": spec.plugin,
                         "display_name": spec.display_name, "dataset": spec.dataset, "archive": spec.archive,
                         "params": spec.params, "fingerprint": json.loads(spec.fingerprint) if spec.fingerprint
                         else None, "runs": []}
                from chorustic.data.standin import standin_mark_of

                standin = standin_mark_of(spec.dataset, spec.data_dir)
                if standin is not None:  # every manifest made on a stand-in says so, a failed one too
                    state["standin"] = standin
            recorded = {(r["protocol"], r["seed"]) for r in state["runs"]}
            try:
                pending = _pending_contexts(spec, recorded)
            except (OSError, ValueError, KeyError, TypeError) as exc:  # no contexts to record outcomes for
                raise JobFailed(f"{spec.method}/{spec.dataset}: {reason} (and the context file "
                                f"{spec.contexts_file} cannot be read: {type(exc).__name__}); nothing recorded") from None
            log(f"[{spec.method}/{spec.dataset}] {reason}; {len(pending)} context(s) not finished")
            if not pending:
                break
            timed_out = deadline is not None and time.monotonic() > deadline
            # A Python-level error outside the per-context handling (unreadable data, bad contexts file) fails
            # every remaining context at once; a kill (memory, signal) blames only the context it hit.
            victims = pending if (timed_out or job_level_error) else pending[:1]
            for entry in victims:
                state["runs"].append(
                    run_record(entry, status="failed", error=reason, n_context=entry.get("n_context"))
                )
            atomic_write_json(prog, state)
            if timed_out or len(victims) == len(pending):
                break
        else:
            raise RuntimeError(f"{spec.method}/{spec.dataset}: worker restarted {max_restarts} times")
        # Every context has an outcome: finish the manifest from the progress state.
        state = json.loads(prog.read_text())
        state.setdefault("finished", None)
        state["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        write_finished(results_dir, state)
        prog.unlink()
        return state
    finally:
        Path(spec_file).unlink(missing_ok=True)
        error_file.unlink(missing_ok=True)
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def run_evaluation(
    spec: JobSpec,
    evaluation: dict[str, Any],
    *,
    limits: WorkerLimits | None = None,
    threads: int = 1,
) -> dict[str, Any]:
    """One evaluate job as the configuration's ``evaluation`` settings say: in a supervised worker
    (``isolate``, default) held to ``limits`` (:func:`chorustic.resources.evaluation_limits`, enforced
    when ``enforce_limits``, default), or in this process."""
    if not evaluation.get("isolate", True):
        return run_job(spec)
    if not evaluation.get("enforce_limits", True):
        limits = None
    return run_supervised(spec, limits=limits, threads=threads)


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()
