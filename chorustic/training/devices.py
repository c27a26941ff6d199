"""The GPU kinds a bill or a pretraining plan knows, and their matmul peaks (no torch: ``chorustic plan-run``
reads them without loading it)."""

from __future__ import annotations

__all__ = ["DEVICE_PEAK_TFLOPS", "DEVICE_MEMORY_GB", "gpu_kind"]

#: Dense (no sparsity) tensor-core peaks in TFLOP/s of common training GPUs, bf16 (V100: fp16).
DEVICE_PEAK_TFLOPS = {
    "h100": 989.0,  # H100 SXM bf16
    "h100-pcie": 756.0,
    "h200": 989.0,
    "gh200": 989.0,
    "a100": 312.0,
    "l40s": 362.0,
    "a10": 125.0,
    "rtx4090": 165.0,
    "v100": 125.0,  # fp16 tensor cores (no bf16)
    "mi300x": 1307.0,
}

#: Memory of one GPU in GB (the largest common variant: A100 and V100 also exist with 40 / 16 GB).
DEVICE_MEMORY_GB = {
    "h100": 80.0,
    "h100-pcie": 80.0,
    "h200": 141.0,
    "gh200": 96.0,
    "a100": 80.0,
    "l40s": 48.0,
    "a10": 24.0,
    "rtx4090": 24.0,
    "v100": 32.0,
    "mi300x": 192.0,
}


def gpu_kind(name: str) -> str | None:
    """The kind of a GPU from its device name (``NVIDIA H200`` -> ``h200``), or None when unknown."""
    low = name.lower().replace(" ", "").replace("-", "")
    for kind in sorted(DEVICE_PEAK_TFLOPS, key=len, reverse=True):
        if kind.replace("-", "") in low:
            return kind
    return None
