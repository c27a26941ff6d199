"""Operator census of one training micro-batch on fake tensors (issue 76, item 1).

For a model/training preset pair, at the prior's largest episode and the trainer's micro-batch, one
micro-batch of a training step (forward under bf16 autocast, the trainer's loss, backward) and one
optimizer step (gradient clipping + AdamW) run on fake tensors (``torch._subclasses.FakeTensorMode``,
through ``chorustic.training.plan._fake_model``) under a counting ``TorchDispatchMode``. Every aten call is
counted with its phase (forward / loss / backward / clip / optimizer), its stage (signal level = signal
encoder + RSSC, column distribution modeling, row interaction, ICL: the innermost model file on the Python
stack; in the backward pass the stage tag a ``TorchFunctionMode`` put on the autograd node that runs it;
checkpoint recomputation = model code on the stack inside ``backward()``), the model source lines on its
Python stack, and, for matmul-like ops,
its FLOPs and whether any matrix dimension is below 128.

The layout is the CUDA one the trainer uses (``TrainConfig.forward_kwargs("cuda")``, attention kernels of
``kernels_of("cuda")``: SDPA everywhere). Caveats: fake CPU tensors dispatch CPU kernels (the SDPA
op is ``_scaled_dot_product_flash_attention_for_cpu``; CUDA runs flash / memory-efficient: one call each
way too), CPU autocast rules (the same matmul ops in bf16), and an aten call is not exactly one CUDA
launch (views launch nothing: counted apart as "non-view"; a fused / foreach optimizer op launches one
multi-tensor kernel per chunk of tensors; cuBLAS may launch 1-2 kernels per matmul).

    python benchmarks/step_census.py --config paper base --out benchmarks/results/step_census.md
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import datetime
import platform
import sys
import time
from pathlib import Path
from typing import Any

import torch

from chorustic.training.devices import DEVICE_PEAK_TFLOPS
from chorustic.training.plan import LAUNCH_US, NO_KERNEL_OPS  # the calls the planner counts

H100_BF16_TFLOPS = DEVICE_PEAK_TFLOPS["h100"]
MFU = 0.40
SMALL_DIM = 128
MATMUL_OPS = {"mm", "bmm", "addmm", "baddbmm"}
#: model source files -> stage (the innermost such frame on the Python stack names an op's stage)
STAGE_FILES = {"signal_encoder.py": "signal", "patch_tokenizer.py": "signal", "dual_axis_encoder.py": "signal",
               "slot_readout.py": "signal", "rssc.py": "signal", "attention.py": "signal",
               "column_distribution_modeling.py": "column", "row_interaction.py": "row", "icl.py": "icl"}
_MODEL_DIR = str(Path(__file__).resolve().parents[1] / "chorustic" / "model")


def launch_floor_s(calls: float, launch_us: float = LAUNCH_US) -> float:
    return calls * launch_us * 1e-6


def compute_time_s(flops: float, peak_tflops: float = H100_BF16_TFLOPS, mfu: float = MFU) -> float:
    return flops / (peak_tflops * 1e12 * mfu)


def _is_matmul(name: str) -> bool:
    return name in MATMUL_OPS or name.startswith("_scaled_dot_product") or name.startswith("scaled_dot_product")


def _matmul_dims(name: str, args) -> tuple[int, ...]:
    """The matrix dimensions (M, K, N) of a matmul, (L_q, L_k, E) of an attention; batch dims excluded."""
    sh = [tuple(a.shape) for a in args if isinstance(a, torch.Tensor)]
    if name == "mm":
        (m, k), (_, n) = sh[0], sh[1]
    elif name == "addmm":
        (m, k), (_, n) = sh[1], sh[2]
    elif name == "bmm":
        (_, m, k), (_, _, n) = sh[0], sh[1]
    elif name == "baddbmm":
        (_, m, k), (_, _, n) = sh[1], sh[2]
    else:  # attention forward or backward: q, k, v first (the backward: grad_out, q, k, v)
        q, kk = (sh[1], sh[2]) if "backward" in name else (sh[0], sh[1])
        return (q[-2], kk[-2], q[-1])
    return (m, k, n)


class _Census(torch.utils._python_dispatch.TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        from torch.utils import flop_counter as fc

        self.fc = fc
        self.phase = "forward"
        self.calls: collections.Counter = collections.Counter()  # (phase, stage, op) -> n
        self.views: collections.Counter = collections.Counter()  # (phase, stage) -> view calls
        self.sites: collections.Counter = collections.Counter()  # model source line -> calls (inclusive)
        self.flops: collections.Counter = collections.Counter()  # (phase, recompute?) -> FLOPs
        self.mm = {"flops": 0.0, "small_any": 0.0, "small_mn": 0.0, "calls": 0, "small_calls": 0}

    def _walk(self, record_sites: bool) -> str | None:
        """The stage of the current Python stack (None outside the model); records its model lines."""
        stage, seen = None, set()
        f = sys._getframe(2)
        while f is not None:
            co = f.f_code
            if co.co_filename.startswith(_MODEL_DIR):
                name = Path(co.co_filename).name
                if stage is None:
                    stage = STAGE_FILES.get(name) or ({"signal_representations": "signal"}.get(co.co_name))
                if record_sites:
                    seen.add(f"{name}:{f.f_lineno} ({co.co_name})")
            f = f.f_back
        if record_sites:
            phase = "recompute" if self.phase == "backward" else self.phase
            for key in seen:
                self.sites[(phase, key)] += 1
        return stage if stage is not None else ("glue" if seen else None)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        name = func._overloadpacket.__name__
        if func.namespace == "prim" or name in NO_KERNEL_OPS:  # metadata queries, profiler markers
            return out
        phase = self.phase
        stage = self._walk(phase in ("forward", "backward")) if phase in ("forward", "backward") else None
        if phase == "backward":
            if stage is not None:  # model code on the stack inside backward(): checkpoint recomputation
                phase = "recompute"
            if stage in (None, "glue"):  # gradient ops (or a recomputation under _tabicl_adapter.py only)
                node = torch._C._current_autograd_node()
                tag = node.metadata.get("stage") if node is not None else None
                stage = tag or (stage if stage else "grad accumulation/untagged")
        stage = stage or "-"
        self.calls[(phase, stage, name)] += 1
        if func.is_view or name in ("detach", "_unsafe_view", "alias", "lift_fresh"):
            self.views[(phase, stage)] += 1
        packet = func._overloadpacket
        if packet in self.fc.flop_registry:
            fl = float(self.fc.flop_registry[packet](*args, **kwargs, out_val=out))
            self.flops[phase] += fl
            if _is_matmul(name):
                dims = _matmul_dims(name, args)
                self.mm["flops"] += fl
                self.mm["calls"] += 1
                if min(dims) < SMALL_DIM:
                    self.mm["small_any"] += fl
                    self.mm["small_calls"] += 1
                if min(dims[0], dims[-1] if not name.startswith("_scaled") else dims[1]) < SMALL_DIM:
                    self.mm["small_mn"] += fl
        return out


class _Tagger(torch.overrides.TorchFunctionMode):
    """Tags the autograd nodes created in the forward pass with the stage of the code creating them."""

    def __init__(self, census: _Census) -> None:
        super().__init__()
        self.census = census

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if self.census.phase in ("forward", "loss") and torch.is_grad_enabled():
            from torch.utils._pytree import tree_flatten

            stage = None
            for t in tree_flatten(out)[0]:
                if isinstance(t, torch.Tensor) and t.grad_fn is not None and "stage" not in t.grad_fn.metadata:
                    if stage is None:
                        stage = (self.census._walk(False) or "glue") if self.census.phase == "forward" else "loss"
                    t.grad_fn.metadata["stage"] = stage
        return out


def _layout_trips(model_config, train_config, kw: dict, b: int, t: int, plan) -> dict[str, int]:
    """Trip counts of the Python loops that repeat a stage (analytic, from the layout and shapes)."""
    from chorustic.model.attention import SDPA_MAX_BATCH

    sr = kw["signal_rows"]
    step = max(1, sr // b) if sr else t
    d_h, mc = model_config.d_h, model_config
    groups = sum(int(it.shape[0]) for _, it, _ in plan.buckets) * t
    return {"signal chunks (signal_rows)": -(-t // step),
            "slot-size buckets per signal chunk (plan.buckets)": len(plan.buckets),
            "group chunks (group_chunk)": (-(-groups // kw["group_chunk"]) if kw["group_chunk"] else 1),
            "cdm column chunks (cdm_columns)": -(-(b * d_h) // (kw["cdm_columns"] or b * d_h)),
            "row-interaction chunks (interaction_rows)": -(-(b * t) // (kw["interaction_rows"] or b * t)),
            "ICL blocks (checkpointed each)" if kw["recompute"] else "ICL blocks": mc.icl_num_blocks,
            "dual-axis layers x (temporal + channel)": mc.num_dual_axis_layers * 2,
            "readout layers": mc.readout_depth,
            "SDPA slices of SDPA_MAX_BATCH (temporal attention, per signal chunk)":
                -(-(min(step, t) * groups // t * mc.group_size) // SDPA_MAX_BATCH)}


def census(model_name: str, train_name: str | None = None, *, episodes: int | None = None,
           shape: tuple[int, int, int, int] | None = None, device_type: str = "cuda",
           optimizer: str = "trainer", train_signal_encoder: bool = True, overrides: dict | None = None,
           amp_dtype: str | None = "bfloat16") -> dict[str, Any]:
    """Counts of one training micro-batch and one optimizer step (see the module docstring).

    ``optimizer``: "trainer" (AdamW as the trainer builds it: fused) or "foreach"; ``overrides``:
    TrainConfig fields (e.g. chunk sizes)."""
    from chorustic.model.config import MODEL_PRESETS
    from chorustic.model.attention import kernels_of
    from chorustic.training.config import TRAIN_PRESETS
    from chorustic.training.loss import query_cross_entropy
    from chorustic.training.plan import _fake_model, _largest_shape, _plan_of, flop_counter

    mc = MODEL_PRESETS[model_name]()
    if train_signal_encoder:
        mc = dataclasses.replace(mc, freeze_signal_encoder=False)
    tc = TRAIN_PRESETS[train_name or model_name]()
    if overrides:
        tc = dataclasses.replace(tc, **overrides)
    b = episodes or tc.micro_batch_size or tc.group_size
    t, n_ctx, c, k = shape or _largest_shape(mc, tc)
    kw = tc.forward_kwargs(device_type)
    t0 = time.perf_counter()
    with kernels_of(device_type):
        fake = _fake_model(mc, tc, amp_dtype, device_type)
        model = fake.model
        plan = _plan_of(mc, b, t, c, fake.dedupe)
        counter = flop_counter()  # also registers the CPU attention kernels' FLOP formulas
        mode = _Census()
        tagger = _Tagger(mode)
        params = [p for p in model.parameters() if p.requires_grad]
        scale = 1.0 / tc.batch_size
        try:
            with fake.mode:
                X = torch.randn(b, t, c, mc.seq_len)
                y_ctx = torch.arange(n_ctx).remainder(k).repeat(b, 1)
                y_q = torch.arange(t - n_ctx).remainder(k).repeat(b, 1)
                n_classes = torch.full((b,), k)
                opt_kw = {"fused": True} if optimizer == "trainer" and tc.fused_optimizer else {"foreach": True}
                opt = torch.optim.AdamW(params, lr=tc.lr, betas=tuple(tc.betas), weight_decay=tc.weight_decay,
                                        **opt_kw)
                stats = torch.zeros(5, dtype=torch.float64)
                for p in params:  # a steady-state step: AdamW's moments exist (first step not counted)
                    p.grad = torch.zeros_like(p)
                opt.step()
                for p in params:
                    p.grad = None
                with counter, mode, tagger:
                    with fake._amp():  # the trainer's micro-batch (Trainer.train_step)
                        logits = model.episode_logits(X, y_ctx, plan=plan, **kw)
                    mode.phase = "loss"
                    per_ep, correct = query_cross_entropy(logits, y_q, n_classes, tc.mask_unused_classes)
                    loss = per_ep.sum() * scale
                    mode.phase = "backward"
                    loss.backward()
                    mode.phase = "loss"  # the step's bookkeeping of the micro-batch
                    stats[0] += per_ep.detach().sum().double()
                    stats[1] += correct.sum().double()
                    mode.phase = "clip"  # once per optimizer step; CUDA's clip uses the foreach kernels
                    torch.nn.utils.clip_grad_norm_(params, tc.grad_clip, foreach=True)
                    mode.phase = "optimizer"
                    opt.step()
                if optimizer == "trainer":  # the foreach alternative on the same gradients (steady state)
                    alt = torch.optim.AdamW(params, lr=tc.lr, betas=tuple(tc.betas), weight_decay=tc.weight_decay,
                                            foreach=True)
                    alt.step()
                    with mode:
                        mode.phase = "optimizer_foreach"
                        alt.step()
        finally:
            pass  # nothing to undo: the fake model is private to this census
    seconds = time.perf_counter() - t0
    return _summary(mode, counter, mc, tc, kw, b, (t, n_ctx, c, k), plan, opt_kw, seconds, model_name,
                    train_name or model_name, len(params))


def _summary(mode: _Census, counter, mc, tc, kw, b, shape, plan, opt_kw, seconds, model_name, train_name,
             n_params) -> dict[str, Any]:
    by_phase: collections.Counter = collections.Counter()
    by_stage: collections.Counter = collections.Counter()
    ops: collections.Counter = collections.Counter()
    for (phase, stage, op), n in mode.calls.items():
        by_phase[phase] += n
        if phase != "optimizer_foreach":
            by_stage[(phase, stage)] += n
            ops[op] += n
    micro = sum(n for p, n in by_phase.items() if p in ("forward", "recompute", "loss", "backward"))
    per_step = by_phase["clip"] + by_phase["optimizer"]
    alt_ops = {op: n for (p, _, op), n in mode.calls.items() if p == "optimizer_foreach"}
    n_micro = tc.batch_size // b
    views = sum(n for (p, _), n in mode.views.items() if p not in ("clip", "optimizer", "optimizer_foreach"))
    total = micro + per_step / n_micro
    model_flops = sum(v for p, v in mode.flops.items() if p != "recompute")
    exec_flops = sum(mode.flops.values())
    compute = compute_time_s(model_flops)
    floor = launch_floor_s(total)
    return {
        "model": model_name, "train": train_name, "episodes": b, "shape": dict(zip(("T", "N_c", "C", "K"), shape)),
        "layout": {k: v for k, v in kw.items()}, "optimizer": opt_kw, "trainable_tensors": n_params,
        "micro_batches_per_step": n_micro, "plan_buckets": plan.items_per_size(),
        "by_phase": dict(by_phase), "by_stage": {f"{p}/{s}": n for (p, s), n in sorted(by_stage.items())},
        "micro_batch_calls": micro, "foreach_adamw_calls": sum(alt_ops.values()), "foreach_adamw_ops": alt_ops,
        "step_ops": {op: n for (p, _, op), n in mode.calls.items() if p in ("clip", "optimizer")}, "step_calls": per_step, "calls_per_micro_batch": total,
        "view_calls": views, "non_view_calls_per_micro_batch": total - views,
        "top_ops": ops.most_common(10), "sites": mode.sites.most_common(40),
        "trips": _layout_trips(mc, tc, kw, b, shape[0], plan),
        "flops_model": model_flops, "flops_executed": exec_flops,
        "flop_counter_total": float(counter.get_total_flops()),
        "matmul": dict(mode.mm), "small_share_any": mode.mm["small_any"] / max(mode.mm["flops"], 1.0),
        "small_share_mn": mode.mm["small_mn"] / max(mode.mm["flops"], 1.0),
        "compute_s": compute, "launch_floor_s": floor, "floor_ratio": floor / compute if compute else float("inf"),
        "floor_ratio_non_view": launch_floor_s(total - views) / compute if compute else float("inf"),
        "target_met": floor <= 0.1 * compute, "census_seconds": round(seconds, 1),
    }


def _fmt(n: float) -> str:
    return f"{n:,.0f}"


def render(results: list[dict], command: str) -> str:
    lines = ["# Operator census of a training step (issue 76, item 1)", "",
             f"Date: {datetime.date.today()}. Machine: {torch.get_num_threads()} CPU threads ({platform.processor() or platform.machine()}), "
             f"torch {torch.__version__}, Python {platform.python_version()}.", "",
             f"Command: `{command}`", "",
             f"Method: `benchmarks/step_census.py` (docstring): fake tensors, a counting dispatch mode, the trainer's "
             f"CUDA layout; launch floor = aten calls x {LAUNCH_US:g} µs; compute time = model FLOPs (forward + "
             f"backward, no recomputation; `torch.utils.flop_counter` via `chorustic.training.plan.flop_counter`) / "
             f"({MFU:.0%} of {H100_BF16_TFLOPS:g} TFLOP/s). The optimizer step (clip + AdamW) is once per optimizer "
             f"step and is amortised over the step's micro-batches in 'calls per micro-batch'.", ""]
    for r in results:
        lines += [f"## {r['model']} (train preset `{r['train']}`, signal encoder trainable)", "",
                  f"Micro-batch {r['episodes']} episodes at {r['shape']}, layout {r['layout']}, optimizer AdamW "
                  f"{r['optimizer']} over {r['trainable_tensors']} tensors, {r['micro_batches_per_step']} micro-batches "
                  f"per optimizer step; slot plan buckets (U: items) {r['plan_buckets']}; census {r['census_seconds']} s.", "",
                  "| quantity | value |", "|---|---|",
                  f"| aten calls per micro-batch (fwd + recompute + loss + bwd + optimizer/{r['micro_batches_per_step']}) | {_fmt(r['calls_per_micro_batch'])} |",
                  f"| of which views (no kernel) | {_fmt(r['view_calls'])} |",
                  f"| optimizer step (clip + AdamW {r['optimizer']}), per step | {_fmt(r['step_calls'])}: {r['step_ops']} |",
                  f"| AdamW foreach=True instead, per step | {_fmt(r['foreach_adamw_calls'])}: {r['foreach_adamw_ops']} |",
                  f"| model FLOPs per micro-batch | {r['flops_model']:.3e} (executed incl. recompute {r['flops_executed']:.3e}; FlopCounterMode {r['flop_counter_total']:.3e}) |",
                  f"| compute time at 40 % MFU | {r['compute_s'] * 1e3:.2f} ms |",
                  f"| launch floor (all calls) | {r['launch_floor_s'] * 1e3:.2f} ms = {r['floor_ratio']:.1%} of compute |",
                  f"| launch floor (non-view calls) | {r['floor_ratio_non_view']:.1%} of compute |",
                  f"| small-matmul FLOP share (any of M,K,N / Lq,Lk,E < 128) | {r['small_share_any']:.1%} ({r['matmul']['small_calls']:,} of {r['matmul']['calls']:,} matmul-like calls) |",
                  f"| small-matmul FLOP share (output dims M,N / Lq,Lk < 128 only) | {r['small_share_mn']:.1%} |",
                  f"| target (floor <= 10 % of compute, ~6,000 calls) met? | {'yes' if r['target_met'] else 'no'} |", "",
                  "Calls by phase and stage:", "", "| phase/stage | calls |", "|---|---|"]
        lines += [f"| {k} | {_fmt(v)} |" for k, v in r["by_stage"].items()]
        lines += ["", "Top 10 ops:", "", "| op | calls |", "|---|---|"]
        lines += [f"| {op} | {_fmt(n)} |" for op, n in r["top_ops"]]
        lines += ["", "Loop trip counts of the layout:", "", "| loop | trips |", "|---|---|"]
        lines += [f"| {k} | {v} |" for k, v in r["trips"].items()]
        lines += ["", "Model source lines by the aten calls issued beneath them (forward and recompute, inclusive; top 20):",
                  "", "| phase | line | calls |", "|---|---|---|"]
        lines += [f"| {p} | {s} | {_fmt(n)} |" for (p, s), n in r["sites"][:20]]
        lines.append("")
    return "\n".join(lines)


def _override(item: str) -> tuple[str, Any]:
    """``FIELD=VALUE`` of ``--set`` as a TrainConfig field and its value (none, true, false, an integer)."""
    from chorustic.errors import did_you_mean
    from chorustic.training.config import TrainConfig

    field, _, text = item.partition("=")
    known = {f.name for f in dataclasses.fields(TrainConfig)}
    if field not in known:
        raise SystemExit(f"step_census.py: --set {item}: no TrainConfig field {field!r}.{did_you_mean(field, known)}")
    value = {"none": None, "true": True, "false": False}.get(text.lower(), text)
    return field, int(value) if isinstance(value, str) and value.isdigit() else value


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", nargs="+", default=["paper", "base"], help="model presets (train preset of the same name)")
    ap.add_argument("--episodes", type=int, default=None, help="episodes per micro-batch (default: the trainer's)")
    ap.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                    help="a TrainConfig field of the layout, e.g. signal_chunk_rows=768 or "
                         "activation_checkpointing=false (repeatable; none/true/false/integers)")
    ap.add_argument("--out", default=None, help="write the markdown page here")
    a = ap.parse_args(argv)
    overrides = dict(_override(item) for item in a.set)
    results = []
    for name in a.config:
        if True:
            r = census(name, episodes=a.episodes, overrides=overrides or None)
            results.append(r)
            print(f"{r['model']}: {r['calls_per_micro_batch']:,.0f} calls/micro-batch ({r['episodes']} episodes), "
                  f"by phase {r['by_phase']}, floor {r['launch_floor_s'] * 1e3:.2f} ms vs compute "
                  f"{r['compute_s'] * 1e3:.2f} ms ({r['floor_ratio']:.1%}), small-matmul share "
                  f"{r['small_share_any']:.1%}, {r['census_seconds']} s", flush=True)
    page = render(results, "python benchmarks/step_census.py " + " ".join(argv if argv is not None else sys.argv[1:]))
    print(page)
    if a.out:
        Path(a.out).write_text(page)


if __name__ == "__main__":
    main()
