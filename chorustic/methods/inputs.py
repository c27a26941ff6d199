"""The series a method receives, and the conversions the plugins share.

The harness hands an estimator either an array ``(n, C, L)`` or, for variable-length datasets with
``input_kind="native"``, a list of ``(C, L_i)`` arrays. :func:`check_series` validates both kinds;
:func:`to_fixed_length` (the paper's App. C.2 resampler, or UniShape's ``linspace`` grid),
:func:`pad_to_min_length` and :func:`flatten_channels` convert them by the documented rules.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from chorustic.resampling import resample_linear

__all__ = [
    "check_series",
    "fingerprint",
    "flatten_channels",
    "n_channels",
    "pad_to_min_length",
    "series_digests",
    "series_lengths",
    "take_series",
    "to_fixed_length",
]


def check_series(X: Any, *, name: str = "X") -> np.ndarray | list[np.ndarray]:
    """Validate the harness input and return float32 data of the same kind.

    Accepts an array ``(n, C, L)`` (``(n, L)`` is read as univariate) or a list of ``(C, L_i)`` arrays
    (variable length, ``(L_i,)`` read as univariate). Missing values become 0, as in the harness'
    preprocessing. Raises ValueError naming ``name`` on empty input, wrong dimensions or a
    changing channel count.
    """
    if isinstance(X, (list, tuple)):
        if len(X) == 0:
            raise ValueError(f"{name} is empty")
        out = []
        channels = None
        for i, x in enumerate(X):
            a = np.asarray(x, dtype=np.float32)
            if a.ndim == 1:
                a = a[None, :]
            if a.ndim != 2 or a.shape[1] == 0:
                raise ValueError(f"{name}[{i}] has shape {np.shape(x)}; expected (channels, length)")
            if channels is None:
                channels = a.shape[0]
            elif a.shape[0] != channels:
                raise ValueError(f"{name}[{i}] has {a.shape[0]} channels, {name}[0] has {channels}")
            out.append(np.nan_to_num(a, nan=0.0, posinf=0.0, neginf=0.0))
        lengths = {a.shape[1] for a in out}
        if len(lengths) == 1:  # a list of equal-length series is an array
            return np.stack(out)
        return out
    a = np.asarray(X, dtype=np.float32)
    if a.ndim == 2:
        a = a[:, None, :]
    if a.ndim != 3 or a.shape[0] == 0 or a.shape[2] == 0:
        raise ValueError(f"{name} has shape {np.shape(X)}; expected (n_cases, n_channels, length)")
    return np.nan_to_num(a, nan=0.0, posinf=0.0, neginf=0.0)


def n_channels(X: np.ndarray | list[np.ndarray]) -> int:
    return int(X[0].shape[0]) if isinstance(X, list) else int(X.shape[1])


def series_lengths(X: np.ndarray | list[np.ndarray]) -> np.ndarray:
    if isinstance(X, list):
        return np.array([x.shape[-1] for x in X], dtype=np.int64)
    return np.full(X.shape[0], X.shape[-1], dtype=np.int64)


def to_fixed_length(
    X: np.ndarray | list[np.ndarray], length: int | None = None, *, method: str = "linear"
) -> np.ndarray:
    """A float32 array ``(n, C, length)``: series of another length are resampled on their own.

    ``length=None`` keeps an equal-length array as it is and resamples a variable-length list to its
    longest series. ``method="linear"``: the paper's resampler (App. C.2,
    :func:`chorustic.resampling.resample_linear`, ``align_corners=False``); ``"linspace"``: linear
    interpolation onto ``length`` evenly spaced points including both ends (``align_corners=True``,
    the ``linspace(0, 1)`` grids of UniShape's authors), aeon's ``Resizer``.
    """
    if method not in ("linear", "linspace"):
        raise ValueError(f"unknown resampling method {method!r}; expected 'linear' or 'linspace'")
    if not isinstance(X, list):
        if length is None or X.shape[-1] == length:
            return np.asarray(X, dtype=np.float32)
        return _resample(X, length, method)
    target = int(length if length is not None else max(x.shape[-1] for x in X))
    if method == "linspace":
        return _resample(X, target, method)
    out = [x if x.shape[-1] == target else _resample(x, target, method) for x in X]
    return np.stack(out).astype(np.float32)


def _resample(X, length: int, method: str) -> np.ndarray:
    if method == "linear":
        return resample_linear(np.asarray(X, dtype=np.float32), length)
    from aeon.transformations.collection.unequal_length import Resizer

    single = not isinstance(X, list) and np.ndim(X) == 2
    data = np.asarray(X)[None] if single else X
    out = np.asarray(Resizer(resized_length=int(length)).fit_transform(data), dtype=np.float32)
    return out[0] if single else out


def pad_to_min_length(X: np.ndarray, min_length: int) -> np.ndarray:
    """Zero-pad the end of the time axis up to ``min_length`` (unchanged when already long enough)."""
    if X.shape[-1] >= min_length:
        return X
    pad = [(0, 0)] * (X.ndim - 1) + [(0, min_length - X.shape[-1])]
    return np.pad(X, pad).astype(X.dtype, copy=False)


def flatten_channels(X: np.ndarray) -> np.ndarray:
    """``(n, C, L) -> (n, C*L)``: the channels of a case concatenated into one row vector."""
    return np.ascontiguousarray(X.reshape(X.shape[0], -1))


def fingerprint(X: np.ndarray | list[np.ndarray]) -> str:
    """A content hash of an input (shape, dtype and bytes of every series)."""
    h = hashlib.sha1()
    items = X if isinstance(X, list) else [X]
    h.update(str(len(items)).encode())
    for a in items:
        a = np.ascontiguousarray(a)
        h.update(f"{a.shape}{a.dtype}".encode())
        h.update(memoryview(a).cast("B"))
    return h.hexdigest()


def series_digests(X: np.ndarray | list[np.ndarray]) -> list[bytes]:
    """One content hash per series (its values, dtype and shape), so that two series share a digest only when
    they are equal: what a cache of per-series results is keyed by (:mod:`chorustic.methods.pair_memo`)."""
    out = []
    for s in X:
        a = np.ascontiguousarray(s)
        h = hashlib.blake2b(digest_size=16)
        h.update(f"{a.dtype.str}{a.shape}".encode())
        h.update(a.data)
        out.append(h.digest())
    return out


def take_series(X: np.ndarray | list[np.ndarray], idx: Any) -> np.ndarray | list[np.ndarray]:
    """The series at positions ``idx`` of either kind of input, as the same kind: a view of ``X`` when ``idx``
    is a run of consecutive positions (the full-context protocol's whole training split is not copied)."""
    if isinstance(X, list):
        return [X[i] for i in idx]
    idx = np.asarray(idx)
    if idx.ndim == 1 and idx.size and idx.dtype.kind in "iu" and idx[0] >= 0:
        first = int(idx[0])
        if first + idx.size <= len(X) and np.array_equal(idx, np.arange(first, first + idx.size)):
            return X[first : first + idx.size]
    return X[idx]
