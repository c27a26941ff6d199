"""TabICL's memory and time per forward pass on a CPU: the figures behind ``baselines/tabicl.py``'s pass plan.

tabicl embeds every cell of a table (row, feature) as ``embed_dim`` float32 per ensemble member, and on a CPU runs
each stage of the model (column embedding, row interaction, ICL) on all its inputs at once. The plugin splits each
stage into batches of columns or rows within ``STAGE_MB`` (``budget_stages``), as tabicl does on a GPU. This runs one
table per fresh process with random weights of the released architectures (``chorustic.testing.checkpoints``), as
the plugin runs it (``budget``) and as tabicl does (``whole``), and prints its CPU time, the process's memory after
its imports and its peak resident memory, against the memory the plugin's cost model gives the table (its base, the
pass's column embeddings, one stage's working memory and 128 bytes per value: ``TabICLBase.job_cost``), and its CPU
time against the cost model's (the per-context terms of one thread).

    python benchmarks/tabicl_memory.py [--tables v1:300+100x1024:1 v1:300+100x1024:8 v2:300+100x1024:8]
                                       [--modes budget whole]

A table is ``version:context+queries x features:ensemble batch``. One thread under the evaluation workers' pinned
numerics (``chorustic.evaluation.numerics.portable_numerics_env``); each table takes minutes.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

_CHILD = """
import json, os, resource, sys, time
import numpy as np, torch
torch.set_num_threads(1)
from chorustic.methods import discover
ckpt, n_ctx, n_q, H, members, mode = sys.argv[1], *(int(v) for v in sys.argv[2:6]), sys.argv[6]
disc = discover()
method = disc.get("tabicl_v2" if "v2" in os.path.basename(ckpt) else "tabicl")
plugin = sys.modules[type(disc.get("tabicl")).__module__]  # the module with the pass plan
if mode == "whole":
    plugin.STAGE_MB = 1e12  # every stage at once, as tabicl runs it on a CPU
rng = np.random.default_rng(0)
X, Q = rng.standard_normal((n_ctx, 1, H)), rng.standard_normal((n_q, 1, H))
est = method.build(seed=0, **method.params({"checkpoint": ckpt, "batch_size": members, "max_memory_mb": 1e9}))
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
t = time.process_time()
est.fit(X.astype(np.float32), np.arange(n_ctx) % 5)
est.predict_proba(Q.astype(np.float32))
print(json.dumps({"peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "before_mb": before,
                  "cpu_s": time.process_time() - t, "ensemble_batch": est.run_info_["ensemble_batch"]}))
"""


def checkpoint(version: str, folder: Path) -> Path:
    """A random-weight checkpoint of the released architecture of ``version`` (v1 or v2), named as the plugin
    expects."""
    from chorustic.testing.checkpoints import TABICL_V1_REAL, TABICL_V2_REAL, write_tabicl

    name = {"v1": "tabicl-classifier-v1.1-20250506.ckpt", "v2": "tabicl-classifier-v2-20260212.ckpt"}[version]
    path = folder / name
    if not path.exists():
        write_tabicl(path, real_size=True, **(TABICL_V1_REAL if version == "v1" else TABICL_V2_REAL))
    return path


def modelled_mb(version: str, n_ctx: int, n_q: int, features: int, members: int, mode: str) -> float:
    """The memory ``TabICLBase.job_cost`` gives this table (one context, every query): the cost model's base (the
    worker with its imports and the model's weights) and values, the pass's column embeddings and one stage."""
    from chorustic.methods import discover

    method = discover().get("tabicl_v2" if version == "v2" else "tabicl")
    plugin = sys.modules[type(discover().get("tabicl")).__module__]  # the module with the pass plan
    _, _, held = plugin.forward_plan(n_ctx, n_q, features, plugin.cell_bytes(), plugin.ensemble_batch(8, members),
                                     1e9, method.shared_tensors)
    stage = plugin.STAGE_MB if mode == "budget" else float("nan")
    values = method.cost.mem_bytes_per_value * (n_ctx + n_q) * features / 2**20
    return method.cost.mem_base_mb + values + held + stage


def modelled_s(version: str, n_ctx: int, n_q: int, features: int) -> float:
    """The CPU seconds of one thread the plugin's cost model gives this table's fit and prediction (one context,
    every query, one pass): its per-context terms, without the job's start and its reading of the data."""
    from chorustic.methods import CostModel, discover
    from chorustic.methods.cost import JobSize

    model = discover().get("tabicl_v2" if version == "v2" else "tabicl").cost
    terms = model.time_terms(JobSize(n_ctx, n_q, 1, features, n_classes=min(n_ctx, 5)))
    return float(sum(getattr(model, k) * t for k, t in zip(CostModel.TIME_COEFFICIENTS[2:], terms[2:])))


def measure(ckpt: Path, n_ctx: int, n_q: int, features: int, members: int, mode: str) -> dict:
    from chorustic.evaluation.numerics import portable_numerics_env
    from chorustic.evaluation.supervisor import thread_env

    args = [str(ckpt), str(n_ctx), str(n_q), str(features), str(members), mode]
    env = {**thread_env(1), **portable_numerics_env()}  # one thread, the evaluation workers' pinned numerics
    out = subprocess.run([sys.executable, "-c", _CHILD, *args], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def parse(table: str) -> tuple[str, int, int, int, int]:
    version, shape, members = table.split(":")
    rows, features = shape.split("x")
    n_ctx, n_q = rows.split("+")
    return version, int(n_ctx), int(n_q), int(features), int(members)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", nargs="+", default=["v1:300+100x1024:1", "v1:300+100x2048:1", "v1:300+100x1024:8",
                                                    "v2:300+100x1024:8"])
    ap.add_argument("--modes", nargs="+", default=["budget"], choices=["budget", "whole"])
    args = ap.parse_args(argv)
    print("| version | context + queries x features | ensemble batch | stages | CPU s | model s | CPU / model "
          "| imports MB | peak MB | model MB | peak / model |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for table in args.tables:
            version, n_ctx, n_q, features, members = parse(table)
            ckpt = checkpoint(version, Path(tmp))
            for mode in args.modes:
                r = measure(ckpt, n_ctx, n_q, features, members, mode)
                model = modelled_mb(version, n_ctx, n_q, features, members, mode)
                ratio = r["peak_mb"] / model if model == model else float("nan")
                seconds = modelled_s(version, n_ctx, n_q, features)
                print(f"| {version} | {n_ctx} + {n_q} x {features} | {r['ensemble_batch']} | {mode} | {r['cpu_s']:.0f} "
                      f"| {seconds:.0f} | {r['cpu_s'] / seconds:.2f} | {r['before_mb']:.0f} | {r['peak_mb']:.0f} "
                      f"| {model:.0f} | {ratio:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
