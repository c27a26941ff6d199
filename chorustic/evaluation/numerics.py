"""Portable numerics: the same predictions on every x86-64 machine with AVX2, not only on the same machine.

Why results differ between machines with the same code, seeds and thread counts: numpy, torch (ATen
kernels, MKL, oneDNN), OpenBLAS and numba choose their SIMD code at run time from the CPU. AVX-512 and
AVX2 kernels sum floating-point numbers in different orders, so the last bits differ, and a classifier
that is close to a decision boundary (MiniRocket's and MultiRocket-Hydra's ridge classifier with
cross-validated regularisation, ChorusTIC's probabilities on a near-tie) then predicts another class.
Measured on the demo profile (480 runs): an AVX-512 machine and an AVX2 machine disagreed on 11 runs
(MiniRocket and MultiRocket-Hydra on JapaneseVowels, ChorusTIC-small on ItalyPowerDemand; largest
difference 2.97 accuracy points, one run of MiniRocket on JapaneseVowels 5-shot seed 2; table averages
up to 0.30 points). Switching
only numpy's AVX-512 kernels off reproduced the AVX2 machine's numbers for the two Rocket methods;
torch additionally needed MKL's and oneDNN's AVX2 code paths.

:func:`portable_numerics_env` returns the environment variables that cap every one of these
libraries at AVX2 code paths; the evaluation worker is started with them (config
``evaluation.portable_numerics``, default true). With them the AVX-512 machine reproduced all 80
runs of the five demo methods on the datasets concerned exactly as the AVX2 machine had computed them,
at no measurable cost for the classical methods and ~10 % for ChorusTIC on CPU (the first run after
switching compiles numba's kernels once for the AVX2 target). They are not applied on machines without
AVX2 or on other architectures (ARM), and GPU kernels are outside their reach: results there may differ
in the last digits, and so may a decision at a near-tie.
"""

from __future__ import annotations

import platform

__all__ = ["PORTABLE_ENV", "portable_numerics_env"]

#: numpy's dispatch targets above AVX2 (unknown names are ignored by numpy on x86-64).
_NUMPY_AVX512 = (
    "AVX512F AVX512CD AVX512_KNL AVX512_KNM AVX512_SKX AVX512_CLX AVX512_CNL AVX512_ICL AVX512_SPR"
)

PORTABLE_ENV: dict[str, str] = {
    "NPY_DISABLE_CPU_FEATURES": _NUMPY_AVX512,  # numpy ufunc / reduction kernels
    "ATEN_CPU_CAPABILITY": "avx2",  # torch's own CPU kernels
    "MKL_CBWR": "AVX2",  # MKL (torch's BLAS) in conditional numerical reproducibility mode, AVX2 branch
    "ONEDNN_MAX_CPU_ISA": "AVX2",  # oneDNN (torch's convolution / linear primitives)
    "OPENBLAS_CORETYPE": "Haswell",  # OpenBLAS kernels of numpy and scipy (the AVX2 kernel family)
    "NUMBA_CPU_NAME": "haswell",  # numba's code generation (aeon's MiniRocket, QUANT, DTW ...)
}


def _has_avx2() -> bool:
    try:
        from numpy._core._multiarray_umath import __cpu_features__
    except ImportError:  # pragma: no cover - numpy < 2
        from numpy.core._multiarray_umath import __cpu_features__
    return bool(__cpu_features__.get("AVX2")) and bool(__cpu_features__.get("FMA3"))


def portable_numerics_env() -> dict[str, str]:
    """The variables of :data:`PORTABLE_ENV` on an x86-64 machine with AVX2 and FMA, else ``{}``."""
    if platform.machine().lower() not in ("x86_64", "amd64") or not _has_avx2():
        return {}
    return dict(PORTABLE_ENV)
