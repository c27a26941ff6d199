"""Cost of ChorusTIC's deployment ensemble: ``naive`` vs ``shared`` schedule (printed figures).

One episode (default 100 context + 100 query rows, length 512) with the paper configuration and random
weights (perturbed so that every block matters), for 1 and 3 channels; K = 10 classes, so the
official offset rule gives 8 distinct label shifts (no shift is shared for free). The ensemble is
the paper's 8 label shifts x 4 RSSC draws = 32 members.

* ``shared``: all 32 members, timed in full.
* ``naive``: every member recomputes everything (the official computation). One member takes minutes
  on a 2-core CPU, so ``--naive-members N`` members are timed and the 32-member time is extrapolated
  as ``32 x mean``; the output says which numbers were measured and which extrapolated.
* ``max |logit diff|``: between the naive members that ran and the same members of the shared run.

Run:  python benchmarks/inference_cost.py [--channels 1 3] [--naive-members 2] [--threads 2] [--json out.json]
"""

from __future__ import annotations

import argparse
import platform
import sys
import time

import torch


def _model(config_name: str, seed: int):
    from chorustic.model import ChorusTIC, ChorusTICConfig

    torch.manual_seed(seed)
    model = ChorusTIC(getattr(ChorusTICConfig, config_name)())
    with torch.no_grad():  # TabICL's init leaves attention outputs at zero: give every weight a value
        for name, p in model.named_parameters():
            if "rope" not in name:
                p.add_(0.02 * torch.randn_like(p))
    return model.eval()


def _episode(n_ctx: int, n_query: int, channels: int, k: int, seed: int):
    g = torch.Generator().manual_seed(seed)
    y = torch.arange(n_ctx + n_query) % k
    t = torch.linspace(0, 1, 512)
    X = torch.randn(n_ctx + n_query, channels, 512, generator=g)
    X += torch.sin(2 * torch.pi * (1 + y[:, None, None]) * t) * (1 + torch.arange(channels))[None, :, None]
    return X[None], y[:n_ctx]


def run(args) -> list[dict]:
    from chorustic.inference import BatchSizes, label_shift_offsets, naive_member_logits, shared_member_logits

    torch.set_num_threads(args.threads)
    model = _model(args.config, args.seed)
    k = args.classes
    offsets = label_shift_offsets(k, args.label_shifts, rule="official", seed=args.seed)
    rows = []
    for c in args.channels:
        X, y = _episode(args.n_context, args.n_query, c, k, args.seed)
        gi = model.sample_assignment(
            torch.ones(1, c, dtype=torch.bool),
            n_draws=args.rssc_draws,
            generator=torch.Generator().manual_seed(args.seed),
        )
        # warm-up (allocator, oneDNN kernels) on a small episode
        shared_member_logits(model, X[:, :12], y[:8] % 2, [0], gi[:, :1], num_classes=2)
        t0 = time.perf_counter()
        shared = shared_member_logits(
            model, X, y, offsets, gi, num_classes=k, batch=BatchSizes(), progress=args.progress
        )
        t_shared = time.perf_counter() - t0
        n_members = len(offsets) * gi.shape[1]
        picks = [(m % len(offsets), m % gi.shape[1]) for m in range(args.naive_members)]
        t0 = time.perf_counter()
        naive = naive_member_logits(
            model, X, y, offsets, gi, num_classes=k, members=picks, progress=args.progress
        )
        t_naive_measured = time.perf_counter() - t0
        per_member = t_naive_measured / max(len(picks), 1)
        t_naive = per_member * n_members
        diff = (
            max(float((naive[i] - shared[m, a]).abs().max()) for i, (m, a) in enumerate(picks))
            if picks
            else float("nan")
        )
        row = {
            "channels": c,
            "rows": args.n_context + args.n_query,
            "members": n_members,
            "shared_s": t_shared,
            "naive_members_timed": len(picks),
            "naive_measured_s": t_naive_measured,
            "naive_per_member_s": per_member,
            "naive_32_extrapolated_s": t_naive,
            "ratio_shared_over_naive": t_shared / t_naive if t_naive else float("nan"),
            "max_abs_logit_diff": diff,
        }
        rows.append(row)
        print(
            f"C={c}: shared (all {n_members} members, measured) {t_shared:8.1f} s | naive: {len(picks)} member(s) "
            f"measured {t_naive_measured:8.1f} s = {per_member:.1f} s/member -> {n_members} members extrapolated "
            f"{t_naive:9.1f} s | shared/naive = {row['ratio_shared_over_naive']:.4f} (1/"
            f"{1 / row['ratio_shared_over_naive']:.1f}) | max |logit diff| = {diff:.2e}",
            flush=True,
        )
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--channels", type=int, nargs="+", default=[1, 3])
    ap.add_argument("--n-context", type=int, default=100)
    ap.add_argument("--n-query", type=int, default=100)
    ap.add_argument("--classes", type=int, default=10)
    ap.add_argument("--label-shifts", type=int, default=8)
    ap.add_argument("--rssc-draws", type=int, default=4)
    ap.add_argument(
        "--naive-members", type=int, default=2, help="naive members to time (the rest extrapolated)"
    )
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--config", choices=["paper", "small", "tiny"], default="paper")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--progress", action="store_true")
    ap.add_argument("--json", default=None, help="also write the figures to this JSON file")
    args = ap.parse_args(argv)
    print(
        f"ChorusTIC inference cost: config={args.config}, {args.n_context}+{args.n_query} rows, K={args.classes}, "
        f"{args.label_shifts} label shifts x {args.rssc_draws} RSSC draws, torch {torch.__version__}, "
        f"{args.threads} threads, {platform.processor() or platform.machine()}",
        flush=True,
    )
    rows = run(args)
    if args.json:
        from chorustic.io import atomic_write_json

        atomic_write_json(args.json, {"args": vars(args), "results": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
