"""MiniRocket (Dempster, Schmidt, Webb, KDD 2021), from aeon. Beyond the paper: the classical state of the art.

Protocol: ``aeon.classification.convolution_based.MiniRocketClassifier`` with its defaults (10,000
kernels, a ridge classifier with built-in cross-validation of its regularisation), fitted on the
context split, on the **native** series (no resampling to 512).

Input rules (:class:`~chorustic.methods.estimators.AeonContractClassifier`; recorded in ``run_info``):

* variable-length datasets: every series is linearly resampled to the longest context series
  (queries to the same length), because aeon's MiniRocket needs equal length;
* series shorter than 9 points (PenDigits has 8): zero-padded at the end to 9 points, the fix aeon's
  own error message prescribes (MiniRocket's kernels have length 9).

Probabilities: the ridge classifier has no probability model; aeon's ``predict_proba`` is the one-hot
of the predicted class.
"""

from __future__ import annotations

from typing import Any, ClassVar

from chorustic.methods import CostModel, Method, MethodInfo, register
from chorustic.methods.estimators import AeonContractClassifier


class MiniRocketEstimator(AeonContractClassifier):
    min_length = 9

    def __init__(self, n_kernels: int = 10000, random_state: int = 0, n_jobs: int = 1):
        self.n_kernels = n_kernels
        self.random_state = random_state
        self.n_jobs = n_jobs

    def _make(self):
        from aeon.classification.convolution_based import MiniRocketClassifier

        return MiniRocketClassifier(
            n_kernels=self.n_kernels, random_state=self.random_state, n_jobs=self.n_jobs
        )


@register
class MiniRocket(Method):
    info = MethodInfo(
        name="minirocket",
        display_name="MiniRocket",
        group="Classical",
        fits_on_target=True,
        input_kind="native",
        description="aeon MiniRocketClassifier (10,000 kernels + ridge CV) on the native series",
        reference="Dempster, Schmidt, Webb. MiniRocket. KDD 2021",
        pretraining_data="none: fitted on the target training split only",
        benchmark_in_pretraining="no",
    )
    estimator = MiniRocketEstimator  # its parameters (n_kernels) are the method's
    resources: ClassVar[dict[str, Any]] = {"threads": 4, "mem_mb": 16000, "runtime": 120, "gpu": 0}
    #: Fitted on jobs on stand-ins of the largest archive shapes (benchmarks/archive_scale.py --fit, 1 thread;
    #: benchmarks/results/archive_scale.md, with MiniRocket on all 15 largest shapes in full): ~81 KB per
    #: series (10,000 float64 features), transform time per value of at most 9 channels (a kernel's
    #: channels) and ~140 ns per value of every channel (each dilation's sums over all channels, which
    #: decide DuckDuckGeese's 1,345 and PEMS-SF's 963), ridge CV per pair; the ridge's Gram matrix and its
    #: eigendecomposition (~33 bytes per pair: the full contexts of ElectricDevices, PenDigits,
    #: SpokenArabicDigits and FaceDetection went past a model without it, by 1-2 %, and were stopped at
    #: their memory limits).
    #: loads_torch (the default): its convolution transformers' package imports torch where installed (Hydra's soft dependency).
    cost: ClassVar[CostModel] = CostModel(time_job_s=14.0, time_base_s=0.0149, time_ns_per_value=1800,
                                          time_ns_per_channel_value=143, time_ns_per_series_pair=814,
                                          mem_base_mb=663, mem_bytes_per_value=18.9,
                                          mem_kb_per_series=81, mem_bytes_per_pair=33.2, model_channels=9,
                                          parallel_fraction=0.88)
