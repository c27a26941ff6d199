"""Loading a dataset: the official ``.ts`` files -> :class:`TimeSeriesDataset` (paper App. C.2).

:func:`load_dataset` provides the files (:func:`~chorustic.data.download.ensure_dataset_files`:
local copy, aeon wheel or download, verified against the lock file), reads them with aeon's
reader (``aeon.datasets.load_from_ts_file``), applies :mod:`chorustic.data.preprocessing` and
caches the arrays on disk (:mod:`chorustic.data.cache`).

Class labels are taken exactly as written in the files (aeon's reader lower-cases them, which would
merge ``Up`` and ``up``). A header that the data contradict, files that differ from the archive's
published sizes (a truncated file) and two spellings of one numeric label are errors naming the
file, and so is a file whose official checksum is known but which matches none of its versions
(values edited with the sizes kept: :mod:`chorustic.data.official`); ``allow_modified=True`` accepts a
user's own variant and records the differences.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from chorustic.data import cache as _cache
from chorustic.data.errors import MalformedDataFileError, MissingDataFileError, ModifiedDataError
from chorustic.data.official import content_differences
from chorustic.data.preprocessing import MODEL_LENGTH, encode_labels, fill_missing, to_model_length
from chorustic.data.registry import get_info, is_known
from chorustic.data.standin import read_standin_mark
from chorustic.data.tsfile import ts_lines

__all__ = ["TimeSeriesDataset", "load_dataset", "read_ts_split", "preprocessing_settings", "SERIES"]

#: What ``load_dataset(series=...)`` can read: one of the two forms of the series, or both.
SERIES = ("both", "native", "resampled")
#: The cache's arrays of the native series (equal-length, or ragged: flat values and lengths).
_NATIVE_KEYS = tuple(f"{split}_native{suffix}" for split in ("X_train", "X_test") for suffix in ("", "_flat", "_lengths"))

log = logging.getLogger("chorustic.data")


@dataclasses.dataclass
class TimeSeriesDataset:
    """One dataset, preprocessed as in the paper, plus its native-length series."""

    name: str
    archive: str
    """``"UCR"``, ``"UEA"``, or ``"local"`` for a dataset that is not in the registry."""
    X_train: np.ndarray | None
    """float32 ``(n_train, C, length)``: resampled, NaN -> 0 (None when loaded with ``series="native"``)."""
    y_train: np.ndarray
    """int64 in ``0..K-1``."""
    X_test: np.ndarray | None
    y_test: np.ndarray
    classes: np.ndarray
    """Original labels (str); ``classes[k]`` is the label encoded as ``k``."""
    X_train_native: np.ndarray | list[np.ndarray] | None
    """float32 unresampled series, NaN -> 0: ``(n, C, L)`` if equal length, else a list of ``(C, L_i)``
    (None when loaded with ``series="resampled"``)."""
    X_test_native: np.ndarray | list[np.ndarray] | None
    source_sha256: dict[str, str]
    """File name -> SHA-256 of the ``.ts`` files the arrays come from."""
    cache_path: Path | None = None
    """The ``.npz`` these arrays were cached in (None without a cache)."""
    settings: dict[str, Any] = dataclasses.field(default_factory=dict)
    """The preprocessing settings (part of the cache key)."""
    unterminated_files: list[str] = dataclasses.field(default_factory=list)
    """Source files that do not end with a line break (the official files all do: a cut-off file's last
    series or label may be incomplete); a difference from the archive for registry datasets."""
    modifications: list[str] = dataclasses.field(default_factory=list)
    """How the files differ from the archive's published sizes or contradict their own headers; only
    ever non-empty when the caller allowed modified data (``allow_modified=True``), and then recorded
    in every result made from them."""
    standin: dict[str, Any] | None = None
    """The spec of a stand-in (:mod:`chorustic.data.standin`: random data with an archive dataset's shape),
    None for real data. Recorded in every result made from it; such results never reach a table."""

    @property
    def n_classes(self) -> int:
        return int(len(self.classes))

    @property
    def n_channels(self) -> int:
        if self.X_train is not None:
            return int(self.X_train.shape[1])
        first = self.X_train_native if isinstance(self.X_train_native, np.ndarray) else self.X_train_native[0]
        return int(np.shape(first)[-2])

    @property
    def length(self) -> int:
        """The resampled length (the model's)."""
        return int(self.X_train.shape[2]) if self.X_train is not None else int(self.settings["length"])

    @property
    def equal_length(self) -> bool:
        """True if all native series (train and test) have the same length (not known, False, when only the
        resampled series were loaded)."""
        return isinstance(self.X_train_native, np.ndarray) and isinstance(self.X_test_native, np.ndarray)

    @property
    def n_train(self) -> int:
        return int(len(self.y_train))

    @property
    def n_test(self) -> int:
        return int(len(self.y_test))

    def summary(self) -> str:
        if self.X_train_native is None:
            native = "native series not loaded"
        elif self.equal_length:
            native = f"native length {self.X_train_native.shape[-1]}"
        else:
            native = "native length {}..{}".format(*_length_range(self.X_train_native, self.X_test_native))
        shape = (f"train {tuple(self.X_train.shape)}, test {tuple(self.X_test.shape)}" if self.X_train is not None
                 else f"train {self.n_train}, test {self.n_test} series of {self.n_channels} channels")
        return f"{self.name} ({self.archive}): {shape}, {self.n_classes} classes, {native}"


def _length_range(*parts) -> tuple[int, int]:
    lengths = [s.shape[-1] for p in parts for s in (p if isinstance(p, list) else [p])]
    return min(lengths), max(lengths)


def preprocessing_settings(length: int = MODEL_LENGTH, label_order: str = "sorted") -> dict[str, Any]:
    import aeon

    return {
        "length": int(length),
        "missing_fill": 0.0,
        "interpolation": "linear, align_corners=False, per series from its own length",
        "label_order": label_order,
        "dtype": "float32",
        "reader": f"aeon.datasets.load_from_ts_file (aeon {aeon.__version__})",
    }


def _read_header(path: Path) -> tuple[dict[str, str], list[str], list[str]]:
    """``(fields, class_labels, data_labels)`` of a ``.ts`` file, in the file's own spelling.

    ``fields``: lower-cased header keys (``dimensions``, ``serieslength``, ``equallength``, ...) -> their
    value; ``class_labels``: the ``@classLabel`` values; ``data_labels``: the class label of every data
    line (the text after its last ``:``), in file order. aeon's reader lower-cases labels, which would
    merge ``Up`` and ``up``; these are the labels as written.
    """
    fields: dict[str, str] = {}
    header_labels: list[str] = []
    data_labels: list[str] = []
    for in_data, s in ts_lines(path):
        if not in_data:
            if s.startswith("@"):
                tokens = s.split()
                key = tokens[0][1:].lower()
                fields[key] = " ".join(tokens[1:2])
                if key == "classlabel" and len(tokens) > 2 and tokens[1].lower() == "true":
                    header_labels = tokens[2:]
            continue
        data_labels.append(s.rsplit(":", 1)[-1].strip() if ":" in s else "")
    return fields, header_labels, data_labels


def _channel_count(X) -> set[int]:
    if isinstance(X, np.ndarray):
        return {int(X.shape[1])}
    return {int(s.shape[0]) for s in X}


def _lengths(X) -> set[int]:
    if isinstance(X, np.ndarray):
        return {int(X.shape[-1])}
    return {int(s.shape[-1]) for s in X}


def header_inconsistencies(fields: dict[str, str], header_labels: list[str], labels: list[str], X) -> list[str]:
    """What the ``.ts`` header declares that the data contradict (empty when consistent)."""
    problems = []
    channels, lengths = _channel_count(X), _lengths(X)
    dims = fields.get("dimensions")
    if dims and dims.isdigit() and channels != {int(dims)}:
        problems.append(f"@dimensions {dims} but the series have {', '.join(map(str, sorted(channels)))} channel(s)")
    if fields.get("univariate", "").lower() == "true" and channels != {1}:
        problems.append(f"@univariate true but the series have {', '.join(map(str, sorted(channels)))} channels")
    equal = fields.get("equallength", "").lower()
    length = fields.get("serieslength")
    if equal == "true" and len(lengths) > 1:
        problems.append(f"@equalLength true but the series lengths range from {min(lengths)} to {max(lengths)}")
    if equal == "true" and length and length.isdigit() and len(lengths) == 1 and lengths != {int(length)}:
        problems.append(f"@seriesLength {length} but the series have length {next(iter(lengths))}")
    if header_labels:
        undeclared = sorted(set(labels) - set(header_labels))
        if undeclared:
            problems.append(
                f"class label(s) {', '.join(map(repr, undeclared[:10]))} in the data are not declared in "
                f"@classLabel ({' '.join(header_labels)})"
            )
    return problems


def read_ts_split(
    path: str | os.PathLike, dataset: str = "?", split: str = "", *, allow_modified: bool = False
) -> tuple[np.ndarray | list[np.ndarray], np.ndarray, dict[str, Any]]:
    """Read one ``.ts`` file with aeon's reader: ``(X, y, meta)``.

    ``X`` is float64 ``(n, C, L)`` (equal length) or a list of ``(C, L_i)``; ``y`` the labels as str
    exactly as written in the file (case kept); ``meta`` aeon's header info plus
    ``"class_values_original"`` and ``"header_inconsistencies"``. A header that the data contradict
    (``@dimensions``, ``@seriesLength``, ``@equalLength``, ``@univariate``, undeclared class labels)
    is an error unless ``allow_modified`` (then the contradictions are returned in ``meta``). Errors
    name the file and the fix.
    """
    from aeon.datasets import load_from_ts_file

    path = Path(path)
    what = f"the {split} file of dataset {dataset!r}" if split else f"a file of dataset {dataset!r}"
    replace = f"replace it with the official file (move it away and run `chorustic download {dataset}`)"
    if not path.is_file():
        raise MissingDataFileError(
            f"{what} is missing: {path}. Run `chorustic download {dataset}` (or put the official "
            f"{path.name} there).",
            dataset=dataset,
            path=path,
        )
    try:
        X, y, meta = load_from_ts_file(str(path), return_meta_data=True)
        fields, header, raw_labels = _read_header(path)
    except UnicodeDecodeError as exc:
        raise MalformedDataFileError(
            f"cannot read {path} ({what}): not UTF-8 text ({exc}). Replace it with the official file "
            f"(move it away and run `chorustic download {dataset}`).",
            dataset=dataset,
            path=path,
        ) from exc
    except (OSError, ValueError, IndexError, TypeError, KeyError) as exc:
        raise MalformedDataFileError(
            f"cannot parse {path} ({what}) as a .ts file: {type(exc).__name__}: {exc}. The file is damaged or not "
            f"in the .ts format (truncated?); replace it with the official file (move it away and run "
            f"`chorustic download {dataset}`).",
            dataset=dataset,
            path=path,
        ) from exc
    if not meta.get("classlabel", False):
        raise MalformedDataFileError(
            f"{path} ({what}) declares no class labels (@classLabel false): not a classification dataset.",
            dataset=dataset,
            path=path,
        )
    n = len(X)
    if n == 0:
        raise MalformedDataFileError(
            f"{path} ({what}) holds no series after @data (empty or truncated); {replace}.",
            dataset=dataset, path=path,
        )
    if len(y) != n:
        raise MalformedDataFileError(
            f"{path} ({what}): {n} series but {len(y)} labels; {replace}.", dataset=dataset, path=path
        )
    if isinstance(X, list):
        empty = [i for i, s in enumerate(X) if s.shape[-1] == 0]
        if empty:
            raise MalformedDataFileError(
                f"{path} ({what}): series {empty[0]} is empty; {replace}.", dataset=dataset, path=path
            )
    y = [str(v).strip() for v in y]
    ends_with_newline = _ends_with_newline(path)
    timestamps = fields.get("timestamps", "false").lower() == "true"
    if not timestamps:
        if len(raw_labels) != n or [r.lower() for r in raw_labels] != [v.lower() for v in y]:
            raise MalformedDataFileError(
                f"{path} ({what}): the class labels at the ends of the data lines ({len(raw_labels)}) do not match "
                f"the {n} series aeon's reader found; the file is damaged. Replace it with the official file.",
                dataset=dataset,
                path=path,
            )
        y = raw_labels  # as written: `Up` and `up` stay two classes
        empty = [i for i, v in enumerate(y) if not v]
        if empty:
            raise MalformedDataFileError(
                f"{path} ({what}): series {empty[0]} has no class label after its last ':'; {replace}.",
                dataset=dataset, path=path,
            )
    else:  # timestamped series: labels from aeon (lower-cased), spelling restored when unambiguous
        by_lower: dict[str, str] = {}
        for h in header:
            by_lower.setdefault(h.lower(), h)
        if header and len(by_lower) == len(header):
            y = [by_lower.get(v.lower(), v) for v in y]
    problems = header_inconsistencies(fields, header, y, X)
    if problems and not allow_modified:
        raise MalformedDataFileError(
            f"{path} ({what}): the header contradicts the data: {'; '.join(problems)}. The file was edited or "
            "damaged: replace it with the official file (move it away and run `chorustic download "
            f"{dataset}`), or correct its header; to use it as it is, set data.allow_modified_data "
            "(recorded in the results).",
            dataset=dataset,
            path=path,
        )
    meta = dict(meta)
    meta["class_values_original"] = header
    meta["header_inconsistencies"] = [f"{path.name}: {p}" for p in problems]
    meta["ends_with_newline"] = ends_with_newline
    return X, np.asarray(y), meta


def _ends_with_newline(path: Path) -> bool:
    with open(path, "rb") as fh:
        fh.seek(0, os.SEEK_END)
        if fh.tell() == 0:
            return False
        fh.seek(-1, os.SEEK_END)
        return fh.read(1) == b"\n"


def _native(X: np.ndarray | list[np.ndarray]) -> np.ndarray | list[np.ndarray]:
    if isinstance(X, np.ndarray):
        return fill_missing(X).astype(np.float32)
    return [fill_missing(s).astype(np.float32) for s in X]


def _from_cache(
    arrays: dict[str, np.ndarray], name: str, archive: str, path: Path, settings: dict[str, Any]
) -> TimeSeriesDataset:
    def native(prefix: str):
        if not any(k.startswith(f"{prefix}_native") for k in arrays):
            return None  # not loaded
        if f"{prefix}_native" in arrays:
            return arrays[f"{prefix}_native"]
        return _cache.unpack_ragged(arrays[f"{prefix}_native_flat"], arrays[f"{prefix}_native_lengths"])

    files = arrays["source_files"].tolist()
    shas = arrays["source_sha256"].tolist()
    header = arrays["header_inconsistencies"].tolist() if "header_inconsistencies" in arrays else []
    unterminated = arrays["unterminated_files"].tolist() if "unterminated_files" in arrays else []
    return TimeSeriesDataset(
        name=name,
        archive=archive,
        X_train=arrays.get("X_train"),
        y_train=arrays["y_train"],
        X_test=arrays.get("X_test"),
        y_test=arrays["y_test"],
        classes=arrays["classes"].astype(str),
        X_train_native=native("X_train"),
        X_test_native=native("X_test"),
        source_sha256=dict(zip(files, shas)),
        cache_path=path,
        settings=settings,
        modifications=[str(h) for h in header],
        unterminated_files=[str(u) for u in unterminated],
        standin=json.loads(str(arrays["standin"])) if "standin" in arrays else None,
    )


def _to_cache(ds: TimeSeriesDataset) -> dict[str, np.ndarray]:
    arrays = {
        "X_train": ds.X_train,
        "y_train": ds.y_train,
        "X_test": ds.X_test,
        "y_test": ds.y_test,
        "classes": np.asarray(ds.classes, dtype=str),
        "source_files": np.asarray(list(ds.source_sha256), dtype=str),
        "source_sha256": np.asarray(list(ds.source_sha256.values()), dtype=str),
        "header_inconsistencies": np.asarray(list(ds.modifications), dtype=str).reshape(-1),
        "unterminated_files": np.asarray(list(ds.unterminated_files), dtype=str).reshape(-1),
    }
    if ds.standin is not None:
        arrays["standin"] = np.asarray(json.dumps(ds.standin, sort_keys=True))
    for prefix, nat in (("X_train", ds.X_train_native), ("X_test", ds.X_test_native)):
        if isinstance(nat, np.ndarray):
            arrays[f"{prefix}_native"] = nat
        else:
            arrays[f"{prefix}_native_flat"], arrays[f"{prefix}_native_lengths"] = _cache.pack_ragged(nat)
    return arrays


def load_dataset(
    name: str,
    data_dir: str | os.PathLike | None = None,
    *,
    cache_dir: str | os.PathLike | None = None,
    length: int = MODEL_LENGTH,
    offline: bool = False,
    label_order: str = "sorted",
    allow_modified: bool = False,
    series: str = "both",
    **download_options: Any,
) -> TimeSeriesDataset:
    """Load ``name`` preprocessed as in the paper (App. C.2); see :class:`TimeSeriesDataset`.

    ``series``: ``"native"`` or ``"resampled"`` reads only those arrays from the cache (the other fields are
    None), so an evaluation job holds only the input its method takes; ``"both"`` (default) reads both.

    The files come from :func:`~chorustic.data.download.ensure_dataset_files` (``offline`` and
    ``download_options`` such as ``mirrors``, ``lock``, ``progress``, ``subset`` are passed on).
    With ``cache_dir`` the arrays are cached keyed by the files' SHA-256 and the settings.

    Files that differ from the registry's published sizes of an archive dataset (a truncated file,
    another release) or contradict their own header raise :class:`ModifiedDataError` /
    :class:`MalformedDataFileError` naming the file; with ``allow_modified=True`` (a user's own
    variant) they load and the differences are listed in :attr:`TimeSeriesDataset.modifications`.
    """
    from chorustic.data.download import ensure_dataset_files, split_paths

    if series not in SERIES:
        raise ValueError(f"series must be one of {SERIES}, got {series!r}")
    folder, shas, official = ensure_dataset_files(name, data_dir, offline=offline, **download_options)
    content = content_differences(name, folder, shas, official)
    archive = get_info(name).archive if is_known(name) else "local"
    settings = preprocessing_settings(length, label_order)
    path = None
    if cache_dir is not None:
        key = _cache.cache_key(name, shas, settings)
        path = _cache.cache_path(cache_dir, name, key, length)
        skip = {"native": ("X_train", "X_test"), "resampled": _NATIVE_KEYS, "both": ()}[series]
        arrays = _cache.load_arrays(path, required=("X_train", "y_train", "X_test", "y_test", "classes"), skip=skip)
        if arrays is not None:
            ds = _from_cache(arrays, name, archive, path, settings)
            if ds.modifications and not allow_modified:  # accepted once, not any more: re-read to raise
                path_tr, path_te = split_paths(folder, name)
                for p, split in ((path_tr, "TRAIN"), (path_te, "TEST")):
                    read_ts_split(p, name, split)
            return _checked(ds, folder, allow_modified, content)

    train_path, test_path = split_paths(folder, name)
    X_tr, y_tr, meta_tr = read_ts_split(train_path, name, "TRAIN", allow_modified=allow_modified)
    X_te, y_te, meta_te = read_ts_split(test_path, name, "TEST", allow_modified=allow_modified)
    ch_tr, ch_te = _channel_count(X_tr), _channel_count(X_te)
    if len(ch_tr) != 1 or ch_tr != ch_te:
        raise MalformedDataFileError(
            f"dataset {name!r}: TRAIN has {sorted(ch_tr)} channels, TEST has {sorted(ch_te)}; the files do not "
            f"belong together. Move {folder} away and run `chorustic download {name}` to get the official files.",
            dataset=name,
            path=folder,
        )
    y_train, y_test, classes = encode_labels(
        y_tr,
        y_te,
        dataset=name,
        order=label_order,
        header=meta_tr.get("class_values_original"),
        test_file=str(test_path),
    )
    nat_tr, nat_te = _collapse(_native(X_tr), _native(X_te))
    ds = TimeSeriesDataset(
        name=name,
        archive=archive,
        X_train=to_model_length(nat_tr, length),
        y_train=y_train,
        X_test=to_model_length(nat_te, length),
        y_test=y_test,
        classes=classes,
        X_train_native=nat_tr,
        X_test_native=nat_te,
        source_sha256=dict(shas),
        cache_path=path,
        settings=settings,
        modifications=meta_tr["header_inconsistencies"] + meta_te["header_inconsistencies"],
        unterminated_files=[p.name for p, m in ((train_path, meta_tr), (test_path, meta_te))
                            if not m["ends_with_newline"]],
        standin=read_standin_mark(train_path),
    )
    if path is not None:
        _cache.save_arrays(path, _to_cache(ds))
    ds = _checked(ds, folder, allow_modified, content)
    if series == "native":
        return dataclasses.replace(ds, X_train=None, X_test=None)
    if series == "resampled":
        return dataclasses.replace(ds, X_train_native=None, X_test_native=None)
    return ds


def _collapse(a: np.ndarray | list[np.ndarray], b: np.ndarray | list[np.ndarray]):
    """Both splits as ``(n, C, L)`` arrays if every series of both has the same length (aeon returns
    lists for files declaring ``@equalLength false``), else both as lists of ``(C, L_i)``."""

    def series(x):
        return list(x) if isinstance(x, np.ndarray) else x

    lengths = {s.shape[-1] for s in series(a)} | {s.shape[-1] for s in series(b)}
    if len(lengths) == 1:
        return tuple(x if isinstance(x, np.ndarray) else np.stack(x) for x in (a, b))
    return tuple(series(x) for x in (a, b))


#: Registry rows whose sizes were checked against the data files (``verification`` column); the others
#: (``unverified-against-data``) only warn on a difference.
_VERIFIED = (":OK",)


def registry_differences(ds: TimeSeriesDataset) -> tuple[list[str], bool]:
    """How ``ds`` differs from the registry's sizes of its archive dataset, and whether those sizes were
    verified against the official files (a difference from a verified row is an error by default)."""
    if not is_known(ds.name):
        return [], False
    from chorustic.data.registry import SUBSETS

    info = get_info(ds.name)
    found = {"n_channels": ds.n_channels, "n_classes": ds.n_classes}
    if ds.name not in SUBSETS:  # a derived subset's sizes are its (recorded) build parameters
        found.update(n_train=ds.n_train, n_test=ds.n_test)
    if info.equal_length and ds.equal_length:
        found["length"] = int(np.shape(ds.X_train_native)[-1])
    labels = {"n_train": "training series", "n_test": "test series", "n_channels": "channels",
              "n_classes": "classes", "length": "series length"}
    diffs = [f"{v} {labels[k]} in the files, {getattr(info, k)} in the archive" for k, v in found.items()
             if getattr(info, k) != v]
    diffs += [f"{f} does not end with a line break as the archive's files do (cut off? its last series or label "
              "may be incomplete)" for f in ds.unterminated_files]
    verified = any(tag in info.verification for tag in _VERIFIED)
    return diffs, verified


def _checked(
    ds: TimeSeriesDataset, folder: Path, allow_modified: bool, content: Sequence[str] = ()
) -> TimeSeriesDataset:
    """Refuse (or, with ``allow_modified``, record) a difference from the published archive: sizes that
    differ from a verified registry row, and ``content`` (:func:`chorustic.data.official.content_differences`:
    files whose official checksum is known and which match none of its versions)."""
    if ds.standin is not None:  # random data of a chosen shape, marked in every result made from it
        return ds
    diffs, verified = registry_differences(ds)
    exact = (diffs if verified else []) + list(content)
    if exact and not allow_modified:
        raise ModifiedDataError(
            f"dataset {ds.name!r}: the files in {folder} do not match the published {ds.archive} archive: "
            f"{'; '.join(exact)}. A file was edited, truncated or is from another release: replace it with the official "
            f"file (move {folder} away and run `chorustic download {ds.name}`). If this is your own variant "
            f"of {ds.name} on purpose, set data.allow_modified_data: [{ds.name}] in the config "
            "(--allow-modified-data on the command line); the differences are then recorded in the results.",
            dataset=ds.name,
            path=folder,
            differences=tuple(exact),
        )
    if diffs and not verified:
        log.warning("dataset %s differs from the registry's (unverified) sizes: %s", ds.name, "; ".join(diffs))
    recorded = (diffs if (allow_modified or not verified) else []) + list(content)
    if recorded:
        ds.modifications = list(ds.modifications) + [f"{ds.name}: {d}" for d in recorded]
    return ds
