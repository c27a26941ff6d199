"""Which library's kernel choice changes which predictions: the forced-kernel matrix (issue 31).

The demo's numbers must be the same on Intel and AMD x86-64 CPUs with AVX2 or AVX-512. One machine
cannot be both vendors, so this runs demo jobs once with the evaluation workers' pins
(``chorustic.evaluation.numerics.PORTABLE_ENV``) and then once per *setting*: the pins with one choice
forced the way another CPU (or no pin) would make it, and compares every run's predictions with those of
its reference setting (``pinned`` unless stated): test cases predicted as another class and runs whose
probabilities differ in any bit (:func:`chorustic.reports.reproduction.differences_from_reference`).

Settings (one change at a time):

* MKL (torch's BLAS and FFT): the CNR branches ``MKL_CBWR``, ``MKL_ENABLE_INSTRUCTIONS``, and MKL
  dispatching **as on an Intel CPU**: MKL asks ``mkl_serv_intel_cpu_true()`` which vendor it runs on,
  and torch exports that symbol, so a two-line ``LD_PRELOAD`` shim compiled here (needs ``cc``) makes
  the MKL inside torch take the branches it takes on an Intel Xeon (its ``AUTO`` branch on this AVX-512
  CPU then reports ``AVX512_E1``; ``MKL_CBWR=AVX2`` becomes the real AVX2 branch instead of ``AUTO``);
* OpenBLAS core types (``OPENBLAS_CORETYPE``), oneDNN ISA caps (``ONEDNN_MAX_CPU_ISA``), torch's
  ATen capability (``ATEN_CPU_CAPABILITY``), numpy's dispatch (``NPY_DISABLE_CPU_FEATURES``), numba's
  target (``NUMBA_CPU_NAME`` / ``NUMBA_CPU_FEATURES``), thread count 2 instead of the job's 1;
* the pins before issue 31 (``MKL_CBWR=AVX2``, numba's CPU name without a feature list), on this CPU
  and with MKL as on Intel: the Intel-vs-AMD difference the issue reported.

Each setting runs in a fresh process (the libraries read these variables once, when loaded) that runs
the jobs the way the evaluation worker does (``run_job``, torch threads = the job's). Each manifest's
``numerics`` (what the libraries reported in that process) is printed per setting, so a setting that a
library ignored is visible. Results go to ``--out`` (default ``/tmp/chorustic-numerics-matrix``); the
Markdown table to stdout and ``--md``.

    nice python benchmarks/numerics_matrix.py --md benchmarks/numerics_matrix.md
    python benchmarks/numerics_matrix.py --settings pinned,mkl-avx2-as-intel --jobs quant:ArrowHead

Output of the first command on the development machine: ``benchmarks/numerics_matrix.md``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: The jobs of the demo whose predictions differed between an AMD EPYC and an Intel Xeon (QUANT,
#: ChorusTIC-small) and the numba / OpenBLAS users of the demo (MiniRocket, MultiRocket-Hydra, DTW).
DEFAULT_JOBS = (
    "quant:ArrowHead", "quant:GunPoint", "chorustic_small:ArrowHead", "chorustic_small:ItalyPowerDemand",
    "minirocket:JapaneseVowels", "multirocket_hydra:JapaneseVowels", "dtw_1nn:GunPoint",
)
_SHIM_C = """int mkl_serv_intel_cpu_true(void) { return 1; }
int mkl_serv_intel_cpu(void) { return 1; }
int mkl_serv_cpuiszen(void) { return 0; }
"""


@dataclasses.dataclass(frozen=True)
class Setting:
    name: str
    what: str
    env: dict  # variables set over the pins; value None: removed
    intel_mkl: bool = False  # MKL dispatching as on an Intel CPU (LD_PRELOAD shim)
    threads: int = 1
    reference: str = "pinned"


OLD_PINS = {"MKL_CBWR": "AVX2", "NUMBA_CPU_FEATURES": None}
SETTINGS = [
    Setting("pinned", "the workers' pins (PORTABLE_ENV)", {}),
    Setting("mkl-as-intel", "pins, MKL dispatching as on an Intel CPU", {}, intel_mkl=True),
    Setting("mkl-auto", "MKL_CBWR=AUTO (MKL's choice for this CPU)", {"MKL_CBWR": "AUTO"}),
    Setting("mkl-auto-as-intel", "MKL_CBWR=AUTO, MKL as on an Intel CPU", {"MKL_CBWR": "AUTO"}, intel_mkl=True),
    Setting("mkl-avx2", "MKL_CBWR=AVX2", {"MKL_CBWR": "AVX2"}),
    Setting("mkl-avx2-as-intel", "MKL_CBWR=AVX2, MKL as on an Intel CPU", {"MKL_CBWR": "AVX2"}, intel_mkl=True),
    Setting("mkl-avx512-as-intel", "MKL_CBWR=AVX512, MKL as on an Intel CPU", {"MKL_CBWR": "AVX512"},
            intel_mkl=True),
    Setting("mkl-unset", "MKL_CBWR unset (no CNR mode)", {"MKL_CBWR": None}),
    Setting("mkl-instr-avx512", "MKL_ENABLE_INSTRUCTIONS=AVX512 (with MKL_CBWR=COMPATIBLE)",
            {"MKL_ENABLE_INSTRUCTIONS": "AVX512"}),
    Setting("mkl-instr-avx512-as-intel", "MKL_ENABLE_INSTRUCTIONS=AVX512, MKL as on an Intel CPU",
            {"MKL_ENABLE_INSTRUCTIONS": "AVX512"}, intel_mkl=True),
    *[Setting(f"openblas-{c.lower()}", f"OPENBLAS_CORETYPE={c}", {"OPENBLAS_CORETYPE": c})
      for c in ("SkylakeX", "Cooperlake", "SapphireRapids", "Zen", "Sandybridge")],
    Setting("openblas-unset", "OPENBLAS_CORETYPE unset (OpenBLAS's choice for this CPU)",
            {"OPENBLAS_CORETYPE": None}),
    *[Setting(f"onednn-{i.lower()}", f"ONEDNN_MAX_CPU_ISA={i}", {"ONEDNN_MAX_CPU_ISA": i})
      for i in ("AVX512_CORE", "AVX512_CORE_BF16", "SSE41")],
    Setting("aten-default", "ATEN_CPU_CAPABILITY=default (no vector kernels)", {"ATEN_CPU_CAPABILITY": "default"}),
    Setting("aten-avx512", "ATEN_CPU_CAPABILITY=avx512", {"ATEN_CPU_CAPABILITY": "avx512"}),
    Setting("numpy-avx512", "NPY_DISABLE_CPU_FEATURES empty (numpy's AVX-512 kernels on)",
            {"NPY_DISABLE_CPU_FEATURES": ""}),
    Setting("numpy-avx", "numpy capped below AVX2 (AVX2, FMA3 and AVX-512 disabled)",
            {"NPY_DISABLE_CPU_FEATURES": "AVX2 FMA3 AVX512F AVX512CD AVX512_KNL AVX512_KNM AVX512_SKX "
                                         "AVX512_CLX AVX512_CNL AVX512_ICL AVX512_SPR"}),
    Setting("numba-host", "numba for this CPU (NUMBA_CPU_NAME / _FEATURES unset)",
            {"NUMBA_CPU_NAME": None, "NUMBA_CPU_FEATURES": None}),
    Setting("numba-haswell-hostfeat", "NUMBA_CPU_NAME=haswell, host's features (no NUMBA_CPU_FEATURES)",
            {"NUMBA_CPU_FEATURES": None}),
    Setting("numba-skylake-avx512", "NUMBA_CPU_NAME=skylake-avx512 (an Intel AVX-512 target)",
            {"NUMBA_CPU_NAME": "skylake-avx512", "NUMBA_CPU_FEATURES": "+avx512f,+avx512dq,+avx512bw,+avx512vl"}),
    Setting("numba-generic", "NUMBA_CPU_NAME=generic (x86-64 baseline)",
            {"NUMBA_CPU_NAME": "generic", "NUMBA_CPU_FEATURES": None}),
    Setting("threads-2", "2 threads instead of the job's 1", {}, threads=2),
    Setting("old-pins", "the pins before issue 31: MKL_CBWR=AVX2, numba without a feature list", OLD_PINS),
    Setting("old-pins-as-intel", "the pins before issue 31, MKL as on an Intel CPU (vs old-pins)", OLD_PINS,
            intel_mkl=True, reference="old-pins"),
]


def _config(out: Path) -> dict:
    from chorustic import config as cc

    cfg = cc.load_config([ROOT / "config" / "demo.yaml"])
    cfg["paths"].update(data_dir=str(out / "data" / "raw"), cache_dir=str(out / "data" / "cache"))
    return cfg


def _specs(cfg: dict, out: Path, setting: str, jobs: list[str]):
    from chorustic.commands.evaluate import _write_contexts
    from chorustic.evaluation.job import JobSpec
    from chorustic.run_plan import RunPlan

    specs = []
    for job in jobs:
        method, dataset = job.split(":")
        ctx = out / "contexts" / f"{dataset}.json"
        if not ctx.exists():
            _write_contexts(cfg, dataset, ctx)
        plan = RunPlan.from_config(cfg, methods=[method], datasets=[dataset])
        spec = JobSpec.from_plan(plan, plan.job(method, dataset), contexts_file=ctx)
        spec.results_dir = str(out / setting)
        specs.append(spec)
    return specs


def _child(args) -> int:
    """One setting: the jobs in this process, as the evaluation worker runs them."""
    import torch

    from chorustic.evaluation.job import run_job

    out = Path(args.out)
    torch.set_num_threads(int(args.threads))
    for spec in _specs(_config(out), out, args.child, args.jobs.split(",")):
        spec.n_jobs = int(args.threads)
        run_job(spec, log=lambda msg: None)
    return 0


def _shim(out: Path) -> str | None:
    src, lib = out / "mkl_as_intel.c", out / "mkl_as_intel.so"
    if not lib.exists():
        src.write_text(_SHIM_C)
        try:
            subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-o", str(lib), str(src)], check=True,
                           capture_output=True)
        except (OSError, subprocess.CalledProcessError):
            return None
    return str(lib)


def _run_setting(s: Setting, out: Path, jobs: list[str], shim: str | None) -> float | None:
    from chorustic.evaluation.numerics import PORTABLE_ENV
    from chorustic.evaluation.supervisor import thread_env

    env = thread_env(s.threads)
    for key in ("MKL_ENABLE_INSTRUCTIONS", "LD_PRELOAD"):
        env.pop(key, None)
    env.update(PORTABLE_ENV)
    for k, v in s.env.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    if s.intel_mkl:
        if shim is None:
            return None
        env["LD_PRELOAD"] = shim
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    t0 = time.perf_counter()
    subprocess.run([sys.executable, __file__, "--child", s.name, "--out", str(out), "--jobs", ",".join(jobs),
                    "--threads", str(s.threads)], env=env, check=True, cwd=ROOT)
    return time.perf_counter() - t0


def _table(out: Path, name: str, jobs: list[str]):
    """The setting's runs as an accuracies table (from its manifests), and their numerics records."""
    from chorustic.evaluation.aggregate import aggregate_manifests

    paths = [out / name / "runs" / j.split(":")[0] / f"{j.split(':')[1]}.json" for j in jobs]
    numerics = {}
    for p, j in zip(paths, jobs):
        if p.exists():
            numerics[j] = json.loads(p.read_text()).get("numerics") or {}
    return aggregate_manifests([p for p in paths if p.exists()]), numerics


def _cell(d) -> str:
    if d is None or not len(d):
        return "n/a"
    runs = int((d["n_cases_differ"] > 0).sum())
    cases = int(d["n_cases_differ"].sum())
    prob = int((d["probabilities"] != "identical").sum())
    return "=" if prob == 0 else (f"{runs} / {cases} ({prob})" if runs else f"0 / 0 ({prob})")


def _machine() -> str:
    model = vendor = ""
    flags: set[str] = set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            k, _, v = line.partition(":")
            k = k.strip()
            if k == "model name" and not model:
                model = v.strip()
            elif k == "vendor_id" and not vendor:
                vendor = v.strip()
            elif k == "flags" and not flags:
                flags = set(v.split())
    except OSError:
        pass
    isa = "AVX-512" if "avx512f" in flags else ("AVX2" if "avx2" in flags else "no AVX2")
    return f"{vendor} {model} ({isa}, {os.cpu_count()} CPUs), {platform.system()} {platform.machine()}"


def _versions() -> str:
    import aeon
    import numba
    import numpy
    import sklearn
    import torch

    return (f"numpy {numpy.__version__}, torch {torch.__version__}, numba {numba.__version__}, "
            f"scikit-learn {sklearn.__version__}, aeon {aeon.__version__}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="/tmp/chorustic-numerics-matrix")
    ap.add_argument("--jobs", default=",".join(DEFAULT_JOBS), help="METHOD:DATASET,... (demo method runs)")
    ap.add_argument("--settings", default=None, help="comma-separated setting names (default: all)")
    ap.add_argument("--md", default=None, help="also write the Markdown output here")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--threads", default="1", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return _child(args)

    from chorustic.reports.reproduction import differences_from_reference

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    jobs = args.jobs.split(",")
    wanted = list(dict.fromkeys(args.settings.split(","))) if args.settings else [s.name for s in SETTINGS]
    by_name = {s.name: s for s in SETTINGS}
    unknown = [w for w in wanted if w not in by_name]
    if unknown:
        ap.error(f"unknown settings {unknown}; known: {', '.join(by_name)}")
    chosen = [by_name[w] for w in wanted]
    for ref in {s.reference for s in chosen} - set(wanted):  # a setting's reference runs first
        chosen.insert(0, by_name[ref])
    shim = _shim(out) if any(s.intel_mkl for s in chosen) else None
    _specs(_config(out), out, "contexts-only", jobs)  # the context files, once, before any setting
    tables, numerics, seconds = {}, {}, {}
    for s in chosen:
        print(f"[{s.name}] {s.what}", file=sys.stderr, flush=True)
        seconds[s.name] = _run_setting(s, out, jobs, shim)
        if seconds[s.name] is not None:
            tables[s.name], numerics[s.name] = _table(out, s.name, jobs)

    lines = [
        "# Forced-kernel matrix: which setting changes which predictions",
        "",
        f"Machine: {_machine()}; {_versions()}.",
        f"Command: `python benchmarks/numerics_matrix.py {' '.join(argv if argv is not None else sys.argv[1:])}`",
        "",
        "Cell: runs with another predicted class / test cases predicted as another class (runs whose "
        "probabilities differ in any bit), against the reference setting; `=`: every run bit-identical. "
        "Each job is all 16 demo contexts (full, fixed 5 and 10 shots x 5 seeds, 20-60 %).",
        "",
        "| setting | reference | " + " | ".join(j.replace(":", " ") for j in jobs) + " | MKL branch | "
        "OpenBLAS | numba target | torch | numpy |",
        "|" + "---|" * (len(jobs) + 7),
    ]
    for s in chosen:
        if s.name not in tables:
            lines.append(f"| {s.name} | {s.reference} | " + " | ".join("skipped (no C compiler)" for _ in jobs)
                         + " | | | | | |")
            continue
        cells = []
        for j in jobs:
            method, dataset = j.split(":")
            mine, ref = tables[s.name], tables[s.reference]
            pick = (lambda t: t[(t["method"] == method) & (t["dataset"] == dataset)])
            d = differences_from_reference(pick(mine), out / s.name, pick(ref), out / s.reference) \
                if s.name != s.reference else None
            cells.append("(ref)" if s.name == s.reference else _cell(d))
        eff: dict[str, set] = {}
        for rec in numerics[s.name].values():
            for k, v in (rec.get("effective") or {}).items():
                if v is not None:
                    eff.setdefault(k, set()).add(str(v))
        show = [", ".join(sorted(eff.get(k, {"-"}))) for k in
                ("mkl_branch", "openblas_coretype", "numba_target", "torch_cpu_capability", "numpy_simd")]
        lines.append(f"| {s.name} | {s.reference} | " + " | ".join(cells) + " | " + " | ".join(show) + " |")
    lines += ["", "Settings:", ""]
    lines += [f"* `{s.name}`: {s.what}" for s in chosen]
    lines += ["", "Time of each setting's jobs (s, fit + predict summed over the runs; wall time of the process "
              "in the last column):", "",
              "| setting | " + " | ".join(j.replace(":", " ") for j in jobs) + " | process |",
              "|" + "---|" * (len(jobs) + 2)]
    for s in chosen:
        if s.name not in tables:
            continue
        t = tables[s.name]
        cost = []
        for j in jobs:
            m, d = j.split(":")
            sel = t[(t["method"] == m) & (t["dataset"] == d) & (t["status"] == "ok")]
            cost.append(f"{(sel['fit_time_s'].sum() + sel['predict_time_s'].sum()):.1f}" if len(sel) else "-")
        lines.append(f"| {s.name} | " + " | ".join(cost) + f" | {seconds[s.name]:.0f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.md:
        Path(args.md).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
