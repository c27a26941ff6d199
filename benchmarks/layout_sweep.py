"""Memory for speed (issue 76, item 2): the training layouts of a preset, each with its kernel-launch floor and
its memory, so that a card with 80-141 GB runs the layout with the fewest launches that fits.

For each layout (activation checkpointing and its chunk sizes, as ``TrainConfig`` fields), on fake tensors at the
prior's largest episode and the trainer's micro-batch:

* the aten calls of one micro-batch and the launch floor against the compute time at 40 % MFU on an H100
  (:func:`benchmarks.step_census.census`);
* the peak memory of the largest micro-batch that fits each budget (:func:`chorustic.training.plan.plan_pretraining`:
  the live storages of a fake step for 1 and 2 episodes, linear beyond, plus weights, gradients and AdamW).

    python benchmarks/layout_sweep.py --config paper --out benchmarks/results/layout_sweep.md
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import platform
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from step_census import census  # noqa: E402  (the benchmark beside this one)

#: Layouts swept: (label, TrainConfig fields). Rows per signal chunk = signal_chunk_rows // micro-batch.
LAYOUTS = [
    ("today: checkpointing, signal 64 rows", {}),
    ("checkpointing, signal 256 rows", {"signal_chunk_rows": 256}),
    ("checkpointing, signal 768 rows", {"signal_chunk_rows": 768}),
    ("checkpointing, signal 3072 rows, task level unchunked",
     {"signal_chunk_rows": 3072, "cdm_chunk_columns": None, "interaction_chunk_rows": None}),
    ("no checkpointing", {"activation_checkpointing": False}),
]
BUDGETS_GB = (32.0, 80.0, 141.0)
#: The budget whose micro-batch the calls are counted at (an H100).
CENSUS_GB = 80.0


def sweep(name: str, layouts=LAYOUTS, budgets=BUDGETS_GB) -> list[dict]:
    from chorustic.model.config import MODEL_PRESETS
    from chorustic.training.config import TRAIN_PRESETS
    from chorustic.training.plan import plan_pretraining

    mc = dataclasses.replace(MODEL_PRESETS[name](), freeze_signal_encoder=False)
    rows = []
    for label, fields in layouts:
        tc = dataclasses.replace(TRAIN_PRESETS[name](), **fields)
        t0 = time.perf_counter()
        # the measurements do not depend on the budget: one plan, its candidates checked against each budget
        # as the planner checks them (10 % kept for the allocator)
        candidates = plan_pretraining(mc, tc, memory_gb=budgets[0])["memory"]["candidates"]
        fits = {}
        for gb in budgets:
            fit = next((x for x in candidates if x["estimated_peak_gb"] <= 0.9 * gb), None)
            fits[gb] = (fit["micro_batch_size"], fit["estimated_peak_gb"]) if fit else (None, None)
        # counted at the micro-batch an 80 GB card runs (the trainer's when nothing fits)
        c = census(name, overrides=fields or None, episodes=fits.get(CENSUS_GB, (None,))[0])
        per_episode = c["calls_per_micro_batch"] / c["episodes"]
        rows.append({"label": label, "fields": fields, "layout": c["layout"], "episodes": c["episodes"],
                     "calls": c["calls_per_micro_batch"], "calls_per_episode": per_episode,
                     "floor_ratio": c["floor_ratio"], "floor_ratio_non_view": c["floor_ratio_non_view"],
                     "compute_ms": c["compute_s"] * 1e3, "flops_executed": c["flops_executed"],
                     "flops_model": c["flops_model"], "fits": fits, "seconds": round(time.perf_counter() - t0, 1)})
        print(f"{label}: {c['calls_per_micro_batch']:,.0f} calls, floor {c['floor_ratio']:.1%}, fits {fits}",
              flush=True)
    return rows


def render(name: str, rows: list[dict], command: str) -> str:
    lines = [f"# Training layouts of `{name}`: launch floor and memory (issue 76, item 2)", "",
             f"Date: {datetime.date.today()}. Machine: {torch.get_num_threads()} CPU threads "
             f"({platform.machine()}), torch {torch.__version__}. Command: `{command}`.", "",
             "Fake tensors at the prior's largest episode, signal encoder trainable, bf16 autocast, the trainer's "
             "CUDA layout with the fields below changed. Calls: aten calls of one micro-batch of the size that fits 80 GB "
             "(forward, recomputation, loss, backward, optimizer share). Floor: calls x 5 µs against the "
             "micro-batch's compute at 40 % MFU on an H100 (recomputation included in the executed FLOPs, "
             "not in the compute time). Fits: the largest micro-batch the planner finds within each budget, and "
             "its estimated peak.", "",
             "| layout | calls per micro-batch | per episode | floor / compute | executed / model FLOPs | "
             + " | ".join(f"fits {gb:g} GB" for gb in rows[0]["fits"]) + " |",
             "|---|---|---|---|---|" + "---|" * len(rows[0]["fits"])]
    for r in rows:
        fits = " | ".join("nothing" if mb is None else f"{mb} ep., {peak:g} GB" for mb, peak in r["fits"].values())
        lines.append(f"| {r['label']} | {r['calls']:,.0f} ({r['episodes']} ep.) | {r['calls_per_episode']:,.0f} | {r['floor_ratio']:.0%} "
                     f"| {r['flops_executed'] / r['flops_model']:.2f} | {fits} |")
    lines += ["", "Layouts as `TrainConfig` fields (`--set` of benchmarks/step_census.py):", ""]
    lines += [f"- {r['label']}: `{r['fields'] or 'preset'}` -> {r['layout']} ({r['seconds']} s)" for r in rows]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="paper", help="model preset (train preset of the same name)")
    ap.add_argument("--out", default=None, help="write the markdown page here")
    a = ap.parse_args(argv)
    rows = sweep(a.config)
    page = render(a.config, rows, "python benchmarks/layout_sweep.py " + " ".join(argv if argv is not None else sys.argv[1:]))
    print(page)
    if a.out:
        Path(a.out).write_text(page)


if __name__ == "__main__":
    main()
