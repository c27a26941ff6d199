"""Which modules and plugins the fast subset (``python -m pytest -m "not slow"``) reaches (issue 74).

Runs the fast subset under coverage (``pip install pytest-cov``; subprocesses such as the ``chorustic`` CLI and
the evaluation worker are measured too) and lists, for every module of ``chorustic/`` and every plugin of
``baselines/``, how many of its functions ran. A module counts as reached when code inside one of its
functions or methods ran (importing it is not enough); a module without functions when it was imported.

    python tools/fast_subset_reach.py --out benchmarks/results/fast_subset_reach.md
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def measure(report: Path) -> float:
    rc_file = report.with_suffix(".coveragerc")
    rc_file.write_text(f"[run]\nsource = {REPO / 'chorustic'}\n         {REPO / 'baselines'}\nparallel = true\n"
                       "patch = subprocess\nsigterm = true\n")
    env = {**os.environ, "COVERAGE_RCFILE": str(rc_file)}
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-m", "not slow", "-p", "no:randomly",
                    f"--cov-config={rc_file}", "--cov", f"--cov-report=json:{report}", "--durations=0",
                    "--durations-min=1000"], cwd=REPO, env=env, check=False)
    return time.perf_counter() - start


def reached(report: Path) -> list[tuple[str, int, int]]:
    """(file, functions that ran, functions) of every measured module and plugin."""
    data = json.loads(report.read_text())["files"]
    rows = []
    files = sorted([*(REPO / "chorustic").rglob("*.py"), *(REPO / "baselines").glob("*.py")])
    for path in files:
        rel = path.relative_to(REPO).as_posix()
        info = data.get(rel) or data.get(str(path))
        if info is None:
            rows.append((rel, 0, -1))  # never imported
            continue
        functions = {k: v for k, v in (info.get("functions") or {}).items() if k}
        ran = sum(1 for v in functions.values() if v["summary"]["covered_lines"] > 0)
        rows.append((rel, ran, len(functions)))
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, help="write the table here (Markdown); default: print it")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "coverage.json"
        seconds = measure(report)
        rows = reached(report)
    missed = [r for r in rows if r[2] == -1 or (r[2] > 0 and r[1] == 0)]
    lines = [
        "# What the fast subset reaches (issue 74)", "",
        f"Date: {dt.date.today()}. Machine: {os.cpu_count()} CPUs ({platform.machine()}), Python "
        f"{platform.python_version()}. Command: `python tools/fast_subset_reach.py` (the fast subset under coverage, "
        f"{seconds / 60:.1f} min with coverage's overhead).", "",
        f"Modules and plugins: {len(rows)}; reached (a function of it ran, or imported when it has none): "
        f"{len(rows) - len(missed)}; not reached: {len(missed)}.", "",
        "| file | functions that ran | functions |", "|---|---|---|",
    ]
    lines += [f"| `{f}` | {ran} | {'not imported' if n == -1 else n} |" for f, ran, n in missed]
    if not missed:
        lines.append("| (none) | | |")
    text = "\n".join(lines) + "\n"
    if args.out:
        args.out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
