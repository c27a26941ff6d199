"""What many classes and long flattened rows cost the in-context learners: CPU time and peak memory of one
context's fit and prediction, by number of classes and ensemble batch.

ChorusTIC decodes at most K_max = 10 classes per in-context pass; more run its in-context stage once per node
of a class tree (:mod:`chorustic.class_tree`: 7 passes for 60 classes), every query in each. TabICL's time grows
with the square of a row's flattened features (``baselines/tabicl.py``; its memory per pass is measured by
``benchmarks/tabicl_memory.py``). Each case here runs in a fresh process under the evaluation workers' pinned
numerics (``chorustic.evaluation.numerics.portable_numerics_env``, one thread), with random weights of the
real architectures (``benchmarks/archive_scale.py``'s assets), on random series of ``--context`` context and
``--queries`` query rows of one channel of ``--length`` points; it prints the CPU time of fit + predict and
the process's peak resident memory above its start (after the imports). The cost models' terms
``time_ns_per_tree_query`` (chorustic) and ``time_ns_per_feature_pair`` (tabicl) are set from these figures.

    python benchmarks/many_classes.py [--methods chorustic_paper chorustic_small tabicl tabicl_v2] \\
        [--classes 10 60] [--context 60] [--queries 60] [--length 512] [--members 1 8] [--workdir /tmp/archive-scale]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

_CASE = r"""
import json, resource, sys, time
import numpy as np, torch
torch.set_num_threads(1)
sys.path[:0] = [{repo!r}, {bench!r}]
from pathlib import Path
import archive_scale
from chorustic.methods import discover
run = archive_scale._assets(Path({workdir!r}))[{method!r}]
plugin = discover(None).get(run["plugin"])
params = plugin.params(run["params"])
if {members} and "batch_size" in params:
    params["batch_size"] = {members}
rng = np.random.default_rng(0)
X = rng.standard_normal(({context}, 1, {length})).astype(np.float32)
Q = rng.standard_normal(({queries}, 1, {length})).astype(np.float32)
y = np.arange({context}) % {classes}
est = plugin.build(seed=0, **params)
start_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
t = time.process_time()
est.fit(X, y)
est.predict_proba(Q)
print(json.dumps({{"cpu_s": time.process_time() - t,
                  "peak_above_start_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 - start_mb,
                  "run_info": {{k: v for k, v in est.run_info_.items() if k in ("ensemble_batch", "query_chunk")}}}}))
"""


def main(argv=None) -> int:
    from chorustic.evaluation.numerics import portable_numerics_env
    from chorustic.evaluation.supervisor import thread_env

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--methods", nargs="+", default=["chorustic_paper", "chorustic_small", "tabicl", "tabicl_v2"])
    ap.add_argument("--classes", nargs="+", type=int, default=[10, 60])
    ap.add_argument("--context", type=int, default=60)
    ap.add_argument("--queries", type=int, default=60)
    ap.add_argument("--length", type=int, default=512)
    ap.add_argument("--members", nargs="+", type=int, default=[0],
                    help="TabICL's ensemble batch (0: the method's default); one case per value")
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/archive-scale"),
                    help="where archive_scale.py's random-weight files are (written once)")
    args = ap.parse_args(argv)
    env = {**thread_env(1), **portable_numerics_env()}  # one thread, the workers' pinned numerics
    print("| method | classes | ensemble batch | context + queries x length | CPU s | peak above start MB |")
    print("|---|---|---|---|---|---|")
    for method in args.methods:
        for members in args.members if method.startswith("tabicl") else [0]:
            for classes in args.classes:
                code = _CASE.format(repo=str(REPO), bench=str(REPO / "benchmarks"), workdir=str(args.workdir),
                                    method=method, members=members, context=args.context, queries=args.queries,
                                    length=args.length, classes=classes)
                out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
                if out.returncode != 0:
                    print(f"| {method} | {classes} | {members or 'default'} | | failed: "
                          f"{out.stderr.strip().splitlines()[-1][:120]} | |", flush=True)
                    continue
                r = json.loads(out.stdout.strip().splitlines()[-1])
                batch = r["run_info"].get("ensemble_batch", members or "default")
                print(f"| {method} | {classes} | {batch} | {args.context} + {args.queries} x {args.length} | "
                      f"{r['cpu_s']:.1f} | {r['peak_above_start_mb']:.0f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
