"""Running the workflow and the command line as a user does, from tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from chorustic.paths import REPO_ROOT

__all__ = ["SNAKEFILE", "command_env", "run_snakemake"]

SNAKEFILE = REPO_ROOT / "Snakefile"


def command_env(**extra: str) -> dict[str, str]:
    """The environment of a command the workflow runs: this interpreter's ``bin`` first on ``PATH`` (the
    rules call the ``chorustic`` entry point, as in an activated environment), plus ``extra``."""
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    return {**os.environ, "PATH": path, **extra}


def run_snakemake(*args: str, cwd: str | os.PathLike, timeout: int = 900, **env: str) -> subprocess.CompletedProcess:
    """``python -m snakemake ARGS`` in ``cwd`` with :func:`command_env` (``env``: extra variables); output
    captured as text."""
    cmd = [sys.executable, "-m", "snakemake", *args]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=command_env(**env))
