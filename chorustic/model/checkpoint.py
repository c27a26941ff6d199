"""Checkpoints: our own format, resolution of checkpoint specs, and one loader for every format.

Our format (:func:`save_checkpoint` / :func:`load_checkpoint`) is a single ``.safetensors`` file: the
state dict, plus metadata ``chorustic_format`` (version), ``config`` (JSON of :class:`ChorusTICConfig`)
and ``provenance`` (JSON: git commit, creation date, versions, parameter counts, and whatever training
information the caller passes). It is written atomically (temp file + rename) and holds no pickle.

:func:`resolve_checkpoint` turns a spec into a local file: a path, or ``hf://OWNER/REPO/FILE``
(optionally ``hf://OWNER/REPO@REVISION/FILE``) through huggingface_hub's cache. With
``HF_HUB_OFFLINE=1`` or no network and nothing cached, :class:`CheckpointNotFoundError` says which
file is missing and where to put it.

:func:`load_model` loads any supported file: our format, or the released ``ChorusTIC.ckpt``
(:func:`chorustic.model.official.load_official_checkpoint`).
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

from chorustic.io import atomic_write_bytes, sha256_file
from chorustic.model.config import ChorusTICConfig
from chorustic.paths import REPO_ROOT

__all__ = [
    "DEFAULT_CHECKPOINT",
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "CheckpointNotFoundError",
    "is_chorustic_checkpoint",
    "load_checkpoint",
    "load_model",
    "parse_hf_spec",
    "read_checkpoint_metadata",
    "resolve_checkpoint",
    "save_checkpoint",
]

FORMAT_NAME = "chorustic-checkpoint"
FORMAT_VERSION = "1"
#: The released checkpoint (paper model, step 6000).
DEFAULT_CHECKPOINT = "hf://JTF2000/ChorusTIC/ChorusTIC.ckpt"
DEFAULT_HPARAMS = "hf://JTF2000/ChorusTIC/model_hparams_latest.json"


class CheckpointNotFoundError(FileNotFoundError):
    """The checkpoint is neither on disk nor downloadable; the message says what to do."""


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


def save_checkpoint(path: str | os.PathLike, model, *, provenance: dict[str, Any] | None = None) -> Path:
    """Write ``model`` (weights + config + provenance) to ``path`` (``.safetensors``) atomically."""
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


def load_checkpoint(path: str | os.PathLike, map_location: str | torch.device = "cpu"):
    """Load one of our checkpoints (strict); returns the model in eval mode, ``.provenance`` set."""
    from safetensors.torch import load_file

    from chorustic.model.chorustic import ChorusTIC
    from chorustic.model.official import CheckpointError

    path = resolve_checkpoint(path)
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
        from chorustic.model.official import _mismatch_error

        raise _mismatch_error(str(path), missing, unexpected, shapes)
    model.load_state_dict(state, strict=True)
    model.to(map_location)
    model.eval()
    model.provenance = {**meta["provenance"], "format": FORMAT_NAME, "source": str(path)}
    return model


# ----------------------------------------------------------------------------- resolution
def parse_hf_spec(spec: str) -> tuple[str, str, str | None]:
    """``hf://OWNER/REPO[@REV]/PATH/IN/REPO`` -> ``(repo_id, filename, revision)``."""
    if not spec.startswith("hf://"):
        raise ValueError(f"not an hf:// spec: {spec!r}")
    parts = spec[len("hf://") :].split("/")
    if len(parts) < 3 or not all(parts):
        raise ValueError(f"hf:// spec must be hf://OWNER/REPO/FILE, got {spec!r}")
    owner, repo = parts[0], parts[1]
    revision = None
    if "@" in repo:
        repo, revision = repo.split("@", 1)
    return f"{owner}/{repo}", "/".join(parts[2:]), revision


def _offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "0").strip().lower() in ("1", "true", "yes", "on")


def resolve_checkpoint(
    spec: str | os.PathLike,
    *,
    local_files_only: bool | None = None,
    cache_dir: str | os.PathLike | None = None,
    endpoint: str | None = None,
) -> Path:
    """A local path for ``spec``: an existing file, or an ``hf://`` file from the Hugging Face cache
    (downloaded unless offline). Raises :class:`CheckpointNotFoundError` with instructions otherwise."""
    text = os.fspath(spec)
    if not text.startswith("hf://"):
        path = Path(text).expanduser()
        if path.is_file():
            return path
        raise CheckpointNotFoundError(
            f"checkpoint file {path} does not exist; put the file there or pass another path "
            f"(the released weights: {DEFAULT_CHECKPOINT}, fetched with `chorustic fetch-weights chorustic`)"
        )
    repo_id, filename, revision = parse_hf_spec(text)
    offline = _offline() if local_files_only is None else local_files_only
    try:
        from huggingface_hub import hf_hub_download

        got = hf_hub_download(
            repo_id=repo_id,
            filename=filename,
            revision=revision,
            cache_dir=cache_dir,
            local_files_only=offline,
            endpoint=endpoint,
        )
        return Path(got)
    except Exception as exc:  # offline, no network, missing file, auth: all end in the same advice
        from huggingface_hub import constants

        where = Path(cache_dir) if cache_dir else Path(constants.HF_HUB_CACHE)
        reason = (
            "HF_HUB_OFFLINE is set and the file is not cached" if offline else f"{type(exc).__name__}: {exc}"
        )
        raise CheckpointNotFoundError(
            f"cannot get {filename} of the Hugging Face repository {repo_id} ({reason}).\n"
            f"  Either download it on a connected machine: `hf download {repo_id} {filename}` "
            f"(or `chorustic fetch-weights chorustic`) and copy the Hugging Face cache {where} to this machine,\n"
            f"  or place the file anywhere (e.g. models/{repo_id.split('/')[-1]}/{filename}) and pass that path "
            f"as the checkpoint."
        ) from exc


def _check_safetensors_readable(path: Path) -> None:
    """A damaged ``.safetensors`` file (random bytes, truncated) is an error naming the file and the fix."""
    from safetensors import safe_open

    from chorustic.model.official import CheckpointError

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
    """Load a ChorusTIC from any supported checkpoint (our format or the released format)."""
    from chorustic.model.official import load_official_checkpoint

    path = resolve_checkpoint(spec)
    if path.suffix == ".safetensors":
        _check_safetensors_readable(path)
    if path.suffix == ".safetensors" and is_chorustic_checkpoint(path):
        model = load_checkpoint(path, map_location=map_location)
    else:
        model = load_official_checkpoint(path, hparams_json, map_location=map_location)
    model.provenance.setdefault("sha256", sha256_file(path))
    return model
