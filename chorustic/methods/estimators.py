"""The estimator base classes of the plugins: the parts of the method contract every method shares.

* :class:`ContractClassifier`: the sklearn-style base (``fit`` / ``predict_proba`` / ``predict`` /
  ``classes_`` / ``get_params``) that enforces the contract: classes come from the context only,
  probabilities are finite, non-negative and sum to one, a single-class context is handled.
* :class:`AeonContractClassifier`: an aeon classifier behind the contract (equal-length input made
  by the documented rules).
* :class:`FrozenEmbeddingClassifier`: the "frozen backbone + lightweight classifier" protocol of the
  paper's Frozen-TSFM baselines: every channel is embedded on its own by the pretrained backbone,
  channel embeddings are concatenated (or averaged), and a classifier head
  (:func:`chorustic.methods.heads.make_head`) is fitted on the context. Embeddings are kept per series
  (:data:`chorustic.methods.embedding_memo.EMBEDDING_MEMO`), so an evaluation job embeds each series of
  the test split and of its contexts once, for all of its protocol contexts.

A plugin whose ``Method`` sets ``estimator = <one of these subclasses>`` needs no ``build``: its
parameters are the estimator's constructor parameters (:meth:`chorustic.methods.base.Method.build`).
"""

from __future__ import annotations

import abc
import contextlib
import sys
from pathlib import Path
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin

from chorustic.methods.base import PROBA_ADVICE, probability_rows_problem
from chorustic.methods.devices import resolve_device, torch_device  # noqa: F401  (the plugins' names)
from chorustic.methods.embedding_memo import EMBEDDING_MEMO
from chorustic.methods.heads import make_head
from chorustic.methods.inputs import (
    check_series,
    n_channels,
    pad_to_min_length,
    series_lengths,
    to_fixed_length,
)

__all__ = [
    "AeonContractClassifier",
    "ContractClassifier",
    "FrozenBackbone",
    "FrozenEmbeddingClassifier",
    "torch_device",
    "torch_threads",
]


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


class ContractClassifier(ClassifierMixin, BaseEstimator):
    """Base of the plugins' estimators: implements the parts of the contract every method shares.

    Subclasses implement ``_fit(X, y_idx)`` (``y_idx`` in ``0..len(classes_)-1``) and
    ``_predict_proba(X) -> (n, len(classes_))``. ``fit`` takes ``classes_`` from the context labels
    only; with a single class in the context every query gets that class with probability 1 (no
    model is run). ``predict_proba`` validates the subclass' output: finite, non-negative rows that sum
    to 1 within :data:`~chorustic.methods.base.PROBA_TOL` (float32 rounding; such rows are renormalised
    in float64 and tiny negatives clipped to 0). Anything else (scores, logits, unnormalised weights, a
    row of zeros) is refused with a RuntimeError naming the estimator, the row and the tolerance: the
    harness never turns a method's numbers into probabilities it did not produce.
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
                f"{self._source()} returned probabilities of shape {proba.shape}, "
                f"expected {(n, len(self.classes_))}"
            )
        problem = probability_rows_problem(proba)
        if problem is not None:
            raise RuntimeError(
                f"{self._source()} returned rows that are not probabilities: {problem}. {PROBA_ADVICE}"
            )
        proba = np.clip(proba, 0.0, None)  # within the tolerance: float rounding only
        return proba / proba.sum(axis=1, keepdims=True)

    def _source(self) -> str:
        """``"MiniRocketEstimator._predict_proba (baselines/minirocket.py)"``: where the numbers come from."""
        file = getattr(sys.modules.get(type(self).__module__), "__file__", None)
        where = f" ({Path(file).parent.name}/{Path(file).name})" if file else ""
        return f"{type(self).__name__}._predict_proba{where}"

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


class FrozenBackbone:
    """A loaded, frozen network as :class:`FrozenEmbeddingClassifier` uses it: ``network``, ``key`` (a hashable
    identity: weights file and readout), ``info`` (what loading it found) and ``device``. Subclasses implement
    ``embed(series) -> (m, D)``; :meth:`channels_first` gives a batch of univariate series as the ``(m, 1, L)``
    float32 tensor most encoders take."""

    def __init__(self, network, *, key: tuple, info: dict[str, Any], device):
        self.network = network
        self.key = key
        self.info = info
        self.device = device

    def embed(self, series) -> np.ndarray:
        raise NotImplementedError

    def channels_first(self, series):
        import torch

        return torch.as_tensor(np.asarray(series, dtype=np.float32)[:, None, :], device=self.device)


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

    The encoder runs on batches of exactly ``batch_size`` univariate series (the last one of a call filled up
    with copies), and each series' embedding is kept for the job
    (:class:`~chorustic.methods.embedding_memo.EmbeddingMemo`): a context's features are what embedding it
    alone gives, bit for bit, whatever the job embedded before. ``batch_size=None`` takes
    :attr:`default_batch_size` for the device: few series on a CPU, where a larger batch is no faster and
    fills a last batch with more copies, many on a GPU.
    """

    series_length: ClassVar[int | None] = None
    #: The classifier head (:func:`make_head`) of subclasses that do not take it as a parameter.
    head: str = "rf"
    #: Series per encoder batch where ``batch_size`` is None, by device type ("cpu"; "gpu": any other).
    #: Mantis-8M on one CPU thread: 29 ms per series at 16, 31 at 32, 47 at 256 (and ~2 MB per series held).
    default_batch_size: ClassVar[dict[str, int]] = {"cpu": 16, "gpu": 256}

    def __init__(
        self,
        *,
        head: str = "rf",
        channel_fusion: str = "concat",
        batch_size: int | None = None,
        random_state: int = 0,
        device: str = "cpu",
        n_jobs: int = 1,
        verbose: bool = False,
    ):
        self._set(locals())

    def _set(self, params: dict[str, Any]) -> None:
        """Keep the constructor's parameters as attributes, as sklearn requires: a subclass's ``__init__``
        is its signature (its own parameters, then these) and ``self._set(locals())``."""
        for name, value in params.items():
            if name not in ("self", "__class__"):
                setattr(self, name, value)

    # -- hooks ----------------------------------------------------------------------------------
    @abc.abstractmethod
    def _backbone(self) -> Any: ...

    def _prepare(self, X: np.ndarray | list[np.ndarray]) -> np.ndarray | list[np.ndarray]:
        if self.series_length is None:
            return X
        return to_fixed_length(X, self.series_length)

    # -- embedding ------------------------------------------------------------------------------
    def _batch(self) -> int:
        """Series per encoder batch: ``batch_size``, or :attr:`default_batch_size` for the device."""
        if self.batch_size is not None:
            if int(self.batch_size) < 1:
                raise ValueError(f"batch_size must be at least 1, not {self.batch_size!r}")
            return int(self.batch_size)
        kind = "cpu" if torch_device(self.device).type == "cpu" else "gpu"
        return int(self.default_batch_size[kind])

    def transform(self, X: Any) -> np.ndarray:
        """Frozen features ``(n, C*D)`` (concat) or ``(n, D)`` (mean) of the input."""
        from tqdm.auto import tqdm

        if self.channel_fusion not in ("concat", "mean"):
            raise ValueError(f"channel_fusion must be 'concat' or 'mean', not {self.channel_fusion!r}")
        X = check_series(X)
        backbone = self._backbone()
        P = self._prepare(X)
        n = len(P) if isinstance(P, list) else P.shape[0]
        c = n_channels(P)
        if isinstance(P, list):
            flat: Sequence[np.ndarray] | np.ndarray = [x[j] for x in P for j in range(c)]
        else:
            flat = P.reshape(n * c, P.shape[-1])
        batch = self._batch()

        def progress(starts):
            return tqdm(starts, desc=f"{type(self).__name__} embedding", disable=not self.verbose, mininterval=5.0)

        with torch_threads(self.n_jobs):
            Z = EMBEDDING_MEMO.embed((backbone.key, type(self).__name__, batch), flat, backbone.embed, batch,
                                     progress=progress)
        Z = Z.reshape(n, c, -1)
        if self.channel_fusion == "mean":
            return Z.mean(axis=1)
        return Z.reshape(n, -1)

    # -- contract -------------------------------------------------------------------------------
    def _count_embeddings(self) -> None:
        for k, v in EMBEDDING_MEMO.take_counts().items():
            self.run_info_[k] = self.run_info_.get(k, 0) + v

    def _fit(self, X, y):
        EMBEDDING_MEMO.take_counts()  # another estimator's
        Z = self.transform(X)
        self._count_embeddings()
        self.head_ = make_head(self.head, seed=int(self.random_state), n_jobs=int(self.n_jobs or 1))
        self.head_.fit(Z, y)
        self.n_features_in_ = Z.shape[1]
        backbone = self._backbone()
        self.run_info_.update(getattr(backbone, "info", {}) or {})
        self.run_info_.update(
            {"embedding_dim": int(Z.shape[1]), "head": self.head, "channel_fusion": self.channel_fusion}
        )

    def _predict_proba(self, X):
        EMBEDDING_MEMO.take_counts()
        Z = self.transform(X)
        self._count_embeddings()
        proba = np.asarray(self.head_.predict_proba(Z), dtype=np.float64)
        # the head was fitted on 0..K-1 with every class present: columns are already in order
        return proba
