"""The GPU kinds a bill or a pretraining plan knows, and their matmul peaks (no torch: ``chorustic plan-run``
reads them without loading it)."""

from __future__ import annotations

__all__ = ["DEVICE_PEAK_TFLOPS"]

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
