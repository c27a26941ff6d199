"""Hugging Face files: the one resolver of ``hf://`` specs and hub files, for the model and the methods.

* :class:`HubFile` names one file of a model repository (``hf://OWNER/REPO[@REVISION]/PATH`` as a
  spec: :meth:`HubFile.parse`).
* :func:`fetch_hub_file` is the only function that turns a hub file into a local path: from the
  Hugging Face cache (``$HF_HUB_CACHE``, ``$HF_HOME/hub`` or ``~/.cache/huggingface/hub``, read when
  called), downloaded into it only when asked (through ``huggingface_hub``; never with
  ``HF_HUB_OFFLINE=1``). :func:`cached_hub_file` is its cache-only form.
* :func:`resolve_checkpoint` turns a checkpoint spec (a local path or an ``hf://`` spec) into a local
  file, with :class:`CheckpointNotFoundError` saying what to do when it cannot.
* :func:`file_matches_etag` compares a file with the digest the hub reports (SHA-256 for LFS files, the
  git blob id for small files).

The methods' messages (which config parameter takes a local path, the ``fetch-weights`` command) are
added on top in :mod:`chorustic.methods.weights`; the model's loaders in :mod:`chorustic.model`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from pathlib import Path

__all__ = [
    "DEFAULT_CHECKPOINT",
    "DEFAULT_ENDPOINT",
    "DEFAULT_HPARAMS",
    "CheckpointNotFoundError",
    "HubFile",
    "HubFileNotFound",
    "cached_hub_file",
    "fetch_hub_file",
    "file_matches_etag",
    "git_blob_sha1",
    "hub_cache_dir",
    "hub_offline",
    "hub_url",
    "parse_hf_spec",
    "resolve_checkpoint",
]

#: The released checkpoint (paper model, step 6000) and its hyper-parameters, as hub specs.
DEFAULT_CHECKPOINT = "hf://JTF2000/ChorusTIC/ChorusTIC.ckpt"
DEFAULT_HPARAMS = "hf://JTF2000/ChorusTIC/model_hparams_latest.json"

DEFAULT_ENDPOINT = "https://huggingface.co"


class HubFileNotFound(FileNotFoundError):
    """A hub file is neither in the cache nor downloadable (``reason`` says why)."""

    def __init__(self, file: HubFile, cache: Path, reason: str):
        super().__init__(f"{file.repo_id}/{file.filename}@{file.revision}: {reason}")
        self.file, self.cache, self.reason = file, cache, reason


class CheckpointNotFoundError(FileNotFoundError):
    """The checkpoint is neither on disk nor downloadable; the message says what to do."""


@dataclasses.dataclass(frozen=True)
class HubFile:
    """One file of a Hugging Face model repository."""

    repo_id: str
    filename: str
    revision: str = "main"
    required: bool = True
    """Optional files (e.g. a ``config.json`` some repositories lack) never make a method not ready."""

    def url(self, endpoint: str | None = None) -> str:
        return hub_url(self.repo_id, self.filename, self.revision, endpoint)

    @classmethod
    def parse(cls, spec: str) -> HubFile:
        """``hf://OWNER/REPO[@REVISION]/PATH/IN/REPO`` as a :class:`HubFile` (revision ``main`` by default)."""
        repo_id, filename, revision = parse_hf_spec(spec)
        return cls(repo_id, filename, revision or "main")


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


def hub_url(repo_id: str, filename: str, revision: str = "main", endpoint: str | None = None) -> str:
    base = (endpoint or os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")
    return f"{base}/{repo_id}/resolve/{revision}/{filename}"


def hub_cache_dir(cache_dir: str | os.PathLike | None = None) -> Path:
    """The Hugging Face hub cache folder (``$HF_HUB_CACHE``, ``$HF_HOME/hub`` or ``~/.cache/huggingface/hub``)."""
    if cache_dir is not None:
        return Path(cache_dir).expanduser()
    env = os.environ.get("HF_HUB_CACHE") or os.environ.get("HUGGINGFACE_HUB_CACHE")
    if env:
        return Path(env).expanduser()
    home = os.environ.get("HF_HOME")
    if home:
        return Path(home).expanduser() / "hub"
    from huggingface_hub import constants

    return Path(constants.HF_HUB_CACHE).expanduser()


def hub_offline() -> bool:
    """True when ``HF_HUB_OFFLINE`` is set to a true value (read now, not at import time)."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in {"1", "true", "yes", "on"}


def fetch_hub_file(
    file: HubFile,
    *,
    download: bool,
    cache_dir: str | os.PathLike | None = None,
    endpoint: str | None = None,
    token: str | bool | None = None,
) -> Path:
    """The local path of ``file`` in the hub cache; downloaded into it when ``download`` (and not
    ``HF_HUB_OFFLINE``). Raises :class:`HubFileNotFound` (the cache folder and the reason), or
    ``huggingface_hub``'s ``EntryNotFoundError`` when the hub answers that the repository has no such file."""
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import EntryNotFoundError, LocalEntryNotFoundError

    cache = hub_cache_dir(cache_dir)
    local_only = not download or hub_offline()
    try:
        return Path(
            hf_hub_download(
                repo_id=file.repo_id,
                filename=file.filename,
                revision=file.revision,
                cache_dir=str(cache),
                local_files_only=local_only,
                endpoint=endpoint or os.environ.get("HF_ENDPOINT") or None,  # read now, not at import time
                token=token,
            )
        )
    except LocalEntryNotFoundError as exc:  # not cached, and the hub was not asked or not reached
        if local_only:
            why = "HF_HUB_OFFLINE is set and the file is not cached" if download else "not in the cache"
        else:
            why = f"the hub ({endpoint or DEFAULT_ENDPOINT}) could not be reached and the file is not cached"
        raise HubFileNotFound(file, cache, why) from exc
    except EntryNotFoundError:
        raise
    except Exception as exc:  # network errors, gated repositories, timeouts
        first = str(exc).splitlines()[0] if str(exc) else ""
        raise HubFileNotFound(file, cache, f"{type(exc).__name__}: {first}") from exc


def cached_hub_file(file: HubFile, cache_dir: str | os.PathLike | None = None) -> Path | None:
    """Path of ``file`` in the hub cache, or None. Never uses the network."""
    try:
        return fetch_hub_file(file, download=False, cache_dir=cache_dir)
    except (HubFileNotFound, OSError):
        return None
    except Exception:  # noqa: BLE001 - the hub's "no such entry": not cached either
        return None


def resolve_checkpoint(
    spec: str | os.PathLike,
    *,
    local_files_only: bool | None = None,
    cache_dir: str | os.PathLike | None = None,
    endpoint: str | None = None,
) -> Path:
    """A local path for ``spec``: an existing file, or an ``hf://`` file from the Hugging Face cache
    (downloaded unless ``local_files_only`` or offline). Raises :class:`CheckpointNotFoundError` with
    instructions otherwise."""
    text = os.fspath(spec)
    if not text.startswith("hf://"):
        path = Path(text).expanduser()
        if path.is_file():
            return path
        raise CheckpointNotFoundError(
            f"checkpoint file {path} does not exist; put the file there or pass another path "
            "(the released weights are fetched with `chorustic fetch-weights chorustic`)"
        )
    file = HubFile.parse(text)
    offline = hub_offline() if local_files_only is None else local_files_only
    try:
        return fetch_hub_file(file, download=not offline, cache_dir=cache_dir, endpoint=endpoint)
    except Exception as exc:  # not cached offline, no network, missing file, auth: all end in the same advice
        reason = (
            "HF_HUB_OFFLINE is set and the file is not cached" if offline else f"{type(exc).__name__}: {exc}"
        )
        where = hub_cache_dir(cache_dir)
        raise CheckpointNotFoundError(
            f"cannot get {file.filename} of the Hugging Face repository {file.repo_id} ({reason}).\n"
            f"  Either download it on a connected machine: `hf download {file.repo_id} {file.filename}` "
            f"(or `chorustic fetch-weights chorustic`) and copy the Hugging Face cache {where} to this machine,\n"
            f"  or place the file anywhere (e.g. models/{file.repo_id.split('/')[-1]}/{file.filename}) and pass "
            "that path as the checkpoint."
        ) from exc


def git_blob_sha1(path: str | os.PathLike) -> str:
    """The git object id of a file (what the hub reports for files not stored with LFS)."""
    size = os.path.getsize(path)
    h = hashlib.sha1(f"blob {size}\0".encode())
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def file_matches_etag(path: str | os.PathLike, etag: str | None) -> bool | None:
    """Compare a file with a hub ETag: SHA-256 (64 hex, LFS files) or git blob SHA-1 (40 hex).

    Returns None when the ETag has another form (nothing to compare against).
    """
    from chorustic.io import sha256_file

    if not etag:
        return None
    tag = etag.strip().strip('"')
    if tag.startswith("W/"):
        tag = tag[2:].strip('"')
    tag = tag.lower()
    if len(tag) == 64 and all(c in "0123456789abcdef" for c in tag):
        return sha256_file(path) == tag
    if len(tag) == 40 and all(c in "0123456789abcdef" for c in tag):
        return git_blob_sha1(path) == tag
    return None
