"""Input preprocessing of the paper (Appendix C.2), in numpy.

* **Channel axis kept**: every dataset is ``(n, C, L)``; UCR series have ``C = 1``; UEA channels
  are never flattened, concatenated or selected.
* **Missing values -> 0**, before any interpolation (:func:`fill_missing`).
* **Linear interpolation to** ``L0 = 512`` along time with ``align_corners=False`` semantics
  (:func:`chorustic.resampling.resample_linear`, the resampler every component uses); a
  variable-length dataset has each series resampled from its own length.
* **Labels** encoded to ``0..K-1`` by an encoder fitted on the training split and reused on the
  test split (:func:`encode_labels`); a test label unseen in training is an error.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from chorustic.data.errors import UnseenLabelError
from chorustic.resampling import linear_weights, resample_linear  # the one App. C.2 resampler

__all__ = [
    "MODEL_LENGTH",
    "LABEL_ORDERS",
    "linear_weights",
    "resample_linear",
    "fill_missing",
    "to_model_length",
    "class_order",
    "encode_labels",
]

#: The model length L0 of the paper.
MODEL_LENGTH = 512
#: ``"sorted"``: numeric order if every label is a finite number, else sorted strings (default);
#: ``"header"``: the order of the ``@classLabel`` header (the authors' UEA reader), labels absent
#: from the header appended in sorted order.
LABEL_ORDERS = ("sorted", "header")


def fill_missing(x: np.ndarray, value: float = 0.0) -> np.ndarray:
    """``x`` with NaN replaced by ``value`` (a copy only when there is a NaN)."""
    x = np.asarray(x, dtype=np.float64)
    mask = np.isnan(x)
    if mask.any():
        x = np.where(mask, value, x)
    return x


def to_model_length(
    X: np.ndarray | Sequence[np.ndarray], length: int = MODEL_LENGTH, dtype=np.float32
) -> np.ndarray:
    """``(n, C, length)`` from an ``(n, C, L)`` array or a list of ``(C, L_i)`` arrays (each series
    resampled from its own length). Missing values must be filled before (:func:`fill_missing`)."""
    if isinstance(X, np.ndarray) and X.ndim == 3:
        out = np.empty((X.shape[0], X.shape[1], length), dtype=dtype)
        # bounded memory: ~64 MB of float64 output per chunk (FaceDetection, PEMS-SF are large)
        rows = max(1, (64 << 20) // (8 * max(1, X.shape[1]) * max(length, X.shape[2])))
        for start in range(0, X.shape[0], rows):
            out[start : start + rows] = resample_linear(
                X[start : start + rows].astype(np.float64, copy=False), length
            )
        return out
    series = list(X)
    if not series:
        raise ValueError("no series to resample")
    n_channels = {np.shape(s)[0] for s in series}
    if len(n_channels) != 1:
        raise ValueError(f"series have different channel counts: {sorted(n_channels)}")
    out = np.empty((len(series), n_channels.pop(), length), dtype=dtype)
    by_length: dict[int, list[int]] = {}
    for i, s in enumerate(series):
        by_length.setdefault(np.shape(s)[-1], []).append(i)
    for idx in by_length.values():  # one vectorised call per distinct length
        batch = np.stack([np.asarray(series[i], dtype=np.float64) for i in idx])
        out[idx] = resample_linear(batch, length)
    return out


def _as_number(label: str) -> float | None:
    try:
        v = float(label)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def class_order(
    labels: Sequence[str], *, order: str = "sorted", header: Sequence[str] | None = None
) -> np.ndarray:
    """The distinct ``labels`` in encoding order (index = encoded label), as a str array.

    ``"sorted"``: if every label parses as a finite number, numeric order ("1" < "2" < "10"),
    else sorted strings. ``"header"``: ``header`` order (labels missing from it appended sorted).
    """
    if order not in LABEL_ORDERS:
        raise ValueError(f"unknown label order {order!r}: expected one of {LABEL_ORDERS}")
    distinct = sorted({str(v) for v in labels})
    nums = [_as_number(v) for v in distinct]
    if all(v is not None for v in nums):
        sorted_labels = [v for _, v in sorted(zip(nums, distinct))]
    else:
        sorted_labels = distinct
    if order == "header" and header:
        present = set(distinct)
        head = [h for h in dict.fromkeys(str(h) for h in header) if h in present]
        rest = [v for v in sorted_labels if v not in set(head)]
        sorted_labels = head + rest
    return np.asarray(sorted_labels, dtype=str)


def _check_numeric_aliases(y_train: np.ndarray, y_test: np.ndarray, *, dataset: str, test_file: str | None) -> None:
    """Labels are classes exactly as written; two spellings of one number (``1`` and ``1.0``) would
    silently become two classes, so they are an error naming them (the harness does not guess)."""
    by_value: dict[float, set[str]] = {}
    for v in set(y_train.tolist()) | set(y_test.tolist()):
        num = _as_number(v)
        if num is not None:
            by_value.setdefault(num, set()).add(v)
    aliases = [sorted(v) for v in by_value.values() if len(v) > 1]
    if aliases:
        where = f" (TEST file {test_file})" if test_file else ""
        shown = "; ".join(" and ".join(repr(a) for a in group) for group in sorted(aliases))
        from chorustic.data.errors import MalformedDataFileError

        raise MalformedDataFileError(
            f"dataset {dataset!r}{where}: class labels {shown} are different spellings of the same number. "
            "Labels are taken exactly as written, so they would become different classes; write each class "
            "the same way in the TRAIN and TEST files.",
            dataset=dataset,
            path=test_file,
        )


def encode_labels(
    y_train: Sequence[str],
    y_test: Sequence[str],
    *,
    dataset: str = "?",
    order: str = "sorted",
    header: Sequence[str] | None = None,
    test_file: str | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Encode with an encoder fitted on ``y_train`` only: ``(y_train_enc, y_test_enc, classes)``.

    Raises :class:`UnseenLabelError` naming the dataset and the labels when the test split holds a
    class the training split lacks.
    """
    y_train = np.asarray([str(v) for v in y_train])
    y_test = np.asarray([str(v) for v in y_test])
    _check_numeric_aliases(y_train, y_test, dataset=dataset, test_file=test_file)
    classes = class_order(y_train, order=order, header=header)
    index = {c: i for i, c in enumerate(classes)}
    unseen = sorted({v for v in y_test.tolist() if v not in index})
    if unseen:
        where = f" ({test_file})" if test_file else ""
        raise UnseenLabelError(
            f"dataset {dataset!r}: the test split{where} has label{'s' if len(unseen) > 1 else ''} "
            f"{', '.join(repr(u) for u in unseen)} that the training split does not have (training labels: "
            f"{', '.join(repr(c) for c in classes)}). Labels are encoded on the training split only; check that "
            "TRAIN and TEST files belong to the same release, re-download the dataset if not.",
            dataset=dataset,
            path=test_file,
            labels=tuple(unseen),
        )
    enc_train = np.fromiter((index[v] for v in y_train.tolist()), dtype=np.int64, count=len(y_train))
    enc_test = np.fromiter((index[v] for v in y_test.tolist()), dtype=np.int64, count=len(y_test))
    return enc_train, enc_test, classes
