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

Every other part of the harness derives protocol ids, their order and their labels from here
(:func:`protocol_id`, :func:`parse_protocol_id`, :func:`protocol_sort_key`, :func:`protocol_label`,
:func:`parse_protocol_label`), so any shot level or percentage in the config works end to end.
"""

from __future__ import annotations

import dataclasses
import math
import re

import numpy as np

__all__ = [
    "ContextSpec",
    "Ineligible",
    "FAMILIES",
    "protocol_id",
    "parse_protocol_id",
    "protocol_sort_key",
    "protocol_label",
    "parse_protocol_label",
    "class_counts",
]

#: The protocol families, in report order.
FAMILIES = ("full", "fixed_shot", "proportional")
_PREFIX = {"fixed_shot": "fixed", "proportional": "prop"}


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
    """``("fixed_shot", 5) -> "fixed5"``, ``("proportional", 20) -> "prop20"``, ``("full", None) -> "full"``."""
    if family == "full":
        return "full"
    if family in _PREFIX:
        return f"{_PREFIX[family]}{int(budget)}"
    raise ValueError(f"unknown protocol family {family!r}; expected one of {FAMILIES}")


def parse_protocol_id(protocol: str) -> tuple[str, int | None]:
    """``"fixed5" -> ("fixed_shot", 5)``, ``"prop20" -> ("proportional", 20)``, ``"full" -> ("full", None)``."""
    if protocol == "full":
        return "full", None
    for family, prefix in _PREFIX.items():
        if protocol.startswith(prefix) and protocol[len(prefix):].isdigit():
            return family, int(protocol[len(prefix):])
    raise ValueError(f"unknown protocol id {protocol!r}; expected full, fixed<k> or prop<percent>")


def protocol_sort_key(protocol: str, family: str | None = None, budget: float | None = None) -> tuple:
    """Report order: full < fixed-shot (by k) < proportional (by %); an id that does not parse last.

    ``family`` / ``budget`` (e.g. from a results table) are used when given, else parsed from the id."""
    if family is None:
        try:
            family, budget = parse_protocol_id(protocol)
        except ValueError:
            return (len(FAMILIES), math.inf, protocol)
    b = -1.0 if budget is None or (isinstance(budget, float) and math.isnan(budget)) else float(budget)
    order = FAMILIES.index(family) if family in FAMILIES else len(FAMILIES)
    return (order, b, protocol)


def protocol_label(family: str, budget: float | None) -> str:
    """How tables and the paper name a protocol: ``"full"``, ``"5-shot"``, ``"20%"``."""
    if family == "fixed_shot":
        return f"{budget:g}-shot"
    if family == "proportional":
        return f"{budget:g}%"
    return "full"


def parse_protocol_label(text: str) -> str:
    """The inverse of :func:`protocol_label`: ``"full"``, ``"5-shot"`` -> ``"fixed5"``, ``"20%"`` -> ``"prop20"``."""
    t = str(text).strip()
    if t == "full":
        return "full"
    if m := re.fullmatch(r"(\d+)-shot", t):
        return protocol_id("fixed_shot", int(m.group(1)))
    if m := re.fullmatch(r"(\d+)%", t):
        return protocol_id("proportional", int(m.group(1)))
    raise ValueError(f"cannot parse protocol {text!r}")


def class_counts(y: np.ndarray) -> dict[int, int]:
    values, counts = np.unique(np.asarray(y), return_counts=True)
    return {int(v): int(c) for v, c in zip(values, counts)}
