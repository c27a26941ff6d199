"""1NN-DTW, from aeon. Beyond the paper: the classical distance-based reference.

Protocol: ``aeon.classification.distance_based.KNeighborsTimeSeriesClassifier(distance="dtw",
n_neighbors=1)`` on the **native** series: full warping window (aeon's default; ``window`` sets a
Sakoe-Chiba band as a fraction of the length), dependent multivariate DTW, variable-length
series compared as they are (DTW aligns series of different lengths; no resampling).

Probabilities: the nearest neighbour's class with probability 1 (aeon's ``predict_proba``). The distances are
aeon's ``pairwise_distance`` of a chunk of queries to the context at once (the job's threads share out the
queries; multivariate series with their channels side by side in memory, :func:`channels_side_by_side`), each
pair computed once per job: every context draws from the same training split and predicts the
same test split, and the job's :class:`~chorustic.methods.pair_memo.PairMemo` hands a pair it holds to the
next context (the paper's 16 contexts hold 3-10 times the training split). The nearest is picked from them as
aeon's ``kneighbors`` picks it, so the predictions are aeon's classifier's, ties included.
Cost: O(n_context x n_query x L^2); long series (EigenWorms: 17,984 points) need a large runtime or a
``window``; a job that exceeds its time limit is recorded as failed.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from chorustic.methods import CostModel, Method, MethodInfo, register
from chorustic.methods.estimators import ContractClassifier
from chorustic.methods.inputs import series_digests, take_series
from chorustic.methods.pair_memo import PAIR_MEMO


def channels_side_by_side(X: np.ndarray | list[np.ndarray]) -> np.ndarray | list[np.ndarray]:
    """Multivariate series as aeon's DTW reads them fastest: each ``(channels, length)`` series with its channels
    side by side in memory (Fortran order), a list of them (a copy). Each alignment cell sums the squared
    differences of a time point's channels; in the collection's own layout (channel by channel) that read is
    strided, and on the portable numerics' code for haswell it cost 24.4 ns per 6-channel cell on an Intel Xeon
    where the same cells cost 4.3 ns side by side (84.6 and 19.4 ns at 144 channels; benchmarks/dtw_cells.py).
    The distances are aeon's own, in the same order of channels: equal bit for bit below 16 channels, and from
    16 on within rounding of the channel sum (the compiler may sum contiguous channels in vector lanes).
    Univariate series, and a collection holding a series of one time point (numba types such an array as C
    ordered, and one list takes one layout), are returned as they are."""
    if len(X) == 0 or np.shape(X[0])[0] == 1 or any(np.shape(x)[-1] == 1 for x in X):
        return X
    return [np.asfortranarray(x) for x in X]


def check_window(window: float | None) -> None:
    if window is not None and not 0.0 <= float(window) <= 1.0:
        raise ValueError(f"dtw_1nn: window must be a fraction in [0, 1] or null, got {window!r}")


class DTW1NNEstimator(ContractClassifier):
    def __init__(self, window: float | None = None, n_jobs: int = 1):
        self.window = window
        self.n_jobs = n_jobs

    def _model(self):
        from aeon.classification.distance_based import KNeighborsTimeSeriesClassifier

        params = None if self.window is None else {"window": float(self.window)}
        return KNeighborsTimeSeriesClassifier(
            distance="dtw", distance_params=params, n_neighbors=1, n_jobs=self.n_jobs
        )

    def _fit(self, X, y):
        check_window(self.window)
        self.model_ = self._model()
        self.model_.fit(X, y)
        self.context_digests_ = series_digests(self.model_.X_)
        self.context_ = channels_side_by_side(self.model_.X_)
        PAIR_MEMO.take_counts()
        self.run_info_.update({"window": self.window, "variable_length": isinstance(X, list),
                               "distances_computed": 0, "distances_reused": 0})

    def _predict_proba(self, X):
        from aeon.distances import pairwise_distance
        from aeon.utils.validation import check_n_jobs

        model = self.model_
        queries = model._preprocess_collection(X, store_metadata=False)  # as aeon's kneighbors takes them
        model._check_shape(queries)
        params = {} if self.window is None else {"window": float(self.window)}

        digests, queries = series_digests(queries), channels_side_by_side(queries)

        def compute(qi, ci):
            return pairwise_distance(take_series(queries, qi), take_series(self.context_, ci), method="dtw",
                                     n_jobs=self.n_jobs, **params)

        distances = PAIR_MEMO.distances(("dtw", self.window), digests, self.context_digests_,
                                        compute, lanes=check_n_jobs(self.n_jobs))
        for k, v in PAIR_MEMO.take_counts().items():
            self.run_info_[k] += v
        # the nearest as aeon's kneighbors picks it (n_neighbors=1: its partial selection of the smallest, row by
        # row, which also decides between equal distances); predict_proba's uniform weights make its class 1
        nearest = np.argpartition(distances, kth=0, axis=1)[:, 0]
        labels = np.asarray(model.classes_, dtype=np.int64)[model.y_[nearest]]
        out = np.zeros((len(labels), len(self.classes_)))
        out[np.arange(len(labels)), labels] = 1.0
        return out


@register
class DTW1NN(Method):
    info = MethodInfo(
        name="dtw_1nn",
        display_name="1NN-DTW",
        group="Classical",
        fits_on_target=True,
        input_kind="native",
        description="aeon KNeighborsTimeSeriesClassifier(distance='dtw', n_neighbors=1), full window",
        reference="Bagnall et al. The great time series classification bake off. DMKD 2017",
        pretraining_data="none: fitted on the target training split only",
        benchmark_in_pretraining="no",
    )
    estimator = DTW1NNEstimator  # its parameter (window) is the method's
    resources: ClassVar[dict[str, Any]] = {"threads": 4, "mem_mb": 8000, "runtime": 2880, "gpu": 0}
    #: Fitted on jobs on stand-ins of the largest archive shapes, at growing fractions and in full
    #: (benchmarks/archive_scale.py --fit, 1 thread, a variable-length stand-in at its mean length;
    #: benchmarks/results/archive_scale.md): a univariate alignment cell ~4.05 ns (the warping path and the pointwise
    #: distance; the univariate jobs, 7 shapes, AMD EPYC, 2026-11-27/30); with channels side by side
    #: (channels_side_by_side, since 2026-12-01) ~0.13 ns per further channel and ~0.5 ns per cell of multivariate
    #: series, ~0.04 ns per channel more where a series does not stay in a core's cache (benchmarks/dtw_cells.py and
    #: the multivariate jobs of 8 shapes measured again, Intel Xeon, 2026-12-01: 0.11-0.18 ns per cell and channel);
    #: each pair once per job (the memo, 8 bytes per pair); 16 bytes per pair of a chunk of queries with the context
    #: (the distances and their partial sort), which sets the chunks; the memory the refit of 2026-12-01 (its jobs no
    #: longer load torch; a multivariate job's copies of its context and of a chunk's queries with the channels side
    #: by side are in its bytes per value: its full PEMS-SF and DuckDuckGeese jobs peaked at 1.22x the refit).
    #: loads_torch=False: aeon's DTW is numba code; its jobs never load torch. A job's own start (time_job_s) is the
    #: refit's of 2026-12-01: its small multivariate jobs, which no longer load torch, took 3.9-4.8 CPU-s in all, the
    #: univariate ones of 2026-11-27/30, which did, 7.9-9.3 (the per-cell terms above decide every job beyond a minute).
    cost: ClassVar[CostModel] = CostModel(loads_torch=False, time_job_s=5.67, time_base_s=0, time_ns_per_value=0,
                                          time_ns_per_cell=0.13, time_ns_per_path_cell=3.92,
                                          time_ns_per_cell_spilled=0.04, time_ns_per_multichannel_cell=0.5,
                                          memo_pairs=True, mem_base_mb=377, mem_bytes_per_value=7.69,
                                          mem_bytes_per_query_pair=16, mem_bytes_per_memo_pair=8.32,
                                          parallel_fraction=0.93)

    def validate(self, params: dict[str, Any]) -> None:
        check_window(params["window"])

    def cost_band(self, size, **params: Any) -> float | None:
        """A Sakoe-Chiba ``window`` (fraction of the length) limits each alignment to a band. Series of their
        own lengths align over ``L_i x L_j`` cells: with a known mean length (``size.mean_length``), the
        full window's cells per time point are ``mean_length^2 / length``."""
        window = self.params(params)["window"]
        if window is not None:
            return min(size.length, 2 * math.ceil(float(window) * size.length) + 1)
        if size.mean_length is not None:
            return float(size.mean_length) ** 2 / size.length
        return None
