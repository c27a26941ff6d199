"""``chorustic plan-run``: the bill of a configured run (jobs, CPU- and GPU-hours, memory, wall time)."""

from __future__ import annotations

import argparse
import time

from chorustic.commands._vocabulary import add_deprecated, add_out, suggest
from chorustic.training.devices import DEVICE_PEAK_TFLOPS


def _gpu_kind(text: str) -> str:
    """A GPU kind the bill knows, or one line saying which ones it knows (``--gpu 1``: the number is --gpus)."""
    kind = text.strip().lower()
    if kind in DEVICE_PEAK_TFLOPS:
        return kind
    if kind.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is a number: the number of GPUs is --gpus {text}; --gpu is "
                                         f"their kind ({', '.join(sorted(DEVICE_PEAK_TFLOPS))})")
    raise argparse.ArgumentTypeError(f"unknown GPU kind {text!r}{suggest(kind, sorted(DEVICE_PEAK_TFLOPS), quote=chr(39))}; "
                                     f"the bill knows: {', '.join(sorted(DEVICE_PEAK_TFLOPS))}")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "plan-run", help="the bill of a configured run before anything runs: jobs, hours, memory, wall time",
        description="Turn the configuration into its run plan (every job with its dataset's shape and its "
                    "method's cost model) and print the bill: jobs per rule, CPU-hours and GPU-hours per "
                    "method and per rule, the largest job's memory, the expected wall time on this machine "
                    "and on N cluster nodes, and the critical path. Nothing runs and nothing is written.")
    p.add_argument("--config", action="append", default=[], metavar="YAML",
                   help="config file merged over config/config.yaml (repeatable), e.g. config/demo.yaml")
    p.add_argument("--cores", type=int, default=None, help="cores of the machine billed (default: this one's)")
    p.add_argument("--gpus", type=int, default=None, help="GPUs of the machine billed (default: this one's)")
    p.add_argument("--gpu", default=None, type=_gpu_kind, metavar="KIND",
                   help=f"the GPUs' kind: {', '.join(sorted(DEVICE_PEAK_TFLOPS))}; it sets the pretraining's FLOP "
                        "rate and which micro-batch fits (default: this machine's, else h100)")
    p.add_argument("--mem-gb", type=float, default=None, help="memory of the machine billed (default: this one's)")
    p.add_argument("--nodes", type=int, default=0, help="also bill a cluster of this many nodes")
    p.add_argument("--node-cores", type=int, default=None, help="cores per cluster node (default: --cores)")
    p.add_argument("--node-gpus", type=int, default=None, help="GPUs per cluster node (default: --gpus)")
    p.add_argument("--node-mem-gb", type=float, default=None, help="memory per cluster node (default: --mem-gb)")
    p.add_argument("--bandwidth-mb-s", type=float, default=10.0,
                   help="download speed from the archives' servers, MB/s (default: 10)")
    add_out(p, "also write the bill as JSON to this file")
    add_deprecated(p, "--json", "--out")
    p.set_defaults(func=_plan_run)


def _plan_run(args: argparse.Namespace) -> int:
    from chorustic import config as cc
    from chorustic.bill import Machine, format_bill, make_bill, this_machine, write_json
    from chorustic.run_plan import RunPlan

    t0 = time.perf_counter()
    cfg = cc.load_config(args.config)
    # this machine's GPUs are looked for (torch loaded) only where the bill needs their number or their kind
    needs_kind = args.gpu is None and bool(args.gpus or args.node_gpus)
    here = this_machine(detect_gpus=args.gpus is None or needs_kind)
    machine = Machine(
        cores=args.cores or here.cores,
        gpus=here.gpus if args.gpus is None else args.gpus,
        mem_mb=int(args.mem_gb * 1024) if args.mem_gb else here.mem_mb,
        gpu=args.gpu or here.gpu,
    )
    node = Machine(
        cores=args.node_cores or machine.cores,
        gpus=machine.gpus if args.node_gpus is None else args.node_gpus,
        mem_mb=int(args.node_mem_gb * 1024) if args.node_mem_gb else machine.mem_mb,
        gpu=machine.gpu,
    )
    plan = RunPlan.from_config(cfg)
    bill = make_bill(plan, machine, cluster_nodes=args.nodes, node=node, bandwidth_mb_s=args.bandwidth_mb_s)
    bill["plan_seconds"] = round(time.perf_counter() - t0, 1)
    print(format_bill(bill))
    print(f"(planned in {bill['plan_seconds']} s; estimates from the methods' cost models, see `chorustic "
          "plan-run --help` and chorustic/bill.py)")
    if args.out:
        write_json(bill, args.out)
    return 0
