"""``chorustic pretrain-encoder``: stage 1 of the released recipe, the signal encoder's contrastive pretraining."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

from chorustic.commands._vocabulary import add_out_dir


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "pretrain-encoder",
        help="pretrain the signal encoder contrastively on synthetic series (stage 1 of the released recipe)",
        description="Pretrain the model's signal encoder with the Mantis objective (two random crop-resize "
                    "views, InfoNCE) on groups of series of the Gaussian-process kernel-bank prior. Writes into "
                    "--out-dir DIR: run.json, log.jsonl, state/step_*.pt (resume states), encoder.safetensors "
                    "(the whole model, its signal encoder trained) and summary.json. Use it with chorustic "
                    "pretrain --init-from DIR/encoder.safetensors --init-parts encoder --freeze-signal-encoder.",
    )
    p.add_argument("--model-config", default="small",
                   help="paper | base | small | tiny | a JSON file of ChorusTICConfig fields (default: small)")
    add_out_dir(p, "the run's folder (required)")
    p.add_argument("--resume", action="store_true", help="continue the run in --out-dir from its newest state")
    p.add_argument("--steps", type=int, default=None, help="steps in all (default 2000; with --resume: a new total)")
    p.add_argument("--batch-size", type=int, default=None, help="samples per step (default 64)")
    p.add_argument("--seed", type=int, default=None, help="the run's seed: its series, crops and initialisation")
    p.add_argument("--device", default="auto", help="auto | cpu | cuda | cuda:N")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    p.add_argument("--workers", type=int, default=None, help="DataLoader worker processes generating the series "
                                                             "(default 0: in the training process)")
    p.add_argument("--checkpoint-every", type=int, default=None, help="save a resumable state every N steps")
    p.add_argument("--max-minutes", type=float, default=None,
                   help="stop after this many minutes with a resumable state and the encoder so far (a long run "
                        "in parts: continue it with --resume)")
    p.add_argument("--log-every", type=int, default=None, help="write a log line every N steps")
    p.add_argument("--no-progress", action="store_true", help="no tqdm progress bar")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    import torch

    from chorustic.commands.train import _model_config
    from chorustic.errors import UserError
    from chorustic.training.trainer import resolve_device
    from chorustic.training.encoder_pretraining import EncoderPretrainConfig, EncoderPretrainer

    if args.out_dir is None:
        raise UserError("chorustic pretrain-encoder: --out-dir is required (the run's folder)")
    if args.threads:
        torch.set_num_threads(args.threads)
    device = str(resolve_device(args.device))
    overrides = {k: v for k, v in {"steps": args.steps, "batch_size": args.batch_size, "seed": args.seed,
                                   "num_workers": args.workers, "checkpoint_every": args.checkpoint_every,
                                   "log_every": args.log_every}.items() if v is not None}
    if args.resume:
        extra = sorted(set(overrides) - {"steps"})
        if extra:
            raise UserError(f"chorustic pretrain-encoder: --resume continues the run's own settings ({args.out_dir / 'run.json'}); only --steps "
                             f"may change, not {', '.join('--' + e.replace('_', '-') for e in extra)}")
        run = EncoderPretrainer.resume(args.out_dir, device=device, progress=not args.no_progress,
                                       steps=overrides.get("steps"))
    else:
        if (Path(args.out_dir) / "state").is_dir() and any((Path(args.out_dir) / "state").glob("step_*.pt")):
            raise UserError(f"chorustic pretrain-encoder: {args.out_dir} holds a run: continue it with --resume, or "
                            "choose another --out-dir")
        cfg = dataclasses.replace(EncoderPretrainConfig(), **overrides)
        run = EncoderPretrainer(_model_config(args.model_config), cfg, args.out_dir, device=device,
                                progress=not args.no_progress)
    summary = run.run(max_minutes=args.max_minutes)
    print(json.dumps(summary, indent=2))
    print(f"encoder: {summary['encoder']}", file=sys.stderr)
    return 0
