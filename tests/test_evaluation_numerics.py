"""Portable numerics: evaluation workers run with the pins of chorustic/evaluation/numerics.py (the
causes of the cross-machine and cross-vendor differences of the demo), the libraries in the worker
report that they use them (the manifest's ``numerics``), a value the user set is kept and makes the run
non-portable, and a demo subset reproduces the committed predictions bit for bit."""

from __future__ import annotations

import textwrap

import pytest

from chorustic.evaluation.job import JobSpec
from chorustic.run_plan import RunPlan
from chorustic.evaluation.aggregate import aggregate_manifests
from chorustic.evaluation.job import manifest_path
from chorustic.evaluation.numerics import PORTABLE_EFFECTIVE, PORTABLE_ENV, portable_numerics_env
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
        import numba  # noqa: F401  (loaded, so the manifest reports numba's target)
        import torch

        torch.ones(4, 4) @ torch.ones(4, 4)  # torch's MKL
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


def test_pins_reach_the_workers_libraries_and_the_record_says_so(job, tmp_path, monkeypatch):
    for key in PORTABLE_ENV:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("ATEN_CPU_CAPABILITY", "default")  # set by the user: kept, and the run not portable
    pinned = run_supervised(job(tmp_path / "a"))["numerics"]
    assert pinned["env"] == {**PORTABLE_ENV, "ATEN_CPU_CAPABILITY": "default"}
    # what numpy, torch, MKL, OpenBLAS and numba report inside the worker
    assert pinned["effective"] == {**PORTABLE_EFFECTIVE, "torch_cpu_capability": "DEFAULT"}
    assert pinned["portable"] is False and "ATEN_CPU_CAPABILITY=default" in pinned["reason"]

    native = run_supervised(job(tmp_path / "b", portable_numerics=False))
    assert native["numerics"]["env"] == {"ATEN_CPU_CAPABILITY": "default"}
    assert native["numerics"]["portable"] is False
    assert "portable_numerics is off" in native["numerics"]["reason"]
    assert native["runs"][0]["status"] == "ok"
    table = aggregate_manifests([manifest_path(tmp_path / "b", "nc", "GunPoint")])
    assert table["portable_numerics"].tolist() == [False]  # and so in accuracies.csv and the reports


#: Runs of the demo whose predictions differed between an AMD EPYC and an Intel Xeon before MKL was
#: pinned to its vendor-neutral branch (issue 31); their prediction files are committed next to the
#: demo's accuracies.
DEMO_SUBSET = (("quant", "ArrowHead", "prop40"), ("chorustic_small", "ArrowHead", "prop20"))


@pytest.mark.slow(reason="four demo jobs in workers (~14 s)")
def test_demo_subset_reproduces_the_committed_predictions_bit_for_bit(tmp_path):
    from pathlib import Path

    from chorustic import config as cc
    from chorustic.data import load_dataset
    from chorustic.reports.accuracies import load_accuracies
    from chorustic.reports.reproduction import differences_from_reference

    root = Path(__file__).resolve().parents[1]
    demo = root / "examples" / "demo" / "results"
    cfg = cc.load_config([root / "config" / "demo.yaml"])
    cfg["paths"].update(data_dir=str(tmp_path / "raw"), cache_dir=str(tmp_path / "cache"),
                        results_dir=str(tmp_path / "results"))
    manifests = []
    for method, dataset, protocol in DEMO_SUBSET:
        ctx = tmp_path / f"{dataset}.json"
        if not ctx.exists():
            ds = load_dataset(dataset, tmp_path / "raw", cache_dir=tmp_path / "cache", offline=True)
            write_contexts(ctx, build_contexts(ds.y_train, dataset=dataset, archive=ds.archive,
                                               protocols=cfg["protocols"], class_labels=ds.classes))
        plan = RunPlan.from_config(cfg, methods=[method], datasets=[dataset])
        spec = JobSpec.from_plan(plan, plan.job(method, dataset), contexts_file=ctx, protocols=[protocol])
        assert run_supervised(spec)["numerics"]["portable"] is True
        manifests.append(manifest_path(tmp_path / "results", method, dataset))
    ours = aggregate_manifests(manifests)
    diff = differences_from_reference(ours, tmp_path / "results", load_accuracies(demo / "accuracies.csv"), demo)
    assert len(diff) == len(DEMO_SUBSET) and set(diff["basis"]) == {"predictions"}
    assert set(diff["status"]) == {"identical"}, diff.to_string()
