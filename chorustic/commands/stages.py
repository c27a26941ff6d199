"""``chorustic pretrain-encoder | pretrain-task``: the stages of the released recipe before the episodic prior."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

from chorustic.commands._vocabulary import add_model_config, add_out_dir, add_training_run

#: command -> (help, description, the export's name, the --init-parts of the episodic stage that reads it)
STAGES = {
    "pretrain-encoder": (
        "pretrain the signal encoder contrastively on synthetic series (stage 1 of the released recipe)",
        "Pretrain the model's signal encoder with the Mantis objective (two random crop-resize views, InfoNCE) "
        "on groups of series of the Gaussian-process kernel-bank prior.",
        "encoder.safetensors", "encoder --freeze-signal-encoder"),
    "pretrain-task": (
        "pretrain the task level on TabICL's synthetic tables (stage 2 of the released recipe)",
        "Pretrain the model's task level (column distribution modeling, row interaction, ICL) on in-context "
        "classification of tables from TabICL's own prior (tabicl.prior), the objective TabICL was pretrained "
        "with.",
        "task.safetensors", "task"),
}


def register(subparsers: argparse._SubParsersAction) -> None:
    for name, (help_, description, export, parts) in STAGES.items():
        p = subparsers.add_parser(
            name, help=help_,
            description=description + f" Writes into --out-dir DIR: run.json, log.jsonl, state/step_*.pt (resume "
                                      f"states), {export} (the whole model, the stage's parts trained) and "
                                      f"summary.json. Use it with chorustic pretrain --init-from DIR/{export} "
                                      f"--init-parts {parts}.")
        add_model_config(p)
        add_out_dir(p, "the run's folder (required)")
        p.add_argument("--init-from", default=None, metavar="FILE",
                       help="start every part from an earlier stage's export (e.g. pretrain-encoder's "
                            "encoder.safetensors for pretrain-task), so that this stage's export holds both")
        p.add_argument("--steps", type=int, default=None, help="steps in all (default 2000; with --resume: a new total)")
        p.add_argument("--batch-size", type=int, default=None,
                       help="samples per step (default: 64 groups of series; 16 tables)")
        p.add_argument("--seed", type=int, default=None, help="the run's seed: its data, random draws and initialisation")
        p.add_argument("--workers", type=int, default=None,
                       help="DataLoader worker processes generating the data (default 0: in the training process)")
        p.add_argument("--checkpoint-every", type=int, default=None, help="save a resumable state every N steps")
        add_training_run(p)
        p.add_argument("--log-every", type=int, default=None, help="write a log line every N steps")
        p.set_defaults(func=_run, stage=name)


def _trainer(stage: str):
    if stage == "pretrain-encoder":
        from chorustic.training.encoder_pretraining import EncoderPretrainConfig, EncoderPretrainer

        return EncoderPretrainer, EncoderPretrainConfig
    from chorustic.training.task_pretraining import TaskPretrainConfig, TaskPretrainer

    return TaskPretrainer, TaskPretrainConfig


def _run(args: argparse.Namespace) -> int:
    import torch

    from chorustic.commands.train import _model_config
    from chorustic.errors import UserError
    from chorustic.training.trainer import resolve_device

    me = f"chorustic {args.stage}"
    if args.out_dir is None:
        raise UserError(f"{me}: --out-dir is required (the run's folder)")
    if args.threads:
        torch.set_num_threads(args.threads)
    trainer, config = _trainer(args.stage)
    device = str(resolve_device(args.device))
    overrides = {k: v for k, v in {"steps": args.steps, "batch_size": args.batch_size, "seed": args.seed,
                                   "num_workers": args.workers, "checkpoint_every": args.checkpoint_every,
                                   "log_every": args.log_every}.items() if v is not None}
    states = Path(args.out_dir) / "state"
    if args.resume:
        extra = sorted(set(overrides) - {"steps"}) + (["init_from"] if args.init_from else [])
        if extra:
            raise UserError(f"{me}: --resume continues the run's own settings ({args.out_dir / 'run.json'}); only "
                            f"--steps may change, not {', '.join('--' + e.replace('_', '-') for e in extra)}")
        try:
            run = trainer.resume(args.out_dir, device=device, progress=not args.no_progress,
                                 steps=overrides.get("steps"))
        except (FileNotFoundError, ValueError) as exc:
            raise UserError(f"{me}: {exc}") from None
    else:
        if states.is_dir() and any(states.glob("step_*.pt")):
            raise UserError(f"{me}: {args.out_dir} holds a run: continue it with --resume, or choose another "
                            "--out-dir")
        cfg = dataclasses.replace(config(), **overrides)
        mcfg = _model_config(args.model_config)
        if args.init_from is not None:  # the model is the earlier stage's: its configuration, not --model-config's
            from chorustic.model import ChorusTICConfig
            from chorustic.model.checkpoint import read_checkpoint_metadata

            try:
                mcfg = ChorusTICConfig.from_dict(read_checkpoint_metadata(args.init_from)["config"])
            except (OSError, ValueError) as exc:
                raise UserError(f"{me}: --init-from {args.init_from}: {exc}") from None
        run = trainer(mcfg, cfg, args.out_dir, device=device, progress=not args.no_progress,
                      init_from=args.init_from)
    summary = run.run(max_minutes=args.max_minutes)
    print(json.dumps(summary, indent=2))
    print(f"model: {summary['model']}", file=sys.stderr)
    return 0
