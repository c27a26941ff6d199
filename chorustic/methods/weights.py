"""Where a method's pretrained weights and third-party code come from, and how they are fetched.

Two kinds of external inputs, each resolved the same way by every plugin:

* **Hugging Face files** (:class:`HubFile`): a local path given in the config wins (a file, or a
  folder holding the files); otherwise the file must already be in the Hugging Face hub cache
  (``$HF_HUB_CACHE``, default ``~/.cache/huggingface/hub``). Resolution never touches the network:
  :func:`resolve_hub_files` only reads the cache, so ``HF_HUB_OFFLINE=1`` and machines without
  internet behave exactly like connected ones once the files are there. A missing file raises
  :class:`~chorustic.methods.base.MethodNotReady` naming the file, the cache folder it was looked
  for in, the URL to download it from, the config parameter that takes a local path, and the
  ``chorustic fetch-weights`` command. :func:`download_hub_files` (used by ``fetch_weights``) downloads
  into the cache and verifies each file against the digest the hub reports (SHA-256 for LFS files,
  the git blob id for small files).
* **Authors' checkouts** (UniShape, NuTime, TIC-FM publish code, not packages): a folder the user
  cloned, given in the config or found under :func:`default_checkout_root`. Never vendored here.
  :func:`resolve_checkout` checks the files a plugin needs; :func:`checkout_imports` imports the
  authors' modules from it without leaking their generic top-level package names (``models``,
  ``utils``, ``src``) into other plugins; :func:`clone_checkout` clones it (``fetch-weights``).

Loading helpers shared by plugins: :func:`load_torch_checkpoint` (safe ``weights_only`` loading with
an explicit fallback), :func:`load_state_dict_report` (counts loaded / skipped tensors for the run
log) and :func:`cached` (a small per-process cache so the 16 protocol contexts of one evaluation job
load a backbone once).
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from chorustic.methods.base import MethodNotReady

__all__ = [
    "HubFile",
    "WeightsVerificationError",
    "cached",
    "cached_hub_file",
    "checkout_imports",
    "clear_cache",
    "clone_checkout",
    "default_checkout_root",
    "download_hub_files",
    "file_matches_etag",
    "git_blob_sha1",
    "hub_cache_dir",
    "hub_offline",
    "hub_url",
    "load_state_dict_report",
    "load_torch_checkpoint",
    "resolve_checkout",
    "resolve_hub_files",
]

DEFAULT_ENDPOINT = "https://huggingface.co"


class WeightsVerificationError(MethodNotReady):
    """A downloaded file does not match the digest the hub reports for it."""


# --------------------------------------------------------------------------------------------------
# Hugging Face files
# --------------------------------------------------------------------------------------------------


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


def cached_hub_file(file: HubFile, cache_dir: str | os.PathLike | None = None) -> Path | None:
    """Path of ``file`` in the hub cache, or None. Never uses the network."""
    from huggingface_hub import try_to_load_from_cache

    found = try_to_load_from_cache(
        repo_id=file.repo_id,
        filename=file.filename,
        revision=file.revision,
        cache_dir=str(hub_cache_dir(cache_dir)),
    )
    if isinstance(found, str) and Path(found).is_file():
        return Path(found)
    return None


def _fix_text(label: str, files: Sequence[HubFile], param: str, fetch_name: str, cache: Path) -> str:
    urls = "; ".join(f.url() for f in files)
    repo = files[0].repo_id
    where = "a folder holding them" if len(files) > 1 else "its path (or a folder holding it)"
    return (
        f"Fix: on a machine with internet access run `chorustic fetch-weights {fetch_name}` (it downloads "
        f"into the Hugging Face cache {cache}; copy the folder models--{repo.replace('/', '--')} into the "
        f"same cache folder here, or point HF_HUB_CACHE at a copy), or download {urls} and set "
        f"`params: {{{param}: <{where}>}}` for {fetch_name} in the config."
    )


def resolve_hub_files(
    label: str,
    files: Sequence[HubFile],
    *,
    local: str | os.PathLike | None = None,
    param: str = "weights",
    fetch_name: str | None = None,
    cache_dir: str | os.PathLike | None = None,
) -> dict[str, Path]:
    """Locate ``files`` without touching the network; return ``filename -> path`` (optional files
    that are missing are left out).

    ``local`` (the value of the config parameter ``param``) is a folder holding the files, or, when
    exactly one file is required, that file itself. Without ``local`` the Hugging Face cache is used.
    ``label`` names the method in messages (``"MOMENT+SVM (moment_svm)"``); ``fetch_name`` is the
    method name for ``chorustic fetch-weights``.
    """
    fetch_name = fetch_name or label
    required = [f for f in files if f.required]
    found: dict[str, Path] = {}
    if local is not None and str(local) != "":
        path = Path(local).expanduser()
        if path.is_dir():
            for f in files:
                candidate = path / f.filename
                if candidate.is_file():
                    found[f.filename] = candidate
            missing = [f for f in required if f.filename not in found]
            if missing:
                raise MethodNotReady(
                    f"{label}: the folder given by `{param}` ({path}) lacks "
                    f"{', '.join(repr(f.filename) for f in missing)} of Hugging Face model "
                    f"'{missing[0].repo_id}'. Put the file(s) there (download "
                    f"{'; '.join(f.url() for f in missing)}) or point `{param}` at the right folder."
                )
            return found
        if path.is_file():
            if len(required) != 1:
                raise MethodNotReady(
                    f"{label}: `{param}` is the file {path}, but this method needs the files "
                    f"{', '.join(repr(f.filename) for f in required)}; set `{param}` to a folder holding them."
                )
            found[required[0].filename] = path
            return found
        raise MethodNotReady(
            f"{label}: the path given by `{param}` does not exist: {path}. "
            f"Download {'; '.join(f.url() for f in required)} there, or remove `{param}` from the "
            f"config to use the Hugging Face cache ({hub_cache_dir(cache_dir)})."
        )
    cache = hub_cache_dir(cache_dir)
    for f in files:
        p = cached_hub_file(f, cache)
        if p is not None:
            found[f.filename] = p
    missing = [f for f in required if f.filename not in found]
    if missing:
        offline = " (HF_HUB_OFFLINE is set, so nothing is downloaded)" if hub_offline() else ""
        raise MethodNotReady(
            f"{label}: {', '.join(repr(f.filename) for f in missing)} of Hugging Face model "
            f"'{missing[0].repo_id}' (revision {missing[0].revision}): not found in the Hugging Face cache "
            f"{cache}{offline}. " + _fix_text(label, missing, param, fetch_name, cache)
        )
    return found


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


def download_hub_files(
    label: str,
    files: Sequence[HubFile],
    *,
    fetch_name: str | None = None,
    param: str = "weights",
    endpoint: str | None = None,
    cache_dir: str | os.PathLike | None = None,
    token: str | bool | None = None,
    verify: bool = True,
    log: Callable[[str], None] | None = None,
) -> dict[str, Path]:
    """Download ``files`` into the hub cache (what ``chorustic fetch-weights`` does) and verify them.

    Files already in the cache are verified, not downloaded again. A network failure or
    ``HF_HUB_OFFLINE=1`` raises :class:`MethodNotReady` with the manual fix; a digest mismatch deletes
    the cached copy and raises :class:`WeightsVerificationError`.
    """
    from huggingface_hub import get_hf_file_metadata, hf_hub_download
    from huggingface_hub.errors import EntryNotFoundError, LocalEntryNotFoundError

    log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
    fetch_name = fetch_name or label
    cache = hub_cache_dir(cache_dir)
    endpoint = endpoint or os.environ.get("HF_ENDPOINT") or None  # read now, not at import time
    if hub_offline():
        missing = [f for f in files if f.required and cached_hub_file(f, cache) is None]
        if missing:
            raise MethodNotReady(
                f"{label}: HF_HUB_OFFLINE is set, so {', '.join(repr(f.filename) for f in missing)} cannot be "
                f"downloaded. " + _fix_text(label, missing, param, fetch_name, cache)
            )
    out: dict[str, Path] = {}
    for f in files:
        try:
            if hub_offline():
                p = cached_hub_file(f, cache)
                if p is None:
                    continue  # optional and absent
                out[f.filename] = p
                log(
                    f"{label}: {f.repo_id}/{f.filename} found in the cache (offline, not verified against the hub)"
                )
                continue
            path = Path(
                hf_hub_download(
                    repo_id=f.repo_id,
                    filename=f.filename,
                    revision=f.revision,
                    cache_dir=str(cache),
                    endpoint=endpoint,
                    token=token,
                )
            )
        except EntryNotFoundError as exc:
            if isinstance(exc, LocalEntryNotFoundError):  # the hub could not be reached
                raise MethodNotReady(
                    f"{label}: downloading '{f.filename}' of Hugging Face model '{f.repo_id}' failed: the hub "
                    f"({endpoint or 'https://huggingface.co'}) could not be reached and the file is not cached. "
                    + _fix_text(label, [f], param, fetch_name, cache)
                ) from exc
            if f.required:
                raise MethodNotReady(
                    f"{label}: Hugging Face model '{f.repo_id}' (revision {f.revision}) has no file "
                    f"'{f.filename}'; the repository layout changed. Download the checkpoint by hand and set "
                    f"`{param}` in the config."
                ) from None
            log(f"{label}: optional file {f.repo_id}/{f.filename} does not exist on the hub; skipped")
            continue
        except MethodNotReady:
            raise
        except Exception as exc:  # network errors, gated repos, timeouts
            raise MethodNotReady(
                f"{label}: downloading '{f.filename}' of Hugging Face model '{f.repo_id}' failed "
                f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}). "
                + _fix_text(label, [f], param, fetch_name, cache)
            ) from exc
        if verify:
            meta = get_hf_file_metadata(f.url(endpoint), token=token)
            ok = file_matches_etag(path, meta.etag)
            if ok is False:
                blob = path.resolve()  # the cache links snapshots/<commit>/<file> to blobs/<etag>
                for p in (path, blob):
                    with contextlib.suppress(OSError):
                        p.unlink()
                raise WeightsVerificationError(
                    f"{label}: {f.repo_id}/{f.filename} in the cache ({path}) does not match the digest the "
                    f"hub reports ({meta.etag}); the corrupt copy was deleted. Run `chorustic fetch-weights "
                    f"{fetch_name}` again."
                )
            state = "verified" if ok else "downloaded (the hub reports no comparable digest)"
            log(f"{label}: {f.repo_id}/{f.filename}@{(meta.commit_hash or f.revision)[:12]} {state}: {path}")
        out[f.filename] = path
    return out


# --------------------------------------------------------------------------------------------------
# Authors' checkouts
# --------------------------------------------------------------------------------------------------


def default_checkout_root() -> Path:
    """``$CHORUSTIC_CHECKOUTS`` or ``~/.cache/chorustic/checkouts``: where ``fetch-weights`` clones code."""
    env = os.environ.get("CHORUSTIC_CHECKOUTS")
    if env:
        return Path(env).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME", "~/.cache")).expanduser() / "chorustic" / "checkouts"


def resolve_checkout(
    label: str,
    path: str | os.PathLike | None,
    *,
    default_name: str,
    required: Iterable[str],
    repo_url: str,
    param: str = "checkout",
    fetch_name: str | None = None,
) -> Path:
    """The authors' checkout folder for a plugin; :class:`MethodNotReady` if it is missing or incomplete.

    ``path`` is the config parameter; when None, ``default_checkout_root()/default_name`` is used.
    ``required`` lists files (relative to the checkout) the plugin imports.
    """
    fetch_name = fetch_name or label
    root = Path(path).expanduser() if path not in (None, "") else default_checkout_root() / default_name
    if not root.is_dir():
        raise MethodNotReady(
            f"{label}: no checkout of the authors' code at {root}. Fix: `git clone {repo_url} {root}` "
            f"(or run `chorustic fetch-weights {fetch_name}` on a connected machine), or set "
            f"`params: {{{param}: <path of your clone>}}` for {fetch_name} in the config."
        )
    missing = [r for r in required if not (root / r).exists()]
    if missing:
        raise MethodNotReady(
            f"{label}: the folder {root} is not a checkout of {repo_url}: it lacks {', '.join(missing)}. "
            f"Point `{param}` at a clone of {repo_url}."
        )
    return root


def clone_checkout(
    repo_url: str,
    dest: str | os.PathLike,
    *,
    revision: str | None = None,
    log: Callable[[str], None] | None = None,
) -> Path:
    """``git clone`` ``repo_url`` into ``dest`` (cloned next to it, then renamed: never half-written)."""
    log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
    dest = Path(dest).expanduser()
    if dest.exists():
        log(f"checkout {dest} exists; not cloned again")
        return dest
    git = shutil.which("git")
    if git is None:
        raise MethodNotReady(f"`git` is not installed; clone {repo_url} into {dest} by hand.")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    try:
        cmd = [git, "clone", "--quiet", repo_url, str(tmp / "repo")]
        subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=1800)
        if revision:
            subprocess.run(
                [git, "-C", str(tmp / "repo"), "checkout", "--quiet", revision],
                check=True,
                capture_output=True,
                text=True,
                timeout=600,
            )
        os.replace(tmp / "repo", dest)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as exc:
        detail = getattr(exc, "stderr", "") or str(exc)
        raise MethodNotReady(f"cloning {repo_url} into {dest} failed: {detail.strip()[:500]}") from exc
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    log(f"cloned {repo_url} into {dest}")
    return dest


_IMPORT_LOCK = threading.RLock()


@contextlib.contextmanager
def checkout_imports(root: str | os.PathLike, top_level: Sequence[str], *, label: str = "") -> Iterator[None]:
    """Import the authors' modules from ``root`` inside this block.

    ``root`` is put first on ``sys.path``; modules under the generic top-level names ``top_level``
    (for example ``("models", "utils")``) that another checkout imported earlier are set aside, and the
    ones imported here are removed from ``sys.modules`` afterwards (the objects obtained inside the
    block keep working). An ImportError names the checkout and the missing dependency.
    """
    root = str(Path(root).resolve())

    def owned(name: str) -> bool:
        return any(name == t or name.startswith(t + ".") for t in top_level)

    with _IMPORT_LOCK:
        saved = {k: v for k, v in sys.modules.items() if owned(k)}
        for k in saved:
            del sys.modules[k]
        sys.path.insert(0, root)
        try:
            yield
        except ModuleNotFoundError as exc:
            missing = exc.name or str(exc)
            raise MethodNotReady(
                f"{label + ': ' if label else ''}importing the authors' code from {root} needs the Python package "
                f"{missing!r}, which is not installed. Install it into this environment (see the checkout's "
                f"requirements) or use the method's conda environment (workflow/envs/)."
            ) from exc
        finally:
            with contextlib.suppress(ValueError):
                sys.path.remove(root)
            for k in [k for k in sys.modules if owned(k)]:
                del sys.modules[k]
            sys.modules.update(saved)


# --------------------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------------------


def load_torch_checkpoint(path: str | os.PathLike, *, label: str = "", allow_pickle: bool = True) -> Any:
    """``torch.load`` on CPU, first with ``weights_only=True``.

    Some authors' checkpoints pickle Python objects (an argparse namespace, numpy scalars); those
    only load with ``weights_only=False``, which runs code from the file. That fallback is used when
    ``allow_pickle`` is True (checkpoints from the authors' releases) and warns.
    """
    import pickle

    import torch

    path = Path(path)
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, AttributeError, TypeError) as exc:
        first = exc
    except (EOFError, OSError) as exc:
        raise MethodNotReady(f"{label + ': ' if label else ''}cannot read checkpoint {path}: {exc}") from exc
    if not allow_pickle:
        raise MethodNotReady(
            f"{label + ': ' if label else ''}{path} is not a plain tensor checkpoint ({first}); it needs "
            f"weights_only=False loading, which is disabled (allow_pickle=False)."
        )
    warnings.warn(
        f"{label + ': ' if label else ''}{path} contains pickled objects; loading it with "
        f"weights_only=False (only use checkpoints from trusted sources)",
        stacklevel=2,
    )
    try:
        return torch.load(path, map_location="cpu", weights_only=False)
    except Exception as exc:
        raise MethodNotReady(
            f"{label + ': ' if label else ''}{path} is not a PyTorch checkpoint: {exc}"
        ) from exc


def load_state_dict_report(module: Any, state_dict: Mapping[str, Any]) -> dict[str, Any]:
    """Load the tensors of ``state_dict`` whose names and shapes match ``module``; report the rest.

    Returns counts and (truncated) name lists of loaded, unexpected, shape-mismatched and missing
    tensors; plugins put this report into ``run_info_`` so every result records what was loaded.
    """
    own = module.state_dict()
    usable, shape_mismatch, unexpected = {}, [], []
    for k, v in state_dict.items():
        if k not in own:
            unexpected.append(k)
        elif tuple(getattr(v, "shape", ())) != tuple(own[k].shape):
            shape_mismatch.append(f"{k} {tuple(v.shape)} != {tuple(own[k].shape)}")
        else:
            usable[k] = v
    module.load_state_dict(usable, strict=False)
    missing = [k for k in own if k not in usable]
    return {
        "tensors_loaded": len(usable),
        "tensors_in_checkpoint": len(state_dict),
        "tensors_skipped_unexpected": len(unexpected),
        "tensors_skipped_shape": len(shape_mismatch),
        "tensors_missing": len(missing),
        "skipped_unexpected": unexpected[:20],
        "skipped_shape": shape_mismatch[:20],
        "missing": missing[:20],
    }


_CACHE: collections.OrderedDict[Any, Any] = collections.OrderedDict()
_CACHE_LOCK = threading.Lock()
_CACHE_SIZE = 2


def cached(key: Any, loader: Callable[[], Any]) -> Any:
    """Return ``loader()``, memoised per process for the last two distinct ``key``s.

    One evaluation job fits a method on every protocol context of a dataset (16 in the paper
    profile); backbones (read-only, eval mode) are loaded once. Keys include the weights' path and
    modification time, so a replaced file is loaded again.
    """
    with _CACHE_LOCK:
        if key in _CACHE:
            _CACHE.move_to_end(key)
            return _CACHE[key]
    value = loader()
    with _CACHE_LOCK:
        _CACHE[key] = value
        _CACHE.move_to_end(key)
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return value


def clear_cache() -> None:
    with _CACHE_LOCK:
        _CACHE.clear()


def file_key(path: str | os.PathLike) -> tuple[str, int, int]:
    """(resolved path, size, mtime_ns): a cache key that changes when the file is replaced."""
    p = Path(path).resolve()
    st = p.stat()
    return (str(p), st.st_size, st.st_mtime_ns)


__all__.append("file_key")
