"""Fixtures shared by the test files (the scaffolding they build on lives in ``chorustic.testing``)."""

from __future__ import annotations

import os

import pytest

MAX_WORKERS = 8

#: The torch build the jobs of the tests are costed for (chorustic.methods.cost.torch_build): the CPU build the
#: cost models are fitted on, whichever build runs the tests, so that the requests they check are the same on
#: every machine (the CUDA build's allowance has a test of its own).
os.environ["CHORUSTIC_TORCH_BUILD"] = "cpu"


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist: pytest without it (the GPU machines) ignores it
def pytest_xdist_auto_num_workers(config) -> int:
    """``-n auto`` (pyproject.toml's addopts): a worker per CPU this process may use (joblib's count: its
    affinity and a container's CPU quota; xdist's own is physical cores, one on a 2-vCPU hyperthreaded
    runner, and sees neither), at most :data:`MAX_WORKERS` (each test's jobs run on up to 2 cores; every
    worker holds a few hundred MB). Much of the suite waits on subprocesses (Snakemake, torchrun, a SLURM
    cluster, job workers): on 2 cores, 2 workers ran it in 11 min 37 s against 21 min 34 s in one process."""
    import joblib

    return max(1, min(MAX_WORKERS, joblib.cpu_count()))


@pytest.fixture(scope="module")
def torch_single_thread():
    """Tiny models gain nothing from intra-op threads, and on a busy machine every op then waits for the
    other thread (measured: 80x slower): a test module that uses tiny models runs single-threaded
    (``pytestmark = pytest.mark.usefixtures("torch_single_thread")``)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture
def hub(monkeypatch, tmp_path):
    """A local Hugging Face endpoint (chorustic.testing.hub.FakeHub) the harness downloads from, with an
    empty cache of its own."""
    from chorustic.testing.hub import FakeHub

    h = FakeHub()
    monkeypatch.setenv("HF_ENDPOINT", h.endpoint)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    import huggingface_hub.constants as hc

    # huggingface_hub reads HF_HUB_OFFLINE at import time; the endpoint is passed explicitly by
    # chorustic (read from HF_ENDPOINT at call time), so the hub's import-time constants stay as they are
    monkeypatch.setattr(hc, "HF_HUB_OFFLINE", False)
    yield h
    h.close()


@pytest.fixture(scope="session")
def minirocket_gunpoint_run(tmp_path_factory):
    """A small real run in the layout the workflow writes: one MiniRocket job (84 kernels) on GunPoint
    (inside the aeon wheel), protocols full and fixed5 (seeds 0-4), under ``<root>/results/`` (prediction
    files, run manifest) and the aeon summary files under ``<root>/reports/aeon/``. Returns ``(root,
    accuracies, dataset, aeon files)``. Shared by tests/test_results_interop.py and the snippets of
    docs/results.md that tests/test_docs.py runs in it (they copy it before writing anything)."""
    from chorustic.data import load_dataset
    from chorustic.evaluation.aggregate import aggregate_manifests
    from chorustic.evaluation.job import JobSpec, run_job
    from chorustic.protocols.contexts import build_contexts, write_contexts
    from chorustic.reports.accuracies import method_metadata, validate_accuracies
    from chorustic.reports.interop import write_aeon_results

    root = tmp_path_factory.mktemp("gunpoint-run")
    ds = load_dataset("GunPoint", root / "raw", cache_dir=root / "cache", offline=True)
    ctx = root / "results" / "contexts" / "GunPoint.json"
    write_contexts(ctx, build_contexts(ds.y_train, dataset="GunPoint", archive="UCR"))
    spec = JobSpec(
        method="minirocket",
        plugin="minirocket",
        dataset="GunPoint",
        archive="UCR",
        results_dir=str(root / "results"),
        contexts_file=str(ctx),
        data_dir=str(root / "raw"),
        cache_dir=str(root / "cache"),
        params={"n_kernels": 84},
        protocols=["full", "fixed5"],
    )
    manifest = run_job(spec)
    assert all(r["status"] == "ok" for r in manifest["runs"]) and len(manifest["runs"]) == 6
    df = aggregate_manifests([root / "results" / "runs" / "minirocket" / "GunPoint.json"])
    df = validate_accuracies(df)
    written = write_aeon_results(df, method_metadata(df), root / "reports" / "aeon")
    return root, df, ds, written


@pytest.fixture(scope="session")
def benchmark_script():
    """Load a script of ``benchmarks/`` as a module by its name (the scripts are not a package)."""
    import importlib.util
    from pathlib import Path

    def load(name: str):
        path = Path(__file__).resolve().parents[1] / "benchmarks" / f"{name}.py"
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod

    return load
