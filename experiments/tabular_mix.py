"""Experiment (2026-11-25, not kept): continue the small model (models/chorustic-small) on a mix of its own
prior and TabICL's tables.

Each step: one micro-batch of ``--series`` episodes of the stage-2 prior (the full model, as in training)
plus ``--tables`` synthetic tables of TabICL's prior (``tabicl.prior.PriorDataset``, ``mix_scm``: MLP and
tree SCMs; 4-128 features, 32-256 rows, 30-85 % context), which go straight to the task level
(``task_logits``: the table's features in place of H). One AdamW step on the mean episode loss.

    pip install xgboost-cpu   # tabicl.prior imports xgboost
    python experiments/tabular_mix.py --out runs/tab-mix --minutes 45 --tables 12
    python benchmarks/dev_accuracy.py --checkpoint runs/tab-mix/model.safetensors --data-dir ../shared/data \
        --threads 1 --no-minirocket
"""

import argparse
import json
import math
import time
from pathlib import Path

import torch

from chorustic.model.checkpoint import load_checkpoint, save_checkpoint
from chorustic.training.config import TrainConfig
from chorustic.training.data import StreamLayout, generate_micro_batch
from chorustic.training.loss import query_cross_entropy
from chorustic.training.trainer import PriorSchedule

MODEL_DIR = Path(__file__).resolve().parents[1] / "models" / "chorustic-small"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--minutes", type=float, default=45)
    ap.add_argument("--tables", type=int, default=12, help="tables per step (groups of 4 of one shape)")
    ap.add_argument("--series", type=int, default=6, help="prior episodes per step (one shape)")
    ap.add_argument("--lr", type=float, default=3e-4)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    from tabicl.prior import PriorDataset

    args.out.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = load_checkpoint(MODEL_DIR / "model.safetensors")
    model.train()
    mc = model.config
    tc = TrainConfig.from_dict(json.loads((MODEL_DIR / "train_config_stage2.json").read_text()))
    prior = PriorSchedule(tc, mc.seq_len, mc.max_classes)(10**6)
    layout = StreamLayout(args.series, args.series, args.series)
    kw = tc.forward_kwargs("cpu")
    task_kw = {k: kw[k] for k in ("cdm_columns", "interaction_rows")}
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=args.lr, weight_decay=0.0)
    tables = PriorDataset(batch_size=args.tables, batch_size_per_gp=4, min_features=4, max_features=128,
                          max_classes=mc.max_classes, min_seq_len=32, max_seq_len=256, log_seq_len=True,
                          seq_len_per_gp=True, min_train_size=0.3, max_train_size=0.85, prior_type="mix_scm",
                          n_jobs=1)
    n_all = args.series + args.tables
    t0, step = time.perf_counter(), 0
    with open(args.out / "log.jsonl", "w") as log:
        while time.perf_counter() - t0 < args.minutes * 60:
            for g in opt.param_groups:
                g["lr"] = args.lr * min(1.0, (step + 1) / 20)
            opt.zero_grad(set_to_none=True)
            rec = {}
            mb = generate_micro_batch(prior, 11, step, 0, layout, num_groups=mc.num_groups,
                                      group_size=mc.group_size, rssc_sampling=mc.rssc_sampling)
            per_ep, correct = query_cross_entropy(model.episode_logits(mb.X, mb.y_context, plan=mb.plan, **kw),
                                                  mb.y_query, mb.n_classes)
            (per_ep.sum() / n_all).backward()
            rec["series_loss"], rec["series_acc"] = per_ep.mean().item(), correct.sum().item() / mb.y_query.numel()
            X, y, d, seq_lens, train_sizes = tables.get_batch()
            Xs, ys = X.unbind(), y.unbind()
            loss, hits, queries = 0.0, 0, 0
            for g0 in range(0, args.tables, 4):  # a group shares (rows, features, context size)
                idx = range(g0, min(g0 + 4, args.tables))
                n_feat, n_ctx = int(d[g0]), int(train_sizes[g0])
                Xg = torch.stack([Xs[i][:, :n_feat] for i in idx]).float()
                yg = torch.stack([ys[i] for i in idx]).long()
                k = torch.full((len(idx),), int(yg.max()) + 1)
                per_ep, correct = query_cross_entropy(model.task_logits(Xg, yg[:, :n_ctx], **task_kw),
                                                      yg[:, n_ctx:], k)
                (per_ep.sum() / n_all).backward()
                loss, hits, queries = loss + per_ep.sum().item(), hits + correct.sum().item(), queries + yg[:, n_ctx:].numel()
            rec["table_loss"], rec["table_acc"] = loss / args.tables, hits / queries
            norm = torch.nn.utils.clip_grad_norm_(params, tc.grad_clip).item()
            if math.isfinite(norm):
                opt.step()
            step += 1
            log.write(json.dumps({"step": step, "t": round(time.perf_counter() - t0, 1), "grad_norm": round(norm, 3),
                                  **{k: round(v, 4) for k, v in rec.items()}}) + "\n")
            log.flush()
            if step % 100 == 0:
                save_checkpoint(args.out / f"step_{step}.safetensors", model,
                                provenance={"experiment": "tabular_mix", "step": step})
    save_checkpoint(args.out / "model.safetensors", model, provenance={"experiment": "tabular_mix", "step": step})


if __name__ == "__main__":
    main()
