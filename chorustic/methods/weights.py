"""Where a method's pretrained weights and third-party code come from, and how they are fetched.

Two kinds of external inputs, each resolved the same way by every plugin:

* **Hugging Face files** (:class:`chorustic.hub.HubFile`, resolved by :mod:`chorustic.hub`, the one
  Hugging Face resolver of the package): a local path given in the config wins (a file, or a folder
  holding the files); otherwise the file must already be in the Hugging Face hub cache
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
  ``utils``, ``src``) into other plugins; :func:`clone_checkout` clones it (``fetch-weights``). The
  plugins built on such a checkout derive from :class:`chorustic.methods.checkout.CheckoutMethod`.

Loading helpers shared by plugins: :func:`load_torch_checkpoint` (safe ``weights_only`` loading with
an explicit fallback), :func:`load_state_dict_report` (counts loaded / skipped tensors for the run
log), :func:`cached` (a small per-process cache so the 16 protocol contexts of one evaluation job
load a backbone once) and :func:`file_key`.
"""

from __future__ import annotations

import abc
import collections
import contextlib
import os
import sys
import threading
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from chorustic.hub import (
    HubFile,
    HubFileNotFound,
    cached_hub_file,
    fetch_hub_file,
    file_matches_etag,
    hub_cache_dir,
    hub_offline,
)
from chorustic.methods.base import Method, MethodNotReady

__all__ = [
    "HubFile",
    "HubMethod",
    "WeightsVerificationError",
    "cached",
    "clear_cache",
    "download_hub_files",
    "file_key",
    "frozen",
    "load_state_dict_report",
    "load_torch_checkpoint",
    "resolve_hub_files",
]


class WeightsVerificationError(MethodNotReady):
    """A downloaded file does not match the digest the hub reports for it."""


# --------------------------------------------------------------------------------------------------
# Hugging Face files
# --------------------------------------------------------------------------------------------------


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
    from huggingface_hub import get_hf_file_metadata
    from huggingface_hub.errors import EntryNotFoundError

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
        if hub_offline():
            p = cached_hub_file(f, cache)
            if p is not None:  # else optional and absent
                out[f.filename] = p
                log(f"{label}: {f.repo_id}/{f.filename} found in the cache (offline, not verified against the hub)")
            continue
        try:
            path = fetch_hub_file(f, download=True, cache_dir=cache, endpoint=endpoint, token=token)
        except HubFileNotFound as exc:  # the hub could not be reached, or refused the request
            detail = (
                f": the hub ({endpoint or 'https://huggingface.co'}) could not be reached and the file is not cached"
                if isinstance(exc.__cause__, EntryNotFoundError)
                else f" ({exc.reason})"
            )
            raise MethodNotReady(
                f"{label}: downloading '{f.filename}' of Hugging Face model '{f.repo_id}' failed{detail}. "
                + _fix_text(label, [f], param, fetch_name, cache)
            ) from exc
        except EntryNotFoundError:
            if f.required:
                raise MethodNotReady(
                    f"{label}: Hugging Face model '{f.repo_id}' (revision {f.revision}) has no file "
                    f"'{f.filename}'; the repository layout changed. Download the checkpoint by hand and set "
                    f"`{param}` in the config."
                ) from None
            log(f"{label}: optional file {f.repo_id}/{f.filename} does not exist on the hub; skipped")
            continue
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


def frozen(module: Any, device: Any = None) -> Any:
    """``module`` in evaluation mode with every parameter frozen (moved to ``device`` when given): how a
    pretrained backbone is used for features."""
    module.eval()
    for p in module.parameters():
        p.requires_grad_(False)
    return module.to(device) if device is not None else module


def file_key(path: str | os.PathLike) -> tuple[str, int, int]:
    """(resolved path, size, mtime_ns): a cache key that changes when the file is replaced."""
    p = Path(path).resolve()
    st = p.stat()
    return (str(p), st.st_size, st.st_mtime_ns)


# --------------------------------------------------------------------------------------------------
# Methods whose weights are Hugging Face files
# --------------------------------------------------------------------------------------------------


class HubMethod(Method):
    """A method whose weights are Hugging Face files: the skeleton the ``tabicl``, ``mantis_*`` and
    ``moment_svm`` plugins share.

    A plugin lists its files (:meth:`hub_files`) and how to load them once as a check (:meth:`load`);
    the config parameter :attr:`weights_param` takes a local path instead of the cache, and the
    estimator keyword of the same name receives the resolved local path (:meth:`weights_path`).
    """

    #: The parameter (and estimator keyword) that takes the weights' local path; None: the hub cache.
    weights_param: ClassVar[str] = "weights"
    extra_params: ClassVar[dict[str, Any]] = {"revision": "main"}

    @abc.abstractmethod
    def hub_files(self, params: dict[str, Any]) -> list[HubFile]:
        """The Hugging Face files of the method's weights (for these parameters)."""

    def weights_path(self, found: dict[str, Path], files: list[HubFile]) -> Path:
        """What the estimator receives: the first required file (override: e.g. its folder)."""
        return found[next(f.filename for f in files if f.required)]

    def resolve(self, params: dict[str, Any]) -> dict[str, Any]:
        files = self.hub_files(params)
        found = resolve_hub_files(
            self.label, files, local=params[self.weights_param], param=self.weights_param, fetch_name=self.info.name
        )
        return {self.weights_param: self.weights_path(found, files)}

    def fetch_weights(self, **params: Any) -> list[Path]:
        p = self.params(params)
        if p[self.weights_param]:
            return [self.resolve(p)[self.weights_param]]
        got = download_hub_files(self.label, self.hub_files(p), param=self.weights_param, fetch_name=self.info.name)
        self.check_ready(**params)
        return list(got.values())
