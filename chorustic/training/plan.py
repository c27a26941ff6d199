"""``chorustic pretrain --plan``: what a pretraining run costs, measured without training.

Everything is measured on *fake tensors* (``torch._subclasses.FakeTensorMode``: shapes, dtypes and
devices without storage), so a laptop plans a GPU run in seconds (the paper configuration with its
encoder trainable: 25 s from the command line on 2 cores, the four independent measurements on one
process per core):

* parameter counts (trainable / frozen) per top-level module;
* FLOPs of one training step's forward + backward per episode, with ``torch.utils.flop_counter``: at the
  prior's largest episode, and the mean over the prior. The FLOPs of a micro-batch are exactly
  ``T * (f_tok * pairs + sum_U f_U * items_U + f_rssc * B) + B * (a + b T + c N_c + d T N_c)``: every
  row tokenizes the plan's (episode, channel) pairs, encodes its items (groups of U distinct slots) and
  composes B RSSC representations, and the task level of an episode is affine in T, N_c and T N_c
  (``a`` is the inducing points' work per feature column). Each coefficient is counted on its own
  stage on fake tensors (:func:`fit_flop_model`), the sum is checked against a whole fake step at the
  largest episode, and the mean is taken over 4,000 episodes whose (T, N_c, C) and RSSC draws come from
  the prior's and the model's own samplers;
* activation bytes saved for the backward pass per episode (``torch.autograd.graph.saved_tensors_hooks``,
  unique storages, parameters excluded) without activation checkpointing, and with it;
* peak memory of a micro-batch of B episodes at the largest shape, from the live storages of the fake
  step (a dispatch-mode tracker: every storage counted from creation to release) for B = 1 and 2 and
  linear in B beyond (the checkpoint chunks are in row- / column-episodes, so a recomputation's
  transient memory does not grow with B), plus parameters, gradients and AdamW moments;
* the micro-batch size and gradient accumulation that fit ``memory_gb`` (10 % kept for the allocator),
  and the time of the configured budget at a stated model-FLOPs utilisation of the target device.

Autocast follows the CPU's rules on fake tensors (the same matmul/attention ops run in bf16 as on CUDA),
attention the target's kernels (``chorustic.model.attention.kernels_of``: SDPA on a GPU target);
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
from chorustic.training.devices import DEVICE_PEAK_TFLOPS

__all__ = ["DEVICE_PEAK_TFLOPS", "LAUNCH_US", "NO_KERNEL_OPS", "FlopModel", "default_plan_workers", "fit_flop_model",
           "flop_counter", "layout_candidates", "plan_pretraining"]


def flop_counter():
    """``torch.utils.flop_counter.FlopCounterMode`` that also counts the CPU flash-attention kernels.

    torch's registry knows the CUDA SDPA kernels but not ``_scaled_dot_product_flash_attention_for_cpu``
    (and its backward), which CPU and fake CPU tensors dispatch to; their FLOPs are the same formula."""
    from torch.utils import flop_counter as fc

    aten = torch.ops.aten
    pairs = [(getattr(aten, "_scaled_dot_product_flash_attention_for_cpu", None), aten._scaled_dot_product_flash_attention),
             (getattr(aten, "_scaled_dot_product_flash_attention_for_cpu_backward", None),
              aten._scaled_dot_product_flash_attention_backward)]
    for cpu_op, gpu_op in pairs:
        if cpu_op is not None and cpu_op not in fc.flop_registry and gpu_op in fc.flop_registry:
            fc.register_flop_formula(cpu_op, get_raw=True)(fc.flop_registry[gpu_op])
    return fc.FlopCounterMode(display=False)


#: Per-call cost of a GPU kernel launch (µs): a step of many small kernels cannot run faster than its
#: aten calls x this (the launch floor); benchmarks/step_census.py counts the calls by stage.
LAUNCH_US = 5.0
#: aten ops that launch nothing (profiler markers); ``prim`` ops (metadata queries) are not counted either
NO_KERNEL_OPS = ("_record_function_enter_new", "_record_function_exit")


class _LiveStorages:
    """A dispatch mode that tracks the bytes of live tensor storages created inside it (peak and current)
    and counts the aten calls dispatched inside it (``calls``, of which ``view_calls`` are views)."""

    def __init__(self, count_flops: bool = False) -> None:
        from torch.utils._python_dispatch import TorchDispatchMode
        from torch.utils.weak import WeakIdKeyDictionary

        tracker = self
        flops = flop_counter().flop_registry if count_flops else None  # registers the CPU attention formulas

        class Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                out = func(*args, **(kwargs or {}))
                tracker._see(out)
                if func.namespace != "prim" and func._overloadpacket.__name__ not in NO_KERNEL_OPS:
                    tracker.calls += 1
                    tracker.view_calls += bool(func.is_view)
                    formula = flops.get(func._overloadpacket) if flops is not None else None
                    if formula is not None:  # torch's formulas; FlopCounterMode itself would keep tensors alive
                        tracker.flops += float(formula(*args, **(kwargs or {}), out_val=out))
                return out

        self.mode = Mode()
        self.live = 0
        self.peak = 0
        self.calls = 0  # aten calls (the kernels a GPU would launch, views included: see LAUNCH_US)
        self.view_calls = 0
        self.flops = 0.0  # with count_flops: the FLOPs executed inside (a recomputation included)
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


def _plan_of(cfg, b: int, t: int, c: int, dedupe: bool):
    """The slot plan of random RSSC draws over ``c`` channels (real host tensors, as a worker makes it)."""
    from chorustic.model.rssc import sample_rssc_assignment
    from chorustic.model.signal_encoder import plan_slots

    gi = sample_rssc_assignment(torch.ones(b, c, dtype=torch.bool), num_groups=cfg.num_groups,
                                group_size=cfg.group_size, mode=cfg.rssc_sampling,
                                generator=torch.Generator().manual_seed(t * 1000 + c))
    return plan_slots(gi, dedupe)


class _Fake:
    """A fake copy of a real (CPU) model and runners of a training micro-batch (or of one stage) on it."""

    def __init__(self, real_model, train_config: TrainConfig, autocast_dtype: torch.dtype | None,
                 device_type: str = "cpu") -> None:
        from torch._subclasses.fake_tensor import FakeCopyMode, FakeTensorMode

        self.mode = FakeTensorMode(allow_non_fake_inputs=True)
        with FakeCopyMode(self.mode):
            self.model = copy.deepcopy(real_model)
        self.model.train()
        self.tc = train_config
        self.dtype = autocast_dtype
        self.device_type = device_type  # whose layout (chunking) the traced step follows
        self.dedupe = not self.model.config.signal_dropout_in_training

    def _amp(self):
        return torch.autocast("cpu", dtype=self.dtype) if self.dtype is not None else contextlib.nullcontext()

    def stage_flops(self, fn) -> float:
        """FLOPs of ``fn()`` (which builds fake inputs and returns a tensor to back-propagate from).

        Without autocast: a FLOP count depends on the shapes only, and the casts autocast inserts (about
        a sixth of the ops of the task level) would only slow the fake dispatch down."""
        counter = flop_counter()
        with self.mode, counter:
            out = fn()
            if out.requires_grad:
                out.float().sum().backward()
        for p in self.model.parameters():
            p.grad = None
        return float(counter.get_total_flops())

    def run(self, b, t, n_ctx, c, classes, *, recompute: bool, flops: bool = False, saved: bool = False,
            live: bool = False, calls: bool = False) -> dict[str, Any]:
        from torch.utils.weak import WeakIdKeyDictionary

        out: dict[str, Any] = {}
        tc = self.tc
        plan = _plan_of(self.model.config, b, t, c, self.dedupe)
        out["pairs"], out["items"] = plan.n_pairs, plan.items_per_size()
        with self.mode:
            X = torch.randn(b, t, c, self.model.config.seq_len)
            y = torch.arange(n_ctx).remainder(classes).repeat(b, 1)
            for p in self.model.parameters():  # gradients exist across micro-batches: counted as static
                if p.requires_grad:
                    p.grad = torch.zeros_like(p)
            params = {p.untyped_storage() for p in self.model.parameters()}
            saved_storages = WeakIdKeyDictionary()

            def pack(x):
                st = x.untyped_storage()
                if st not in params and st not in saved_storages:
                    saved_storages[st] = st.nbytes()
                return x

            counter = flop_counter() if flops else contextlib.nullcontext()
            if flops and (live or calls):
                raise ValueError("flops=True keeps tensors alive (FlopCounterMode): trace flops apart from "
                                 "live/calls, or take the executed FLOPs of calls=True")
            tracker = _LiveStorages(count_flops=calls) if live or calls else contextlib.nullcontext()
            hooks = torch.autograd.graph.saved_tensors_hooks(pack, lambda x: x) if saved else contextlib.nullcontext()
            with counter, tracker:
                with hooks, self._amp():
                    kw = {**tc.forward_kwargs(self.device_type), "recompute": recompute}
                    logits = self.model.episode_logits(X, y, plan=plan, **kw)
                if saved:
                    out["saved_bytes"] = float(sum(saved_storages.values()))
                if live:
                    out["after_forward_bytes"] = float(tracker.live)
                logits.float().logsumexp(-1).sum().backward()
            if flops:
                out["flops"] = float(counter.get_total_flops())
            if live:
                out["peak_bytes"] = float(tracker.peak)
            if calls:  # forward, recomputation and backward of the micro-batch
                out["calls"], out["view_calls"] = tracker.calls, tracker.view_calls
                out["executed_flops"] = tracker.flops
            for p in self.model.parameters():
                p.grad = None
        return out


def _prior_episodes(train_config: TrainConfig, model_config, n: int = 4000, seed: int = 0) -> list[tuple]:
    """(T, N_c, pairs, items per U, C) of ``n`` episodes: shapes and channel counts from the prior's own
    sampler, one RSSC draw each from the model's sampler, planned as in training."""
    from chorustic.model.rssc import sample_rssc_assignment
    from chorustic.model.signal_encoder import plan_slots
    from chorustic.prior import EpisodePrior

    prior = dataclasses.replace(train_config.prior, output_length=model_config.seq_len,
                                max_classes=min(train_config.prior.max_classes, model_config.max_classes))
    gen = EpisodePrior(prior, seed=seed)
    torch_gen = torch.Generator().manual_seed(seed)
    dedupe = not model_config.signal_dropout_in_training
    rows = []
    while len(rows) < n:
        T, n_ctx, L = gen.sample_shape()
        c = gen.sample_omega(T, n_ctx, L).n_channels
        gi = sample_rssc_assignment(torch.ones(1, c, dtype=torch.bool), num_groups=model_config.num_groups,
                                    group_size=model_config.group_size, mode=model_config.rssc_sampling,
                                    generator=torch_gen)
        plan = plan_slots(gi, dedupe)
        rows.append((T, n_ctx, plan.n_pairs, plan.items_per_size(), c))
    return rows


@dataclasses.dataclass(frozen=True)
class FlopModel:
    """Forward + backward FLOPs of a training micro-batch (see the module docstring)."""

    tokenize: float  # per tokenized series and row
    encode: tuple[float, ...]  # per encoded item and row, by number of slots U = 1 .. S
    compose: float  # per RSSC representation (episode and row)
    task: tuple[float, float, float, float]  # per episode: 1, T, N_c, T * N_c
    tokenize_call: float = 0.0  # per tokenizer call (its closed-form Gram matrices)
    signal_rows: int | None = None  # row-episodes per signal chunk (one tokenizer call each)

    def signal_calls(self, episodes: int, rows: int) -> int:
        step = max(1, self.signal_rows // episodes) if self.signal_rows else rows
        return -(-rows // step)

    def task_episode(self, rows: float, context_rows: float) -> float:
        a, b, c, d = self.task
        return a + b * rows + c * context_rows + d * rows * context_rows

    def signal_row(self, pairs: int, items: dict[int, int], episodes: int = 1) -> float:
        return (self.tokenize * pairs + sum(self.encode[u - 1] * k for u, k in items.items())
                + self.compose * episodes)

    def micro_batch(self, episodes: int, rows: int, context_rows: int, plan) -> float:
        """FLOPs of a micro-batch of ``episodes`` episodes with the :class:`SlotPlan` ``plan``."""
        return (rows * self.signal_row(plan.n_pairs, plan.items_per_size(), episodes)
                + self.signal_calls(episodes, rows) * self.tokenize_call
                + episodes * self.task_episode(rows, context_rows))


def _fit(fake: "_Fake") -> FlopModel:
    model, cfg = fake.model, fake.model.config
    trainable = not cfg.freeze_signal_encoder
    m, p = cfg.num_patches, cfg.hidden_dim

    def slope(make) -> float:  # FLOPs per unit (2 units minus 1 unit: per-call constants cancel)
        return fake.stage_flops(lambda: make(2)) - fake.stage_flops(lambda: make(1))

    def grad_ctx():
        return contextlib.nullcontext() if trainable else torch.no_grad()

    def tok(n):
        with grad_ctx():
            return model.signal_encoder.patch_tokenizer(torch.randn(n, cfg.seq_len))

    def enc(u):
        def make(n):
            with grad_ctx():
                return model.signal_encoder.encode_groups(torch.randn(n, u, m, p, requires_grad=trainable))
        return make

    def compose(n):
        return model.rssc(torch.randn(n, cfg.num_groups, cfg.group_size, p, requires_grad=trainable))

    def task(t, n_ctx):
        def fn():
            H = torch.randn(1, t, cfg.d_h, requires_grad=True)
            return model.task_logits(H, torch.arange(n_ctx).remainder(2)[None])
        return fn

    probes = [(8, 4), (16, 4), (16, 12), (24, 8)]  # exactly determine (a, b, c, d); checked at the largest
    y = np.array([fake.stage_flops(task(t, n)) for t, n in probes])
    ts, ns = np.array(probes, dtype=np.float64).T
    coef, *_ = np.linalg.lstsq(np.stack([np.ones_like(ts), ts, ns, ts * ns], axis=1), y, rcond=None)
    tok1 = fake.stage_flops(lambda: tok(1))
    per_series = fake.stage_flops(lambda: tok(2)) - tok1
    return FlopModel(tokenize=per_series, encode=tuple(slope(enc(u)) for u in range(1, cfg.group_size + 1)),
                     compose=slope(compose), task=tuple(float(c) for c in coef), tokenize_call=tok1 - per_series,
                     signal_rows=fake.tc.forward_kwargs(fake.device_type)["signal_rows"])


def _fake_model(model_config, train_config: TrainConfig, amp_dtype: str | None,
                device_type: str = "cpu") -> _Fake:
    """A fake copy of a freshly initialised ``ChorusTIC(model_config)`` (``amp_dtype``: e.g. "bfloat16")."""
    from chorustic.model import ChorusTIC

    torch.manual_seed(0)
    return _Fake(ChorusTIC(model_config), train_config, getattr(torch, amp_dtype) if amp_dtype else None,
                 device_type)


def fit_flop_model(model_config, train_config: TrainConfig, amp_dtype: str | None = None) -> FlopModel:
    """The exact FLOP model of ``model_config`` (its stages counted on small fake inputs; seconds)."""
    return _fit(_fake_model(model_config, train_config, amp_dtype))


def _largest_shape(model_config, train_config: TrainConfig) -> tuple[int, int, int, int]:
    """(T, N_c, C, K) of the prior's largest episode."""
    prior, mc = train_config.prior, model_config
    t_max = prior.max_rows
    n_ctx_max = int(np.clip(round(t_max * prior.context_fraction[1]), prior.min_classes, t_max - 1))
    c_max = prior.max_channels if prior.p_univariate < 1 else 1
    return t_max, n_ctx_max, c_max, min(prior.max_classes, mc.max_classes)


#: The plan's fake-tensor measurements, longest first (the order in which workers take them).
_MEASUREMENTS = ("micro_batch_2", "flop_model", "largest", "micro_batch_1")


def _measure(name: str, model_config, train_config: TrainConfig, amp_dtype: str | None, device_type: str):
    """One of the independent fake-tensor measurements of a plan (in a worker process or in this one)."""
    from chorustic.model.attention import kernels_of

    with kernels_of(device_type):
        fake = _fake_model(model_config, train_config, amp_dtype, device_type)
        if name == "flop_model":
            return _fit(fake)
        shape = _largest_shape(model_config, train_config)
        ckpt = train_config.activation_checkpointing
        if name == "largest":  # FLOPs (the fit's check) and saved bytes without checkpointing
            return fake.run(1, *shape, recompute=False, flops=True, saved=True)
        if name == "micro_batch_1":
            return fake.run(1, *shape, recompute=ckpt, saved=True, live=True)
        if name == "micro_batch_2":
            return fake.run(2, *shape, recompute=ckpt, live=True)
    raise ValueError(f"unknown measurement {name!r}")


def _static_bytes(n_all: int, n_train: int, amp_dtype: str | None) -> float:
    """fp32 weights, gradients and AdamW's two moments, plus the autocast cache of low-precision weight copies."""
    return 4.0 * n_all + 4.0 * n_train * 3 + (2.0 * n_all if amp_dtype else 0.0)


def _budget_bytes(memory_gb: float) -> float:
    """What a micro-batch may peak at within ``memory_gb``: 10 % is kept for the allocator."""
    return memory_gb * 2**30 * 0.9


def _peak_line(m1: dict[str, Any], m2: dict[str, Any]) -> tuple[float, float]:
    """(transient, per episode) bytes of the line through the traced peaks of 1 and 2 episodes."""
    per_episode = max(m2["peak_bytes"] - m1["peak_bytes"], 0.0)
    return m1["peak_bytes"] - per_episode, per_episode


def _fitting_micro_batches(tc: TrainConfig, world_size: int):
    """(micro-batch size, accumulation steps) of every layout of ``tc``'s shape groups, largest first."""
    from chorustic.training.data import StreamLayout

    group = tc.group_size
    for mb in sorted((d for d in range(1, group + 1) if group % d == 0), reverse=True):
        try:
            lay = StreamLayout(tc.batch_size, group, mb, world_size)
        except ValueError:
            continue
        yield mb, lay.accumulation_steps


def layout_candidates(model_config, train_config: TrainConfig) -> list[tuple[str, dict[str, Any]]]:
    """The layouts ``--plan --choose-layout`` weighs, as (label, TrainConfig fields): the configured one;
    with activation checkpointing, signal chunks of 4x and 12x its rows and of the whole micro-batch (fewer
    chunks: fewer kernels, more memory), and no checkpointing at all (the fewest kernels, the most memory);
    without it, checkpointing (for a card the configured layout does not fit)."""
    tc = train_config
    whole = tc.group_size * _largest_shape(model_config, tc)[0]
    rows = tc.signal_chunk_rows or whole
    if tc.activation_checkpointing:
        out = [(f"checkpointing, {rows} signal rows a chunk (configured)", {})]
        for r in sorted({4 * rows, 12 * rows, whole}):
            if rows < r <= whole:
                out.append((f"checkpointing, {r} signal rows a chunk", {"signal_chunk_rows": r}))
        out.append(("no checkpointing", {"activation_checkpointing": False}))
    else:
        out = [("no checkpointing (configured)", {}),
               (f"checkpointing, {rows} signal rows a chunk", {"activation_checkpointing": True})]
    return out


def _measure_layout(fields: dict[str, Any], model_config, train_config: TrainConfig, amp_dtype: str | None,
                    device_type: str, memory_gb: float, world_size: int) -> dict[str, Any]:
    """One candidate layout: its peak memory at the largest episode for 1 and 2 episodes (linear beyond,
    as in the plan), and the largest micro-batch whose fake step (traced at that size) peaks within
    ``memory_gb``, with the step's aten calls, executed FLOPs (recomputation included) and traced peak."""
    from chorustic.model.attention import kernels_of

    tc = dataclasses.replace(train_config, **fields)
    with kernels_of(device_type):
        fake = _fake_model(model_config, tc, amp_dtype, device_type)
        shape = _largest_shape(model_config, tc)
        ckpt = tc.activation_checkpointing
        m1 = fake.run(1, *shape, recompute=ckpt, live=True)
        m2 = fake.run(2, *shape, recompute=ckpt, live=True)
        params = list(fake.model.parameters())
        static = _static_bytes(sum(p.numel() for p in params),
                               sum(p.numel() for p in params if p.requires_grad), amp_dtype)
        transient, per_episode = _peak_line(m1, m2)
        budget = _budget_bytes(memory_gb)
        out = {"fields": fields, "layout": dict(tc.forward_kwargs(device_type)), "micro_batch_size": None}
        for mb, accumulation in _fitting_micro_batches(tc, world_size):
            peak = static + transient + mb * per_episode
            if peak > budget:
                continue
            # the step of this micro-batch itself decides: a layout whose memory is not linear in the
            # episodes (a chunk that holds the whole micro-batch) may peak above the line through 1 and 2
            traced = fake.run(mb, *shape, recompute=ckpt, live=True, calls=True)
            if static + traced["peak_bytes"] > budget:
                continue
            out.update(micro_batch_size=mb, gradient_accumulation=accumulation, estimated_peak_bytes=peak,
                       traced_peak_bytes=static + traced["peak_bytes"], calls=traced["calls"],
                       view_calls=traced["view_calls"], executed_flops=traced["executed_flops"])
            break
        return out


def _weigh_layouts(measured: list[tuple[str, dict]], flop_model: FlopModel, model_config, train_config: TrainConfig,
                   *, peak_tflops: float | None, mfu: float, launch_us: float = LAUNCH_US) -> dict[str, Any]:
    """The candidates' expected times: a micro-batch takes max(executed FLOPs / (peak x MFU), aten calls x
    ``launch_us``) (compute-bound or launch-bound, whichever is slower); the fastest per episode that fits
    is chosen, with the options of ``chorustic pretrain`` that run it."""
    t, n_ctx, c, _ = _largest_shape(model_config, train_config)
    gb = 2**30
    rows = []
    for label, m in measured:
        row: dict[str, Any] = {"label": label, "fields": m["fields"], "layout": m["layout"],
                               "micro_batch_size": m["micro_batch_size"], "fits": m["micro_batch_size"] is not None}
        if row["fits"]:
            mb = m["micro_batch_size"]
            launch = m["calls"] * launch_us * 1e-6  # the launch floor of the micro-batch (s)
            signal_rows = m["layout"]["signal_rows"]
            model = dataclasses.replace(flop_model, signal_rows=signal_rows).micro_batch(
                mb, t, n_ctx, _plan_of(model_config, mb, t, c, not model_config.signal_dropout_in_training))
            row.update(gradient_accumulation=m["gradient_accumulation"],
                       estimated_peak_gb=round(m["estimated_peak_bytes"] / gb, 2),
                       traced_peak_gb=round(m["traced_peak_bytes"] / gb, 2),
                       estimated_peak_bytes=int(m["estimated_peak_bytes"]), traced_peak_bytes=int(m["traced_peak_bytes"]),
                       calls_per_micro_batch=m["calls"], calls_per_episode=round(m["calls"] / mb, 1),
                       model_flops=model, executed_flops=m["executed_flops"],
                       launch_floor_ms=round(launch * 1e3, 2))
            if peak_tflops:
                compute = m["executed_flops"] / (peak_tflops * 1e12 * mfu)
                expected = max(compute, launch)
                row.update(compute_ms=round(compute * 1e3, 2), expected_ms=round(expected * 1e3, 2),
                           bound="launch" if expected > compute else "compute",
                           episodes_per_s=round(mb / expected, 2),
                           expected_mfu=round(model / (expected * peak_tflops * 1e12), 4))
        rows.append(row)
    fitting = [r for r in rows if r["fits"]]
    key = (lambda r: (-r["episodes_per_s"], r["traced_peak_bytes"])) if peak_tflops else \
        (lambda r: (r["calls_per_episode"], r["traced_peak_bytes"]))
    chosen = min(fitting, key=key) if fitting else None
    if chosen is not None:
        tc = dataclasses.replace(train_config, **chosen["fields"], micro_batch_size=chosen["micro_batch_size"])
        opts = [f"--micro-batch-size {tc.micro_batch_size}",
                "--activation-checkpointing" if tc.activation_checkpointing else "--no-activation-checkpointing"]
        if tc.activation_checkpointing:
            opts.append(f"--signal-chunk-rows {tc.signal_chunk_rows}")
        chosen = {**chosen, "options": " ".join(opts)}
    return {"method": f"each candidate traced on fake tensors at the largest episode and at its largest micro-batch "
                      f"whose traced peak fits the budget (traced_peak_gb; estimated_peak_gb: the line through 1 "
                      f"and 2 episodes); expected time of a micro-batch = max(executed FLOPs / (peak x MFU), "
                      f"aten calls x {launch_us:g} µs)", "launch_us": launch_us,
            "candidates": rows, "chosen": chosen}


def _worker_init() -> None:
    torch.set_num_threads(1)


class _Measurements:
    """The plan's measurements, started at construction: on ``workers`` processes (forked where the
    platform allows, as the prior's data-loader workers are) or, with ``workers <= 1``, in this process when
    :meth:`results` is called. The results are identical either way: fake tensors have no values."""

    def __init__(self, model_config, train_config: TrainConfig, amp_dtype: str | None, device_type: str,
                 workers: int, layouts: list[tuple[str, dict]] = (), layout_args: tuple = ()) -> None:
        self.args = (model_config, train_config, amp_dtype, device_type)
        self.layouts, self.layout_args = list(layouts), layout_args
        self.pool = self.futures = None
        self.layout_futures: list = []
        self._results: dict[str, Any] | None = None
        if workers > 1:
            import multiprocessing as mp
            from concurrent.futures import ProcessPoolExecutor

            from chorustic.training.data import worker_start_method

            self.pool = ProcessPoolExecutor(min(workers, len(_MEASUREMENTS) + len(self.layouts)),
                                            initializer=_worker_init, mp_context=mp.get_context(worker_start_method()))
            # the layouts first: each is one long trace, the four measurements fill the other workers
            self.layout_futures = [self.pool.submit(_measure_layout, fields, *self.args, *layout_args)
                                   for _, fields in self.layouts]
            self.futures = {name: self.pool.submit(_measure, name, *self.args) for name in _MEASUREMENTS}

    def results(self) -> dict[str, Any]:
        if self._results is None:
            self._results = ({name: _measure(name, *self.args) for name in _MEASUREMENTS} if self.futures is None
                             else {name: f.result() for name, f in self.futures.items()})
        return self._results

    def layout_results(self) -> list[tuple[str, dict]]:
        if self.futures is None:
            return [(label, _measure_layout(fields, *self.args, *self.layout_args)) for label, fields in self.layouts]
        return [(label, f.result()) for (label, _), f in zip(self.layouts, self.layout_futures)]

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=False, cancel_futures=True)


def default_plan_workers() -> int:
    """Processes for the plan's measurements: the cores this process may use, at most 4 (one each)."""
    from chorustic.training.data import usable_cpus

    return max(1, min(len(_MEASUREMENTS), usable_cpus()))


def plan_pretraining(model_config, train_config: TrainConfig, *, memory_gb: float = 32.0,
                     target_device: str = "h100", peak_tflops: float | None = None, mfu: float = 0.4,
                     world_size: int = 1, amp_dtype: str | None = "bfloat16",
                     workers: int | None = None, choose_layout: bool = False,
                     launch_us: float = LAUNCH_US) -> dict[str, Any]:
    """The plan of a pretraining run (see the module docstring); a JSON-serialisable dict.

    ``choose_layout``: also weigh the :func:`layout_candidates` (activation checkpointing, signal chunk
    sizes, each at its largest micro-batch within ``memory_gb``) by their expected time on the target and
    choose the fastest (the plan's ``layouts``), a kernel launch costing ``launch_us``; each candidate is one
    more fake step of a whole micro-batch (about a minute for the paper configuration on 2 cores).

    Traced with the attention kernels of the target (``target_device="cpu"``: the CPU's, otherwise
    CUDA's: see chorustic/model/attention.py). The four fake-tensor measurements (the FLOP model, the
    largest episode, micro-batches of 1 and 2 episodes) are independent: they run on ``workers`` processes
    (default :func:`default_plan_workers`; 1 = all in this process, the same numbers).
    """
    device_type = "cpu" if target_device.lower() == "cpu" else "cuda"
    t_start = time.perf_counter()
    layouts = layout_candidates(model_config, train_config) if choose_layout else []
    n_workers = default_plan_workers() if workers is None else workers
    measurements = _Measurements(model_config, train_config, amp_dtype, device_type, n_workers, layouts,
                                 (memory_gb, world_size))
    try:  # every traced step is one of the measurements, which choose their attention kernels themselves
        plan = _plan_pretraining(model_config, train_config, measurements, device_type=device_type,
                                 t_start=t_start, memory_gb=memory_gb, target_device=target_device,
                                 peak_tflops=peak_tflops, mfu=mfu, world_size=world_size, amp_dtype=amp_dtype)
        if choose_layout:
            peak = peak_tflops if peak_tflops is not None else DEVICE_PEAK_TFLOPS.get(target_device.lower())
            plan["layouts"] = _weigh_layouts(measurements.layout_results(), measurements.results()["flop_model"],
                                             model_config, train_config, peak_tflops=peak, mfu=mfu,
                                             launch_us=launch_us)
            plan["plan_seconds"] = round(time.perf_counter() - t_start, 1)
        return plan
    finally:
        measurements.close()


def _plan_pretraining(model_config, train_config: TrainConfig, measurements: _Measurements, *,
                      device_type: str, t_start: float, memory_gb: float, target_device: str,
                      peak_tflops: float | None, mfu: float, world_size: int,
                      amp_dtype: str | None) -> dict[str, Any]:
    from chorustic.model import ChorusTIC

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
    del real
    T_max, n_ctx_max, C_max, k_max = _largest_shape(mc, tc)
    episodes_drawn = _prior_episodes(tc, mc)  # while the workers measure
    measured = measurements.results()

    # FLOPs: exact in (T, T*C, N_c, T*N_c); fit on small fake episodes, check at the largest one
    flop_model, largest = measured["flop_model"], measured["largest"]
    fit_largest = (T_max * flop_model.signal_row(largest["pairs"], largest["items"])
                   + flop_model.signal_calls(1, T_max) * flop_model.tokenize_call
                   + flop_model.task_episode(T_max, n_ctx_max))
    mb = tc.micro_batch_size or tc.group_size
    per_episode = [T * flop_model.signal_row(pairs, items) + flop_model.task_episode(T, n_ctx)
                   + flop_model.signal_calls(mb, T) * flop_model.tokenize_call / mb
                   for T, n_ctx, pairs, items, _ in episodes_drawn]
    mean_flops = float(np.mean(per_episode))
    fwd = {}
    if tc.activation_checkpointing:
        fwd["recomputation"] = "one more forward pass of the checkpointed chunks (about +1/3 of the FLOPs)"

    # memory at the largest episode, B = 1 and 2
    m1, m2 = measured["micro_batch_1"], measured["micro_batch_2"]
    transient, per_episode = _peak_line(m1, m2)
    static = _static_bytes(n_all, n_train, amp_dtype)
    budget = _budget_bytes(memory_gb)
    candidates = []
    group = tc.group_size
    for mb, accumulation in _fitting_micro_batches(tc, world_size):
        peak = static + transient + mb * per_episode
        candidates.append({"micro_batch_size": mb, "gradient_accumulation": accumulation,
                           "estimated_peak_gb": round(peak / 2**30, 2), "activation_peak_bytes": int(peak - static),
                           "fits": bool(peak <= budget)})
    chosen = next((c for c in candidates if c["fits"]), None)

    peak = peak_tflops if peak_tflops is not None else DEVICE_PEAK_TFLOPS.get(target_device.lower())
    episodes = tc.steps * tc.batch_size
    total = episodes * mean_flops
    timing: dict[str, Any] = {"episodes": episodes, "total_pflop": round(total / 1e15, 1), "target_device": target_device,
                              "peak_tflops": peak, "mfu": mfu, "world_size": world_size}
    if peak:
        seconds = total / (peak * 1e12 * mfu * world_size)
        timing.update(estimated_hours=round(seconds / 3600, 2), estimated_seconds=float(f"{seconds:.3g}"),
                      episodes_per_s=round(peak * 1e12 * mfu * world_size / mean_flops, 2))
    else:
        timing["note"] = f"unknown device {target_device!r}: pass --peak-tflops (known: {sorted(DEVICE_PEAK_TFLOPS)})"
    gb = 2**30
    return {
        "model": {"parameters_total": n_all, "parameters_trainable": n_train, "per_module": counts,
                  "signal_encoder_frozen": bool(mc.freeze_signal_encoder)},
        "train": {"name": tc.name, "steps": tc.steps, "batch_size": tc.batch_size, "shape_group_size": group,
                  "activation_checkpointing": tc.activation_checkpointing,
                  "chunks": {k: v for k, v in tc.forward_kwargs(device_type).items() if k != "recompute"},
                  "autocast": amp_dtype},
        "largest_episode": {"rows": T_max, "context_rows": n_ctx_max, "channels": C_max, "length": mc.seq_len,
                            "classes": k_max},
        "flops_per_episode": {
            "largest": largest["flops"], "prior_mean": mean_flops,
            "prior_mean_rows": float(np.mean([e[0] for e in episodes_drawn])),
            "prior_mean_channels": float(np.mean([e[4] for e in episodes_drawn])),
            "prior_mean_slot_encodings_per_row": float(np.mean([sum(u * k for u, k in e[3].items())
                                                                for e in episodes_drawn])),
            "slot_schedule": ("every slot (dropout in training)" if mc.signal_dropout_in_training
                              else "de-duplicated"),
            "fit_relative_error_at_largest": abs(fit_largest - largest["flops"]) / largest["flops"],
            "counted": "forward + backward of one training micro-batch (model FLOPs, no recomputation)", **fwd},
        "activations_per_episode_gb": {
            "saved_without_checkpointing": round(largest["saved_bytes"] / gb, 3),
            "saved_with_checkpointing": round(m1["saved_bytes"] / gb, 3) if tc.activation_checkpointing else None,
            "held_after_forward": round(m1["after_forward_bytes"] / gb, 3),
            "peak_growth_per_episode": round(per_episode / gb, 3),
            "recomputation_transient": round(transient / gb, 3),
        },
        "memory": {"budget_gb": memory_gb, "static_gb": round(static / gb, 3),
                   "static": ("fp32 weights, gradients and AdamW moments"
                              + (" + autocast weight copies" if amp_dtype else "")),
                   "world_size": world_size,
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
