"""The device a method runs on (``evaluation.device``: ``auto``, ``cpu``, ``cuda``, ``cuda:1``...).

Kept apart from :mod:`chorustic.methods.estimators` (which imports scikit-learn) so that the evaluation
worker asks for the device without loading a library the method may not use.
"""

from __future__ import annotations

from typing import Any

from chorustic.methods.base import MethodNotReady

__all__ = ["resolve_device", "torch_device"]


def resolve_device(device: str | None, loads_torch: bool = True) -> str:
    """The device a method runs on: ``"auto"``/None -> cuda where torch sees a GPU, for a method that computes
    with torch; a method that does not (its cost model's ``loads_torch`` is False: 1NN-DTW), or a machine
    without torch, runs on the CPU, without torch loaded to ask (its libraries would be held for nothing: 190 MB
    with the CPU build, 470 MB with the CUDA build). Any other name is returned as it is."""
    if device not in (None, "auto"):
        return str(device)
    if not loads_torch:
        return "cpu"
    try:
        import torch
    except ImportError:
        return "cpu"
    return "cuda" if torch.cuda.is_available() else "cpu"


def torch_device(device: str | None) -> Any:
    """The torch device of :func:`resolve_device`; a CUDA request without CUDA is a clear error."""
    import torch

    dev = torch.device(resolve_device(device))
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise MethodNotReady(f"device {device!r} requested but CUDA is not available; use device 'cpu'")
    return dev
