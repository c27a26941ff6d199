"""QUANT (Dempster, Schmidt, Webb, DMKD 2024), from aeon. Beyond the paper: classical state of the art.

Protocol: ``aeon.classification.interval_based.QUANTClassifier`` with its defaults (quantiles over
dyadic intervals of depth 6 of the series and its derivatives, an extra-trees classifier with 200
trees), fitted on the context split, on the **native** series.

Input rules (:class:`~chorustic.methods.estimators.AeonContractClassifier`; recorded in ``run_info``):

* variable-length datasets: linearly resampled to the longest context series;
* series shorter than 4 points: zero-padded at the end to 4 points (aeon's QUANT fails below that).

Probabilities: the extra-trees vote fractions.
"""

from __future__ import annotations

from typing import Any, ClassVar

from chorustic.methods import CostModel, Method, MethodInfo, register
from chorustic.methods.estimators import AeonContractClassifier


class QUANTEstimator(AeonContractClassifier):
    min_length = 4

    def __init__(
        self, interval_depth: int = 6, quantile_divisor: int = 4, random_state: int = 0, n_jobs: int = 1
    ):
        self.interval_depth = interval_depth
        self.quantile_divisor = quantile_divisor
        self.random_state = random_state
        self.n_jobs = n_jobs

    def _make(self):
        from aeon.classification.interval_based import QUANTClassifier
        from sklearn.ensemble import ExtraTreesClassifier

        # aeon's default estimator, with our seed and thread count
        estimator = ExtraTreesClassifier(
            n_estimators=200,
            max_features=0.1,
            criterion="entropy",
            random_state=self.random_state,
            n_jobs=self.n_jobs,
        )
        return QUANTClassifier(
            interval_depth=self.interval_depth,
            quantile_divisor=self.quantile_divisor,
            estimator=estimator,
            random_state=self.random_state,
        )


@register
class QUANT(Method):
    info = MethodInfo(
        name="quant",
        display_name="QUANT",
        group="Classical",
        fits_on_target=True,
        input_kind="native",
        description="aeon QUANTClassifier (interval quantiles + extra trees) on the native series",
        reference="Dempster, Schmidt, Webb. QUANT: a minimalist interval method. DMKD 2024",
        pretraining_data="none: fitted on the target training split only",
        benchmark_in_pretraining="no",
    )
    estimator = QUANTEstimator  # its parameters (interval_depth, quantile_divisor) are the method's
    resources: ClassVar[dict[str, Any]] = {"threads": 4, "mem_mb": 16000, "runtime": 240, "gpu": 0}
    #: Fitted on jobs on stand-ins of the largest archive shapes (benchmarks/archive_scale.py --fit, 1 thread;
    #: benchmarks/results/archive_scale.md): quantile features per value, and the extra trees' split search
    #: over the feature columns (channels x length): at least one split per extra class of the context, and
    #: about n (1 - 1/classes) splits of n series that do not separate, each level visiting every series
    #: (trees grown to pure leaves); it dominates for few long or many-channel series of many classes
    #: (PEMS-SF, 7 classes: 487 CPU-s for 7 + 7 series).
    #: loads_torch (the default): aeon's QUANT imports torch where installed (its soft dependency).
    cost: ClassVar[CostModel] = CostModel(time_job_s=5.19, time_base_s=0.593, time_ns_per_value=1350,
                                          time_ns_per_column_class=75_000, time_ns_per_column_series=1150,
                                          mem_base_mb=465, mem_bytes_per_value=95.2,
                                          mem_kb_per_series=9.62, parallel_fraction=0.82)
