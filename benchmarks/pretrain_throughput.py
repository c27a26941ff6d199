"""Pretraining throughput: episodes/s, FLOPs/episode, achieved TFLOP/s, MFU, data wait, peak memory.

    python benchmarks/pretrain_throughput.py --model-config small --train-config small --device cpu --threads 2
    python benchmarks/pretrain_throughput.py --model-config paper --train-config paper --train-signal-encoder \\
        --device cuda [--micro-batch-size 12] [--compile]
    torchrun --standalone --nproc-per-node 2 benchmarks/pretrain_throughput.py --device cpu --threads 1 ...

Runs ``--warmup`` optimizer steps, then ``--steps`` timed steps of the real trainer (prior workers,
autocast, activation checkpointing, fused AdamW, ``--compile``: whatever the configs say). With
``--compile`` the warm-up steps compile the stages (minutes on a CPU); a stage variant first met in a
timed step compiles inside the timing (``graphs_compiled_while_timed`` > 0: raise ``--warmup``;
``graphs_compiled``: all the stages' graphs of the run).
FLOPs are model FLOPs (forward + backward, no recomputation) of exactly the micro-batches trained, from
the model's exact FLOP formula (``chorustic.training.plan.fit_flop_model``: ``torch.utils.flop_counter`` on fake tensors). MFU
is achieved model FLOP/s over the device's dense matmul peak *measured in the same run* in the training
dtype (CPU: float32, or bf16 with --cpu-amp; CUDA: the autocast dtype), on square matrices of
``--peak-size`` with the same threads. Data wait = time the training loop waited for the next
micro-batch / step time. Peak memory: CUDA ``max_memory_allocated``; CPU the process's peak RSS.
Under ``torchrun`` (data-parallel processes, as ``chorustic pretrain`` runs): episodes and FLOPs summed
over the processes, the slowest process's time, the peak the sum of the processes' peaks measured at
the same time (on one machine they share its cores), peak memory that of the largest process.
Prints one JSON object (and a summary line on stderr; rank 0 only).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import resource
import sys
import tempfile
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def matmul_peak(device: torch.device, dtype: torch.dtype, n: int, repeats: int = 10) -> float:
    """Dense matmul FLOP/s of an ``n x n`` product (best of ``repeats``)."""
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    for _ in range(3):
        a @ b
    best = float("inf")
    for _ in range(repeats):
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        t0 = time.perf_counter()
        a @ b
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        best = min(best, time.perf_counter() - t0)
    return 2 * n**3 / best


def profile_steps(tr, steps: int, out: Path | None) -> dict:
    """``steps`` training steps under ``torch.profiler``: where a step's time goes. Returns the wall time, the
    share of it the GPU spent in kernels (their durations summed: one stream), the kernels launched per step,
    and writes the operators' table by device time and by CPU self time (``out`` or stderr)."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    cuda = tr.device.type == "cuda"
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with profile(activities=activities) as prof:
        t0 = time.perf_counter()
        for _ in range(steps):
            tr.train_step()
        if cuda:
            torch.cuda.synchronize(tr.device)
        wall = time.perf_counter() - t0
    kernels = [e for e in prof.events() if e.device_type == DeviceType.CUDA]
    busy = sum(e.time_range.elapsed_us() for e in kernels) / 1e6
    res = {"steps": steps, "wall_s": round(wall, 3), "kernels_per_step": round(len(kernels) / steps),
           "gpu_busy_share": round(busy / wall, 4) if cuda else None}
    table = prof.key_averages()
    text = [f"profile of {steps} step(s): {json.dumps(res)}", "", "by device time:" if cuda else "by CPU time:",
            table.table(sort_by="self_device_time_total" if cuda else "self_cpu_time_total", row_limit=30),
            "by CPU self time:", table.table(sort_by="self_cpu_time_total", row_limit=20)]
    if out is not None:
        Path(out).write_text("\n".join(text))
    else:
        print("\n".join(text), file=sys.stderr)
    return res


def main(argv=None) -> int:
    from chorustic.commands.train import _model_config
    from chorustic.training import TrainConfig, Trainer
    from chorustic.training.plan import fit_flop_model

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model-config", default="small")
    ap.add_argument("--train-config", default=None)
    ap.add_argument("--train-signal-encoder", action="store_true")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--micro-batch-size", type=int, default=None)
    ap.add_argument("--activation-checkpointing", choices=["on", "off"], default=None)
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--cpu-amp", action="store_true")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--peak-size", type=int, default=None, help="matmul size for the peak (default 2048 CPU, 8192 CUDA)")
    ap.add_argument("--profile-steps", type=int, default=0,
                    help="after the timed steps, this many more under torch.profiler (not timed)")
    ap.add_argument("--profile-out", type=Path, default=None,
                    help="with --profile-steps: write the profiler's tables here (default: stderr)")
    args = ap.parse_args(argv)

    if args.threads:
        torch.set_num_threads(args.threads)
    mcfg = _model_config(args.model_config)
    if args.train_signal_encoder:
        mcfg = dataclasses.replace(mcfg, freeze_signal_encoder=False)
    tcfg = TrainConfig.resolve(args.train_config or args.model_config)
    over = {"steps": args.warmup + args.steps + args.profile_steps, "val_every": 10**9, "checkpoint_every": 10**9,
            "log_every": 10**9, "val_episodes": tcfg.val_batch_size, "compile": args.compile, "cpu_amp": args.cpu_amp}
    if args.workers is not None:
        over["num_workers"] = args.workers
    if args.micro_batch_size:
        over["micro_batch_size"] = args.micro_batch_size
    if args.activation_checkpointing:
        over["activation_checkpointing"] = args.activation_checkpointing == "on"
    tcfg = dataclasses.replace(tcfg, **over)

    t_start = time.perf_counter()

    def phase(what: str) -> None:  # on stderr as it happens: a run killed by a time limit still says where it was
        print(f"[{time.perf_counter() - t_start:6.1f} s] {what}", file=sys.stderr, flush=True)

    with tempfile.TemporaryDirectory() as tmp:
        tr = Trainer(mcfg, tcfg, Path(tmp) / "run", device=args.device, progress=False,
                     allow_random_frozen=True)
        dev = tr.device
        dtype = tr.amp_dtype or torch.float32
        phase(f"trainer built on {dev} ({tr.num_workers} prior workers)")
        flop_model = fit_flop_model(mcfg, tcfg, amp_dtype="bfloat16" if tr.amp_dtype == torch.bfloat16 else None)
        phase("FLOP model fitted")
        shapes: list[tuple] = []
        tr._open_stream()
        inner = tr._batches

        def spy():
            for mb in inner:
                shapes.append((mb.step, mb.n_episodes, mb.X.shape[1], mb.y_context.shape[1], mb.plan))
                yield mb

        tr._batches = spy()
        from torch._dynamo.utils import counters

        t_warm = time.perf_counter()
        for i in range(args.warmup):
            tr.train_step()
            phase(f"warm-up step {i + 1}/{args.warmup}")
        warmup_s = time.perf_counter() - t_warm
        graphs_before = counters["stats"]["unique_graphs"]
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)
            torch.cuda.reset_peak_memory_stats(dev)
        t0 = time.perf_counter()
        wait = 0.0
        for i in range(args.steps):
            wait += tr.train_step()["data_wait"]
            phase(f"timed step {i + 1}/{args.steps}")
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)
        elapsed = time.perf_counter() - t0
        graphs_total = counters["stats"]["unique_graphs"]
        graphs_timed = graphs_total - graphs_before
        profile = profile_steps(tr, args.profile_steps, args.profile_out) if args.profile_steps else None
        if profile:
            phase(f"{args.profile_steps} profiled step(s): GPU busy {profile.get('gpu_busy_share')}")
        tr.close()
    first = args.warmup
    measured = [s for s in shapes if first <= s[0] < first + args.steps]
    flops = sum(flop_model.micro_batch(b, t, n, plan) for _, b, t, n, plan in measured)
    episodes = sum(s[1] for s in measured)
    size = args.peak_size or (8192 if dev.type == "cuda" else 2048)
    world = tr.dist.world_size
    tr.dist.barrier()  # every process measures its peak at the same time: on one CPU they share the cores
    peak = matmul_peak(dev, dtype, size)
    if dev.type == "cuda":
        peak_mem = torch.cuda.max_memory_allocated(dev) / 2**30
        device_name = torch.cuda.get_device_name(dev)
    else:
        peak_mem = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
        device_name = f"{platform.processor() or platform.machine()} CPU, {torch.get_num_threads()} threads"
    if world > 1:  # torchrun: sums over the processes (the peak too), the slowest process's time
        sums = tr.dist.all_reduce_sum(torch.tensor([flops, episodes, wait, peak], dtype=torch.float64, device=dev))
        flops, episodes, wait, peak = sums.tolist()
        wait /= world
        import torch.distributed as dist

        most = torch.tensor([elapsed, peak_mem], dtype=torch.float64, device=dev)
        dist.all_reduce(most, op=dist.ReduceOp.MAX)
        elapsed, peak_mem = most.tolist()
        device_name = f"{world} processes x {device_name}"
        episodes = int(episodes)
    tr.dist.shutdown()
    if not tr.dist.is_main:
        return 0
    achieved = flops / elapsed
    out = {
        "model_config": args.model_config, "train_config": tcfg.name,
        "signal_encoder_trainable": not mcfg.freeze_signal_encoder, "device": device_name,
        "dtype": str(dtype).replace("torch.", ""), "processes": world, "threads": torch.get_num_threads(),
        "data_workers": tr.num_workers,
        "micro_batch_size": tcfg.micro_batch_size or tcfg.group_size, "activation_checkpointing": tcfg.activation_checkpointing,
        "compile": tcfg.compile, "warmup_steps": args.warmup, "warmup_seconds": round(warmup_s, 1),
        "graphs_compiled": graphs_total, "graphs_compiled_while_timed": graphs_timed,
        "steps": args.steps, "episodes": episodes,
        "seconds": round(elapsed, 2),
        "episodes_per_s": round(episodes / elapsed, 3),
        "gflop_per_episode": round(flops / max(episodes, 1) / 1e9, 2),
        "achieved_tflops": round(achieved / 1e12, 4),
        "matmul_peak_tflops": round(peak / 1e12, 4), "matmul_peak_size": size,
        "mfu": round(achieved / peak, 4),
        "data_wait_share": round(wait / elapsed, 4),
        "peak_memory_gb": round(peak_mem, 2),  # of one process
        "date": time.strftime("%Y-%m-%d"), "torch": torch.__version__,
        **({"profile": profile} if profile else {}),
    }
    print(json.dumps(out, indent=2))
    print(f"{out['episodes_per_s']} episodes/s, {out['gflop_per_episode']} GFLOP/episode, "
          f"{out['achieved_tflops']} TFLOP/s = {100 * out['mfu']:.1f} % of the measured {out['dtype']} matmul peak "
          f"({out['matmul_peak_tflops']} TFLOP/s), data wait {100 * out['data_wait_share']:.1f} %, "
          f"peak memory {out['peak_memory_gb']} GB", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
