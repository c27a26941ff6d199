"""Attention kernels on this machine: SDPA vs the explicit matmul-softmax form, forward + backward.

    python benchmarks/attention_kernels.py [--threads 1] [--device cpu]

For each sequence length L and head dimension D (4 heads, about 2 M elements per Q tensor), prints the
milliseconds of ``F.scaled_dot_product_attention`` (the CPU flash kernel on CPU) and of the explicit
form ``softmax(Q K' / sqrt(D)) V`` (two batched matmuls), best of ``--repeats``, and which one
:func:`chorustic.model.attention.attention` uses on that device. This is the measurement behind
``CPU_EXPLICIT_MAX_SEQ``. Prints one JSON object per line.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _time(fn, q, k, v, device, repeats):
    best = float("inf")
    for _ in range(repeats):
        qq, kk, vv = (t.detach().requires_grad_() for t in (q, k, v))
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        t0 = time.perf_counter()
        out = fn(qq, kk, vv)
        out.backward(torch.ones_like(out))
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        best = min(best, time.perf_counter() - t0)
    return 1e3 * best


def _explicit(q, k, v):
    return ((q * q.shape[-1] ** -0.5) @ k.transpose(-1, -2)).softmax(-1) @ v


def main(argv=None) -> int:
    from chorustic.model.attention import CPU_EXPLICIT_MAX_SEQ

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--lengths", default="4,8,16,17,24,32,48,64,96,128")
    ap.add_argument("--head-dims", default="16,32")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    for d in (int(x) for x in args.head_dims.split(",")):
        for length in (int(x) for x in args.lengths.split(",")):
            b = max(1, 2_000_000 // (4 * length * d))
            q, k, v = (torch.randn(b, 4, length, d, device=device) for _ in range(3))
            sdpa = _time(F.scaled_dot_product_attention, q, k, v, device, args.repeats)
            explicit = _time(_explicit, q, k, v, device, args.repeats)
            used = "explicit" if device.type == "cpu" and length <= CPU_EXPLICIT_MAX_SEQ else "sdpa"
            print(json.dumps({"batch": b, "heads": 4, "seq": length, "head_dim": d, "sdpa_ms": round(sdpa, 1),
                              "explicit_ms": round(explicit, 1), "faster": "explicit" if explicit < sdpa else "sdpa",
                              "used": used, "threads": args.threads, "device": str(device)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
