"""``chorustic pretrain``: episodic pretraining of ChorusTIC on the synthetic prior."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

from chorustic.commands._vocabulary import add_deprecated, add_model_config, add_out_dir, add_training_run
from chorustic.training.devices import DEVICE_PEAK_TFLOPS


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "pretrain",
        help="pretrain ChorusTIC on the labeled episodic prior (checkpoints, exact resume, curves)",
        description="Pretrain ChorusTIC on episodes of the synthetic prior. Writes into --out-dir DIR: run.json, "
                    "log.jsonl, state/step_*.pt (resume states), model.safetensors (the model in the model "
                    "package's format), summary.json and curve.png.",
    )
    add_model_config(p)
    p.add_argument("--train-config", default=None,
                   help="paper | base | small | tiny | a JSON file of TrainConfig fields (default: same name as "
                        "--model-config when it is a preset, else small)")
    add_out_dir(p, "the run's folder (required unless --plan)")
    add_deprecated(p, "--out", "--out-dir", type=Path)
    p.add_argument("--overwrite", action="store_true", help="start over in an --out-dir that holds a run")
    p.add_argument("--auto-resume", action="store_true",
                   help="resume when --out-dir holds a run with the same settings, start one otherwise (for workflow "
                        "rules that may be re-run after an interruption); a run with other settings is an error")
    p.add_argument("--steps", type=int, default=None, help="override the number of steps")
    p.add_argument("--seed", type=int, default=None, help="override the training seed")
    add_training_run(p)
    p.add_argument("--checkpoint-every", type=int, default=None, help="override: save a resumable state every N steps")
    p.add_argument("--val-every", type=int, default=None, help="override: validate on held-out synthetic episodes every N steps")
    p.add_argument("--log-every", type=int, default=None, help="override: write a log line every N steps")
    hw = p.add_argument_group("hardware layout (the same computation; may change when resuming)")
    hw.add_argument("--micro-batch-size", type=int, default=None,
                    help="episodes per forward/backward pass and process (gradient accumulation over the rest of "
                         "the step); must divide the config's shape_group_size; see --plan")
    ck = hw.add_mutually_exclusive_group()
    ck.add_argument("--activation-checkpointing", dest="ckpt", action="store_true", default=None,
                    help="recompute activations in the backward pass (chunks of rows / columns, ICL blocks)")
    ck.add_argument("--no-activation-checkpointing", dest="ckpt", action="store_false",
                    help="keep every activation (faster when memory allows)")
    hw.add_argument("--signal-chunk-rows", type=int, default=None, metavar="N",
                    help="with activation checkpointing: row-episodes of the signal level recomputed together "
                         "(larger: fewer kernels, more memory; see --plan --choose-layout)")
    hw.add_argument("--workers", type=int, default=None,
                    help="prior worker processes (default: automatic; 0 = generate in the training process)")
    hw.add_argument("--compile", action="store_true", default=None,
                    help="torch.compile the model's shape-stable stages (tokenizer, dual-axis + readout "
                         "chunk, column embedding, row interaction, ICL) with dynamic sizes: about 20 "
                         "graphs, compiled in the first steps (about 8 min on one CPU core for the small "
                         "model, less with inductor's cache), then about 11 %% faster steps on a CPU "
                         "(docs/pretraining.md)")
    hw.add_argument("--cpu-amp", action="store_true", default=None,
                    help="bf16 autocast on CPU (CPUs with AVX512-BF16 / AMX)")
    pl = p.add_argument_group("planning (--plan: print the plan as JSON and exit; no training)")
    pl.add_argument("--plan", action="store_true",
                    help="measure FLOPs, activation memory and peak memory on fake tensors and print the micro-batch "
                         "size, gradient accumulation and time the run needs on the target device")
    pl.add_argument("--choose-layout", action="store_true",
                    help="also weigh the layouts (activation checkpointing, signal chunk sizes, each at its largest "
                         "micro-batch within --memory-gb) by their expected time on --gpu, and print the options "
                         "of the fastest (one more fake step per layout: minutes for the paper configuration)")
    pl.add_argument("--launch-us", type=float, default=None, metavar="US",
                    help="with --choose-layout: the cost of one kernel launch in microseconds (default: the "
                         "planner's LAUNCH_US, 5)")
    pl.add_argument("--memory-gb", type=float, default=32.0, help="memory budget per device (default 32, the paper's V100s)")
    pl.add_argument("--gpu", default="h100", choices=sorted(DEVICE_PEAK_TFLOPS), metavar="KIND",
                    help="the GPU kind whose dense bf16 peak the time estimate uses: "
                         f"{', '.join(sorted(DEVICE_PEAK_TFLOPS))} (default: h100)")
    add_deprecated(pl, "--target-device", "--gpu")
    pl.add_argument("--peak-tflops", type=float, default=None, help="the target device's peak instead of the table's")
    pl.add_argument("--mfu", type=float, default=0.4, help="model-FLOPs utilisation assumed for the time (default 0.4)")
    pl.add_argument("--nproc", type=int, default=1, help="number of data-parallel processes (GPUs) planned for")
    ab = p.add_argument_group("ablations (paper Table 4)")
    ab.add_argument("--no-channel-axis-attention", action="store_true",
                    help="identity instead of channel-axis attention (temporal attention kept)")
    ab.add_argument("--no-calibration", action="store_true",
                    help="no task-conditioned column calibration (col_embedding_mode=linear)")
    ab.add_argument("--no-cross-channel-rules", action="store_true",
                    help="prior: multivariate episodes with channel-wise temporal rules only")
    ini = p.add_argument_group("initialization")
    fz = ini.add_mutually_exclusive_group()
    fz.add_argument("--freeze-signal-encoder", dest="freeze", action="store_true", default=None,
                    help="freeze tokenizer, dual-axis encoder and readout (the released configuration did)")
    fz.add_argument("--train-signal-encoder", dest="freeze", action="store_false",
                    help="train the signal encoder (the paper: 'pretrained solely on synthetic episodes')")
    ini.add_argument("--allow-random-frozen-encoder", action="store_true",
                     help="allow a frozen signal encoder that no checkpoint initializes (it stays random; for "
                          "experiments only)")
    ini.add_argument("--init-from", default=None,
                     help="initialize parts from a checkpoint: our .safetensors, the released ChorusTIC.ckpt, "
                          "or hf://JTF2000/ChorusTIC/ChorusTIC.ckpt")
    ini.add_argument("--init-parts", nargs="+", default=["all"], metavar="PART",
                     help="parts for --init-from: all, signal, encoder, task, or stage names "
                          "(signal_encoder, rssc, column_distribution_modeling, row_interaction, icl; default: all)")
    ini.add_argument("--init-hparams", default=None, help="model_hparams_latest.json for a released checkpoint")
    ini.add_argument("--init-task-level-from-tabicl", default=None, metavar="CKPT",
                     help="initialize the task level from a TabICL v1/v1.1 checkpoint "
                          "(e.g. tabicl-classifier-v1.1-0506.ckpt)")
    p.set_defaults(func=_run)


def _model_config(spec: str):
    from chorustic.model import ChorusTICConfig
    from chorustic.model.config import MODEL_PRESETS as presets

    if spec in presets:
        return presets[spec]()
    path = Path(spec)
    if not path.is_file():
        raise ValueError(f"--model-config {spec!r} is neither a preset ({sorted(presets)}) nor a JSON file")
    data = json.loads(path.read_text())
    return ChorusTICConfig.from_dict(data.get("model_config", data))


def _layout_overrides(args: argparse.Namespace) -> dict:
    return {k: v for k, v in {"micro_batch_size": args.micro_batch_size, "activation_checkpointing": args.ckpt,
                              "signal_chunk_rows": args.signal_chunk_rows, "num_workers": args.workers,
                              "compile": args.compile}.items()
            if v is not None}


def _configs(args: argparse.Namespace):
    from chorustic.training import TrainConfig

    mcfg = _model_config(args.model_config)
    from chorustic.training.config import TRAIN_PRESETS

    tspec = args.train_config or (args.model_config if args.model_config in TRAIN_PRESETS else "small")
    tcfg = TrainConfig.resolve(tspec)
    if args.no_channel_axis_attention:
        mcfg = dataclasses.replace(mcfg, use_channel_axis_attention=False)
    if args.no_calibration:
        mcfg = dataclasses.replace(mcfg, col_embedding_mode="linear")
    if args.freeze is not None:
        mcfg = dataclasses.replace(mcfg, freeze_signal_encoder=args.freeze)
    if args.no_cross_channel_rules:
        tcfg = dataclasses.replace(tcfg, prior=dataclasses.replace(tcfg.prior, cross_channel_rules=False))
    overrides = {k: v for k, v in {"steps": args.steps, "seed": args.seed,
                                   "checkpoint_every": args.checkpoint_every, "val_every": args.val_every,
                                   "log_every": args.log_every}.items() if v is not None}
    overrides.update(_layout_overrides(args))
    if args.cpu_amp:
        overrides["cpu_amp"] = True
    if overrides:
        tcfg = dataclasses.replace(tcfg, **overrides)
    return mcfg, tcfg, tspec


def _plan(args: argparse.Namespace) -> int:
    from chorustic.training.plan import plan_pretraining

    mcfg, tcfg, _ = _configs(args)
    plan = plan_pretraining(mcfg, tcfg, memory_gb=args.memory_gb, target_device=args.gpu,
                            peak_tflops=args.peak_tflops, mfu=args.mfu, world_size=args.nproc,
                            amp_dtype=tcfg.amp_dtype if tcfg.amp else None, choose_layout=args.choose_layout,
                            **({"launch_us": args.launch_us} if args.launch_us is not None else {}))
    print(json.dumps(plan, indent=2))
    if args.choose_layout:
        _say_layouts(plan["layouts"])
    return 0


def _say_layouts(layouts: dict) -> None:
    """The layouts weighed, one line each, and the options of the chosen one (stderr: stdout stays JSON)."""
    for c in layouts["candidates"]:
        if not c["fits"]:
            line = "does not fit"
        else:
            line = (f"micro-batch {c['micro_batch_size']}, {c['traced_peak_gb']:g} GB traced, "
                    f"{c['calls_per_episode']:,.0f} calls an episode")
            if "expected_ms" in c:
                line += (f", {c['expected_ms']:,.1f} ms a micro-batch ({c['bound']}-bound), "
                         f"{c['episodes_per_s']:g} episodes/s, MFU {c['expected_mfu']:.1%}")
        print(f"layout {c['label']}: {line}", file=sys.stderr)
    chosen = layouts["chosen"]
    print(f"fastest that fits: {chosen['label']}: chorustic pretrain ... {chosen['options']}" if chosen
          else "no layout fits the memory budget: use a larger --memory-gb", file=sys.stderr)


def _run(args: argparse.Namespace) -> int:
    import torch

    from chorustic.training import Trainer

    if args.threads:
        torch.set_num_threads(args.threads)
    try:
        if args.plan:
            return _plan(args)
        if args.out_dir is None:
            raise ValueError("--out-dir is required (the run's folder)")
        if args.resume:
            for flag in ("no_channel_axis_attention", "no_calibration", "no_cross_channel_rules", "init_from",
                         "init_task_level_from_tabicl", "seed"):
                if getattr(args, flag):
                    raise ValueError(f"--{flag.replace('_', '-')} cannot be combined with --resume "
                                     f"(the run's settings are in {args.out_dir / 'run.json'})")
            overrides = {"steps": args.steps, "checkpoint_every": args.checkpoint_every,
                         "val_every": args.val_every, "log_every": args.log_every, **_layout_overrides(args)}
            trainer = Trainer.resume(args.out_dir, device=args.device, progress=not args.no_progress,
                                     overrides=overrides)
        else:
            mcfg, tcfg, tspec = _configs(args)
            init = []
            if args.init_from:
                init.append({"kind": "checkpoint", "spec": args.init_from,
                             "parts": [s.strip() for v in args.init_parts for s in v.split(",") if s.strip()],
                             "hparams": args.init_hparams})
            if args.init_task_level_from_tabicl:
                init.append({"kind": "tabicl", "path": args.init_task_level_from_tabicl})
            notes = {"command": " ".join(sys.argv), "model_config_spec": args.model_config,
                     "train_config_spec": tspec}
            if args.auto_resume and (args.out_dir / "run.json").exists() and not args.overwrite:
                _check_same_run(args.out_dir, mcfg, tcfg, init)
                trainer = Trainer.resume(args.out_dir, device=args.device, progress=not args.no_progress,
                                         overrides=_layout_overrides(args))
                return _train(trainer, args)
            trainer = Trainer(mcfg, tcfg, args.out_dir, device=args.device, init=init, progress=not args.no_progress,
                              overwrite=args.overwrite, notes=notes,
                              allow_random_frozen=args.allow_random_frozen_encoder)
    except (ValueError, FileNotFoundError, FileExistsError) as exc:
        print(f"chorustic pretrain: {exc}", file=sys.stderr)
        return 2
    return _train(trainer, args)


def _check_same_run(out: Path, mcfg, tcfg, init: list) -> None:
    info = json.loads((out / "run.json").read_text())
    from chorustic.training.config import LAYOUT_FIELDS

    diffs = []
    for key, want in (("model_config", mcfg.to_dict()), ("train_config", tcfg.to_dict())):
        have = json.loads(json.dumps(info.get(key, {})))
        want = json.loads(json.dumps(want))
        skip = LAYOUT_FIELDS if key == "train_config" else frozenset()
        diffs += [f"{key}.{k}: run {have.get(k)!r} vs requested {want.get(k)!r}"
                  for k in sorted(set(have) | set(want)) if k not in skip and have.get(k) != want.get(k)]
    if json.loads(json.dumps(info.get("init", []))) != json.loads(json.dumps(init)):
        diffs.append("initialization differs")
    if diffs:
        raise ValueError(f"{out} holds a run with other settings; use another --out-dir or --overwrite:\n  "
                         + "\n  ".join(diffs[:10]))


def _train(trainer, args: argparse.Namespace) -> int:
    from chorustic.training import TrainingAborted, TrainingInterrupted

    try:
        summary = trainer.train(max_minutes=args.max_minutes, handle_signals=True)
    except TrainingAborted as exc:
        trainer.checkpoint()
        print(f"chorustic pretrain: aborted: {exc}", file=sys.stderr)
        return 1
    except TrainingInterrupted as exc:  # a worker or another process died; the state is saved
        print(f"chorustic pretrain: stopped: {exc}", file=sys.stderr)
        return 1
    finally:
        trainer.dist.shutdown()
    if trainer.dist.is_main:
        print(json.dumps({k: summary[k] for k in ("step", "planned_steps", "episodes_seen", "wall_time_s",
                                                    "validation")}, indent=2))
        print(f"model: {trainer.out / 'model.safetensors'}")
    return 0
