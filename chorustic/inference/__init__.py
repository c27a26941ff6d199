"""Deployment-time inference with a pretrained ChorusTIC (paper Sec. 3.5, App. B and C.3).

* :class:`~chorustic.inference.classifier.ChorusTICClassifier`: the sklearn-style estimator.
* :mod:`~chorustic.inference.ensemble`: label-shift offsets, un-shifting, the temperature softmax.
* :mod:`~chorustic.inference.schedules`: the ``shared`` and ``naive`` schedules of the ensemble.
* :mod:`~chorustic.inference.oom`: batch sizes and the halve-and-retry policy on out-of-memory.
"""

from chorustic.inference.classifier import ChorusTICClassifier, clear_model_cache
from chorustic.inference.ensemble import label_shift_offsets, softmax_proba, unshift_logits
from chorustic.inference.oom import BatchSizes, is_oom_error, run_with_oom_retry
from chorustic.inference.schedules import naive_member_logits, shared_member_logits

__all__ = [
    "BatchSizes",
    "ChorusTICClassifier",
    "clear_model_cache",
    "is_oom_error",
    "label_shift_offsets",
    "naive_member_logits",
    "run_with_oom_retry",
    "shared_member_logits",
    "softmax_proba",
    "unshift_logits",
]
