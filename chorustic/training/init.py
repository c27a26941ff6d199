"""Initializing parts of a model before pretraining.

* :func:`init_from_checkpoint`: copy chosen stages from any checkpoint :func:`chorustic.model.load_model`
  reads (our format, or the released ``ChorusTIC.ckpt`` through the official key map), e.g. only the
  signal encoder of the released model.
* :func:`init_task_level_from_tabicl`: the task level (column, row and ICL stages) from a TabICL v1/v1.1
  checkpoint (``tabicl-classifier-v1.1-0506.ckpt``), through the model package's loader.
"""

from __future__ import annotations

from typing import Any, Iterable

__all__ = ["PARTS", "PART_GROUPS", "expand_parts", "init_from_checkpoint", "init_task_level_from_tabicl"]

#: The model's stages (child modules / state-dict prefixes).
PARTS = ("signal_encoder", "rssc", "column_distribution_modeling", "row_interaction", "icl")
PART_GROUPS = {
    "all": PARTS,
    "signal": ("signal_encoder", "rssc"),
    "encoder": ("signal_encoder",),
    "task": ("column_distribution_modeling", "row_interaction", "icl"),
}


def expand_parts(parts: Iterable[str]) -> tuple[str, ...]:
    out: list[str] = []
    for p in parts:
        names = PART_GROUPS.get(p, (p,))
        for n in names:
            if n not in PARTS:
                raise ValueError(f"unknown model part {p!r}; use one of {list(PARTS) + list(PART_GROUPS)}")
            if n not in out:
                out.append(n)
    return tuple(out)


def init_from_checkpoint(model, spec: str, parts: Iterable[str] = ("all",), hparams_json: Any = None) -> dict:
    """Copy the weights of ``parts`` from the checkpoint ``spec`` into ``model`` (shapes must match)."""
    from chorustic.model import load_model

    src = load_model(spec, hparams_json)
    names = expand_parts(parts)
    problems = []
    for name in names:
        dst_sd = getattr(model, name).state_dict()
        src_sd = getattr(src, name).state_dict()
        missing = sorted(set(dst_sd) - set(src_sd))
        unexpected = sorted(set(src_sd) - set(dst_sd))
        shapes = [f"{name}.{k}: checkpoint {tuple(src_sd[k].shape)} vs model {tuple(dst_sd[k].shape)}"
                  for k in sorted(set(dst_sd) & set(src_sd)) if src_sd[k].shape != dst_sd[k].shape]
        if missing or unexpected or shapes:
            problems.append(f"part {name}: missing {missing[:5]}, unexpected {unexpected[:5]}, shapes {shapes[:5]}")
    if problems:
        raise ValueError(f"cannot initialize from {spec}: the checkpoint's architecture differs from the "
                         f"model's for the requested parts:\n  " + "\n  ".join(problems))
    for name in names:
        getattr(model, name).load_state_dict(getattr(src, name).state_dict(), strict=True)
    return {"source": str(spec), "parts": list(names), "source_provenance": dict(src.provenance)}


def init_task_level_from_tabicl(model, path: str) -> dict:
    from chorustic.model import load_task_level_from_tabicl

    info = load_task_level_from_tabicl(model, path)
    return {"source": str(path), "parts": ["column_distribution_modeling", "row_interaction", "icl"],
            "tabicl": info}
