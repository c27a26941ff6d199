"""Portable numerics: the same predictions on every x86-64 CPU with AVX2, Intel or AMD, not only on one machine.

Why results differ between machines with the same code, seeds and thread counts: numpy, torch (ATen
kernels, MKL, oneDNN), OpenBLAS and numba choose their code at run time from the CPU, by instruction
set and, in MKL's case, by vendor. Kernels that sum in another order differ in the last bits, and a
classifier close to a decision boundary (a ridge classifier with cross-validated regularisation, an
extra-trees split threshold on a feature computed by an FFT, ChorusTIC's probabilities on a near-tie)
then predicts another class.

What each pin does and why it is vendor-neutral (evidence: ``benchmarks/numerics_matrix.py``, output in
``benchmarks/numerics_matrix.md``):

* ``MKL_CBWR=COMPATIBLE`` (torch's MKL: matrix products, FFT). MKL's other CNR branches (``AVX2``,
  ``AVX512``) exist on Intel CPUs only: on an AMD CPU MKL silently replaces them by ``AUTO``, its own
  choice for that CPU (MKL's documentation; measured: the branch MKL reports is ``AUTO`` on an AMD EPYC
  with ``MKL_CBWR=AVX2``). ``COMPATIBLE`` is the one branch MKL runs alike on Intel and AMD (SSE2
  without the approximate ``rcpps``/``rsqrtps``). With ``MKL_CBWR=AVX2`` an AMD EPYC and an Intel Xeon
  disagreed on 8 of the demo's 480 accuracies (QUANT on ArrowHead and GunPoint, whose features include
  an FFT; ChorusTIC-small on ArrowHead and ItalyPowerDemand); on the AMD machine, MKL made to dispatch
  as on an Intel CPU reproduced those 8 Intel numbers exactly, and with ``COMPATIBLE`` the two
  dispatches give bit-identical predictions.
* ``NUMBA_CPU_NAME=haswell`` with ``NUMBA_CPU_FEATURES`` (numba: aeon's MiniRocket, MultiRocket, DTW).
  The CPU name alone keeps the *host's* features: numba then still emitted AVX-512 code on an AVX-512
  CPU, and the feature list differs between vendors and models. The explicit feature list makes the
  code haswell's (AVX2, FMA) on every machine.
* ``OPENBLAS_CORETYPE=Haswell`` (numpy's and scipy's OpenBLAS): one named kernel set instead of the one
  OpenBLAS picks by CPU model (SkylakeX on both an AVX-512 Xeon and a Zen 4 EPYC, Zen on Zen 2/3).
* ``ATEN_CPU_CAPABILITY=avx2`` (torch's own kernels), ``ONEDNN_MAX_CPU_ISA=AVX2`` (torch's oneDNN
  primitives), ``NPY_DISABLE_CPU_FEATURES`` (numpy's AVX-512 kernels): compiled or JIT code chosen by
  instruction set only, the same AVX2 code on every vendor.

:func:`portable_numerics_env` returns these variables; the evaluation supervisor starts every worker
with them (config ``evaluation.portable_numerics``, default true; a value the user set wins), and each
run manifest records under ``numerics`` what the libraries in the worker actually use
(:func:`numerics_record`) and whether the run is covered. Not covered, and marked so (``portable``
false with the reason, and the ``portable_numerics`` column of ``accuracies.csv``): runs on a GPU
(cuBLAS/cuDNN kernels depend on the GPU model), on CPUs without AVX2 and FMA or other architectures
(ARM), with ``evaluation.portable_numerics: false``, or with a pinned variable overridden. Thread counts
are the job's (``threads`` of the method's resources), the same on every machine.

What was measured on an AMD EPYC (Zen 4, AVX-512) with every other kernel choice forced in turn
(``benchmarks/numerics_matrix.md``): MKL made to dispatch as on an Intel CPU changes no prediction under
these pins; ``ONEDNN_MAX_CPU_ISA`` and ``ATEN_CPU_CAPABILITY`` at AVX-512 and numpy's AVX-512 kernels
change predictions (pinned at AVX2 here); OpenBLAS's core type and numba's target changed none of the
demo's predictions. That the AVX2 code of oneDNN, ATen, numpy and numba gives the same bits on an Intel
CPU follows from their dispatch (by instruction set, not vendor); a run on an Intel machine is the check.

Cost (demo jobs, one thread, quiet machine): none for the classical methods (QUANT 4.8 -> 4.9 s,
MiniRocket 2.3 -> 2.6 s per job); ChorusTIC-small on CPU about 1.6x (ArrowHead 2.3 -> 3.7 s,
ItalyPowerDemand 11.1 -> 19.1 s per job): its matrix products run in MKL's SSE2 branch.
"""

from __future__ import annotations

import ctypes
import os
import platform
import sys
from pathlib import Path
from typing import Any

__all__ = ["PORTABLE_ENV", "cpu_model", "portable_numerics_env", "numerics_key", "numerics_record", "effective_numerics",
           "mkl_branch"]

#: numpy's dispatch targets above AVX2 (unknown names are ignored by numpy on x86-64).
_NUMPY_AVX512 = (
    "AVX512F AVX512CD AVX512_KNL AVX512_KNM AVX512_SKX AVX512_CLX AVX512_CNL AVX512_ICL AVX512_SPR"
)

PORTABLE_ENV: dict[str, str] = {
    "NPY_DISABLE_CPU_FEATURES": _NUMPY_AVX512,  # numpy ufunc / reduction / sort kernels: AVX2 at most
    "ATEN_CPU_CAPABILITY": "avx2",  # torch's own CPU kernels
    "MKL_CBWR": "COMPATIBLE",  # MKL (torch's BLAS and FFT): the one branch MKL runs alike on Intel and AMD
    "ONEDNN_MAX_CPU_ISA": "AVX2",  # oneDNN (torch's convolution / linear / eltwise primitives)
    "OPENBLAS_CORETYPE": "Haswell",  # OpenBLAS kernels of numpy and scipy (a named set, not the CPU model's)
    "NUMBA_CPU_NAME": "haswell",  # numba's code generation (aeon's MiniRocket, MultiRocket, DTW ...) ...
    "NUMBA_CPU_FEATURES": "+avx2,+fma",  # ... with haswell's features only, not the host's (AVX-512, vendor's)
}

#: What the libraries report when the pins took effect (:func:`effective_numerics`).
PORTABLE_EFFECTIVE: dict[str, str] = {
    "numpy_simd": "AVX2",
    "torch_cpu_capability": "AVX2",
    "mkl_branch": "COMPATIBLE",
    "openblas_coretype": "Haswell",
    "numba_target": "haswell +avx2,+fma",
}

#: MKL's CNR branch codes (``MKL_CBWR_*`` of mkl_cbwr.h).
_MKL_BRANCHES = {
    1: "OFF", 2: "AUTO", 3: "COMPATIBLE", 4: "SSE2", 6: "SSSE3", 7: "SSE4_1", 8: "SSE4_2", 9: "AVX",
    10: "AVX2", 11: "AVX512_MIC", 12: "AVX512", 13: "AVX512_MIC_E1", 14: "AVX512_E1",
}


def _cpu_features() -> dict[str, bool]:
    try:
        from numpy._core._multiarray_umath import __cpu_features__
    except ImportError:  # pragma: no cover - numpy < 2
        from numpy.core._multiarray_umath import __cpu_features__
    return __cpu_features__


def _has_avx2() -> bool:
    features = _cpu_features()
    return bool(features.get("AVX2")) and bool(features.get("FMA3"))


def _x86_64() -> bool:
    return platform.machine().lower() in ("x86_64", "amd64")


def portable_numerics_env() -> dict[str, str]:
    """The variables of :data:`PORTABLE_ENV` on an x86-64 machine with AVX2 and FMA, else ``{}``."""
    if not _x86_64() or not _has_avx2():
        return {}
    return dict(PORTABLE_ENV)


def _numpy_simd() -> str:
    """The highest of numpy's dispatch targets this process runs (after ``NPY_DISABLE_CPU_FEATURES``)."""
    try:
        from numpy._core._multiarray_umath import __cpu_dispatch__
    except ImportError:  # pragma: no cover - numpy < 2
        from numpy.core._multiarray_umath import __cpu_dispatch__
    features = _cpu_features()
    enabled = [t for t in __cpu_dispatch__ if features.get(t)]
    return enabled[-1] if enabled else "baseline"


def mkl_branch() -> str | None:
    """The CNR branch torch's MKL runs (``AUTO``: MKL's own choice for this CPU; ``OFF``: no CNR mode),
    or None where it cannot be asked (no torch, MKL not exported by this torch build)."""
    torch = sys.modules.get("torch")
    if torch is None or not sys.platform.startswith("linux"):
        return None
    try:
        lib = ctypes.CDLL(str(Path(torch.__file__).parent / "lib" / "libtorch_cpu.so"))
        get = lib.mkl_serv_cbwr_get
    except (OSError, AttributeError):
        return None
    get.restype = ctypes.c_int
    get.argtypes = [ctypes.c_int]
    code = int(get(1))  # MKL_CBWR_BRANCH
    return _MKL_BRANCHES.get(code, str(code))


def _openblas_coretypes() -> str | None:
    try:
        from threadpoolctl import threadpool_info
    except ImportError:  # pragma: no cover
        return None
    types = sorted({str(i.get("architecture")) for i in threadpool_info() if i.get("internal_api") == "openblas"})
    return ",".join(types) or None


def _numba_target() -> str | None:
    if "numba" not in sys.modules:  # the method did not use numba
        return None
    import llvmlite.binding as ll
    from numba.core import config

    name = config.CPU_NAME or ll.get_host_cpu_name()
    features = config.CPU_FEATURES
    return f"{name} {features if features is not None else '(host features)'}"


def effective_numerics() -> dict[str, str | None]:
    """What the libraries of this process use: numpy's highest SIMD target, torch's CPU capability,
    MKL's CNR branch, OpenBLAS's core type(s), numba's code-generation target (None: the library is not
    loaded in this process, or cannot be asked)."""
    out: dict[str, str | None] = {"numpy_simd": _numpy_simd()}
    torch = sys.modules.get("torch")
    out["torch_cpu_capability"] = torch.backends.cpu.get_cpu_capability() if torch is not None else None
    out["mkl_branch"] = mkl_branch()
    out["openblas_coretype"] = _openblas_coretypes()
    out["numba_target"] = _numba_target()
    return out


def numerics_key(device: str = "cpu", requested: bool = True) -> dict[str, Any]:
    """What decides this process's floating-point results besides the code, the libraries and the data: the
    pins as it sees them and, where they do not make results portable (off, overridden, a GPU, a CPU without
    AVX2), this machine's processor. Work kept from an earlier attempt (a job's partial predictions and pair
    memo) is used only under the same key."""
    env = {k: os.environ.get(k) for k in PORTABLE_ENV}
    portable = (device == "cpu" and requested and _x86_64() and _has_avx2()
                and all(env[k] == v for k, v in PORTABLE_ENV.items()))
    key: dict[str, Any] = {"env": env, "portable": portable}
    if not portable:
        key["machine"] = {"arch": platform.machine(), "processor": cpu_model(), "device": device,
                          "features": sorted(k for k, v in _cpu_features().items() if v)}
    return key


def cpu_model() -> str:
    """This machine's processor as the kernel names it (``model name`` of /proc/cpuinfo)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def numerics_record(device: str = "cpu", requested: bool = True) -> dict[str, Any]:
    """The ``numerics`` of a run manifest: ``env`` (the pinned variables as this process sees them),
    ``effective`` (:func:`effective_numerics`), ``portable`` (predictions bit-identical on every x86-64
    CPU with AVX2, Intel or AMD) and, when not, ``reason``. ``requested``: the job asked for portable
    numerics (``evaluation.portable_numerics``)."""
    env = {k: os.environ[k] for k in PORTABLE_ENV if k in os.environ}
    effective = effective_numerics()
    reason = None
    if device != "cpu":
        reason = f"ran on {device}: GPU kernels (cuBLAS, cuDNN) differ between GPU models"
    elif not _x86_64() or not _has_avx2():
        reason = f"CPU without AVX2 and FMA or not x86-64 ({platform.machine()}): no portable pins"
    elif not requested:
        reason = "evaluation.portable_numerics is off: the libraries chose their code for this CPU"
    else:
        changed = sorted(k for k, v in PORTABLE_ENV.items() if env.get(k) != v)
        off = sorted(k for k, v in PORTABLE_EFFECTIVE.items() if effective.get(k) not in (None, v))
        if changed or off:
            reason = "pins overridden or not in effect: " + ", ".join(
                [f"{k}={env.get(k, '(unset)')}" for k in changed] + [f"{k} is {effective[k]}" for k in off]
            )
    record: dict[str, Any] = {"portable": reason is None, "env": env, "effective": effective}
    if reason is not None:
        record["reason"] = reason
    return record
