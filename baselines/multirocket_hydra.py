"""MultiRocket-Hydra (Dempster, Schmidt, Webb, 2023), from aeon. Beyond the paper: classical state of the art.

Protocol: ``aeon.classification.convolution_based.MultiRocketHydraClassifier`` with its defaults
(Hydra: 8 kernels x 64 groups; MultiRocket features; ridge classifier with cross-validated
regularisation), fitted on the context split, on the **native** series.

Input rules (:class:`~chorustic.methods.estimators.AeonContractClassifier`; recorded in ``run_info``):

* variable-length datasets: linearly resampled to the longest context series;
* series shorter than 10 points: zero-padded at the end to 10 points (aeon's MultiRocket needs at
  least 9 points and its first-difference representation one more; length 9 fails inside aeon).

Probabilities: one-hot of the ridge prediction (aeon's ``predict_proba``).

Memory: aeon's ``HydraTransformer.transform`` convolves every series of the call at once (~3.9 KB per time
point of each: 10 GB for HandOutlines' 1,000 training series of length 2,709). Here it transforms them
in batches with aeon's own ``batch`` method, which gives the same features (each series' are its own):
at most 256 series (aeon's batch) and at most :data:`HYDRA_POINTS` time points in all (fewer series when
they are long: 29 of EigenWorms' 17,984 points), so the convolutions hold ~2 GB at most at any context
size and length.
"""

from __future__ import annotations

from typing import Any, ClassVar

from chorustic.methods import CostModel, Method, MethodInfo, register
from chorustic.methods.estimators import AeonContractClassifier


#: The most series Hydra convolves at once (aeon's ``_HydraInternal.batch`` default).
HYDRA_BATCH = 256
#: The most time points (series x length) Hydra convolves at once: ~2 GB of its outputs (~3.9 KB each).
HYDRA_POINTS = 256 * 2048


def hydra_batch(length: int) -> int:
    """The series of ``length`` points Hydra convolves at once: :data:`HYDRA_BATCH`, fewer for long series."""
    return max(1, min(HYDRA_BATCH, HYDRA_POINTS // max(1, int(length))))


def _batched_hydra_classifier(**params):
    """aeon's ``MultiRocketHydraClassifier`` whose Hydra transform runs in batches of :func:`hydra_batch`
    series: a subclass of aeon's ``HydraTransformer`` that calls its module's ``batch`` where aeon's
    calls the module on the whole input, put in place for the classifier's ``fit`` (which builds it)."""
    import torch
    from aeon.classification.convolution_based import MultiRocketHydraClassifier
    from aeon.classification.convolution_based import _mr_hydra

    class BatchedHydraTransformer(_mr_hydra.HydraTransformer):
        def _transform(self, X, y=None):
            out = self._hydra.batch(torch.tensor(X).float(), batch_size=hydra_batch(X.shape[-1]))
            return out if self.output_type == "tensor" else out.numpy()  # MultiRocket-Hydra's: numpy

    class BatchedMultiRocketHydra(MultiRocketHydraClassifier):
        def _fit(self, X, y):
            aeons = _mr_hydra.HydraTransformer
            _mr_hydra.HydraTransformer = BatchedHydraTransformer
            try:
                return super()._fit(X, y)
            finally:
                _mr_hydra.HydraTransformer = aeons

    return BatchedMultiRocketHydra(**params)


class MultiRocketHydraEstimator(AeonContractClassifier):
    min_length = 10

    def __init__(self, n_kernels: int = 8, n_groups: int = 64, random_state: int = 0, n_jobs: int = 1):
        self.n_kernels = n_kernels
        self.n_groups = n_groups
        self.random_state = random_state
        self.n_jobs = n_jobs

    def _make(self):
        return _batched_hydra_classifier(
            n_kernels=self.n_kernels,
            n_groups=self.n_groups,
            random_state=self.random_state,
            n_jobs=self.n_jobs,
        )


@register
class MultiRocketHydra(Method):
    info = MethodInfo(
        name="multirocket_hydra",
        display_name="MultiRocket-Hydra",
        group="Classical",
        fits_on_target=True,
        input_kind="native",
        description="aeon MultiRocketHydraClassifier (defaults) on the native series",
        reference="Dempster, Schmidt, Webb. Hydra: competing convolutional kernels. DMKD 2023",
        pretraining_data="none: fitted on the target training split only",
        benchmark_in_pretraining="no",
    )
    estimator = MultiRocketHydraEstimator  # its parameters (n_kernels, n_groups) are the method's
    resources: ClassVar[dict[str, Any]] = {"threads": 4, "mem_mb": 32000, "runtime": 360, "gpu": 0}
    #: Fitted on jobs on stand-ins of the largest archive shapes (benchmarks/archive_scale.py --fit, 1 thread;
    #: benchmarks/results/archive_scale.md). Time: ~30 us per value (MultiRocket's kernels read few channels
    #: whatever their number: the time grows as with at most 2) and ~250 ns per value of every channel (each
    #: dilation's sums over all channels) plus ~5.5 us per value and dilation (Hydra's
    #: dilations double up to the length), the ridge's CV per pair. Memory: ~1 MB per series held
    #: (MultiRocket's ~50,000 and Hydra's features, float64, and the ridge's copies), the ridge's Gram matrix
    #: per pair as MiniRocket's, and Hydra's convolution outputs, ~4-5 KB per time point of the (at most
    #: HYDRA_BATCH series, HYDRA_POINTS points) it convolves at once whatever the channels, measured on their
    #: own (benchmarks/hydra_memory.py: a job's peak cannot separate them). numba compiles its kernels once
    #: per machine (~30 s), not counted.
    #: loads_torch (the default): Hydra computes with torch.
    cost: ClassVar[CostModel] = CostModel(time_job_s=11.4, time_base_s=0, time_ns_per_value=29900,
                                          time_ns_per_channel_value=253, time_ns_per_dilated_value=5530,
                                          time_ns_per_series_pair=1640,
                                          mem_base_mb=892, mem_bytes_per_value=27.9, mem_kb_per_series=988,
                                          mem_bytes_per_pair=33.2, mem_bytes_per_row_point=5000, model_channels=2,
                                          model_rows=HYDRA_BATCH, model_row_points=HYDRA_POINTS,
                                          parallel_fraction=0.61)
