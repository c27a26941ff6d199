"""The paper's resampling of a series to a fixed length (App. C.2), defined once for every component.

Linear interpolation along the last axis with ``align_corners=False`` semantics, PyTorch's
``upsample_linear1d`` rule (:func:`linear_weights`): output position ``j`` reads the input at
``s = max((j + 0.5) * in/out - 0.5, 0)``. The data preprocessing (length ``L0 = 512``), the methods'
input helpers (:func:`chorustic.methods.inputs.to_fixed_length`), the synthetic prior's episodes and
the model's own length fix (``ChorusTIC.prepare_inputs``) all call :func:`resample_linear`, so a series
means the same numbers to every method.

Precision: always float64 arithmetic, the result cast back to the input's precision (float32 stays
float32). numpy arrays and torch tensors go through the same formula and give the same numbers.

Why not a library call: ``torch.nn.functional.interpolate(x, size, mode="linear",
align_corners=False)`` implements the same rule, but its kernels round differently (float64: up to
~1e-13 apart; float32: the arithmetic itself is float32), and the released preprocessed arrays are
defined by this formula; ``tests/test_resampling.py`` measures both against it. aeon's ``Resizer``
interpolates on ``linspace(0, 1)`` grids (``align_corners=True``), another resampler: the one UniShape's
authors use (:func:`chorustic.methods.inputs.to_fixed_length` with ``method="linspace"`` calls it).
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

__all__ = ["linear_weights", "resample_linear"]


def linear_weights(in_length: int, out_length: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Source indices ``i0, i1`` and weight ``w1`` of linear interpolation, ``align_corners=False``.

    Output position ``j`` samples the input at ``s = max((j + 0.5) * in/out - 0.5, 0)``:
    ``y[j] = (1 - w1) * x[i0] + w1 * x[i1]`` with ``i0 = floor(s)``, ``i1 = min(i0 + 1, in - 1)``,
    ``w1 = s - i0`` (PyTorch's ``upsample_linear1d`` rule, including the clamp at the left edge).
    """
    if in_length < 1 or out_length < 1:
        raise ValueError(f"lengths must be positive, got in={in_length}, out={out_length}")
    scale = in_length / out_length
    src = (np.arange(out_length, dtype=np.float64) + 0.5) * scale - 0.5
    src = np.maximum(src, 0.0)
    i0 = np.floor(src).astype(np.int64)
    i0 = np.minimum(i0, in_length - 1)
    i1 = np.minimum(i0 + 1, in_length - 1)
    w1 = src - i0
    return i0, i1, w1


#: Values (input or output, the larger) resampled at once: the float64 arithmetic holds a few copies of a
#: block, not of the whole input (a model of length 128 given an episode of FaceDetection's 9,414 series x 144
#: channels x 512 points held ~13 bytes per input value more while it resampled them in one pass).
BLOCK_VALUES = 1 << 22


def _resample_rows(rows: Any, out_rows: Any, weights: tuple, float64: Any) -> None:
    """Write every row of ``rows`` ``(r, n)`` (numpy or torch) resampled into ``out_rows`` ``(r, length)`` (cast
    to its dtype), a block of rows at a time; ``float64`` turns a block into the float64 the arithmetic runs in."""
    i0, i1, w1 = weights
    step = max(1, BLOCK_VALUES // max(rows.shape[1], out_rows.shape[1]))
    for r0 in range(0, rows.shape[0], step):
        xf = float64(rows[r0 : r0 + step])
        out_rows[r0 : r0 + step] = xf[:, i0] * (1.0 - w1) + xf[:, i1] * w1


def _is_tensor(x: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(x, torch.Tensor)


def resample_linear(x: Any, length: int, *, out: np.ndarray | None = None) -> Any:
    """``x`` linearly resampled along its last axis to ``length`` points (App. C.2).

    ``x``: a numpy array (any leading shape; returns float64 for float64 input and float32 for float32,
    integers become float64; a copy when the length already matches) or a torch tensor (returns float64
    for float64 input, else float32, on the input's device; the tensor itself when the length already
    matches). Computes in float64 either way. ``out`` (numpy input only): a C-contiguous array of the
    result's shape to write into and return, e.g. rows of a larger array; the result is cast to its dtype.
    """
    if _is_tensor(x):
        if out is not None:
            raise TypeError("resample_linear: out is for numpy input only")
        return _resample_tensor(x, length)
    x = np.asarray(x)
    if x.ndim == 0:
        raise ValueError("resample_linear needs an array with a time axis")
    if not np.issubdtype(x.dtype, np.floating):
        x = x.astype(np.float64)
    n = x.shape[-1]
    if n == 0:
        raise ValueError("cannot resample an empty series (length 0)")
    shape = x.shape[:-1] + (length,)
    if out is None:
        out = np.empty(shape, dtype=x.dtype)
    elif out.shape != shape or not out.flags.c_contiguous:
        raise ValueError(f"resample_linear: out must be C-contiguous of the result's shape {shape}, got {out.shape}")
    if n == length:
        np.copyto(out, x)
        return out
    _resample_rows(x.reshape(-1, n), out.reshape(-1, length), linear_weights(n, length),
                   lambda block: block.astype(np.float64, copy=False))
    return out


def _resample_tensor(x, length: int):
    import torch

    n = x.shape[-1]
    if n == length:
        return x
    if n == 0:
        raise ValueError("cannot resample an empty series (length 0)")
    out_dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
    # float64 everywhere but on devices without it (Apple's MPS): those compute on the CPU
    device = x.device if x.device.type != "mps" else torch.device("cpu")
    weights = tuple(torch.from_numpy(a).to(device) for a in linear_weights(n, length))
    out = torch.empty(*x.shape[:-1], length, dtype=out_dtype, device=x.device)
    _resample_rows(x.reshape(-1, n), out.view(-1, length), weights,
                   lambda block: block.to(device=device, dtype=torch.float64))
    return out
