"""Reading the lines of a ``.ts`` file that say something (the header check and the content check)."""

from __future__ import annotations

import os
from typing import Iterator

__all__ = ["ts_lines"]


def ts_lines(path: str | os.PathLike) -> Iterator[tuple[bool, str]]:
    """``(in_data, line)`` for every line of a ``.ts`` file that says something: white space stripped,
    blank lines and ``#`` comments skipped, ``in_data`` from the line after ``@data`` on (which is not
    itself yielded)."""
    in_data = False
    with open(path, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            s = line.strip()
            if not s or s.startswith("#"):
                continue
            if not in_data and s.lower().startswith("@data"):
                in_data = True
                continue
            yield in_data, s
