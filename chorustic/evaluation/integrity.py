"""When a finished result counts as finished: its fingerprint and the checksums of its files.

* The **fingerprint** of a method run (:attr:`chorustic.run_plan.PlannedJob.fingerprint`, made from
  :mod:`chorustic.methods.fingerprint`) is its plugin, its complete parameters and a SHA-256 over the
  method's code. The workflow passes it as a ``params:`` of the evaluate rule, so Snakemake's own params
  trigger re-runs exactly the jobs whose parameters or method code changed; it is also recorded in
  every manifest.
* Every prediction file a manifest lists is recorded with its SHA-256, size and modification time
  (:func:`file_record`); the download rule's record lists the dataset's files the same way
  (:func:`source_record`). When the workflow builds its DAG, :func:`set_aside_damaged` checks every
  finished result (a missing, truncated or edited prediction file, an unreadable manifest, a dataset
  file edited after it was recorded, an ``accuracies.csv`` that no longer matches its checksum, an
  unreadable context file) and
  moves the harness's own record of it aside (``<name>.damaged``), so Snakemake sees that output
  missing and re-makes exactly that job (and what depends on it). The user's files are never moved.
  Aggregation verifies the full checksums again (:func:`verify_result_file`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from chorustic.io import sha256_file
# a method's fingerprint and code have their own home; re-exported here, where results are checked against them
from chorustic.methods.fingerprint import (  # noqa: F401
    COST_HOOKS,
    _code_sha256,
    code_text,
    fingerprint_text,
    method_code_files,
)
from chorustic.results_layout import resolve_result_file

__all__ = [
    "checksum_path",
    "code_text",
    "method_code_files",
    "file_record",
    "verify_result_file",
    "results_dir_of",
    "manifest_problem",
    "made_with_other_fingerprint",
    "source_record",
    "source_problem",
    "table_problem",
    "contexts_problem",
    "set_aside",
    "set_aside_damaged",
]

def checksum_path(path: str | os.PathLike) -> Path:
    """``accuracies.csv`` -> ``accuracies.csv.sha256``."""
    path = Path(path)
    return path.with_name(path.name + ".sha256")


def file_record(path: str | os.PathLike) -> dict[str, Any]:
    """SHA-256, size and modification time of a finished result file (stored in its manifest)."""
    st = os.stat(path)
    return {"sha256": sha256_file(path), "bytes": st.st_size, "mtime_ns": st.st_mtime_ns}


def results_dir_of(manifest: str | os.PathLike) -> Path:
    """The results folder of a run manifest (``<results>/runs/<method>/<dataset>.json``, or its
    ``.failed.json`` or progress file): the folder its ``result_file`` paths are relative to."""
    return Path(manifest).parent.parent.parent


def verify_result_file(
    run: dict[str, Any], *, full: bool = True, base: str | os.PathLike | None = None
) -> str | None:
    """``None`` when the prediction file of an ``ok`` run is as its manifest recorded it, else what is wrong.

    ``full=False`` trusts an unchanged size and modification time (cheap, for building the DAG) and
    hashes only files whose size or time changed; ``full=True`` always compares the SHA-256. ``base`` is
    the results folder holding the manifest (:func:`~chorustic.evaluation.results.resolve_result_file`);
    without it, the recorded path is taken as it is.
    """
    rel = run.get("result_file")
    if not rel:
        return "no prediction file is recorded for this ok run"
    path = Path(rel) if base is None else resolve_result_file(rel, base)
    try:
        st = os.stat(path)
    except OSError:
        return f"the prediction file {path} is missing"
    rec = run.get("result") or {}
    if not rec:
        return None  # a manifest of an older harness: nothing recorded to compare with
    if st.st_size != rec.get("bytes"):
        return (
            f"the prediction file {path} has {st.st_size} bytes, its manifest recorded {rec.get('bytes')} "
            "(truncated or changed after it was written)"
        )
    if not full and st.st_mtime_ns == rec.get("mtime_ns"):
        return None
    if sha256_file(path) != rec.get("sha256"):
        return f"the prediction file {path} does not match the SHA-256 its manifest recorded (changed after it was written)"
    return None


def made_with_other_fingerprint(doc: dict[str, Any], fingerprint: str | None) -> bool:
    """Whether the run manifest ``doc`` records a method fingerprint (parameters, plugin code) other than
    ``fingerprint`` (:attr:`chorustic.run_plan.PlannedJob.fingerprint`; None, or a manifest that records none:
    False)."""
    recorded = doc.get("fingerprint")
    return fingerprint is not None and recorded is not None and fingerprint_text(recorded) != fingerprint


def _checked_manifest(
    path: Path, *, full: bool, expected: set[tuple[str, int]] | None
) -> tuple[str | None, dict[str, Any] | None]:
    """(:func:`manifest_problem`'s answer, the manifest when it could be read)."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        return f"the run manifest {path} is unreadable ({type(exc).__name__}: {exc})", None
    if not isinstance(doc, dict) or not isinstance(doc.get("runs"), list):
        return f"the run manifest {path} is not a chorustic run manifest", None
    if expected and not doc.get("reported"):
        have = {(r.get("protocol"), r.get("seed")) for r in doc["runs"] if isinstance(r, dict)}
        lacking = sorted(expected - have, key=str)
        if lacking:
            named = ", ".join(f"{p} seed {s}" for p, s in lacking[:5]) + (" ..." if len(lacking) > 5 else "")
            return (f"the run manifest {path} has no run of {named}, which the configuration selects (the job ran "
                    "another protocol selection)"), doc
    base = results_dir_of(path)
    for run in doc["runs"]:
        if isinstance(run, dict) and run.get("status") == "ok":
            problem = verify_result_file(run, full=full, base=base)
            if problem:
                return problem, doc
    return None, doc


def manifest_problem(
    path: str | os.PathLike, *, full: bool = False, expected: set[tuple[str, int]] | None = None
) -> str | None:
    """``None`` when the finished manifest ``path`` and every prediction file it lists are intact (and,
    with ``expected``, it has a run of every ``(protocol, seed)`` the configuration selects for its job)."""
    return _checked_manifest(Path(path), full=full, expected=expected)[0]


def set_aside(path: str | os.PathLike, suffix: str = ".damaged") -> Path:
    """Move a damaged (or stale) file of the harness to ``<name><suffix>``, kept for inspection; a file set
    aside before is never replaced: the next one is ``<name>.2<suffix>``, then ``.3``, ... Returns where it went."""
    path = Path(path)
    for n in range(1, 10_000):
        dest = path.with_name(path.name + (suffix if n == 1 else f".{n}{suffix}"))
        try:
            os.link(path, dest)  # fails where dest exists: nothing set aside earlier is replaced
        except FileExistsError:
            continue
        except OSError:  # a file system without hard links
            if dest.exists():
                continue
            os.replace(path, dest)
            return dest
        os.unlink(path)
        return dest
    raise OSError(f"{path}: 9,999 earlier copies set aside next to it; remove some")


def source_record(dataset: str, files: list[Path]) -> dict[str, Any]:
    """What the download rule writes: where the dataset's files are, with their checksums."""
    return {"dataset": dataset, "files": {str(p): file_record(p) for p in files}}


def _changed(path: Path, rec: dict[str, Any]) -> str | None:
    try:
        st = os.stat(path)
    except OSError:
        return f"{path} was removed"
    if st.st_size == rec.get("bytes") and st.st_mtime_ns == rec.get("mtime_ns"):
        return None
    if st.st_size != rec.get("bytes") or sha256_file(path) != rec.get("sha256"):
        return f"{path} changed"
    return None


def source_problem(path: str | os.PathLike) -> str | None:
    """``None`` when every dataset file the download rule's record ``path`` lists is unchanged."""
    path = Path(path)
    try:
        files = json.loads(path.read_text(encoding="utf-8"))["files"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return f"the record {path} is unreadable ({type(exc).__name__})"
    for name, rec in sorted(files.items()):
        why = _changed(Path(name), rec if isinstance(rec, dict) else {})
        if why:
            return why
    return None


def table_problem(path: str | os.PathLike) -> str | None:
    """``None`` when ``accuracies.csv`` matches the checksum the aggregate step wrote with it."""
    path, sums = Path(path), checksum_path(path)
    if not path.exists() or not sums.exists():
        return None
    words = sums.read_text(encoding="utf-8").split()
    if not words or sha256_file(path) != words[0]:
        return f"{path} does not match its checksum file {sums.name} (truncated or edited)"
    return None


def contexts_problem(path: str | os.PathLike) -> str | None:
    """``None`` when a context file can be read (it is written atomically; damage comes from outside)."""
    from chorustic.protocols.contexts import FORMAT

    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
        if doc.get("format") != FORMAT or not isinstance(doc.get("contexts"), list):
            return f"the context file {path} is not a chorustic context file"
    except (OSError, UnicodeDecodeError, ValueError, AttributeError) as exc:
        return f"the context file {path} is unreadable ({type(exc).__name__})"
    return None


def set_aside_damaged(
    manifests: list[str], sources: list[str], tables: list[str], contexts: list[str] = (),
    expected: dict[str, set[tuple[str, int]]] | None = None, fingerprints: dict[str, str] | None = None,
) -> list[str]:
    """Check every finished result (see the module docstring); move the damaged ones' records aside.
    ``expected``: the ``(protocol, seed)`` the configuration selects for each manifest's job (a manifest
    without one of them, made with another selection, is re-made). ``fingerprints``: each manifest's method
    fingerprint now; a manifest made with another is moved aside to ``.stale`` and re-made, also where
    Snakemake's own records of the job's parameters and code are gone (a fresh clone, ``.snakemake``
    removed, another working directory).

    Returns one message per result moved aside. Cheap when nothing changed: files whose size and
    modification time are as recorded are not hashed.
    """
    messages = []
    for path in manifests:
        if Path(path).exists():
            problem, doc = _checked_manifest(Path(path), full=False, expected=(expected or {}).get(path))
            suffix = ".damaged"
            if problem is None and made_with_other_fingerprint(doc, (fingerprints or {}).get(path)):
                problem, suffix = (f"the run manifest {path} was made with other parameters or method code than "
                                   "the configuration's"), ".stale"
            if problem:
                moved = set_aside(path, suffix)
                messages.append(
                    f"{problem}: the result is re-made ({Path(path).name} moved aside to {moved.name})"
                )
    for path in sources:
        if Path(path).exists():
            problem = source_problem(path)
            if problem:
                set_aside(path)
                messages.append(f"{problem}: the dataset is read again and everything made from it re-made")
    for path in contexts:
        if Path(path).exists():
            problem = contexts_problem(path)
            if problem:
                set_aside(path)
                messages.append(f"{problem}: it is re-made when a job needs it")
    for path in tables:
        problem = table_problem(path)
        if problem:
            moved = set_aside(path)
            set_aside(checksum_path(path))
            messages.append(f"{problem}: it is re-made ({moved.name} kept)")
    return messages
