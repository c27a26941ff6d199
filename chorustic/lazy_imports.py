"""Package facades that import their modules on first use (PEP 562).

A package whose ``__init__`` re-exports names from heavy modules (torch, matplotlib) sets::

    _HOMES = {"Name": "module", ...}            # where each name lives, relative to the package
    __getattr__ = lazy_getattr(__name__, _HOMES)

so ``from package import Name`` imports ``package.module`` only then, and importing a light submodule of
the package (what the workflow does when it builds its job graph) loads none of the others.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

__all__ = ["lazy_getattr"]


def lazy_getattr(package: str, homes: dict[str, str]) -> Callable[[str], Any]:
    """The module ``__getattr__`` of ``package``: ``name`` from ``package.<homes[name]>``, imported on first use."""

    def __getattr__(name: str) -> Any:
        if name in homes:
            return getattr(importlib.import_module(f"{package}.{homes[name]}"), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
