"""Shared vocabulary of the evaluation protocols (paper Sec. 4.1, Appendix C.1).

A *context* is the subset of the official training split given to a method as labeled data; the
complete official test split is always the query set. Each context is identified by a protocol id
and a seed:

========================  ===============  ======  =========================================
protocol id               family           budget  seeds
========================  ===============  ======  =========================================
``full``                  full             -       0
``fixed5``, ``fixed10``   fixed_shot       k       0, 1, 2, 3, 4 (paper: five context sets)
``prop20`` ... ``prop60`` proportional     percent 0 (configurable)
========================  ===============  ======  =========================================
"""

from __future__ import annotations

import dataclasses

import numpy as np

__all__ = ["ContextSpec", "Ineligible", "FAMILIES", "protocol_id", "parse_protocol_id", "class_counts"]

FAMILIES = ("full", "fixed_shot", "proportional")


class Ineligible(Exception):
    """The dataset cannot be evaluated under this protocol (e.g. a class has fewer than k examples)."""


@dataclasses.dataclass(frozen=True)
class ContextSpec:
    protocol: str
    family: str
    budget: int | None
    seed: int

    @property
    def key(self) -> str:
        return f"{self.protocol}/{self.seed}"


def protocol_id(family: str, budget: int | None) -> str:
    if family == "full":
        return "full"
    if family == "fixed_shot":
        return f"fixed{int(budget)}"
    if family == "proportional":
        return f"prop{int(budget)}"
    raise ValueError(f"unknown protocol family {family!r}; expected one of {FAMILIES}")


def parse_protocol_id(protocol: str) -> tuple[str, int | None]:
    """``"fixed5" -> ("fixed_shot", 5)``, ``"prop20" -> ("proportional", 20)``, ``"full" -> ("full", None)``."""
    if protocol == "full":
        return "full", None
    for prefix, family in (("fixed", "fixed_shot"), ("prop", "proportional")):
        if protocol.startswith(prefix) and protocol[len(prefix):].isdigit():
            return family, int(protocol[len(prefix):])
    raise ValueError(f"unknown protocol id {protocol!r}; expected full, fixed<k> or prop<percent>")


def class_counts(y: np.ndarray) -> dict[int, int]:
    values, counts = np.unique(np.asarray(y), return_counts=True)
    return {int(v): int(c) for v, c in zip(values, counts)}
