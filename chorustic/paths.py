"""Where the repository is: the one place that knows the package's position in the checkout.

Relative paths in configurations, plugin defaults and reference files are resolved against
:data:`REPO_ROOT` (the folder holding ``chorustic/``, ``baselines/``, ``config/`` and ``results/``).
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["REPO_ROOT", "repo_path"]

#: The repository root (this file is ``<root>/chorustic/paths.py``).
REPO_ROOT = Path(__file__).resolve().parents[1]


def repo_path(path: str | Path) -> Path:
    """``path`` itself when absolute (``~`` expanded), else relative to :data:`REPO_ROOT`."""
    p = Path(path).expanduser()
    return p if p.is_absolute() else REPO_ROOT / p
