"""``chorustic pretrain --plan``: what a pretraining run costs, measured without training.

Everything is measured on *fake tensors* (``torch._subclasses.FakeTensorMode``: shapes, dtypes and
devices without storage), so a laptop plans a GPU run in seconds to a minute:

* parameter counts (trainable / frozen) per top-level module;
* FLOPs of one training step's forward + backward per episode, with ``torch.utils.flop_counter``: at the
  prior's largest episode, and the mean over the prior (the FLOPs of an episode are exactly
  ``a + b T + c T C + d N_c + e T N_c``, ``a`` being the inducing points' work per feature column; the
  coefficients are fitted on small fake episodes and the
  mean is taken over 4,000 (T, N_c, C) drawn from the prior's own sampler, C being the channel count
  of the micro-batch the episode is padded to);
* activation bytes saved for the backward pass per episode (``torch.autograd.graph.saved_tensors_hooks``,
  unique storages, parameters excluded) without activation checkpointing, and with it;
* peak memory of a micro-batch of B episodes at the largest shape, from the live storages of the fake
  step (a dispatch-mode tracker: every storage counted from creation to release) for B = 1 and 2 and
  linear in B beyond (the checkpoint chunks are in row- / column-episodes, so a recomputation's
  transient memory does not grow with B), plus parameters, gradients and AdamW moments;
* the micro-batch size and gradient accumulation that fit ``memory_gb`` (10 % kept for the allocator),
  and the time of the configured budget at a stated model-FLOPs utilisation of the target device.

Autocast follows the CPU's rules on fake tensors (the same matmul/attention ops run in bf16 as on CUDA);
the CUDA caching allocator's fragmentation is not modelled beyond the 10 % headroom.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import time
import weakref
from typing import Any

import numpy as np
import torch

from chorustic.training.config import TrainConfig

__all__ = ["DEVICE_PEAK_TFLOPS", "plan_pretraining"]

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


class _LiveStorages:
    """A dispatch mode that tracks the bytes of live tensor storages created inside it (peak and current)."""

    def __init__(self) -> None:
        from torch.utils._python_dispatch import TorchDispatchMode
        from torch.utils.weak import WeakIdKeyDictionary

        tracker = self

        class Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                out = func(*args, **(kwargs or {}))
                tracker._see(out)
                return out

        self.mode = Mode()
        self.live = 0
        self.peak = 0
        self._seen = WeakIdKeyDictionary()

    def _free(self, n: int) -> None:
        self.live -= n

    def _see(self, out: Any) -> None:
        from torch.utils._pytree import tree_flatten

        for t in tree_flatten(out)[0]:
            if isinstance(t, torch.Tensor):
                st = t.untyped_storage()
                if st not in self._seen:
                    n = st.nbytes()
                    self._seen[st] = n
                    self.live += n
                    self.peak = max(self.peak, self.live)
                    weakref.finalize(st, self._free, n)

    def __enter__(self):
        self.mode.__enter__()
        return self

    def __exit__(self, *exc):
        return self.mode.__exit__(*exc)


def _fake_inputs(cfg, b: int, t: int, n_ctx: int, c: int, classes: int):
    X = torch.randn(b, t, c, cfg.seq_len)
    y = torch.arange(n_ctx).remainder(classes).repeat(b, 1)
    gi = torch.randint(0, c, (b, cfg.num_groups, cfg.group_size))
    return X, y, gi


class _Fake:
    """A fake copy of a real (CPU) model and a runner of one training micro-batch on it."""

    def __init__(self, real_model, train_config: TrainConfig, autocast_dtype: torch.dtype | None) -> None:
        from torch._subclasses.fake_tensor import FakeCopyMode, FakeTensorMode

        self.mode = FakeTensorMode(allow_non_fake_inputs=True)
        with FakeCopyMode(self.mode):
            self.model = copy.deepcopy(real_model)
        self.model.train()
        self.tc = train_config
        self.dtype = autocast_dtype
        self.param_storages = set()

    def run(self, b, t, n_ctx, c, classes, *, recompute: bool, flops: bool = False, saved: bool = False,
            live: bool = False) -> dict[str, float]:
        from torch.utils.flop_counter import FlopCounterMode
        from torch.utils.weak import WeakIdKeyDictionary

        out: dict[str, float] = {}
        tc, cfg = self.tc, self.model.config
        with self.mode:
            X, y, gi = _fake_inputs(cfg, b, t, n_ctx, c, classes)
            params = {p.untyped_storage() for p in self.model.parameters()}
            saved_storages = WeakIdKeyDictionary()

            def pack(x):
                st = x.untyped_storage()
                if st not in params and st not in saved_storages:
                    saved_storages[st] = st.nbytes()
                return x

            counter = FlopCounterMode(display=False) if flops else contextlib.nullcontext()
            tracker = _LiveStorages() if live else contextlib.nullcontext()
            hooks = torch.autograd.graph.saved_tensors_hooks(pack, lambda x: x) if saved else contextlib.nullcontext()
            amp = torch.autocast("cpu", dtype=self.dtype) if self.dtype is not None else contextlib.nullcontext()
            with counter, tracker:
                with hooks, amp:
                    logits = self.model.episode_logits(
                        X, y, gi, recompute=recompute, signal_rows=tc.signal_chunk_rows,
                        cdm_columns=tc.cdm_chunk_columns, interaction_rows=tc.interaction_chunk_rows)
                if saved:
                    out["saved_bytes"] = float(sum(saved_storages.values()))
                if live:
                    out["after_forward_bytes"] = float(tracker.live)
                logits.float().logsumexp(-1).sum().backward()
            if flops:
                out["flops"] = float(counter.get_total_flops())
            if live:
                out["peak_bytes"] = float(tracker.peak)
            for p in self.model.parameters():
                p.grad = None
        return out


def _prior_shapes(train_config: TrainConfig, model_config, n: int = 4000, seed: int = 0) -> np.ndarray:
    """(T, N_c, C_batch) of ``n`` episodes drawn with the prior's own sampler; C_batch is the channel count
    the episode's micro-batch is padded to (the largest C among ``micro_batch_size`` episodes)."""
    from chorustic.prior import EpisodePrior

    prior = dataclasses.replace(train_config.prior, output_length=model_config.seq_len,
                                max_classes=min(train_config.prior.max_classes, model_config.max_classes))
    gen = EpisodePrior(prior, seed=seed)
    mb = train_config.micro_batch_size or train_config.group_size
    rows = []
    while len(rows) < n:
        T, n_ctx, L = gen.sample_shape()
        cs = [gen.sample_omega(T, n_ctx, L).n_channels for _ in range(mb)]
        rows.extend((T, n_ctx, max(cs)) for _ in range(mb))
    return np.array(rows[:n], dtype=np.float64)


def _features(T, n_ctx, C):
    T, n_ctx, C = (np.asarray(v, dtype=np.float64) for v in (T, n_ctx, C))
    return np.stack([np.ones_like(T), T, T * C, n_ctx, T * n_ctx], axis=-1)


def plan_pretraining(model_config, train_config: TrainConfig, *, memory_gb: float = 32.0,
                     target_device: str = "h100", peak_tflops: float | None = None, mfu: float = 0.4,
                     world_size: int = 1, amp_dtype: str | None = "bfloat16") -> dict[str, Any]:
    """The plan of a pretraining run (see the module docstring); a JSON-serialisable dict."""
    from chorustic.model import ChorusTIC
    from chorustic.training.data import StreamLayout

    t_start = time.perf_counter()
    tc, mc = train_config, model_config
    torch.manual_seed(0)
    real = ChorusTIC(mc)
    counts = {}
    for name, child in real.named_children():
        tr = sum(p.numel() for p in child.parameters() if p.requires_grad)
        fr = sum(p.numel() for p in child.parameters() if not p.requires_grad)
        counts[name] = {"trainable": tr, "frozen": fr}
    n_train = sum(v["trainable"] for v in counts.values())
    n_all = n_train + sum(v["frozen"] for v in counts.values())
    dtype = getattr(torch, amp_dtype) if amp_dtype else None
    fake = _Fake(real, tc, dtype)
    prior = tc.prior
    k_max = min(prior.max_classes, mc.max_classes)
    T_max = prior.max_rows
    n_ctx_max = int(np.clip(round(T_max * prior.context_fraction[1]), prior.min_classes, T_max - 1))
    C_max = prior.max_channels if prior.p_univariate < 1 else 1

    # FLOPs: exact in (T, T*C, N_c, T*N_c); fit on small fake episodes, check at the largest one
    probes = [(8, 4, 2), (16, 4, 2), (8, 6, 3), (16, 12, 4), (12, 6, 5), (24, 8, 3)]
    y = np.array([fake.run(1, t, n, c, 2, recompute=False, flops=True)["flops"] for t, n, c in probes])
    coef, *_ = np.linalg.lstsq(_features(*np.array(probes, dtype=float).T), y, rcond=None)
    largest = fake.run(1, T_max, n_ctx_max, C_max, k_max, recompute=False, flops=True, saved=True)
    fit_largest = float(_features(T_max, n_ctx_max, C_max) @ coef)
    shapes = _prior_shapes(tc, mc)
    mean_flops = float((_features(shapes[:, 0], shapes[:, 1], shapes[:, 2]) @ coef).mean())
    fwd = {}
    if tc.activation_checkpointing:
        rec = fake.run(1, T_max, n_ctx_max, C_max, k_max, recompute=True, flops=True)
        fwd["with_recompute_largest"] = rec["flops"]

    # memory at the largest episode, B = 1 and 2
    m1 = fake.run(1, T_max, n_ctx_max, C_max, k_max, recompute=tc.activation_checkpointing, saved=True, live=True)
    m2 = fake.run(2, T_max, n_ctx_max, C_max, k_max, recompute=tc.activation_checkpointing, live=True)
    per_episode = max(m2["peak_bytes"] - m1["peak_bytes"], 0.0)
    transient = m1["peak_bytes"] - per_episode
    param_bytes = 4.0 * n_all
    static = param_bytes + 4.0 * n_train * 3  # fp32 weights, gradients, AdamW exp_avg and exp_avg_sq
    if dtype is not None:
        static += 2.0 * n_all  # the autocast cache of low-precision weight copies
    budget = memory_gb * 2**30 * 0.9
    candidates = []
    group = tc.group_size
    for mb in sorted((d for d in range(1, group + 1) if group % d == 0), reverse=True):
        try:
            lay = StreamLayout(tc.batch_size, group, mb, world_size)
        except ValueError:
            continue
        peak = static + transient + mb * per_episode
        candidates.append({"micro_batch_size": mb, "gradient_accumulation": lay.accumulation_steps,
                           "estimated_peak_gb": round(peak / 2**30, 2), "fits": bool(peak <= budget)})
    chosen = next((c for c in candidates if c["fits"]), None)

    peak = peak_tflops if peak_tflops is not None else DEVICE_PEAK_TFLOPS.get(target_device.lower())
    episodes = tc.steps * tc.batch_size
    total = episodes * mean_flops
    timing: dict[str, Any] = {"episodes": episodes, "total_pflop": round(total / 1e15, 1), "target_device": target_device,
                              "peak_tflops": peak, "mfu": mfu, "world_size": world_size}
    if peak:
        seconds = total / (peak * 1e12 * mfu * world_size)
        timing.update(estimated_hours=round(seconds / 3600, 2),
                      episodes_per_s=round(peak * 1e12 * mfu * world_size / mean_flops, 2))
    else:
        timing["note"] = f"unknown device {target_device!r}: pass --peak-tflops (known: {sorted(DEVICE_PEAK_TFLOPS)})"
    gb = 2**30
    return {
        "model": {"parameters_total": n_all, "parameters_trainable": n_train, "per_module": counts,
                  "signal_encoder_frozen": bool(mc.freeze_signal_encoder)},
        "train": {"name": tc.name, "steps": tc.steps, "batch_size": tc.batch_size, "shape_group_size": group,
                  "activation_checkpointing": tc.activation_checkpointing,
                  "chunks": {"signal_rows": tc.signal_chunk_rows, "cdm_columns": tc.cdm_chunk_columns,
                             "interaction_rows": tc.interaction_chunk_rows},
                  "autocast": amp_dtype},
        "largest_episode": {"rows": T_max, "context_rows": n_ctx_max, "channels": C_max, "length": mc.seq_len,
                            "classes": k_max},
        "flops_per_episode": {
            "largest": largest["flops"], "prior_mean": mean_flops,
            "prior_mean_rows": float(shapes[:, 0].mean()), "prior_mean_batch_channels": float(shapes[:, 2].mean()),
            "fit_relative_error_at_largest": abs(fit_largest - largest["flops"]) / largest["flops"],
            "counted": "forward + backward of one training micro-batch (model FLOPs, no recomputation)", **fwd},
        "activations_per_episode_gb": {
            "saved_without_checkpointing": round(largest["saved_bytes"] / gb, 3),
            "saved_with_checkpointing": round(m1["saved_bytes"] / gb, 3) if tc.activation_checkpointing else None,
            "held_after_forward": round(m1["after_forward_bytes"] / gb, 3),
            "peak_growth_per_episode": round(per_episode / gb, 3),
            "recomputation_transient": round(transient / gb, 3),
        },
        "memory": {"budget_gb": memory_gb, "static_gb": round(static / gb, 3), "world_size": world_size,
                   "micro_batch_size": chosen["micro_batch_size"] if chosen else None,
                   "gradient_accumulation": chosen["gradient_accumulation"] if chosen else None,
                   "estimated_peak_gb": chosen["estimated_peak_gb"] if chosen else None,
                   "candidates": candidates,
                   "advice": None if chosen else "nothing fits: enable activation checkpointing, lower the chunk "
                                                  "sizes, or use a larger memory budget"},
        "time": timing,
        "plan_seconds": round(time.perf_counter() - t_start, 1),
        "method": "fake tensors: torch.utils.flop_counter, saved_tensors_hooks, live-storage tracking",
    }
