"""Measured peak memory and time of evaluate jobs next to what the methods' cost models predict.

Each point is one fresh process (so the imports are part of the peak, as in a real job) that builds
the method's estimator, fits it on ``n_train`` synthetic series and predicts ``n_test`` of them: one
protocol context. Printed per point: the measured resident peak (MB) and fit+predict time (s, one
thread), and the cost model's memory and per-context time (``chorustic.resources.CostModel``, before the
safety margins a job's request adds). The ratio columns must stay >= 1 where the model is meant as an
upper bound; they show how much a job over-asks.

    python benchmarks/job_costs.py [--methods minirocket quant ...] [--sizes 200x200x1x128 1000x1000x1x512]

A size is ``n_train x n_test x channels x length`` (the length the method receives: 512 for the
``resampled`` methods whatever is given). ``chorustic`` uses the committed CPU-pretrained small model
(``models/chorustic-small``) and ``chorustic_paper`` the paper configuration with random weights.

A quick check of one context in one process. The cost models themselves are fitted on whole evaluate
jobs (every protocol context, the job's own processes and limits) on stand-ins of the archives' largest
shapes: ``benchmarks/archive_scale.py``, figures in ``benchmarks/results/archive_scale.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_METHODS = ["minirocket", "multirocket_hydra", "quant", "dtw_1nn", "chorustic", "chorustic_paper"]
DEFAULT_SIZES = ["100x100x1x128", "500x500x1x512", "1000x1000x1x512", "300x300x8x256"]


def _data(n_train: int, n_test: int, c: int, length: int, k: int = 4, seed: int = 0):
    import numpy as np

    rng = np.random.default_rng(seed)
    n = n_train + n_test
    y = rng.integers(0, k, size=n)
    t = np.linspace(0, 1, length, dtype=np.float32)
    X = rng.standard_normal((n, c, length)).astype(np.float32).cumsum(axis=-1) * 0.1
    X += np.sin(2 * np.pi * (1 + y)[:, None, None] * t[None, None, :]).astype(np.float32)
    return X[:n_train], y[:n_train], X[n_train:], y[n_train:]


def _estimator(method: str):
    from chorustic.methods import discover

    if method == "chorustic_paper":
        sys.path.insert(0, str(REPO / "benchmarks"))
        from inference_cost import _model  # random weights, paper configuration

        from chorustic.inference import ChorusTICClassifier

        return ChorusTICClassifier(seed=0, device="cpu", n_jobs=1, model=_model("paper", 0)), "resampled"
    m = discover(only=method).methods[method]
    params = {}
    if method == "chorustic":
        params["checkpoint"] = str(REPO / "models" / "chorustic-small" / "model.safetensors")
    return m.build(seed=0, device="cpu", n_jobs=1, **params), m.info.input_kind


def measure_one(method: str, n_train: int, n_test: int, c: int, length: int) -> dict:
    est, kind = _estimator(method)
    if kind == "resampled":
        length = 512
    X_tr, y_tr, X_te, _ = _data(n_train, n_test, c, length)
    t0 = time.perf_counter()
    est.fit(X_tr, y_tr)
    t1 = time.perf_counter()
    est.predict_proba(X_te)
    t2 = time.perf_counter()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    model_mem, model_s = model_of(method, n_train, n_test, c, length)
    return {"peak_mb": peak, "fit_s": t1 - t0, "predict_s": t2 - t1, "length": length,
            "model_mb": model_mem, "model_s": model_s}


def model_of(method: str, n_train: int, n_test: int, c: int, length: int) -> tuple[float, float]:
    """The cost model's (memory MB, seconds) for one context, as a job of that size would get it."""
    from chorustic.methods import discover
    from chorustic.resources import JobSize

    name = "chorustic" if method == "chorustic_paper" else method
    m = discover(only=name).methods[name]
    params = {"checkpoint": str(REPO / "models" / "chorustic-small" / "model.safetensors")} if method == "chorustic" else {}
    return m.job_cost(JobSize(n_train, n_test, c, length, 1), **params)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--methods", nargs="+", default=DEFAULT_METHODS)
    ap.add_argument("--sizes", nargs="+", default=DEFAULT_SIZES)
    ap.add_argument("--one", nargs=5, metavar=("METHOD", "N_TRAIN", "N_TEST", "C", "L"), help=argparse.SUPPRESS)
    ap.add_argument("--timeout", type=float, default=900)
    args = ap.parse_args(argv)
    if args.one:
        method, *dims = args.one
        print(json.dumps(measure_one(method, *map(int, dims))))
        return 0
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
           "NUMBA_NUM_THREADS": "1", "CHORUSTIC_QUIET": "1"}
    print(f"{'method':18} {'size':>18} {'peak MB':>8} {'model MB':>9} {'ratio':>6} {'s/ctx':>8} {'model s':>8} {'ratio':>6}")
    for method in args.methods:
        for size in args.sizes:
            dims = [int(v) for v in size.split("x")]
            try:
                out = subprocess.run([sys.executable, __file__, "--one", method, *map(str, dims)], env=env,
                                     capture_output=True, text=True, timeout=args.timeout, cwd=REPO)
                got = json.loads(out.stdout.strip().splitlines()[-1])
            except Exception as exc:  # one failing point never stops the others
                tail = getattr(locals().get("out"), "stderr", "")[-300:]
                print(f"{method:18} {size:>18} error: {exc} {tail}")
                continue
            mem, secs = got["model_mb"], got["model_s"]
            took = got["fit_s"] + got["predict_s"]
            print(f"{method:18} {size:>18} {got['peak_mb']:8.0f} {mem:9.0f} {mem / got['peak_mb']:6.2f} "
                  f"{took:8.2f} {secs:8.2f} {secs / max(took, 1e-9):6.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
