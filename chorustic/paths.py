"""Where the repository is: the one place that knows the package's position in the checkout.

Relative paths in configurations, plugin defaults and reference files are resolved against
:data:`REPO_ROOT` (the folder holding ``chorustic/``, ``baselines/``, ``config/`` and ``results/``).
"""

from __future__ import annotations

import functools
from pathlib import Path

__all__ = ["REPO_ROOT", "repo_path", "default_paths"]

#: The repository root (this file is ``<root>/chorustic/paths.py``).
REPO_ROOT = Path(__file__).resolve().parents[1]


def repo_path(path: str | Path) -> Path:
    """``path`` itself when absolute (``~`` expanded), else relative to :data:`REPO_ROOT`."""
    p = Path(path).expanduser()
    return p if p.is_absolute() else REPO_ROOT / p


@functools.cache
def default_paths() -> dict[str, str]:
    """The default locations (``data_dir``, ``cache_dir``, ``results_dir``, ``reports_dir``, ...): the
    ``paths`` of ``config/config.yaml``, the one place they are written (relative to the working folder)."""
    import yaml

    with open(REPO_ROOT / "config" / "config.yaml", encoding="utf-8") as f:
        return dict(yaml.safe_load(f)["paths"])
