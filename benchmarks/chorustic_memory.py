"""Peak memory and CPU time of one ChorusTIC prediction at a given context size, against its cost model.

Each shape runs in a fresh process (so the peak is that shape's): the deployment ensemble (8 label
shifts x 4 RSSC draws) of the paper configuration with random weights (or ``--config small``) fits a
context of ``n_ctx`` series and predicts ``n_q`` queries (one chunk, as the harness predicts a large test
split), one thread. Printed per shape: the measured resident peak and CPU seconds, and the memory the
method's cost model gives one context of that shape (``CostModel.memory_terms``, before a job's margins).
It shows how the memory grows with the context (what a full-context job on Crop's 7,200 training series
holds) where the whole job would take days on a CPU.

    python benchmarks/chorustic_memory.py [--config paper] [--shapes 500x64x1 2000x64x1 50x50x1345]

A shape is ``n_ctx x n_q x channels`` (length 512, as the model sees every series; 24 classes).

``--calls K`` predicts the queries in K calls of equal size instead of one, as the harness predicts a test
split larger than its query chunk: each call runs the context again (what ``CostModel.context_calls`` charges):

    python benchmarks/chorustic_memory.py --shapes 893x771x1 --calls 1 2

``--stage rows`` or ``--stage icl`` times one stage of the task level alone on random inputs of its width
(10 classes): the row stage of one RSSC draw (the column distribution modelling and the row interaction,
queries in chunks of 512), or the ICL transformer of ``--tables`` label shifts at once (queries in chunks of
512), what the cost model's terms per ensemble member and (context row, row) pair stand for:

    python benchmarks/chorustic_memory.py --config small --stage icl --tables 8 --shapes 1000x1000x1 4000x1000x1

``--stage inputs`` measures what a prediction holds of its input, the job's way (the context a full-context
job hands ``fit``, the test split to ``predict_proba``), stopped where the signal level starts: per input
value, the memory held there and the peak before it, over the job's own arrays (4 bytes per value, not
counted):

    python benchmarks/chorustic_memory.py --stage inputs --shapes 267x173x963
    python benchmarks/chorustic_memory.py --config small --stage inputs --shapes 267x173x963
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def stage(model, stage_name: str, n_ctx: int, n_q: int, tables: int) -> float:
    """CPU seconds of one task-level stage on random inputs of its width (see the module docstring)."""
    import torch

    with torch.no_grad():
        if stage_name == "rows":
            x, _ = model.prepare_inputs(torch.randn(1, 2, 1, 512))
            width = model.encode_signal(x, torch.zeros(1, 1, model.config.num_groups, model.config.group_size,
                                                       dtype=torch.long)).shape[-1]
            H = torch.randn(1, n_ctx + n_q, width)
            model.row_representations(H[:, :60], 50, row_chunk=512)  # warm-up
            t0 = time.process_time()
            model.row_representations(H, n_ctx, row_chunk=512)
            return time.process_time() - t0
        R = torch.randn(1, n_ctx + n_q, model.config.row_num_cls * model.config.embed_dim).expand(tables, -1, -1)
        y = (torch.arange(n_ctx) % 10)[None].expand(tables, -1)
        model.icl_logits(R[:, :60], y[:, :50], num_classes=10, query_chunk=512)  # warm-up
        t0 = time.process_time()
        model.icl_logits(R, y, num_classes=10, query_chunk=512)
        return time.process_time() - t0


def inputs(model, n_ctx: int, n_q: int, channels: int) -> dict:
    """Bytes per input value a prediction holds where the signal level starts, and its peak before it, over the
    job's arrays (see the module docstring)."""
    import threading

    import numpy as np
    import psutil

    from chorustic.inference import ChorusTICClassifier
    from chorustic.methods.inputs import take_series
    from chorustic.protocols.full import full_context

    proc, peak, seen = psutil.Process(), [0], {}

    def sample() -> None:
        while "held" not in seen:
            peak[0] = max(peak[0], proc.memory_info().rss)
            time.sleep(0.002)

    rng = np.random.default_rng(0)
    X_train = rng.standard_normal((n_ctx, channels, 512), dtype=np.float32)
    X_test = rng.standard_normal((n_q, channels, 512), dtype=np.float32)
    y = np.arange(n_ctx) % 7
    base = proc.memory_info().rss
    threading.Thread(target=sample, daemon=True).start()

    class SignalLevel(Exception):
        pass

    def stop(*args, **kwargs):
        time.sleep(0.05)  # a sample of the peak before it
        seen["held"] = proc.memory_info().rss
        raise SignalLevel

    clf = ChorusTICClassifier(model=model, seed=0).fit(take_series(X_train, full_context(y)), y)
    model.encode_signal = stop
    try:
        clf.predict_proba(X_test)
    except SignalLevel:
        pass
    values = (n_ctx + n_q) * channels * 512
    return {"seq_len": model.config.seq_len, "values_m": round(values / 1e6, 1),
            "held_bytes_per_value": round((seen["held"] - base) / values, 2),
            "peak_bytes_per_value": round((max(peak[0], seen["held"]) - base) / values, 2)}


def one(config: str, n_ctx: int, n_q: int, channels: int, classes: int = 24, stage_name: str = "all",
        tables: int = 8, calls: int = 1) -> dict:
    """Run one shape in this process (a fresh one: see main)."""
    import numpy as np
    import torch

    from chorustic.inference import ChorusTICClassifier
    from chorustic.model import ChorusTICConfig
    from chorustic.testing.checkpoints import randomized_chorustic

    torch.set_num_threads(1)
    model = randomized_chorustic(getattr(ChorusTICConfig, config)(), scale=0.02).eval()
    if stage_name == "inputs":
        return inputs(model, n_ctx, n_q, channels)
    if stage_name != "all":
        return {"cpu_s": round(stage(model, stage_name, n_ctx, n_q, tables), 2),
                "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024}
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n_ctx + n_q, channels, 512)).astype(np.float32)
    y = np.arange(n_ctx) % classes
    clf = ChorusTICClassifier(model=model, seed=0).fit(X[:n_ctx], y)
    step = -(-n_q // calls)
    t0 = time.process_time()
    for start in range(n_ctx, n_ctx + n_q, step):
        clf.predict_proba(X[start:min(start + step, n_ctx + n_q)])
    return {"cpu_s": round(time.process_time() - t0, 1),
            "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024}


def model_mb(config: str, n_ctx: int, n_q: int, channels: int) -> float:
    """The cost model's memory of one context of this shape, all ``n_q`` queries held."""
    from chorustic.methods import import_plugin_module
    from chorustic.methods.cost import JobSize

    plugin = import_plugin_module("chorustic", REPO / "baselines" / "chorustic.py")
    cost = plugin.PAPER_COST if config == "paper" else plugin.SMALL_COST
    return cost.estimate(JobSize(n_ctx, n_q, channels, 512))[0]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default="paper", choices=["paper", "small"], help="model configuration")
    ap.add_argument("--shapes", nargs="+", default=["500x64x1", "2000x64x1"], help="n_ctx x n_q x channels")
    ap.add_argument("--stage", default="all", choices=["all", "rows", "icl", "inputs"],
                    help="the whole prediction, one task-level stage alone, or the input copies (module docstring)")
    ap.add_argument("--tables", type=int, default=8, help="--stage icl: label shifts run at once")
    ap.add_argument("--calls", type=int, nargs="+", default=[1],
                    help="predict the queries in this many calls (each value a run of every shape)")
    ap.add_argument("--one", help=argparse.SUPPRESS)  # internal: run one shape in this process
    args = ap.parse_args(argv)
    if args.one:
        n_ctx, n_q, c = map(int, args.one.split("x"))
        print(json.dumps(one(args.config, n_ctx, n_q, c, stage_name=args.stage, tables=args.tables,
                             calls=args.calls[0])))
        return 0
    for shape in args.shapes:
        n_ctx, n_q, c = map(int, shape.split("x"))
        for calls in args.calls:
            proc = subprocess.run([sys.executable, __file__, "--config", args.config, "--stage", args.stage,
                                   "--tables", str(args.tables), "--calls", str(calls), "--one", shape],
                                  capture_output=True, text=True, check=True)
            row = {"config": args.config, "n_ctx": n_ctx, "n_q": n_q, "channels": c,
                   **({"calls": calls} if args.stage == "all" else {}),
                   **json.loads(proc.stdout.strip().splitlines()[-1])}
            if args.stage == "all":
                row["model_mb"] = round(model_mb(args.config, n_ctx, n_q, c))
            else:
                row.update(stage=args.stage, **({"tables": args.tables} if args.stage == "icl" else {}))
            print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    sys.exit(main())
