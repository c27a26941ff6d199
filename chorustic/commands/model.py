"""``chorustic checkpoint-info`` and ``chorustic checkpoint-convert``: inspect and convert ChorusTIC checkpoints."""

from __future__ import annotations

import argparse
import json
import sys

from chorustic.commands._vocabulary import add_out


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "checkpoint-info",
        help="show a ChorusTIC checkpoint's format, configuration, provenance and parameter counts",
        description="Load a ChorusTIC checkpoint (this project's .safetensors format, the released "
        "ChorusTIC.ckpt, or an hf://OWNER/REPO/FILE spec from the Hugging Face cache) and "
        "print its configuration, provenance and parameter counts per stage.",
    )
    p.add_argument("checkpoint", help="path or hf:// spec")
    p.add_argument(
        "--hparams-json", default=None, help="model_hparams_latest.json of a released-format checkpoint"
    )
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    p.set_defaults(func=_info)

    c = sub.add_parser(
        "checkpoint-convert",
        help="convert a released-format ChorusTIC checkpoint into this project's .safetensors format",
        description="Read a checkpoint in the authors' released format (ChorusTIC.ckpt with its "
                    "model_hparams_latest.json, a path or an hf://OWNER/REPO/FILE spec) and write the same weights "
                    "and configuration as one .safetensors file, the format every other command reads.",
    )
    c.add_argument("checkpoint", help="path or hf:// spec of the released-format checkpoint")
    add_out(c, "the .safetensors file to write")
    c.add_argument("output", nargs="?", default=None, help=argparse.SUPPRESS)  # deprecated: positional output
    c.add_argument("--hparams-json", default=None,
                   help="model_hparams_latest.json of the checkpoint (default: looked up next to the checkpoint)")
    c.set_defaults(func=_convert)


def _load(args):
    from chorustic.model import load_model

    return load_model(args.checkpoint, args.hparams_json)


def _info(args: argparse.Namespace) -> int:
    from chorustic.model import CheckpointError, CheckpointNotFoundError

    try:
        model = _load(args)
    except (CheckpointError, CheckpointNotFoundError, ValueError) as exc:
        print(f"chorustic checkpoint-info: {exc}", file=sys.stderr)
        return 1
    counts = model.parameter_counts()
    cfg = model.config
    info = {
        "checkpoint": args.checkpoint,
        "provenance": model.provenance,
        "config": cfg.to_dict(),
        "derived": {"d_h": cfg.d_h, "d_u": cfg.d_u, "num_slots": cfg.num_slots, "patch_size": cfg.patch_size},
        "parameters": counts,
        "signal_encoder_frozen": model.signal_encoder_frozen,
    }
    if args.json:
        print(json.dumps(info, indent=2, default=str))
        return 0
    print(f"checkpoint: {args.checkpoint}")
    print(f"format: {model.provenance.get('format')}   source: {model.provenance.get('source')}")
    print("parameters:")
    for name, n in counts.items():
        print(f"  {name:32s} {n:>12,d}")
    print(
        f"derived: d_h={cfg.d_h} d_u={cfg.d_u} slots={cfg.num_slots} patch={cfg.patch_size}  "
        f"signal encoder frozen: {model.signal_encoder_frozen}"
    )
    print("config:")
    for k, v in cfg.to_dict().items():
        print(f"  {k:28s} {v}")
    print("provenance:")
    for k, v in model.provenance.items():
        print(f"  {k:28s} {v}")
    return 0


def _convert(args: argparse.Namespace) -> int:
    out = args.out or args.output
    if args.output and not args.out:
        print(f"chorustic checkpoint-convert: note: the output file without --out is deprecated: write --out {out}",
              file=sys.stderr)
    if not out:
        print("chorustic checkpoint-convert: give the file to write: --out FILE. `chorustic checkpoint-convert "
              "--help` lists the options", file=sys.stderr)
        return 2
    from chorustic.model import CheckpointError, CheckpointNotFoundError, save_checkpoint

    try:
        model = _load(args)
    except (CheckpointError, CheckpointNotFoundError, ValueError) as exc:
        print(f"chorustic checkpoint-convert: {exc}", file=sys.stderr)
        return 1
    prov = {"converted_from": str(args.checkpoint), "source_provenance": model.provenance}
    path = save_checkpoint(out, model, provenance=prov)
    print(f"wrote {path}")
    return 0
