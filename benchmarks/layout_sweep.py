"""Memory for speed (issue 76, item 2): the training layouts the planner weighs, for each memory budget.

For each budget, ``chorustic pretrain --plan --choose-layout`` (:func:`chorustic.training.plan.plan_pretraining`
with ``choose_layout=True``) traces every candidate layout (activation checkpointing and its signal chunk
sizes, :func:`chorustic.training.plan.layout_candidates`) on fake tensors at the prior's largest episode, at the
largest micro-batch whose traced step fits, and expects a micro-batch to take max(executed FLOPs / (peak x MFU),
aten calls x 5 µs). This page tabulates the candidates and the planner's choice per budget.

    python benchmarks/layout_sweep.py --config paper --out benchmarks/results/layout_sweep.md
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import platform
import sys
from pathlib import Path

import torch

BUDGETS_GB = (32.0, 80.0, 141.0)


def sweep(name: str, budgets=BUDGETS_GB, gpu: str = "h100", mfu: float = 0.4) -> dict[float, dict]:
    """The plan's ``layouts`` of preset ``name`` (signal encoder trainable) for each budget."""
    from chorustic.model.config import MODEL_PRESETS
    from chorustic.training.config import TRAIN_PRESETS
    from chorustic.training.plan import plan_pretraining

    mc = dataclasses.replace(MODEL_PRESETS[name](), freeze_signal_encoder=False)
    tc = TRAIN_PRESETS[name]()
    out = {}
    for gb in budgets:
        plan = plan_pretraining(mc, tc, memory_gb=gb, target_device=gpu, mfu=mfu, choose_layout=True)
        out[gb] = {**plan["layouts"], "plan_seconds": plan["plan_seconds"]}
        chosen = out[gb]["chosen"]
        print(f"{gb:g} GB: {chosen['label'] if chosen else 'nothing fits'} ({plan['plan_seconds']} s)", flush=True)
    return out


def render(name: str, plans: dict[float, dict], command: str, gpu: str, mfu: float,
           other_launch_us: tuple[float, ...] = ()) -> str:
    from chorustic.training.plan import LAUNCH_US

    lines = [f"# Training layouts of `{name}`: what the planner weighs and chooses (issue 76, item 2)", "",
             f"Date: {datetime.date.today()}. Machine: {torch.get_num_threads()} CPU threads "
             f"({platform.machine()}), torch {torch.__version__}. Command: `{command}`.", "",
             f"`chorustic pretrain --plan --choose-layout --memory-gb GB --gpu {gpu}` for each budget: fake tensors "
             "at the prior's largest episode, signal encoder trainable, bf16 autocast, the trainer's CUDA layout "
             "with the candidate's fields. Micro-batch: the largest whose traced step fits 90 % of the budget. "
             f"Expected time of a micro-batch: max(executed FLOPs / ({mfu:.0%} of the {gpu}'s peak), aten calls x "
             f"{LAUNCH_US:g} µs); MFU: model FLOPs (no recomputation) over that time. A model, not a measurement: "
             "the GPU's own figures come from a lent GPU (tools/gpu/session.sh).", ""]
    for gb, lay in plans.items():
        chosen = lay["chosen"]["label"] if lay["chosen"] else None
        lines += [f"## {gb:g} GB (planned in {lay['plan_seconds']} s)", "",
                  "| layout | micro-batch | traced peak GB | calls per episode | compute ms | launch floor ms | "
                  "expected ms | bound | episodes/s | MFU |", "|---|---|---|---|---|---|---|---|---|---|"]
        for r in lay["candidates"]:
            label = f"**{r['label']}** (chosen)" if r["label"] == chosen else r["label"]
            if not r["fits"]:
                lines.append(f"| {label} | does not fit | | | | | | | | |")
                continue
            lines.append(f"| {label} | {r['micro_batch_size']} | {r['traced_peak_gb']:g} | {r['calls_per_episode']:,.0f} "
                         f"| {r['compute_ms']:,.1f} | {r['launch_floor_ms']:,.1f} | {r['expected_ms']:,.1f} | {r['bound']} "
                         f"| {r['episodes_per_s']:g} | {r['expected_mfu']:.1%} |")
        if lay["chosen"]:
            lines += ["", f"Chosen: `chorustic pretrain ... {lay['chosen']['options']}`."]
        lines.append("")
    if other_launch_us:
        lines += ["## The same traces at other launch costs", "",
                  "Episodes/s of each layout that fits, re-weighed from the traces above with another cost per aten "
                  "call (`--launch-us` of the plan); the fastest in bold.", "",
                  "| budget | µs a call | " + " | ".join(r["label"] for r in next(iter(plans.values()))["candidates"])
                  + " |", "|---|---|" + "---|" * len(next(iter(plans.values()))["candidates"])]
        for gb, lay in plans.items():
            for us in other_launch_us:
                eps = [_episodes_per_s(r, us) for r in lay["candidates"]]
                best = max((e for e in eps if e is not None), default=None)
                cells = ["does not fit" if e is None else (f"**{e:.2f}**" if e == best else f"{e:.2f}") for e in eps]
                lines.append(f"| {gb:g} GB | {us:g} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def _episodes_per_s(row: dict, launch_us: float) -> float | None:
    """A traced candidate's episodes/s with ``launch_us`` a call (its compute time does not depend on it)."""
    if not row["fits"]:
        return None
    expected = max(row["compute_ms"] * 1e-3, row["calls_per_micro_batch"] * launch_us * 1e-6)
    return row["micro_batch_size"] / expected


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="paper", help="model preset (train preset of the same name)")
    ap.add_argument("--memory-gb", type=float, nargs="+", default=list(BUDGETS_GB), help="the budgets (GB)")
    ap.add_argument("--gpu", default="h100", help="the GPU kind whose peak the time uses (default h100)")
    ap.add_argument("--mfu", type=float, default=0.4, help="MFU of a compute-bound micro-batch (default 0.4)")
    ap.add_argument("--other-launch-us", type=float, nargs="*", default=[11.6],
                    help="also re-weigh the traces at these costs per call (default 11.6: the upper bound the H200's "
                         "eager paper step of 2026-11-27 implies)")
    ap.add_argument("--out", default=None, help="write the markdown page here")
    a = ap.parse_args(argv)
    plans = sweep(a.config, tuple(a.memory_gb), a.gpu, a.mfu)
    cmd = "python benchmarks/layout_sweep.py " + " ".join(argv if argv is not None else sys.argv[1:])
    page = render(a.config, plans, cmd, a.gpu, a.mfu, tuple(a.other_launch_us))
    print(page)
    if a.out:
        Path(a.out).write_text(page)


if __name__ == "__main__":
    main()
