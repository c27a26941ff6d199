"""Context files: every protocol's context indices for one dataset, written once, read by every method.

``results/contexts/<dataset>.json``::

    {"format": "chorustic-contexts/1", "dataset": ..., "archive": ..., "n_train": ..., "n_classes": ...,
     "class_counts": {"0": 25, "1": 25}, "train_labels_sha256": ...,
     "protocols": {...the protocol settings used...},
     "contexts": [{"protocol": "full", "family": "full", "budget": null, "seed": 0,
                   "status": "ok", "n_context": 50, "indices": [0, 1, ...]},
                  {"protocol": "fixed10", "family": "fixed_shot", "budget": 10, "seed": 0,
                   "status": "ineligible", "reason": "fewer than 10 training examples in ...", "indices": null},
                  ...]}

The indices depend only on the encoded training labels and the protocol settings, so the file is
reproducible; ``train_labels_sha256`` lets a reader check it still matches the dataset.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from chorustic.io import atomic_write_json
from chorustic.protocols.base import ContextSpec, Ineligible, class_counts, protocol_id
from chorustic.protocols.fixed_shot import fixed_shot_context
from chorustic.protocols.full import full_context
from chorustic.protocols.proportional import per_class_budget, proportional_context

__all__ = [
    "DEFAULT_PROTOCOLS",
    "FORMAT",
    "context_specs",
    "expected_train_size",
    "protocol_ids",
    "build_contexts",
    "write_contexts",
    "read_contexts",
    "iter_contexts",
    "labels_sha256",
]

FORMAT = "chorustic-contexts/1"

#: The paper's protocols (Sec. 4.1): full context; 5 and 10 shots per class over seeds 0-4;
#: 20-60 % class-stratified subsets (one shared subset per fraction, seed 0).
DEFAULT_PROTOCOLS: dict[str, Any] = {
    "full": True,
    "fixed_shot": {"shots": [5, 10], "seeds": [0, 1, 2, 3, 4]},
    "proportional": {"percents": [20, 30, 40, 50, 60], "seeds": [0]},
}


def labels_sha256(y: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(np.asarray(y, dtype=np.int64)).tobytes()).hexdigest()


def expected_train_size(spec: ContextSpec, n_train: int, n_classes: int) -> int:
    """How many training series the context of ``spec`` holds on a dataset of ``n_train`` training series
    in ``n_classes`` classes of equal size: the size a cost estimate uses before the labels are read
    (the context file has the exact indices). 0: a fixed-shot context the job skips (a class with
    fewer than ``budget`` series)."""
    n_classes = max(1, min(int(n_classes), int(n_train)))
    if spec.family == "fixed_shot":
        return int(spec.budget) * n_classes if int(spec.budget) <= int(n_train) // n_classes else 0
    if spec.family == "proportional":
        per_class, extra = divmod(int(n_train), n_classes)
        return (extra * per_class_budget(per_class + 1, int(spec.budget))
                + (n_classes - extra) * (per_class_budget(per_class, int(spec.budget)) if per_class else 0))
    return int(n_train)


def context_specs(protocols: dict[str, Any] | None = None) -> list[ContextSpec]:
    """Every (protocol, seed) pair the settings ask for, in a fixed order."""
    protocols = DEFAULT_PROTOCOLS if protocols is None else protocols
    specs: list[ContextSpec] = []
    if protocols.get("full", False):
        specs.append(ContextSpec("full", "full", None, 0))
    fs = protocols.get("fixed_shot") or {}
    for k in fs.get("shots", []):
        for seed in fs.get("seeds", []):
            specs.append(ContextSpec(protocol_id("fixed_shot", k), "fixed_shot", int(k), int(seed)))
    pr = protocols.get("proportional") or {}
    for pct in pr.get("percents", []):
        for seed in pr.get("seeds", []):
            specs.append(ContextSpec(protocol_id("proportional", pct), "proportional", int(pct), int(seed)))
    keys = [s.key for s in specs]
    if len(set(keys)) != len(keys):
        raise ValueError(f"duplicate protocol contexts in settings: {keys}")
    return specs


def protocol_ids(protocols: dict[str, Any] | None = None) -> list[str]:
    """The protocol ids the settings produce (each once, in the order of :func:`context_specs`): the ids a
    selection (``methods.<run>.protocols``, ``chorustic evaluate --protocols``) may name."""
    return list(dict.fromkeys(s.protocol for s in context_specs(protocols)))


def build_contexts(
    y_train: np.ndarray, *, dataset: str, archive: str, protocols: dict[str, Any] | None = None,
    class_labels: Any = None,
) -> dict[str, Any]:
    """Every protocol's context of one dataset; ``class_labels`` (the dataset's labels of the encoded
    classes) name the classes in ineligibility reasons."""
    protocols = DEFAULT_PROTOCOLS if protocols is None else protocols
    y_train = np.asarray(y_train, dtype=np.int64)
    contexts = []
    for spec in context_specs(protocols):
        entry: dict[str, Any] = {"protocol": spec.protocol, "family": spec.family, "budget": spec.budget,
                                 "seed": spec.seed}
        try:
            if spec.family == "full":
                idx = full_context(y_train)
            elif spec.family == "fixed_shot":
                idx = fixed_shot_context(y_train, spec.budget, spec.seed, class_labels)
            else:
                idx = proportional_context(y_train, spec.budget, spec.seed)
        except Ineligible as exc:
            entry.update(status="ineligible", reason=str(exc), n_context=0, indices=None)
        else:
            entry.update(status="ok", n_context=int(len(idx)), indices=[int(i) for i in idx])
        contexts.append(entry)
    return {
        "format": FORMAT,
        "dataset": dataset,
        "archive": archive,
        "n_train": int(len(y_train)),
        "n_classes": int(len(np.unique(y_train))),
        "class_counts": {str(c): n for c, n in class_counts(y_train).items()},
        "train_labels_sha256": labels_sha256(y_train),
        "protocols": protocols,
        "contexts": contexts,
    }


def write_contexts(path: str | os.PathLike, doc: dict[str, Any]) -> None:
    atomic_write_json(path, doc, indent=1)


def read_contexts(path: str | os.PathLike, y_train: np.ndarray | None = None) -> dict[str, Any]:
    import json

    path = Path(path)
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot read context file {path} ({type(exc).__name__}: {exc}); it was truncated or edited: "
                         "delete it and run `snakemake` again (or `chorustic contexts`) to re-create it") from None
    if doc.get("format") != FORMAT:
        raise ValueError(f"context file {path} has format {doc.get('format')!r}, expected {FORMAT!r}")
    if y_train is not None and doc["train_labels_sha256"] != labels_sha256(y_train):
        raise ValueError(
            f"context file {path} was built for different training labels of {doc['dataset']}; "
            "delete it and re-create it with `chorustic contexts`"
        )
    return doc


def iter_contexts(doc: dict[str, Any], protocols: list[str] | None = None) -> Iterator[tuple[ContextSpec, dict]]:
    for entry in doc["contexts"]:
        if protocols is not None and entry["protocol"] not in protocols:
            continue
        yield ContextSpec(entry["protocol"], entry["family"], entry["budget"], entry["seed"]), entry
