"""Checkpoints: our own format, and one loader for every format.

Our format (:func:`save_checkpoint` / :func:`load_checkpoint_file`) is a single ``.safetensors`` file: the
state dict, plus metadata ``chorustic_format`` (version), ``config`` (JSON of :class:`ChorusTICConfig`)
and ``provenance`` (JSON: git commit, creation date, versions, parameter counts, and whatever training
information the caller passes). It is written atomically (temp file + rename) and holds no pickle.

A checkpoint *spec* (a local path or ``hf://OWNER/REPO[@REVISION]/FILE``) becomes a local file in one
place, :func:`chorustic.hub.resolve_checkpoint` (re-exported here); with ``HF_HUB_OFFLINE=1`` or no
network and nothing cached, :class:`CheckpointNotFoundError` says which file is missing and where to put it.
The loaders take local files: :func:`load_model_file` reads either format (ours, or the released
``ChorusTIC.ckpt`` through :func:`chorustic.model.official.load_official_file`). :func:`load_model` and
:func:`load_checkpoint` are the convenience doors that resolve a spec first.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import subprocess
from pathlib import Path
from typing import Any

import torch

from chorustic.hub import (  # noqa: F401 - DEFAULT_*: the released checkpoint, named here too
    DEFAULT_CHECKPOINT,
    DEFAULT_HPARAMS,
    CheckpointNotFoundError,
    parse_hf_spec,
    resolve_checkpoint,
)
from chorustic.io import atomic_write_bytes, sha256_file
from chorustic.model.config import ChorusTICConfig
from chorustic.model.official import CheckpointError, _mismatch_error, load_official_file
from chorustic.paths import REPO_ROOT

__all__ = [
    "DEFAULT_CHECKPOINT",
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "CheckpointNotFoundError",
    "is_chorustic_checkpoint",
    "load_checkpoint",
    "load_checkpoint_file",
    "load_model",
    "load_model_file",
    "parse_hf_spec",
    "read_checkpoint_metadata",
    "resolve_checkpoint",
    "save_checkpoint",
]

FORMAT_NAME = "chorustic-checkpoint"
FORMAT_VERSION = "1"


# ----------------------------------------------------------------------------- our format
def _git_info() -> dict[str, Any]:
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()
        dirty = bool(
            subprocess.run(
                ["git", "status", "--porcelain", "--untracked-files=no"],
                cwd=REPO_ROOT,
                capture_output=True,
                text=True,
                timeout=10,
                check=False,
            ).stdout.strip()
        )
        return {"git_commit": commit, "git_dirty": dirty}
    except (OSError, subprocess.SubprocessError):
        return {"git_commit": None, "git_dirty": None}


def save_checkpoint(path: str | os.PathLike, model, *, provenance: dict[str, Any] | None = None,
                    dtype: torch.dtype | None = None) -> Path:
    """Write ``model`` (weights + config + provenance) to ``path`` (``.safetensors``) atomically.

    ``dtype`` (e.g. ``torch.float16``): store the floating-point tensors in that precision (half the
    file); loading casts them back to the model's float32 parameters."""
    from safetensors.torch import save

    import chorustic

    path = Path(path)
    counts = model.parameter_counts()
    prov: dict[str, Any] = {
        "created_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "chorustic_version": chorustic.__version__,
        "torch_version": torch.__version__,
        "python_version": platform.python_version(),
        **_git_info(),
        "parameters": counts,
    }
    prov.update(provenance or {})
    tensors = {k: v.detach().to("cpu").contiguous() for k, v in model.state_dict().items()}
    if dtype is not None:
        tensors = {k: v.to(dtype) if v.is_floating_point() else v for k, v in tensors.items()}
        prov["stored_dtype"] = str(dtype).replace("torch.", "")
    meta = {
        "chorustic_format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "config": json.dumps(model.config.to_dict()),
        "provenance": json.dumps(prov, default=str),
    }
    atomic_write_bytes(path, save(tensors, metadata=meta))
    return path


def read_checkpoint_metadata(path: str | os.PathLike) -> dict[str, Any]:
    """``{"config": dict, "provenance": dict, "format_version": str}`` of one of our checkpoints."""
    from safetensors import safe_open

    path = Path(path)
    try:
        with safe_open(str(path), "pt") as f:
            meta = f.metadata() or {}
    except Exception as exc:
        raise ValueError(f"{path} is not a ChorusTIC checkpoint of this project ({exc})") from exc
    if meta.get("chorustic_format") != FORMAT_NAME:
        raise ValueError(
            f"{path} is a safetensors file but not a ChorusTIC checkpoint of this project (no "
            f"'chorustic_format' metadata); for the released weights use load_official_checkpoint"
        )
    return {
        "format_version": meta.get("format_version"),
        "config": json.loads(meta["config"]),
        "provenance": json.loads(meta.get("provenance", "{}")),
    }


def is_chorustic_checkpoint(path: str | os.PathLike) -> bool:
    try:
        read_checkpoint_metadata(path)
        return True
    except (ValueError, OSError):
        return False


def load_checkpoint(spec: str | os.PathLike, map_location: str | torch.device = "cpu"):
    """Load one of our checkpoints from a path or an ``hf://`` spec (resolved here); see :func:`load_checkpoint_file`."""
    return load_checkpoint_file(resolve_checkpoint(spec), map_location=map_location)


def load_checkpoint_file(path: Path, map_location: str | torch.device = "cpu"):
    """Load one of our checkpoints from a local file (strict); returns the model in eval mode, ``.provenance`` set."""
    from safetensors.torch import load_file

    from chorustic.model.chorustic import ChorusTIC

    path = Path(path)
    meta = read_checkpoint_metadata(path)
    if meta["format_version"] != FORMAT_VERSION:
        raise CheckpointError(
            f"{path}: checkpoint format version {meta['format_version']} is not supported "
            f"(this package reads version {FORMAT_VERSION})"
        )
    model = ChorusTIC(ChorusTICConfig.from_dict(meta["config"]))
    state = load_file(str(path))
    own = model.state_dict()
    missing = sorted(set(own) - set(state))
    unexpected = sorted(set(state) - set(own))
    shapes = [
        (k, tuple(state[k].shape), tuple(own[k].shape))
        for k in sorted(set(own) & set(state))
        if tuple(state[k].shape) != tuple(own[k].shape)
    ]
    if missing or unexpected or shapes:
        raise _mismatch_error(str(path), missing, unexpected, shapes,
                              "the configuration recorded in the file does not match its weights (another version "
                              "of chorustic wrote it, or it was edited): re-make it with its pretrain step")
    model.load_state_dict(state, strict=True)
    model.to(map_location)
    model.eval()
    model.provenance = {**meta["provenance"], "format": FORMAT_NAME, "source": str(path)}
    return model


def _check_safetensors_readable(path: Path) -> None:
    """A damaged ``.safetensors`` file (random bytes, truncated) is an error naming the file and the fix."""
    from safetensors import safe_open

    try:
        with safe_open(str(path), "pt") as f:
            f.metadata()
    except Exception as exc:  # SafetensorError and friends: the header cannot be read
        size = path.stat().st_size if path.exists() else 0
        raise CheckpointError(
            f"the checkpoint {path} ({size} bytes) is not a readable safetensors file ({exc}): it is damaged or "
            "truncated. Replace it: copy it again from where it came from, or delete it and re-run its pretrain "
            "step (`snakemake` re-makes a pretrained checkpoint that is missing)."
        ) from None


def load_model(
    spec: str | os.PathLike,
    hparams_json: str | os.PathLike | dict | None = None,
    map_location: str | torch.device = "cpu",
):
    """Load a ChorusTIC from any supported checkpoint (our format or the released format): ``spec`` and
    ``hparams_json`` (a path, an ``hf://`` spec or a dict) are resolved here, then :func:`load_model_file`."""
    if isinstance(hparams_json, (str, os.PathLike)):
        hparams_json = resolve_checkpoint(hparams_json)
    return load_model_file(resolve_checkpoint(spec), hparams_json, map_location=map_location)


def load_model_file(
    path: Path, hparams: Path | dict | None = None, map_location: str | torch.device = "cpu"
):
    """Load a ChorusTIC from a local checkpoint file of either format (nothing is resolved here).

    ``hparams``: the released format's ``model_hparams_latest.json`` as a local file or a dict (default:
    found next to the checkpoint)."""
    path = Path(path)
    if path.suffix == ".safetensors":
        _check_safetensors_readable(path)
    if path.suffix == ".safetensors" and is_chorustic_checkpoint(path):
        model = load_checkpoint_file(path, map_location=map_location)
    else:
        model = load_official_file(path, hparams, map_location=map_location)
    model.provenance.setdefault("sha256", sha256_file(path))
    return model
