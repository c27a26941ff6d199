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
                                       [--modes budget whole] [--mmap-threshold 1048576]
                                       [--out benchmarks/results/tabicl_memory.csv]
    python benchmarks/tabicl_memory.py --fit benchmarks/results/tabicl_memory.csv
    python benchmarks/tabicl_memory.py --row-stage 8192 16384 32768 65536 131072 [--versions v1 v2] [--out ...]

A table is ``version:context+queries x features:ensemble batch``. One thread under the evaluation workers' pinned
numerics (``chorustic.evaluation.numerics.portable_numerics_env``); each table takes minutes. ``--out`` appends each
measured table to a CSV. Besides the peak, a table's ``held`` MB: the tensors alive when a column stage returns (the
largest over its passes, the weights aside): the pass's column embeddings and anything the model keeps beside them.
The peak is resident memory, which also counts what glibc's heap keeps of freed blocks (up to a few hundred MB,
however large the table); ``--mmap-threshold`` has it return every freed block above that size
(``MALLOC_MMAP_THRESHOLD_``), at more system time. ``--row-stage`` times the row interaction alone on one row of
each feature count (the attention over a row's features, the cost model's square term, on tables too wide to run
whole here) and reads its working memory (Linux's peak resident memory, reset before the stage). ``--fit`` runs
nothing: it refits the per-context time coefficients of each version's cost model on the tables of a CSV measured
with the stages batched (``archive_scale.py``'s fit: non-negative least squares on the relative error over the terms
the model uses, centred, then scaled so that ``TIME_SAFETY`` times the model covers every table) and prints them
with every table's CPU / model before and after.
"""

from __future__ import annotations

import argparse
import csv
import datetime as _dt
import json
import subprocess
import sys
import tempfile
from pathlib import Path

_CHILD = """
import gc, json, os, resource, sys, time
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
model, held, spent = est.model_.model_, [0.0], [0.0]
weights = {v.untyped_storage().data_ptr() for v in (*model.parameters(), *model.buffers())}
embed = model.col_embedder.forward

def census(*a, **k):  # the tensors alive when a column stage returns (its embeddings and what else is kept)
    out, live = embed(*a, **k), {}
    t0 = time.process_time()
    for o in gc.get_objects():
        if isinstance(o, torch.Tensor) and o.untyped_storage().data_ptr() not in weights:
            live[o.untyped_storage().data_ptr()] = o.untyped_storage().nbytes()
    held[0] = max(held[0], sum(live.values()) / 2**20)
    spent[0] += time.process_time() - t0  # not the table's
    return out

model.col_embedder.forward = census
est.predict_proba(Q.astype(np.float32))
print(json.dumps({"peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "before_mb": before,
                  "cpu_s": time.process_time() - t - spent[0],
                  "ensemble_batch": est.run_info_["ensemble_batch"], "held_mb": held[0]}))
"""


_ROW_CHILD = """
import json, os, sys, time
import torch
torch.set_num_threads(1)
from chorustic.methods import discover
ckpt, features = sys.argv[1], int(sys.argv[2])
plugin = sys.modules[type(discover().get("tabicl")).__module__]  # the module that loads a checkpoint
model, _ = plugin.load_tabicl_model(ckpt, label="TabICL", expected=os.path.basename(ckpt))
stage = model.row_interactor.eval()
x = torch.randn(1, 1, stage.num_cls + features, stage.embed_dim, generator=torch.Generator().manual_seed(0))  # a row

def status_mb(key):
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith(key + ":")) / 1024

with open("/proc/self/clear_refs", "w") as fh:  # the peak from here on, not the checkpoint's loading (Linux)
    fh.write("5")
before = status_mb("VmRSS")
t = time.process_time()
with torch.inference_mode():
    out = stage._aggregate_embeddings(x)  # every block over the row's features, the last one from its CLS tokens
print(json.dumps({"peak_mb": status_mb("VmHWM"), "before_mb": before,
                  "cpu_s": time.process_time() - t, "input_mb": x.numel() * 4 / 2**20,
                  "blocks": len(stage.tf_row.blocks), "finite": bool(torch.isfinite(out).all())}))
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


def _method(version: str):
    """The plugin method of a TabICL version (``v1``: ``tabicl``, ``v2``: ``tabicl_v2``)."""
    from chorustic.methods import discover

    return discover().get("tabicl_v2" if version == "v2" else "tabicl")


def _table_size(n_ctx: int, n_q: int, features: int):
    """The :class:`~chorustic.methods.cost.JobSize` of one table: one context, its features as one channel's
    length, the child's labels of at most 5 classes."""
    from chorustic.methods.cost import JobSize

    return JobSize(n_ctx, n_q, 1, features, n_classes=min(n_ctx, 5))


def _plugin():
    """The plugin module with the pass plan (``baselines/tabicl.py``, as discovery loaded it)."""
    return sys.modules[type(_method("v1")).__module__]


def modelled_mb(version: str, n_ctx: int, n_q: int, features: int, members: int, mode: str) -> float:
    """The memory ``TabICLBase.job_cost`` gives this table (one context, every query in one pass, ``members`` a
    pass at most): the cost model's base (the worker with its imports and the model's weights) and values, the
    pass's column embeddings and its stage; none for the stages at once (``whole``), which the model does not run."""
    if mode != "budget":
        return float("nan")
    method = _method(version)
    return method.job_cost(_table_size(n_ctx, n_q, features),
                           **method.params({"batch_size": members, "max_memory_mb": 1e9}))[0]


def _context_terms(version: str, n_ctx: int, n_q: int, features: int):
    """(the version's cost model, the names and values of its per-context time terms at this table: without the
    job's start and its reading of the data; the child's labels have 5 classes)."""
    from chorustic.methods import CostModel

    model = _method(version).cost
    terms = model.time_terms(_table_size(n_ctx, n_q, features))
    return model, CostModel.TIME_COEFFICIENTS[2:], tuple(terms[2:])


def modelled_s(version: str, n_ctx: int, n_q: int, features: int, members: int = 8) -> float:
    """The CPU seconds of one thread the plugin's cost model gives this table's fit and prediction (one context,
    every query, one pass, ``members`` a pass at most): its per-context terms and the column embeddings its passes
    repeat (``TabICLBase.repeated_embedding_s``)."""
    method, size = _method(version), _table_size(n_ctx, n_q, features)
    return method.cost.context_seconds(size) + method.repeated_embedding_s(size, _plugin().ensemble_batch(8, members))


def fit(paths: list[str]) -> int:
    """Refit each version's per-context time coefficients on the batched tables of the CSVs (see the module
    docstring); a table measured twice counts with its last row."""
    import numpy as np

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from archive_scale import _fit_one

    from chorustic.resources import TIME_SAFETY

    rows: dict[tuple, dict] = {}
    for path in paths:
        with open(path, newline="") as fh:
            for r in csv.DictReader(fh):
                # the plugin's batch (fewer: more passes) and the workers' heap (a fixed mmap threshold: more time)
                if r["mode"] == "budget" and int(r["members"]) == 8 and not r.get("mmap_threshold"):
                    rows[(r["version"], int(r["n_context"]), int(r["n_query"]), int(r["features"]))] = r
    for version in dict.fromkeys(k[0] for k in rows):
        keys = [k for k in rows if k[0] == version]
        model, names, _ = _context_terms(*keys[0])
        terms = np.array([_context_terms(*k)[2] for k in keys])
        measured = np.array([float(rows[k]["cpu_s"]) for k in keys])
        now = {k: float(getattr(model, k)) for k in names}
        new = _fit_one(terms, measured, names, now, TIME_SAFETY)
        print(f"{version}: " + ", ".join(f"{k} {now[k]:g} -> {new[k]:.4g}" for k in names if now[k] or new[k]))
        for k, t, m in zip(keys, terms, measured):
            before, after = m / (t @ np.array([now[n] for n in names])), m / (t @ np.array([new[n] for n in names]))
            print(f"  {k[1]} + {k[2]} x {k[3]}: {m:.0f} CPU-s, {before:.2f} of the model, {after:.2f} refitted")
    return 0


def measure(ckpt: Path, n_ctx: int, n_q: int, features: int, members: int, mode: str,
            mmap_threshold: int | None = None) -> dict:
    from chorustic.evaluation.numerics import portable_numerics_env
    from chorustic.evaluation.supervisor import thread_env

    args = [str(ckpt), str(n_ctx), str(n_q), str(features), str(members), mode]
    env = {**thread_env(1), **portable_numerics_env()}  # one thread, the evaluation workers' pinned numerics
    if mmap_threshold:  # glibc: a fixed threshold, so that every block freed above it goes back to the system
        env["MALLOC_MMAP_THRESHOLD_"] = str(int(mmap_threshold))
    out = subprocess.run([sys.executable, "-c", _CHILD, *args], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure_row_stage(ckpt: Path, features: int) -> dict:
    """The row interaction alone (one ensemble member's row of ``features`` feature embeddings, random weights
    of the checkpoint's architecture), in a fresh process under the workers' numerics: the stage whose attention
    over every feature of a row makes the cost model's square term (``time_ns_per_feature_pair``)."""
    from chorustic.evaluation.numerics import portable_numerics_env
    from chorustic.evaluation.supervisor import thread_env

    env = {**thread_env(1), **portable_numerics_env()}
    out = subprocess.run([sys.executable, "-c", _ROW_CHILD, str(ckpt), str(features)], env=env,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def row_stage(versions: list[str], features: list[int], out: str | None) -> int:
    """Time the row interaction of one row per feature count (growing) and print its nanoseconds per (member, row,
    feature pair) against the cost model's square term per member (``time_ns_per_feature_pair / n_estimators``:
    the term covers the 8 members of the ensemble), and its memory above the input: linear in the features
    where the attention runs in blocks, as torch's CPU kernel for ``scaled_dot_product_attention`` does."""
    print("| version | features | blocks | CPU s | ns per member, row and feature pair | model's term per member "
          "| stage / model | input MB | working MB (peak above the input) |")
    print("|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for version in versions:
            ckpt = checkpoint(version, Path(tmp))
            coef = _method(version).cost.time_ns_per_feature_pair / 8
            for f in sorted(features):
                r = measure_row_stage(ckpt, f)
                if not r["finite"]:
                    raise SystemExit(f"{version} at {f} features: the row interaction gave non-finite outputs")
                ns = r["cpu_s"] * 1e9 / f**2
                print(f"| {version} | {f:,} | {r['blocks']} | {r['cpu_s']:.1f} | {ns:.1f} | {coef:.1f} | "
                      f"{ns / coef:.2f} | {r['input_mb']:.0f} | {r['peak_mb'] - r['before_mb']:.0f} |", flush=True)
                if out:
                    append_row(out, {"version": version, "n_context": 1, "n_query": 0, "features": f, "members": 1,
                                     "mode": "row_stage", "ensemble_batch": 1, **r})
    return 0


CSV_COLUMNS = ("date", "cpu", "version", "n_context", "n_query", "features", "members", "mode", "ensemble_batch",
               "cpu_s", "before_mb", "peak_mb", "held_mb", "mmap_threshold")


def append_row(path: str, row: dict) -> None:
    """Append one measured table to the CSV at ``path`` (its header first where the file is new)."""
    from chorustic.evaluation.numerics import cpu_model

    new = not Path(path).exists()
    if not new:  # a CSV from before the last columns: its rows under the current header, those columns empty
        with open(path, newline="") as fh:
            header = tuple(next(csv.reader(fh), ()))
            stale = bool(header) and header != CSV_COLUMNS
            old = list(csv.DictReader(fh, fieldnames=header)) if stale else []
        if stale:
            with open(path, "w", newline="") as fh:
                w = csv.DictWriter(fh, fieldnames=CSV_COLUMNS)
                w.writeheader()
                w.writerows({k: r.get(k, "") for k in CSV_COLUMNS} for r in old)
    row = {"date": _dt.date.today().isoformat(), "cpu": cpu_model(), **row}
    with open(path, "a", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=CSV_COLUMNS, extrasaction="ignore")
        if new:
            w.writeheader()
        w.writerow({k: (f"{v:.1f}" if isinstance(v, float) else v) for k, v in row.items()})


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
    ap.add_argument("--out", help="append each measured table to this CSV")
    ap.add_argument("--mmap-threshold", type=int, metavar="BYTES",
                    help="run the tables with glibc's malloc returning every freed block above BYTES to the system "
                         "(MALLOC_MMAP_THRESHOLD_): the peak without the memory its heap keeps")
    ap.add_argument("--fit", nargs="+", metavar="CSV", help="refit the time coefficients on these CSVs; run nothing")
    ap.add_argument("--row-stage", nargs="+", type=int, metavar="FEATURES",
                    help="time the row interaction alone on one row of each of these feature counts; run no table")
    ap.add_argument("--versions", nargs="+", default=["v1", "v2"], choices=["v1", "v2"], help="with --row-stage")
    args = ap.parse_args(argv)
    if args.fit:
        return fit(args.fit)
    if args.row_stage:
        return row_stage(args.versions, args.row_stage, args.out)
    print("| version | context + queries x features | ensemble batch | stages | CPU s | model s | CPU / model "
          "| imports MB | peak MB | held MB | model MB | peak / model |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for table in args.tables:
            version, n_ctx, n_q, features, members = parse(table)
            ckpt = checkpoint(version, Path(tmp))
            for mode in args.modes:
                r = measure(ckpt, n_ctx, n_q, features, members, mode, args.mmap_threshold)
                model = modelled_mb(version, n_ctx, n_q, features, members, mode)
                ratio = r["peak_mb"] / model if model == model else float("nan")
                seconds = modelled_s(version, n_ctx, n_q, features, members)
                print(f"| {version} | {n_ctx} + {n_q} x {features} | {r['ensemble_batch']} | {mode} | {r['cpu_s']:.0f} "
                      f"| {seconds:.0f} | {r['cpu_s'] / seconds:.2f} | {r['before_mb']:.0f} | {r['peak_mb']:.0f} "
                      f"| {r['held_mb']:.0f} | {model:.0f} | {ratio:.2f} |", flush=True)
                if args.out:
                    append_row(args.out, {"version": version, "n_context": n_ctx, "n_query": n_q,
                                          "features": features, "members": members, "mode": mode,
                                          "mmap_threshold": args.mmap_threshold or "", **r})
    return 0


if __name__ == "__main__":
    sys.exit(main())
