"""Deployment-time inference with a pretrained ChorusTIC (paper Sec. 3.5, App. B and C.3).

* :class:`~chorustic.inference.classifier.ChorusTICClassifier`: the sklearn-style estimator.
* :mod:`~chorustic.inference.ensemble`: label-shift offsets, un-shifting, the temperature softmax.
* :mod:`~chorustic.inference.schedules`: the ``shared`` and ``naive`` schedules of the ensemble.
* :mod:`~chorustic.inference.oom`: batch sizes and the halve-and-retry policy on out-of-memory.
"""

from chorustic.lazy_imports import lazy_getattr

#: Where each name lives. Imported on first use (PEP 562): the estimator's module is light, the others
#: import torch, which a caller that only declares the estimator (the method's plugin) does not need.
_HOMES = {
    "ChorusTICClassifier": "classifier", "clear_model_cache": "classifier",
    "label_shift_offsets": "ensemble", "softmax_proba": "ensemble", "unshift_logits": "ensemble",
    "BatchSizes": "oom", "is_oom_error": "oom", "run_with_oom_retry": "oom",
    "naive_member_logits": "schedules", "shared_member_logits": "schedules",
}

__getattr__ = lazy_getattr(__name__, _HOMES)


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
