"""Building blocks that implement the method contract, and the checks every plugin must pass.

Plugins in ``baselines/`` are short because the parts every method shares live here:

* **Inputs** (:func:`check_series`, :func:`to_fixed_length`, :func:`resample_linear`,
  :func:`pad_to_min_length`, :func:`flatten_channels`): the harness hands an estimator either an
  array ``(n, C, L)`` or, for variable-length datasets with ``input_kind="native"``, a list of
  ``(C, L_i)`` arrays. These helpers validate and convert them by the documented rules.
* :class:`ContractClassifier`: the sklearn-style base (``fit`` / ``predict_proba`` / ``predict`` /
  ``classes_`` / ``get_params``) that enforces the contract: classes come from the context only,
  probabilities are finite, non-negative and sum to one, a single-class context is handled.
* :class:`FrozenEmbeddingClassifier`: the "frozen backbone + lightweight classifier" protocol of the
  paper's Frozen-TSFM baselines: every channel is embedded on its own by the pretrained backbone,
  channel embeddings are concatenated (or averaged), and a classifier head (random forest, logistic
  regression with standard scaling, or MOMENT's SVM protocol) is fitted on the context. Embeddings
  of an input array are cached per process, so the test split of a dataset is embedded once for
  all protocol contexts of an evaluation job.
* :class:`CSVReportedMethod` and :func:`reported_method`: "reported, not reproduced" methods whose
  per-dataset accuracies come from a CSV column (the paper's TiCT column, or any method a user cannot
  run).
* :func:`check_estimator_contract`: the estimator contract as assertions (first violation raises);
  the clause-by-clause version on generated data, with plugin metadata, is
  :func:`chorustic.methods.check.check_method` (``chorustic check-method NAME``).
"""

from __future__ import annotations

import abc
import collections
import contextlib
import hashlib
import importlib.util
import os
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin

from chorustic.methods.base import MethodInfo, MethodNotReady, ReportedMethod

__all__ = [
    "EMBEDDING_CACHE",
    "AeonContractClassifier",
    "CSVReportedMethod",
    "ContractClassifier",
    "EmbeddingCache",
    "FrozenEmbeddingClassifier",
    "MomentSVMHead",
    "check_estimator_contract",
    "check_series",
    "fingerprint",
    "flatten_channels",
    "import_plugin_module",
    "make_head",
    "n_channels",
    "pad_to_min_length",
    "repo_root",
    "reported_method",
    "resample_linear",
    "resample_linspace",
    "series_lengths",
    "to_fixed_length",
    "torch_device",
    "torch_threads",
]

Series = "np.ndarray | list[np.ndarray]"


def repo_root() -> Path:
    """The repository root (relative paths in plugin defaults are resolved against it)."""
    return Path(__file__).resolve().parents[2]


# --------------------------------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------------------------------


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


def resample_linear(x: np.ndarray, length: int) -> np.ndarray:
    """Linear interpolation of the last axis to ``length`` points, ``align_corners=False`` semantics.

    Equals ``torch.nn.functional.interpolate(x, size=length, mode="linear", align_corners=False)``,
    the resampling of the paper's data reader (App. C.2).
    """
    x = np.asarray(x, dtype=np.float32)
    n_in = x.shape[-1]
    if n_in == length:
        return x.copy()
    if n_in == 1:
        return np.repeat(x, length, axis=-1)
    scale = n_in / length
    src = (np.arange(length, dtype=np.float64) + 0.5) * scale - 0.5
    src = np.clip(src, 0.0, n_in - 1)
    lo = np.floor(src).astype(np.int64)
    hi = np.minimum(lo + 1, n_in - 1)
    w = (src - lo).astype(np.float32)
    return (x[..., lo] * (1.0 - w) + x[..., hi] * w).astype(np.float32)


def resample_linspace(x: np.ndarray, length: int) -> np.ndarray:
    """Linear interpolation of the last axis onto ``length`` evenly spaced points including both ends
    (``align_corners=True`` semantics, ``scipy.interpolate.interp1d`` on ``linspace(0, 1)`` grids)."""
    x = np.asarray(x, dtype=np.float32)
    n_in = x.shape[-1]
    if n_in == length:
        return x.copy()
    if n_in == 1:
        return np.repeat(x, length, axis=-1)
    src = np.linspace(0.0, n_in - 1, length)
    lo = np.floor(src).astype(np.int64)
    lo = np.minimum(lo, n_in - 2)
    w = (src - lo).astype(np.float32)
    return (x[..., lo] * (1.0 - w) + x[..., lo + 1] * w).astype(np.float32)


def to_fixed_length(
    X: np.ndarray | list[np.ndarray], length: int | None = None, *, method: str = "linear"
) -> np.ndarray:
    """An array ``(n, C, length)``: series of another length are resampled on their own.

    ``length=None`` keeps an equal-length array as it is and resamples a variable-length list to its
    longest series. ``method`` is ``"linear"`` (:func:`resample_linear`) or ``"linspace"``
    (:func:`resample_linspace`).
    """
    fn = {"linear": resample_linear, "linspace": resample_linspace}[method]
    if not isinstance(X, list):
        if length is None or X.shape[-1] == length:
            return np.asarray(X, dtype=np.float32)
        return fn(X, length)
    target = int(length if length is not None else max(x.shape[-1] for x in X))
    return np.stack([x if x.shape[-1] == target else fn(x, target) for x in X]).astype(np.float32)


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


@contextlib.contextmanager
def torch_threads(n_jobs: int | None) -> Iterator[None]:
    """Use ``n_jobs`` torch intra-op threads inside the block (restored afterwards)."""
    import torch

    if not n_jobs or n_jobs < 1:
        yield
        return
    old = torch.get_num_threads()
    torch.set_num_threads(int(n_jobs))
    try:
        yield
    finally:
        torch.set_num_threads(old)


def torch_device(device: str | None) -> Any:
    """``"auto"``/None -> cuda when available; a CUDA request without CUDA is a clear error."""
    import torch

    if device in (None, "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise MethodNotReady(f"device {device!r} requested but CUDA is not available; use device 'cpu'")
    return dev


# --------------------------------------------------------------------------------------------------
# Estimators
# --------------------------------------------------------------------------------------------------


class ContractClassifier(ClassifierMixin, BaseEstimator):
    """Base of the plugins' estimators: implements the parts of the contract every method shares.

    Subclasses implement ``_fit(X, y_idx)`` (``y_idx`` in ``0..len(classes_)-1``) and
    ``_predict_proba(X) -> (n, len(classes_))``. ``fit`` takes ``classes_`` from the context labels
    only; with a single class in the context every query gets that class with probability 1 (no
    model is run). ``predict_proba`` validates and renormalises the subclass' output.
    ``run_info_`` collects facts the harness stores with each result (weights used, tensors loaded).
    """

    def fit(self, X: Any, y: Any) -> ContractClassifier:
        y = np.asarray(y)
        if y.ndim != 1:
            raise ValueError(f"y must be one-dimensional, got shape {y.shape}")
        if len(y) != (len(X) if isinstance(X, (list, tuple)) else np.shape(X)[0]):
            raise ValueError(f"X has {len(X)} cases but y has {len(y)} labels")
        self.classes_, y_idx = np.unique(y, return_inverse=True)
        self.run_info_: dict[str, Any] = {}
        X = check_series(X, name="X (context)")
        self.n_channels_ = n_channels(X)
        if len(self.classes_) == 1:
            self.single_class_ = True
            return self
        self.single_class_ = False
        self._fit(X, y_idx.astype(np.int64))
        return self

    def predict_proba(self, X: Any) -> np.ndarray:
        if not hasattr(self, "classes_"):
            from sklearn.exceptions import NotFittedError

            raise NotFittedError(f"{type(self).__name__} is not fitted; call fit(X_context, y_context) first")
        X = check_series(X, name="X (query)")
        if n_channels(X) != self.n_channels_:
            raise ValueError(f"query has {n_channels(X)} channels, the context had {self.n_channels_}")
        n = len(X) if isinstance(X, list) else X.shape[0]
        if self.single_class_:
            return np.ones((n, 1), dtype=np.float64)
        proba = np.asarray(self._predict_proba(X), dtype=np.float64)
        if proba.shape != (n, len(self.classes_)):
            raise RuntimeError(
                f"{type(self).__name__} produced probabilities of shape {proba.shape}, "
                f"expected {(n, len(self.classes_))}"
            )
        if not np.all(np.isfinite(proba)):
            raise RuntimeError(f"{type(self).__name__} produced non-finite probabilities")
        proba = np.clip(proba, 0.0, None)
        sums = proba.sum(axis=1, keepdims=True)
        bad = sums[:, 0] <= 0
        if np.any(bad):
            proba[bad] = 1.0 / proba.shape[1]
            sums[bad] = 1.0
        return proba / sums

    def predict(self, X: Any) -> np.ndarray:
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]

    @abc.abstractmethod
    def _fit(self, X: np.ndarray | list[np.ndarray], y: np.ndarray) -> None: ...

    @abc.abstractmethod
    def _predict_proba(self, X: np.ndarray | list[np.ndarray]) -> np.ndarray: ...


class AeonContractClassifier(ContractClassifier):
    """An aeon classifier behind the contract, for methods that need equal-length series.

    Rules: a variable-length input is linearly resampled to the longest context series (queries to
    the same length); an equal-length query of another length is resampled to the context length;
    series shorter than ``min_length`` are zero-padded at the end (the fix aeon's own error message
    prescribes for MiniRocket-type kernels of length 9). Subclasses set ``min_length`` and implement
    ``_make()`` returning the unfitted aeon estimator.
    """

    min_length: ClassVar[int] = 1

    @abc.abstractmethod
    def _make(self) -> Any: ...

    def _equalise(self, X, *, fitting: bool) -> np.ndarray:
        if fitting:
            self.length_ = int(series_lengths(X).max())
        return pad_to_min_length(to_fixed_length(X, self.length_), self.min_length)

    def _fit(self, X, y):
        X3 = self._equalise(X, fitting=True)
        self.model_ = self._make()
        self.model_.fit(X3, y)
        self.run_info_.update(
            {
                "series_length": int(X3.shape[-1]),
                "variable_length_resampled_to": int(self.length_) if isinstance(X, list) else None,
                "zero_padded_to": int(self.min_length) if self.length_ < self.min_length else None,
            }
        )

    def _predict_proba(self, X):
        X3 = self._equalise(X, fitting=False)
        proba = np.asarray(self.model_.predict_proba(X3), dtype=np.float64)
        out = np.zeros((proba.shape[0], len(self.classes_)))
        out[:, np.asarray(self.model_.classes_, dtype=np.int64)] = proba  # aeon's classes are our 0..K-1
        return out


class MomentSVMHead:
    """MOMENT's own classification protocol on frozen embeddings: ``momentfm``'s ``fit_svm``.

    ``fit_svm`` grid-searches an RBF SVC over C with 5-fold CV (hard-coded 10 workers) unless the
    context is tiny (< 50 cases or < 5 per class: a single SVC with C=1e5), and subsamples
    contexts above 10000 cases. The SVC has no probability model; probabilities are a softmax of its
    one-vs-rest decision values, fixed up so that their argmax is always the SVC's prediction.
    """

    def fit(self, Z: np.ndarray, y: np.ndarray) -> MomentSVMHead:
        from momentfm.models.statistical_classifiers import fit_svm

        self.svm_ = fit_svm(Z, y)
        self.classes_ = self.svm_.classes_
        return self

    def predict_proba(self, Z: np.ndarray) -> np.ndarray:
        k = len(self.classes_)
        scores = np.asarray(self.svm_.decision_function(Z), dtype=np.float64)
        if scores.ndim == 1:  # binary: positive -> classes_[1]
            scores = np.stack([-scores, scores], axis=1) / 2.0
        e = np.exp(scores - scores.max(axis=1, keepdims=True))
        proba = e / e.sum(axis=1, keepdims=True)
        pred = self.svm_.predict(Z)
        idx = np.searchsorted(self.classes_, pred)
        wrong = np.argmax(proba, axis=1) != idx
        if np.any(wrong):
            proba[wrong] = np.eye(k)[idx[wrong]]
        return proba


def make_head(kind: str, *, seed: int, n_jobs: int = 1, n_estimators: int = 200, lr_max_iter: int = 1000):
    """The lightweight classifier fitted on frozen embeddings.

    * ``"rf"``: ``RandomForestClassifier(n_estimators=200, random_state=seed)`` (Mantis, MantisV2,
      UniShape and NuTime protocols; 200 trees as in the authors' zero-shot scripts);
    * ``"lr"``: ``StandardScaler`` + ``LogisticRegression`` (MantisV2+LR);
    * ``"svm"``: :class:`MomentSVMHead` (MOMENT+SVM).
    """
    if kind == "rf":
        from sklearn.ensemble import RandomForestClassifier

        return RandomForestClassifier(n_estimators=n_estimators, random_state=seed, n_jobs=n_jobs)
    if kind == "lr":
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        return make_pipeline(StandardScaler(), LogisticRegression(max_iter=lr_max_iter, random_state=seed))
    if kind == "svm":
        return MomentSVMHead()
    raise ValueError(f"unknown classifier head {kind!r}; expected 'rf', 'lr' or 'svm'")


class EmbeddingCache:
    """Per-process LRU cache of frozen embeddings, keyed by (backbone, readout, input fingerprint).

    Bounded by ``max_mb`` (``$CHORUSTIC_EMBEDDING_CACHE_MB``, default 2048; 0 disables). Keys are
    whole input arrays, so a cached result is exactly what recomputing that array gives.
    """

    def __init__(self, max_mb: float | None = None):
        if max_mb is None:
            max_mb = float(os.environ.get("CHORUSTIC_EMBEDDING_CACHE_MB", "2048"))
        self.max_bytes = int(max_mb * 1024 * 1024)
        self._data: collections.OrderedDict[tuple, np.ndarray] = collections.OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get_or_compute(self, key: tuple, compute: Callable[[], np.ndarray]) -> np.ndarray:
        with self._lock:
            if key in self._data:
                self._data.move_to_end(key)
                self.hits += 1
                return self._data[key]
            self.misses += 1
        value = np.asarray(compute())
        value.setflags(write=False)
        if value.nbytes <= self.max_bytes:
            with self._lock:
                if key not in self._data:
                    self._data[key] = value
                    self._bytes += value.nbytes
                while self._bytes > self.max_bytes and self._data:
                    _, old = self._data.popitem(last=False)
                    self._bytes -= old.nbytes
        return value

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
            self._bytes = 0


EMBEDDING_CACHE = EmbeddingCache()


class FrozenEmbeddingClassifier(ContractClassifier):
    """Frozen pretrained backbone, every channel embedded on its own, a classifier head on top.

    Subclasses implement

    * ``_backbone()`` -> an object (cached per process by the plugin) exposing ``key`` (a hashable
      identity: weights file and readout) and ``embed(series) -> (m, D)`` for a batch of univariate
      series (an array ``(m, L)``, or a list of 1-D arrays for backbones that take variable length);
    * optionally ``_prepare(X)`` -> the per-channel series as an array ``(n, C, L)`` or a list of
      ``(C, L_i)`` arrays (default: linear resampling to ``series_length`` when that is set).

    Channel embeddings are concatenated (``channel_fusion="concat"``, the issue's protocol for
    multivariate data) or averaged (``"mean"``). The head is chosen by ``head`` (see :func:`make_head`).
    """

    series_length: ClassVar[int | None] = None

    def __init__(
        self,
        *,
        head: str = "rf",
        channel_fusion: str = "concat",
        batch_size: int = 256,
        random_state: int = 0,
        device: str = "cpu",
        n_jobs: int = 1,
        verbose: bool = False,
    ):
        self.head = head
        self.channel_fusion = channel_fusion
        self.batch_size = batch_size
        self.random_state = random_state
        self.device = device
        self.n_jobs = n_jobs
        self.verbose = verbose

    # -- hooks ----------------------------------------------------------------------------------
    @abc.abstractmethod
    def _backbone(self) -> Any: ...

    def _prepare(self, X: np.ndarray | list[np.ndarray]) -> np.ndarray | list[np.ndarray]:
        if self.series_length is None:
            return X
        return to_fixed_length(X, self.series_length)

    # -- embedding ------------------------------------------------------------------------------
    def transform(self, X: Any) -> np.ndarray:
        """Frozen features ``(n, C*D)`` (concat) or ``(n, D)`` (mean) of the input."""
        if self.channel_fusion not in ("concat", "mean"):
            raise ValueError(f"channel_fusion must be 'concat' or 'mean', not {self.channel_fusion!r}")
        X = check_series(X)
        backbone = self._backbone()
        key = (backbone.key, type(self).__name__, self.channel_fusion, fingerprint(X))
        return EMBEDDING_CACHE.get_or_compute(key, lambda: self._embed(backbone, X))

    def _embed(self, backbone: Any, X: np.ndarray | list[np.ndarray]) -> np.ndarray:
        from tqdm.auto import tqdm

        P = self._prepare(X)
        n = len(P) if isinstance(P, list) else P.shape[0]
        c = n_channels(P)
        if isinstance(P, list):
            flat: Sequence[np.ndarray] = [x[j] for x in P for j in range(c)]
        else:
            flat = P.reshape(n * c, P.shape[-1])
        bs = max(1, int(self.batch_size))
        chunks = []
        starts = range(0, n * c, bs)
        with torch_threads(self.n_jobs):
            for s in tqdm(
                starts, desc=f"{type(self).__name__} embedding", disable=not self.verbose, mininterval=5.0
            ):
                chunks.append(np.asarray(backbone.embed(flat[s : s + bs]), dtype=np.float32))
        Z = np.concatenate(chunks, axis=0).reshape(n, c, -1)
        if self.channel_fusion == "mean":
            return Z.mean(axis=1)
        return Z.reshape(n, -1)

    # -- contract -------------------------------------------------------------------------------
    def _fit(self, X, y):
        Z = self.transform(X)
        self.head_ = make_head(self.head, seed=int(self.random_state), n_jobs=int(self.n_jobs or 1))
        self.head_.fit(Z, y)
        self.n_features_in_ = Z.shape[1]
        backbone = self._backbone()
        self.run_info_.update(getattr(backbone, "info", {}) or {})
        self.run_info_.update(
            {"embedding_dim": int(Z.shape[1]), "head": self.head, "channel_fusion": self.channel_fusion}
        )

    def _predict_proba(self, X):
        Z = self.transform(X)
        proba = np.asarray(self.head_.predict_proba(Z), dtype=np.float64)
        # the head was fitted on 0..K-1 with every class present: columns are already in order
        return proba


# --------------------------------------------------------------------------------------------------
# Reported methods
# --------------------------------------------------------------------------------------------------


class CSVReportedMethod(ReportedMethod):
    """A "reported, not reproduced" method: per-dataset accuracies read from CSV column(s).

    Parameters (config ``params``): ``csv`` (a path or a list of paths, relative to the repository
    root unless absolute; a file with a ``dataset`` column and one column per method), ``column``
    (the column to read; default: the method's display name), ``protocol`` (default ``"full"``)
    and ``seed`` (default 0). Accuracies must lie in [0, 1]; empty cells mean "not reported" and are
    skipped. The result has the columns ``dataset, protocol, seed, accuracy``.

    Subclass and set ``info`` (with ``reported=True``) and ``default_params``, or use
    :func:`reported_method`.
    """

    default_params: ClassVar[dict[str, Any]] = {"csv": [], "column": None, "protocol": "full", "seed": 0}

    def _paths(self, csv: Any) -> list[Path]:
        items = [csv] if isinstance(csv, (str, os.PathLike)) else list(csv or [])
        if not items:
            raise MethodNotReady(
                f"{self.info.display_name} ({self.info.name}): no `csv` parameter; set "
                f"`params: {{csv: <file with columns dataset,{self.info.display_name}>}}`"
            )
        out = []
        for item in items:
            p = Path(item).expanduser()
            out.append(p if p.is_absolute() else repo_root() / p)
        return out

    def check_ready(self, **params: Any) -> None:
        self.reported_accuracies(**params)

    def reported_accuracies(self, **params: Any):
        import pandas as pd

        p = self.params(params)
        column = p.get("column") or self.info.display_name
        frames = []
        for path in self._paths(p.get("csv")):
            if not path.is_file():
                raise MethodNotReady(
                    f"{self.info.display_name} ({self.info.name}): reported-accuracy file {path} does not "
                    f"exist. Put the CSV (columns: dataset,{column},...) there or set `csv` in the config."
                )
            table = pd.read_csv(path)
            if "dataset" not in table.columns:
                raise MethodNotReady(f"{path}: no `dataset` column (columns: {list(table.columns)})")
            if column not in table.columns:
                continue  # e.g. TiCT appears in the UCR table only
            acc = pd.to_numeric(table[column], errors="coerce")
            bad = table.loc[acc.notna() & ((acc < 0) | (acc > 1)), "dataset"].tolist()
            if bad:
                raise ValueError(
                    f"{path}: column {column!r} has accuracies outside [0, 1] for {bad[:5]} "
                    f"(give accuracies as fractions, not percentages)"
                )
            frames.append(
                pd.DataFrame({"dataset": table["dataset"].astype(str), "accuracy": acc}).dropna(
                    subset=["accuracy"]
                )
            )
        if not frames:
            raise MethodNotReady(
                f"{self.info.display_name} ({self.info.name}): none of the CSV files "
                f"{[str(x) for x in self._paths(p.get('csv'))]} has a column {column!r}"
            )
        out = pd.concat(frames, ignore_index=True)
        dup = out["dataset"][out["dataset"].duplicated()].tolist()
        if dup:
            raise ValueError(f"{self.info.name}: datasets reported twice across the CSV files: {dup[:5]}")
        out.insert(1, "protocol", str(p.get("protocol", "full")))
        out.insert(2, "seed", int(p.get("seed", 0)))
        return out[["dataset", "protocol", "seed", "accuracy"]].reset_index(drop=True)


def reported_method(
    *,
    name: str,
    display_name: str,
    group: str,
    csv: str | Sequence[str],
    column: str | None = None,
    fits_on_target: bool = False,
    description: str = "",
    reference: str = "",
) -> type[CSVReportedMethod]:
    """Make a reported-method plugin class; a user's whole plugin file is then::

    from chorustic.methods import register
    from chorustic.methods.contract import reported_method

    register(reported_method(name="mymethod", display_name="MyMethod", group="Frozen TSFM",
                             csv="results/reference/mymethod.csv"))
    """
    info = MethodInfo(
        name=name,
        display_name=display_name,
        group=group,
        fits_on_target=fits_on_target,
        reported=True,
        description=description or f"reported accuracies of {display_name}",
        reference=reference,
    )
    params = {
        "csv": list(csv) if not isinstance(csv, str) else csv,
        "column": column,
        "protocol": "full",
        "seed": 0,
    }
    cls = type(
        f"Reported_{name}",
        (CSVReportedMethod,),
        {
            "info": info,
            "default_params": params,
            "__module__": sys._getframe(1).f_globals.get("__name__", __name__),
        },
    )
    return cls


# --------------------------------------------------------------------------------------------------
# Plugin helpers
# --------------------------------------------------------------------------------------------------


def import_plugin_module(name: str, near: str | os.PathLike):
    """Import the sibling plugin file ``<dir of near>/<name>.py`` (as ``chorustic_plugins.<name>``, the
    module name discovery uses), e.g. to reuse its estimator class in a variant plugin."""
    mod_name = f"chorustic_plugins.{name}"
    if mod_name in sys.modules:
        return sys.modules[mod_name]
    path = Path(near).resolve().parent / f"{name}.py"
    spec = importlib.util.spec_from_file_location(mod_name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import plugin {name!r} from {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(mod_name, None)
        raise
    return module


# --------------------------------------------------------------------------------------------------
# The shared contract test suite
# --------------------------------------------------------------------------------------------------


def check_estimator_contract(
    build: Callable[[int], Any],
    X_context: Any,
    y_context: np.ndarray,
    X_query: Any,
    *,
    check_missing_class: bool = True,
    check_query_order: bool = True,
    atol: float = 1e-6,
) -> dict[str, Any]:
    """Assert the method contract for estimators made by ``build(seed)``; return what was observed.

    Checks: sklearn-style API (``fit`` returns self, ``get_params``, ``predict_proba`` takes only X),
    probability shape ``(n_query, n_classes_in_context)``, finite non-negative rows summing to 1,
    ``predict`` = ``classes_[argmax]``, classes come from the context only (a context missing a class
    gives probabilities for the seen classes only), same seed -> identical output, and query order
    does not matter (each query's prediction depends on the context and that query only: no test
    labels or test-set statistics). Raises AssertionError with a message on the first violation.
    """
    from chorustic.methods.check import estimator_clauses

    observed: dict[str, Any] = {}
    for item in estimator_clauses(
        build, X_context, y_context, X_query, check_missing_class=check_missing_class,
        check_query_order=check_query_order, atol=atol,
    ):
        if isinstance(item, tuple):
            observed = item[1]
        elif item.status == "fail":
            raise AssertionError(f"{item.name}: {item.detail}")
    return observed
