"""Getting the official UCR/UEA files: local copy, aeon wheel, or download; pinned by a lock file.

Where a dataset comes from (:func:`ensure_dataset`), first hit wins:

1. a **local copy** in the official layout ``<data_dir>/<Name>/<Name>_{TRAIN,TEST}.ts``; also
   accepted: ``<data_dir>/<Archive>/<Name>/...`` (``UCR``/``UEA``, as in a shared data folder) and
   ``<data_dir>/{Univariate_ts,Multivariate_ts}/<Name>/...`` (an unpacked archive zip);
2. the **aeon wheel** (:data:`~chorustic.data.registry.AEON_SHIPPED`): copied, no network;
3. a **download**, trying the mirrors in order (default: timeseriesclassification.com, then the
   Zenodo records aeon 1.6 uses):

   * ``tsc`` mirror: ``<url>/<Name>.zip`` per dataset and ``<url>/Archives/{Univariate2018,
     Multivariate2018}_ts.zip`` per archive; default ``https://www.timeseriesclassification.com/
     aeon-toolkit``, overridable with ``CHORUSTIC_DATA_URL`` or ``mirrors=[...]``/``--mirror``;
   * ``zenodo`` mirror: the record of the dataset (ids from ``aeon.datasets.tsc_datasets.
     tsc_zenodo``) via ``<url>/api/records/<id>`` (files checked against Zenodo's MD5), and the
     archive records of ``aeon.datasets.dataset_collections.tsml_archives``; default
     ``https://zenodo.org``, overridable with ``CHORUSTIC_ZENODO_URL`` or ``zenodo+<url>``.

   Transfers retry with exponential backoff and resume interrupted downloads with HTTP ``Range``
   (:mod:`chorustic.data._http`); the zip is checked, only ``<Name>_TRAIN.ts`` and
   ``<Name>_TEST.ts`` are extracted into a temporary folder, checked against the lock file and
   renamed into place (atomic: a folder under the final name is always complete).

:func:`download_archive` provides a whole archive: datasets already present are only verified, the
others come from the archive zip when many are missing (else one by one), with per-dataset
fallback. Derived datasets (``InsectWingbeatSubset``) are built from their source dataset
(:mod:`chorustic.data.subsets`). Every dataset's files are pinned by SHA-256 in
``<data_dir>/chorustic-data.lock.json`` on first use and verified on every later call
(:mod:`chorustic.data.lock`). Every failure is a :class:`~chorustic.data.errors.DataError` naming
the dataset, the URL or file and the fix.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import shutil
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Iterable, NamedTuple, Sequence

from chorustic.data import _http
from chorustic.data._fs import install_dir, make_temp_dir
from chorustic.data.errors import (
    AmbiguousDatasetError,
    ChecksumMismatchError,
    CorruptArchiveError,
    DataDownloadError,
    DataError,
    DatasetNotAvailableError,
    IncompleteDatasetError,
    MissingSplitError,
    PartialDownloadError,
)
from chorustic.data.lock import DataLock, file_mutex, open_lock
from chorustic.data.official import OfficialFile, content_sha256, official_files
from chorustic.data.registry import (AEON_SHIPPED, SUBSETS, SubsetSpec, download_source, get_info, is_known,
                                     list_datasets)
from chorustic.data.subsets import build_subset, manifest_matches, read_manifest
from chorustic.io import sha256_file

__all__ = [
    "DEFAULT_TSC_URL",
    "DEFAULT_ZENODO_URL",
    "Mirror",
    "default_mirrors",
    "ensure_dataset",
    "download_archive",
    "find_local",
    "local_files",
    "split_paths",
    "aeon_data_dir",
    "ensure_dataset_files",
    "default_data_dir",
    "download_path",
]

log = logging.getLogger("chorustic.data")

DEFAULT_TSC_URL = "https://www.timeseriesclassification.com/aeon-toolkit"
DEFAULT_ZENODO_URL = "https://zenodo.org"
#: Whole-archive zips on a ``tsc`` mirror.
TSC_ARCHIVE_ZIPS = {"UCR": "Archives/Univariate2018_ts.zip", "UEA": "Archives/Multivariate2018_ts.zip"}
#: Folders of an unpacked official archive zip.
_ARCHIVE_DIRS = {
    "UCR": ("UCR", "Univariate_ts", "Univariate2018_ts"),
    "UEA": ("UEA", "Multivariate_ts", "Multivariate2018_ts"),
}
_INTERNAL = ".chorustic"
#: download_archive fetches the whole-archive zip (by default) when at least this many are missing.
ARCHIVE_ZIP_MIN_MISSING = 8  # <data_dir>/.chorustic/{downloads,locks}


def default_data_dir(given: str | os.PathLike | None = None) -> Path:
    """``given``, else ``$CHORUSTIC_DATA_DIR``, else the configuration's default ``paths.data_dir``
    (``data/raw``, the folder the workflow and every command use)."""
    from chorustic.paths import default_paths

    if given is not None:
        return Path(given)
    return Path(os.environ.get("CHORUSTIC_DATA_DIR") or default_paths()["data_dir"])


def aeon_data_dir() -> Path:
    """The folder of the datasets shipped inside the aeon wheel (found without importing aeon)."""
    import importlib.util

    spec = importlib.util.find_spec("aeon")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(
            "aeon is not installed: `pip install aeon` (the data layer reads .ts files with it)"
        )
    return Path(list(spec.submodule_search_locations)[0]) / "datasets" / "data"


# --------------------------------------------------------------------------------------- mirrors
@dataclass(frozen=True)
class Mirror:
    """A download source: ``kind="tsc"`` (timeseriesclassification.com layout) or ``"zenodo"``."""

    url: str
    kind: str = "tsc"

    def __post_init__(self) -> None:
        if self.kind not in ("tsc", "zenodo"):
            raise ValueError(f"unknown mirror kind {self.kind!r}: expected 'tsc' or 'zenodo'")
        object.__setattr__(self, "url", self.url.rstrip("/"))

    @classmethod
    def parse(cls, spec: "str | Mirror") -> "Mirror":
        """``"https://host/path"`` -> a tsc mirror; ``"zenodo+https://host"`` -> a Zenodo mirror."""
        if isinstance(spec, Mirror):
            return spec
        spec = str(spec).strip()
        for kind in ("zenodo", "tsc"):
            if spec.startswith(kind + "+"):
                return cls(spec[len(kind) + 1 :], kind)
        if not spec.startswith(("http://", "https://", "file://")):
            raise ValueError(
                f"mirror {spec!r} is not an http(s) URL (use 'zenodo+https://...' for a Zenodo mirror)"
            )
        return cls(spec, "tsc")

    def __str__(self) -> str:
        return self.url if self.kind == "tsc" else f"zenodo+{self.url}"


def default_mirrors() -> list[Mirror]:
    """timeseriesclassification.com (``$CHORUSTIC_DATA_URL``), then Zenodo (``$CHORUSTIC_ZENODO_URL``)."""
    return [
        Mirror(os.environ.get("CHORUSTIC_DATA_URL") or DEFAULT_TSC_URL, "tsc"),
        Mirror(os.environ.get("CHORUSTIC_ZENODO_URL") or DEFAULT_ZENODO_URL, "zenodo"),
    ]


def _zenodo_dataset_record(name: str) -> int | None:
    from aeon.datasets.tsc_datasets import tsc_zenodo

    return tsc_zenodo.get(name)


def _zenodo_archive_url(base: str, archive: str) -> str:
    from aeon.datasets.dataset_collections import tsml_archives, tsml_zip_names

    return f"{base}/records/{tsml_archives[archive]}/files/{tsml_zip_names[archive]}"


# ---------------------------------------------------------------------------------- local files
def split_paths(folder: str | os.PathLike, name: str) -> tuple[Path, Path]:
    folder = Path(folder)
    return folder / f"{name}_TRAIN.ts", folder / f"{name}_TEST.ts"


def _complete(folder: Path, name: str) -> bool:
    return all(p.is_file() for p in split_paths(folder, name))


def _candidates(name: str, data_dir: Path) -> list[Path]:
    """Every folder that may hold ``name``: ``<data_dir>/<name>``, then its own archive's folders, then the
    other archive's (a user's copy filed under the other archive is still the user's copy, never replaced
    by an official one without a word)."""
    archive = get_info(name).archive if is_known(name) else None
    own = [a for a in _ARCHIVE_DIRS if archive in (None, a)]
    other = [a for a in _ARCHIVE_DIRS if a not in own]
    return [data_dir / name] + [data_dir / d / name for a in own + other for d in _ARCHIVE_DIRS[a]]


def _same_files(a: Path, b: Path, name: str) -> bool:
    for pa, pb in zip(split_paths(a, name), split_paths(b, name)):
        if pa.stat().st_size != pb.stat().st_size or sha256_file(pa) != sha256_file(pb):
            return False
    return True


_NOTED_FOLDERS: set[tuple[str, Path]] = set()


def find_local(name: str, data_dir: str | os.PathLike) -> Path | None:
    """The folder holding ``<name>_TRAIN.ts`` and ``<name>_TEST.ts`` under ``data_dir``, or None.

    Two folders with different copies raise :class:`AmbiguousDatasetError` naming both (chorustic never
    picks one of a user's files over another); identical copies are one copy. A copy found only under the
    other archive's folder is used, with a note saying where it was found."""
    data_dir = Path(data_dir)
    found = [c for c in _candidates(name, data_dir) if _complete(c, name)]
    if not found:
        return None
    first = found[0]
    for other in found[1:]:
        if other.resolve() != first.resolve() and not _same_files(first, other, name):
            raise AmbiguousDatasetError(
                f"dataset {name!r}: {first} and {other} hold different copies of {name}_TRAIN.ts/_TEST.ts, and "
                f"chorustic does not choose between a user's files: move one of the two folders out of {data_dir} "
                "and run again.",
                dataset=name,
                path=other,
            )
    if is_known(name):
        archive = get_info(name).archive
        own = {data_dir / name} | {data_dir / d / name for d in _ARCHIVE_DIRS[archive]}
        if first not in own and (name, first) not in _NOTED_FOLDERS:
            _NOTED_FOLDERS.add((name, first))
            log.warning(
                "dataset %s is a %s dataset but was found under %s; using that copy (move it to %s to silence "
                "this note)", name, archive, first, data_dir / _ARCHIVE_DIRS[archive][0] / name,
            )
    return first


def local_files(name: str, data_dir: str | os.PathLike) -> list[Path]:
    """The split files of ``name`` that exist under ``data_dir`` (both of a complete copy, else whatever
    one folder holds): what the workflow's download rule takes as input, so an edited file re-runs it."""
    data_dir = Path(data_dir)
    folder = find_local(name, data_dir)
    if folder is not None:
        return list(split_paths(folder, name))
    for c in _candidates(name, data_dir):
        present = [p for p in split_paths(c, name) if p.is_file()]
        if present:
            return present
    return []


def _check_not_partial(name: str, data_dir: Path) -> None:
    """A folder with one split file but not the other is a user's (or an interrupted copy's) file:
    never replaced, never completed from another source; the message says what to do."""
    for c in _candidates(name, data_dir):
        train, test = split_paths(c, name)
        present = [p for p in (train, test) if p.is_file()]
        if len(present) == 1:
            missing = test if present[0] == train else train
            raise IncompleteDatasetError(
                f"dataset {name!r}: {c} holds {present[0].name} but not {missing.name}. chorustic never replaces or "
                f"completes files it did not write: put {missing.name} into {c} (the official file of the same "
                f"release), or move the folder {c} away and run again to get both files "
                f"(`chorustic download {name} --data-dir {data_dir}`).",
                dataset=name,
                path=missing,
            )


def download_path(data_dir: str | os.PathLike, url: str, filename: str) -> Path:
    """Where the transfer of ``url`` is kept (``.part`` while incomplete): one file per URL."""
    tag = hashlib.sha256(url.encode()).hexdigest()[:10]
    stem, dot, ext = filename.rpartition(".")
    return Path(data_dir) / _INTERNAL / "downloads" / (f"{stem}-{tag}.{ext}" if dot else f"{filename}-{tag}")


def _hash_splits(folder: Path, name: str) -> dict[str, str]:
    return {p.name: sha256_file(p) for p in split_paths(folder, name)}


# ------------------------------------------------------------------------------------ machinery
@dataclass
class _Ctx:
    data_dir: Path
    lock: DataLock
    policy: _http.TransferPolicy
    mirrors: list[Mirror]
    offline: bool
    keep_archives: bool
    subset: SubsetSpec | None
    session: object = field(default=None)

    @property
    def internal(self) -> Path:
        return self.data_dir / _INTERNAL

    def http(self):
        if self.session is None:
            self.session = _http.make_session()
        return self.session

    @contextlib.contextmanager
    def mutex(self, key: str):
        with file_mutex(self.internal / "locks" / f"{key}.lck"):
            yield


_OPTION_DEFAULTS = dict(
    offline=False,
    mirrors=None,
    lock=True,
    progress=True,
    update_lock=False,
    retries=3,
    timeout=60.0,
    backoff=1.0,
    keep_archives=False,
    subset=None,
)


def _given_options(arguments: dict) -> dict:
    """The transfer options (:data:`_OPTION_DEFAULTS`) among a public function's arguments (its ``locals()``)."""
    return {k: arguments[k] for k in _OPTION_DEFAULTS}


def _make_ctx(data_dir, **options) -> _Ctx:
    unknown = set(options) - set(_OPTION_DEFAULTS)
    if unknown:
        raise TypeError(f"unexpected arguments: {', '.join(sorted(unknown))}")
    o = {**_OPTION_DEFAULTS, **options}
    data_dir = Path(data_dir) if data_dir is not None else default_data_dir()
    mirrors = o["mirrors"]
    if isinstance(mirrors, (str, Mirror)):
        ms = [Mirror.parse(mirrors)]
    elif mirrors:
        ms = [Mirror.parse(m) for m in mirrors]
    else:
        ms = default_mirrors()
    return _Ctx(
        data_dir=data_dir,
        lock=open_lock(o["lock"], data_dir, update=bool(o["update_lock"])),
        policy=_http.TransferPolicy(
            retries=int(o["retries"]),
            backoff=float(o["backoff"]),
            timeout=float(o["timeout"]),
            progress=bool(o["progress"]),
        ),
        mirrors=ms,
        offline=bool(o["offline"]),
        keep_archives=bool(o["keep_archives"]),
        subset=o["subset"],
    )


def _combine(errors: Sequence[DataError], name: str) -> DataError:
    """One error for all mirrors: the primary mirror's error type, every mirror's message."""
    first = errors[0]
    if len(errors) == 1:
        return first
    msg = f"all {len(errors)} mirrors failed for dataset {name!r}:\n" + "\n".join(f"  - {e}" for e in errors)
    first.message = msg
    first.args = (msg,)
    return first


def _html_hint(path: Path) -> str:
    try:
        with open(path, "rb") as fh:
            head = fh.read(512).lstrip().lower()
    except OSError:
        return ""
    if head.startswith((b"<!doctype html", b"<html")) or b"<html" in head:
        return " (the server answered with an HTML page, not a zip: the dataset probably does not exist on this mirror)"
    return ""


def _pick_member(infos: list[zipfile.ZipInfo], name: str, fname: str) -> zipfile.ZipInfo | None:
    """The member for ``fname``: exact basename first, then case-insensitive; prefer ``<name>/`` parents."""
    cands = []
    for info in infos:
        path = PurePosixPath(info.filename.replace("\\", "/"))
        if info.is_dir() or "__MACOSX" in path.parts:
            continue
        if path.name == fname:
            cands.append((0, path.parent.name != name, len(path.parts), info))
        elif path.name.lower() == fname.lower():
            cands.append((1, path.parent.name.lower() != name.lower(), len(path.parts), info))
    if not cands:
        return None
    cands.sort(key=lambda t: t[:3])
    return cands[0][3]


def _extract_splits(zf: zipfile.ZipFile, name: str, tmp: Path, *, url: str) -> dict[str, str]:
    """Extract ``<name>_{TRAIN,TEST}.ts`` from ``zf`` into ``tmp``; return their SHA-256."""
    infos = zf.infolist()
    shas: dict[str, str] = {}
    for fname in (f"{name}_TRAIN.ts", f"{name}_TEST.ts"):
        info = _pick_member(infos, name, fname)
        if info is None:
            listing = [i.filename for i in infos if not i.is_dir()]
            shown = ", ".join(listing[:8]) + (f", ... ({len(listing)} files)" if len(listing) > 8 else "")
            raise MissingSplitError(
                f"the archive {url} has no {fname} for dataset {name!r} (it contains: {shown or 'nothing'}). "
                f"The mirror serves an incomplete or different release: try another mirror (--mirror), or put "
                f"{name}_TRAIN.ts and {name}_TEST.ts into <data_dir>/{name}/ by hand.",
                dataset=name,
                url=url,
            )
        h = hashlib.sha256()
        try:
            with zf.open(info) as src, open(tmp / fname, "wb") as dst:
                for chunk in iter(lambda: src.read(1 << 20), b""):
                    h.update(chunk)
                    dst.write(chunk)
        except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError) as exc:
            raise CorruptArchiveError(
                f"the archive {url} for dataset {name!r} is corrupt: reading {info.filename} failed ({exc}). "
                "The bad copy was deleted; run the command again to re-download, or use another mirror (--mirror).",
                dataset=name,
                url=url,
            ) from exc
        shas[fname] = h.hexdigest()
    return shas


def _open_zip(path: Path, *, url: str, name: str) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        hint = _html_hint(path)
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        raise CorruptArchiveError(
            f"the archive downloaded from {url} for {name} is not a valid zip ({exc}){hint}. The bad copy was "
            "deleted; run the command again to re-download, or use another mirror (--mirror).",
            dataset=name,
            url=url,
        ) from exc


def _fetch_verified(ctx: _Ctx, url: str, dest: Path, name: str) -> _http.FetchResult:
    """Fetch ``url`` and check it against the lock's archive entry (a mismatch deletes the file).

    A complete earlier download at ``dest`` (kept with ``keep_archives``, or left by a run killed
    before extraction) is reused; ``.part`` files are resumed.
    """
    if dest.is_file():
        res = _http.FetchResult(dest, sha256_file(dest), dest.stat().st_size, False)
        log.info("reusing %s for %s", dest, url)
    else:
        res = _http.fetch(url, dest, session=ctx.http(), policy=ctx.policy, dataset=name)
    try:
        ctx.lock.verify_archive(url, res.sha256, dataset=name, path=dest)
    except ChecksumMismatchError:
        dest.unlink(missing_ok=True)
        raise
    return res


def _from_tsc(ctx: _Ctx, mirror: Mirror, name: str, tmp: Path) -> tuple[str, dict[str, str]]:
    url = f"{mirror.url}/{name}.zip"
    dest = download_path(ctx.data_dir, url, f"{name}.zip")
    res = _fetch_verified(ctx, url, dest, name)
    zf = _open_zip(dest, url=url, name=f"dataset {name!r}")
    try:
        with zf:
            shas = _extract_splits(zf, name, tmp, url=url)
    except CorruptArchiveError:
        dest.unlink(missing_ok=True)
        raise
    except MissingSplitError:
        if not ctx.keep_archives:
            dest.unlink(missing_ok=True)
        raise
    ctx.lock.record_archive(url, res.sha256, res.size, datasets=[name])
    if not ctx.keep_archives:
        dest.unlink(missing_ok=True)
    return url, shas


def _zenodo_files(record: dict) -> dict[str, dict]:
    files = record.get("files") or []
    if isinstance(files, dict):  # newer API shape: {"entries": {...}} or {"entries": [...]}
        files = files.get("entries") or []
        if isinstance(files, dict):
            files = list(files.values())
    out = {}
    for f in files:
        key = f.get("key") or f.get("filename")
        if key:
            out[key] = f
    return out


def _from_zenodo(ctx: _Ctx, mirror: Mirror, name: str, tmp: Path) -> tuple[str, dict[str, str]]:
    rid = _zenodo_dataset_record(name)
    if rid is None:
        raise _no_zenodo_record(name, mirror)
    api = f"{mirror.url}/api/records/{rid}"
    record = _http.get_json(ctx.http(), api, ctx.policy, dataset=name)
    files = _zenodo_files(record)
    wanted = [f"{name}_TRAIN.ts", f"{name}_TEST.ts"]
    if not all(w in files for w in wanted):
        zips = [k for k in files if k.lower().endswith(".zip")]
        if zips:  # a record that ships one zip: treat it like a per-dataset zip
            key = zips[0]
            url = _zenodo_file_url(mirror, rid, key, files[key])
            dest = download_path(ctx.data_dir, url, f"{name}.zip")
            res = _fetch_verified(ctx, url, dest, name)
            _check_md5(files[key], dest, url=url, name=name)
            with _open_zip(dest, url=url, name=f"dataset {name!r}") as zf:
                try:
                    shas = _extract_splits(zf, name, tmp, url=url)
                finally:
                    if not ctx.keep_archives:
                        dest.unlink(missing_ok=True)
            ctx.lock.record_archive(url, res.sha256, res.size, datasets=[name])
            return api, shas
        missing = [w for w in wanted if w not in files]
        raise MissingSplitError(
            f"the Zenodo record {api} for dataset {name!r} has no {', '.join(missing)} (it contains: "
            f"{', '.join(sorted(files)) or 'nothing'}). Try another mirror (--mirror), or put the files into "
            f"<data_dir>/{name}/ by hand.",
            dataset=name,
            url=api,
        )
    shas = {}
    for key in wanted:
        url = _zenodo_file_url(mirror, rid, key, files[key])
        dest = download_path(ctx.data_dir, url, key)
        res = _fetch_verified(ctx, url, dest, name)
        _check_md5(files[key], dest, url=url, name=name)
        ctx.lock.record_archive(url, res.sha256, res.size, datasets=[name])
        shutil.move(str(dest), tmp / key)
        shas[key] = res.sha256
    return api, shas


def _no_zenodo_record(name: str, mirror: Mirror) -> DataDownloadError:
    return DataDownloadError(
        f"no Zenodo record is known for dataset {name!r} (aeon.datasets.tsc_datasets.tsc_zenodo), so the "
        f"Zenodo mirror {mirror.url} cannot serve it.",
        dataset=name,
        url=mirror.url,
    )


def _zenodo_file_url(mirror: Mirror, rid: int, key: str, entry: dict) -> str:
    links = entry.get("links") or {}
    return (
        links.get("self")
        or links.get("content")
        or links.get("download")
        or f"{mirror.url}/records/{rid}/files/{key}"
    )


def _check_md5(entry: dict, path: Path, *, url: str, name: str) -> None:
    checksum = entry.get("checksum") or ""
    if not checksum.startswith("md5:"):
        return
    expected = checksum[4:]
    h = hashlib.md5()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    if h.hexdigest() != expected:
        path.unlink(missing_ok=True)
        raise ChecksumMismatchError(
            f"checksum mismatch for {path.name} of dataset {name!r} downloaded from {url}: Zenodo lists md5 "
            f"{expected}, the download has {h.hexdigest()}. The bad copy was deleted; run the command again.",
            dataset=name,
            url=url,
            file=str(path),
            expected=f"md5:{expected}",
            found=f"md5:{h.hexdigest()}",
        )


def _download(ctx: _Ctx, name: str) -> tuple[Path, dict[str, str], str]:
    """Try every mirror; install the first verified copy at ``<data_dir>/<name>``."""
    dest = ctx.data_dir / name
    errors: list[DataError] = []
    for mirror in ctx.mirrors:
        tmp = make_temp_dir(dest)
        try:
            getter = _from_tsc if mirror.kind == "tsc" else _from_zenodo
            url, shas = getter(ctx, mirror, name, tmp)
            ctx.lock.verify_dataset(name, shas, dest, url=url)
            _install(tmp, dest, name)
            return dest, shas, url
        except DataDownloadError as exc:
            errors.append(exc)
            if len(errors) < len(ctx.mirrors):
                log.warning("%s Trying the next mirror.", exc)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    raise _combine(errors, name)


def _install(tmp: Path, dest: Path, name: str) -> None:
    try:
        install_dir(tmp, dest)
    except FileExistsError as exc:  # a file appeared meanwhile: it is not ours to replace
        raise IncompleteDatasetError(
            f"dataset {name!r}: {exc}. chorustic never replaces files it did not write; move {dest} away and "
            "run again, or complete it by hand.",
            dataset=name,
            path=dest,
        ) from None


def _copy_from_aeon(ctx: _Ctx, name: str) -> tuple[Path, dict[str, str]]:
    """Copy the files of the aeon wheel into the data folder; in place when the folder is read-only."""
    src = aeon_data_dir() / name
    dest = ctx.data_dir / name
    try:
        tmp = make_temp_dir(dest)
    except OSError as exc:
        log.info("cannot write %s (%s); reading %s from the aeon wheel in place", ctx.data_dir, exc, name)
        shas = _hash_splits(src, name)
        ctx.lock.verify_dataset(name, shas, src, url=f"aeon wheel {src}")
        return src, shas
    try:
        for p in split_paths(src, name):
            shutil.copyfile(p, tmp / p.name)
        shas = _hash_splits(tmp, name)
        ctx.lock.verify_dataset(name, shas, dest, url=f"aeon wheel {src}")
        _install(tmp, dest, name)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest, shas


def _ensure(ctx: _Ctx, name: str) -> tuple[Path, dict[str, str]]:
    """The folder of ``name`` and the SHA-256 of its two split files (verified against the lock)."""
    if name in SUBSETS:
        return _ensure_subset(ctx, name)
    local = find_local(name, ctx.data_dir)
    if local is None:
        get_info(name)  # an unknown name without a local copy: UnknownDatasetError with close matches
        _check_not_partial(name, ctx.data_dir)
        with ctx.mutex(name):  # one provider per dataset at a time (parallel DAG jobs)
            local = find_local(name, ctx.data_dir)
            if local is None:
                _check_not_partial(name, ctx.data_dir)
                return _provide(ctx, name)
    # a local copy (possibly a user's own dataset in the official layout): pinned like any other
    shas = _hash_splits(local, name)
    ctx.lock.verify_dataset(name, shas, local)
    ctx.lock.record_dataset(name, shas, source="local")
    return local, shas


def _content(folder: Path, name: str) -> dict[str, str]:
    return {p.name: content_sha256(p) for p in split_paths(folder, name)}


def _provide(ctx: _Ctx, name: str) -> tuple[Path, dict[str, str]]:
    if name in AEON_SHIPPED and _complete(aeon_data_dir() / name, name):
        folder, shas = _copy_from_aeon(ctx, name)
        ctx.lock.record_dataset(
            name, shas, source="aeon", url=f"aeon wheel (aeon {_aeon_version()})", content=_content(folder, name)
        )
        return folder, shas
    if ctx.offline:
        raise DatasetNotAvailableError(
            f"dataset {name!r} is not in {ctx.data_dir} (looked for {name}_TRAIN.ts and _TEST.ts in "
            f"{', '.join(str(c.relative_to(ctx.data_dir)) + '/' for c in _candidates(name, ctx.data_dir))}) and "
            "offline mode forbids downloading it. Run "
            f"`chorustic download {name} --data-dir {ctx.data_dir}` with internet access, or copy the files "
            "there in the official layout.",
            dataset=name,
        )
    folder, shas, url = _download(ctx, name)
    ctx.lock.record_dataset(name, shas, source="download", url=url, content=_content(folder, name))
    return folder, shas


def _aeon_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("aeon")
    except PackageNotFoundError:  # pragma: no cover
        return "?"


def _ensure_subset(ctx: _Ctx, name: str) -> tuple[Path, dict[str, str]]:
    requested = ctx.subset if (ctx.subset is not None and ctx.subset.name == name) else None
    spec = requested or SUBSETS[name]

    def usable(folder: Path | None) -> bool:
        return folder is not None and (
            requested is None or manifest_matches(read_manifest(folder), requested)
        )

    local = find_local(name, ctx.data_dir)
    if not usable(local):
        with ctx.mutex(name):
            local = find_local(name, ctx.data_dir)
            if not usable(local):
                src_folder, _ = _ensure(ctx, spec.source)
                local = build_subset(spec, src_folder, ctx.data_dir / name)
                log.info(
                    "built %s from %s (%d train / %d test, seed %d)",
                    name,
                    spec.source,
                    spec.n_train,
                    spec.n_test,
                    spec.seed,
                )
    shas = _hash_splits(local, name)
    ctx.lock.verify_dataset(name, shas, local)
    manifest = read_manifest(local) or {}
    ctx.lock.record_dataset(
        name,
        shas,
        source="derived",
        extra={
            "params": manifest.get("params", spec.params()),
            "source_sha256": manifest.get("source_sha256", {}),
        },
    )
    return local, shas


# ------------------------------------------------------------------------------------- public API
def ensure_dataset(
    name: str,
    data_dir: str | os.PathLike | None = None,
    *,
    offline: bool = False,
    mirrors: Iterable[str | Mirror] | str | Mirror | None = None,
    lock: bool | str | os.PathLike = True,
    progress: bool = True,
    update_lock: bool = False,
    retries: int = 3,
    timeout: float = 60.0,
    backoff: float = 1.0,
    keep_archives: bool = False,
    subset: SubsetSpec | None = None,
) -> Path:
    """The folder holding ``<name>_TRAIN.ts`` and ``<name>_TEST.ts``, provided if needed.

    Order: local copy -> aeon wheel -> download (mirrors in order). The files are verified against
    ``<data_dir>/chorustic-data.lock.json`` (``lock=False``: no lock; a path: that lock file);
    ``update_lock=True`` accepts and records the current files instead. ``subset`` overrides the
    size/seed of a derived dataset (an existing copy built with other parameters is rebuilt).
    """
    ctx = _make_ctx(data_dir, **_given_options(locals()))
    return _ensure(ctx, name)[0]


class DatasetFiles(NamedTuple):
    folder: Path
    sha256: dict[str, str]
    """SHA-256 of the two split files (the loader's cache key)."""
    official: dict[str, list[OfficialFile]]
    """The known official versions of each split file (:func:`chorustic.data.official.official_files`)."""


def ensure_dataset_files(name: str, data_dir: str | os.PathLike | None = None, **options) -> DatasetFiles:
    """:func:`ensure_dataset` plus the checksums of the two split files and of their official versions."""
    ctx = _make_ctx(data_dir, **options)
    folder, shas = _ensure(ctx, name)
    return DatasetFiles(folder, shas, official_files(ctx.lock.dataset_entry(name), *_aeon_copy(name)))


def _aeon_copy(name: str) -> tuple[tuple[Path, ...], str]:
    """The split files of ``name`` inside the aeon wheel (none if it does not ship them) and aeon's version."""
    if name not in AEON_SHIPPED:
        return (), "?"
    try:
        folder = aeon_data_dir() / name
    except ImportError:  # aeon missing: the loader says so on its own
        return (), "?"
    return (split_paths(folder, name) if _complete(folder, name) else ()), _aeon_version()


def _archive_members(zf: zipfile.ZipFile, names: Iterable[str]) -> set[str]:
    infos = zf.infolist()
    return {
        n
        for n in names
        if _pick_member(infos, n, f"{n}_TRAIN.ts") is not None
        and _pick_member(infos, n, f"{n}_TEST.ts") is not None
    }


def download_archive(
    archive: str,
    data_dir: str | os.PathLike | None = None,
    *,
    names: Sequence[str] | None = None,
    offline: bool = False,
    mirrors: Iterable[str | Mirror] | str | Mirror | None = None,
    lock: bool | str | os.PathLike = True,
    progress: bool = True,
    update_lock: bool = False,
    retries: int = 3,
    timeout: float = 60.0,
    backoff: float = 1.0,
    keep_archives: bool = False,
    subset: SubsetSpec | None = None,
    use_archive_zip: bool | None = None,
) -> list[Path]:
    """Provide every dataset of ``archive`` (``"UCR"``: 128, ``"UEA"``: 30; or just ``names``).

    Datasets already present (or in the aeon wheel) are only verified. The rest come from one
    whole-archive zip (first mirror that serves it) when ``use_archive_zip`` is True, or, by default,
    when at least 8 datasets are missing (a few missing datasets are cheaper one by one); a dataset
    missing from that zip, or every dataset if no mirror serves the zip, falls back to its
    per-dataset download. A failing dataset
    does not stop the others: the folders of the successful ones are returned, and if any failed a
    :class:`PartialDownloadError` (with ``.succeeded`` and ``.failures``) is raised at the end.
    """
    archive = str(archive).upper()
    if archive not in _ARCHIVE_DIRS:
        raise ValueError(f"unknown archive {archive!r}: expected 'UCR' or 'UEA'")
    wanted = list(names) if names is not None else list_datasets(archive)
    for n in wanted:
        get_info(n)
    ctx = _make_ctx(data_dir, **_given_options(locals()))

    def present(n: str) -> bool:
        if n in SUBSETS and find_local(n, ctx.data_dir) is not None:
            return True
        r = download_source(n)
        return find_local(r, ctx.data_dir) is not None or (
            r in AEON_SHIPPED and _complete(aeon_data_dir() / r, r)
        )

    missing = sorted({download_source(n) for n in wanted if not present(n)})
    if use_archive_zip is None:
        use_archive_zip = len(missing) >= ARCHIVE_ZIP_MIN_MISSING
    if missing and use_archive_zip and not ctx.offline:
        with ctx.mutex(f"archive-{archive}"):
            _install_from_archive_zip(ctx, archive, missing)

    from tqdm.auto import tqdm

    done: dict[str, Path] = {}
    failures: dict[str, DataError] = {}
    for n in tqdm(
        wanted, desc=f"{archive} datasets", unit="dataset", disable=not progress or len(wanted) < 2
    ):
        try:
            done[n] = _ensure(ctx, n)[0]
        except DataError as exc:
            failures[n] = exc
            log.error("%s", exc)
    if failures:
        raise PartialDownloadError(
            f"{len(failures)} of {len(wanted)} {archive} datasets could not be provided: "
            + "; ".join(f"{n}: {e}" for n, e in failures.items()),
            succeeded=done,
            failures=failures,
        )
    return [done[n] for n in wanted]


def _install_from_archive_zip(ctx: _Ctx, archive: str, missing: list[str]) -> None:
    """Extract what the whole-archive zip holds of ``missing``; silently leave the rest to per-dataset
    downloads (errors are logged: the fallback decides)."""
    for mirror in ctx.mirrors:
        url = (
            f"{mirror.url}/{TSC_ARCHIVE_ZIPS[archive]}"
            if mirror.kind == "tsc"
            else _zenodo_archive_url(mirror.url, archive)
        )
        dest = download_path(ctx.data_dir, url, f"{archive}.zip")
        try:
            res = _fetch_verified(ctx, url, dest, f"{archive} archive")
            zf = _open_zip(dest, url=url, name=f"the {archive} archive")
        except DataDownloadError as exc:
            log.warning("whole-archive download failed (%s); trying the next source", exc)
            continue
        corrupt = False
        with zf:
            inside = _archive_members(zf, missing)
            ctx.lock.record_archive(url, res.sha256, res.size, datasets=sorted(inside))
            from tqdm.auto import tqdm

            for name in tqdm(
                sorted(inside), desc=f"extracting {archive}", unit="dataset", disable=not ctx.policy.progress
            ):
                dest_dir = ctx.data_dir / name
                tmp = make_temp_dir(dest_dir)
                try:
                    _check_not_partial(name, ctx.data_dir)
                    shas = _extract_splits(zf, name, tmp, url=url)
                    ctx.lock.verify_dataset(name, shas, dest_dir, url=url)
                    _install(tmp, dest_dir, name)
                    ctx.lock.record_dataset(name, shas, source="download", url=url)
                except DataError as exc:
                    corrupt = corrupt or isinstance(exc, CorruptArchiveError)
                    log.warning("%s (falling back to the per-dataset download)", exc)
                finally:
                    shutil.rmtree(tmp, ignore_errors=True)
        if corrupt or not ctx.keep_archives:
            dest.unlink(missing_ok=True)
        return
