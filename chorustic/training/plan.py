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

__all__ = ["DEVICE_PEAK_TFLOPS", "FlopModel", "default_plan_workers", "fit_flop_model", "flop_counter",
           "plan_pretraining"]


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
            live: bool = False) -> dict[str, Any]:
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
            tracker = _LiveStorages() if live else contextlib.nullcontext()
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


def _worker_init() -> None:
    torch.set_num_threads(1)


class _Measurements:
    """The plan's measurements, started at construction: on ``workers`` processes (forked where the
    platform allows, as the prior's data-loader workers are) or, with ``workers <= 1``, in this process when
    :meth:`results` is called. The results are identical either way: fake tensors have no values."""

    def __init__(self, model_config, train_config: TrainConfig, amp_dtype: str | None, device_type: str,
                 workers: int) -> None:
        self.args = (model_config, train_config, amp_dtype, device_type)
        self.pool = self.futures = None
        if workers > 1:
            import multiprocessing as mp
            from concurrent.futures import ProcessPoolExecutor

            from chorustic.training.data import worker_start_method

            self.pool = ProcessPoolExecutor(min(workers, len(_MEASUREMENTS)), initializer=_worker_init,
                                            mp_context=mp.get_context(worker_start_method()))
            self.futures = {name: self.pool.submit(_measure, name, *self.args) for name in _MEASUREMENTS}

    def results(self) -> dict[str, Any]:
        if self.futures is None:
            return {name: _measure(name, *self.args) for name in _MEASUREMENTS}
        return {name: f.result() for name, f in self.futures.items()}

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
                     workers: int | None = None) -> dict[str, Any]:
    """The plan of a pretraining run (see the module docstring); a JSON-serialisable dict.

    Traced with the attention kernels of the target (``target_device="cpu"``: the CPU's, otherwise
    CUDA's: see chorustic/model/attention.py). The four fake-tensor measurements (the FLOP model, the
    largest episode, micro-batches of 1 and 2 episodes) are independent: they run on ``workers`` processes
    (default :func:`default_plan_workers`; 1 = all in this process, the same numbers).
    """
    device_type = "cpu" if target_device.lower() == "cpu" else "cuda"
    t_start = time.perf_counter()
    measurements = _Measurements(model_config, train_config, amp_dtype, device_type,
                                 default_plan_workers() if workers is None else workers)
    try:  # every traced step is one of the measurements, which choose their attention kernels themselves
        return _plan_pretraining(model_config, train_config, measurements, device_type=device_type,
                                 t_start=t_start, memory_gb=memory_gb, target_device=target_device,
                                 peak_tflops=peak_tflops, mfu=mfu, world_size=world_size, amp_dtype=amp_dtype)
    finally:
        measurements.close()


def _plan_pretraining(model_config, train_config: TrainConfig, measurements: _Measurements, *,
                      device_type: str, t_start: float, memory_gb: float, target_device: str,
                      peak_tflops: float | None, mfu: float, world_size: int,
                      amp_dtype: str | None) -> dict[str, Any]:
    from chorustic.model import ChorusTIC
    from chorustic.training.data import StreamLayout

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
    per_episode = max(m2["peak_bytes"] - m1["peak_bytes"], 0.0)
    transient = m1["peak_bytes"] - per_episode
    param_bytes = 4.0 * n_all
    static = param_bytes + 4.0 * n_train * 3  # fp32 weights, gradients, AdamW exp_avg and exp_avg_sq
    if amp_dtype:
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
