"""Portable numerics: evaluation workers run with SIMD capped at AVX2 (the cause of the cross-machine
differences of the demo, see chorustic/evaluation/numerics.py), record it in the manifest, and leave a
value the user set alone."""

from __future__ import annotations

import textwrap

import pytest

from chorustic.evaluation.job import JobSpec
from chorustic.evaluation.numerics import PORTABLE_ENV, portable_numerics_env
from chorustic.evaluation.supervisor import run_supervised
from chorustic.protocols.contexts import build_contexts, write_contexts

PLUGIN = """
import numpy as np
from chorustic.methods import Method, MethodInfo, register


class NearestCentroid:
    def get_params(self, deep=True):
        return {}

    def fit(self, X, y):
        X = np.asarray(X).reshape(len(X), -1)
        self.classes_ = np.unique(y)
        self.c_ = np.stack([X[y == c].mean(0) for c in self.classes_])
        return self

    def predict_proba(self, X):
        d = ((np.asarray(X).reshape(len(X), -1)[:, None] - self.c_[None]) ** 2).sum(-1)
        e = np.exp(-(d - d.min(1, keepdims=True)) / d.std())
        return e / e.sum(1, keepdims=True)

    def predict(self, X):
        return self.classes_[self.predict_proba(X).argmax(1)]


@register
class NC(Method):
    info = MethodInfo(name="nc", display_name="NC", group="Classical", fits_on_target=True)

    def build(self, *, seed, device="cpu", n_jobs=1, **params):
        return NearestCentroid()
"""

pytestmark = pytest.mark.skipif(not portable_numerics_env(), reason="needs an x86-64 CPU with AVX2")


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    from chorustic.data import load_dataset

    root = tmp_path_factory.mktemp("numerics")
    (root / "plugins").mkdir()
    (root / "plugins" / "nc.py").write_text(textwrap.dedent(PLUGIN))
    ds = load_dataset("GunPoint", root / "raw", cache_dir=root / "cache", offline=True)
    ctx = root / "GunPoint.json"
    write_contexts(ctx, build_contexts(ds.y_train, dataset="GunPoint", archive="UCR"))

    def spec(results, **kw):
        return JobSpec(
            method="nc",
            plugin="nc",
            dataset="GunPoint",
            archive="UCR",
            results_dir=str(results),
            contexts_file=str(ctx),
            data_dir=str(root / "raw"),
            cache_dir=str(root / "cache"),
            protocols=["full"],
            plugin_dir=str(root / "plugins"),
            **kw,
        )

    return spec


def test_workers_run_with_simd_capped_at_avx2_and_say_so(job, tmp_path, monkeypatch):
    for key in PORTABLE_ENV:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("ATEN_CPU_CAPABILITY", "default")  # set by the user: kept
    portable = run_supervised(job(tmp_path / "a"))
    assert portable["numerics"] == {**PORTABLE_ENV, "ATEN_CPU_CAPABILITY": "default"}
    assert portable["numerics"]["NPY_DISABLE_CPU_FEATURES"].startswith("AVX512F")
    native = run_supervised(job(tmp_path / "b", portable_numerics=False))
    assert native["numerics"] == {"ATEN_CPU_CAPABILITY": "default"}
    assert portable["runs"][0]["status"] == native["runs"][0]["status"] == "ok"
