"""Evaluation jobs: every context runs, failures are recorded (never fatal, never a result file),
memory/time limits and crashes become recorded failures, test labels never reach a method,
same seed -> identical predictions, and the aggregate table reflects every run."""

from __future__ import annotations

import dataclasses
import json
import re
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from chorustic.evaluation.aggregate import COLUMNS, aggregate_manifests
from chorustic.evaluation.job import (JobSpec, clear_job_outputs, failure_record_path, manifest_path,
                                      progress_path, run_job)
from chorustic.evaluation.results import read_result_file, result_path
from chorustic.evaluation.supervisor import run_supervised
from chorustic.io import sha256_file
from chorustic.methods import discover
from chorustic.protocols.contexts import build_contexts, write_contexts
from fault_plugins import PLUGINS as FAULT_PLUGINS

PLUGINS = {
    "centroid.py": '''
        import numpy as np
        from chorustic.methods import Method, MethodInfo, register

        class Centroid:
            """Nearest class centroid on the flattened 512-length series (deterministic)."""
            def __init__(self, seed=0):
                self.seed = seed
            def get_params(self, deep=True):
                return {"seed": self.seed}
            def fit(self, X, y):
                X = np.asarray(X).reshape(len(X), -1)
                self.classes_ = np.unique(y)
                self.centroids_ = np.stack([X[y == c].mean(0) for c in self.classes_])
                return self
            def predict_proba(self, X):
                X = np.asarray(X).reshape(len(X), -1)
                d = ((X[:, None, :] - self.centroids_[None]) ** 2).sum(-1)
                e = np.exp(-(d - d.min(1, keepdims=True)) / d.std())
                return e / e.sum(1, keepdims=True)
            def predict(self, X):
                return self.classes_[self.predict_proba(X).argmax(1)]

        @register
        class CentroidMethod(Method):
            info = MethodInfo(name="centroid", display_name="Centroid", group="Classical", fits_on_target=True)
            def build(self, *, seed, device="cpu", n_jobs=1, **params):
                return Centroid(seed)
    ''',
    "plain.py": '''
        from chorustic.methods import CostModel, Method, MethodInfo, register
        from chorustic.methods import import_plugin_module
        Centroid = import_plugin_module(\"centroid\", __file__).Centroid

        @register
        class PlainMethod(Method):
            """The centroid, declared as computing without torch."""
            info = MethodInfo(name="plain", display_name="Plain", group="Classical", fits_on_target=True)
            cost = CostModel(loads_torch=False)
            def build(self, *, seed, device="cpu", n_jobs=1, **params):
                return Centroid(seed)
    ''',
    "flaky.py": '''
        import numpy as np
        from chorustic.methods import Method, MethodInfo, register
        from chorustic.methods import import_plugin_module
        Centroid = import_plugin_module(\"centroid\", __file__).Centroid

        class Flaky(Centroid):
            def fit(self, X, y):
                if len(y) < 20:
                    raise ValueError("too few examples for this method")
                return super().fit(X, y)

        @register
        class FlakyMethod(Method):
            info = MethodInfo(name="flaky", display_name="Flaky", group="Classical", fits_on_target=True)
            def build(self, *, seed, device="cpu", n_jobs=1, **params):
                return Flaky(seed)
    ''',
    "hog.py": FAULT_PLUGINS["hog.py"],  # allocates far beyond the job's memory limit on the full context
    "crash.py": '''
        import os, signal
        from chorustic.methods import Method, MethodInfo, register
        from chorustic.methods import import_plugin_module
        Centroid = import_plugin_module(\"centroid\", __file__).Centroid

        class Crash(Centroid):
            def fit(self, X, y):
                if len(y) > 20:  # the full context: die like a segfault / OOM kill would
                    os.kill(os.getpid(), signal.SIGKILL)
                return super().fit(X, y)

        @register
        class CrashMethod(Method):
            info = MethodInfo(name="crash", display_name="Crash", group="Classical", fits_on_target=True)
            def build(self, *, seed, device="cpu", n_jobs=1, **params):
                return Crash(seed)
    ''',
    "spy.py": '''
        import json, os
        import numpy as np
        from chorustic.methods import Method, MethodInfo, register
        from chorustic.methods import import_plugin_module
        Centroid = import_plugin_module(\"centroid\", __file__).Centroid

        class Spy(Centroid):
            def fit(self, X, y):
                with open(os.environ["SPY_LOG"], "a") as fh:
                    fh.write(json.dumps({"call": "fit", "n": len(y)}) + "\\n")
                return super().fit(X, y)
            def predict_proba(self, X, *args, **kwargs):
                with open(os.environ["SPY_LOG"], "a") as fh:
                    fh.write(json.dumps({"call": "predict_proba", "n": len(X), "args": len(args),
                                         "kwargs": sorted(kwargs)}) + "\\n")
                return super().predict_proba(X)

        @register
        class SpyMethod(Method):
            info = MethodInfo(name="spy", display_name="Spy", group="Classical", fits_on_target=True)
            def build(self, *, seed, device="cpu", n_jobs=1, **params):
                return Spy(seed)
    ''',
    "patient.py": '''
        import os, time
        from chorustic.methods import Method, MethodInfo, import_plugin_module, register

        Spy = import_plugin_module("spy", __file__).Spy

        class Patient(Spy):
            """The spy, waiting in the fit of a 20-series context while the file $PATIENT_BLOCK exists."""
            def fit(self, X, y):
                super().fit(X, y)
                while len(y) == 20 and os.path.exists(os.environ.get("PATIENT_BLOCK", "")):
                    time.sleep(0.1)
                return self

        @register
        class PatientMethod(Method):
            info = MethodInfo(name="patient", display_name="Patient", group="Classical", fits_on_target=True)
            def build(self, *, seed, device="cpu", n_jobs=1, **params):
                return Patient(seed)
    ''',
    "sleepy.py": '''
        import time
        from chorustic.methods import Method, MethodInfo, register
        from chorustic.methods import import_plugin_module
        Centroid = import_plugin_module(\"centroid\", __file__).Centroid

        class Sleepy(Centroid):
            def fit(self, X, y):
                time.sleep(120)
                return super().fit(X, y)

        @register
        class SleepyMethod(Method):
            info = MethodInfo(name="sleepy", display_name="Sleepy", group="Classical", fits_on_target=True)
            def build(self, *, seed, device="cpu", n_jobs=1, **params):
                return Sleepy(seed)
    ''',
    "jobwide.py": '''
        from chorustic.methods import Method, MethodInfo, register
        from chorustic.methods.inputs import to_fixed_length
        from chorustic.methods import import_plugin_module
        Centroid = import_plugin_module(\"centroid\", __file__).Centroid

        class Jobwide(Centroid):
            """Centroid that records the job-wide parameter the harness set on it."""
            largest = None
            def set_params(self, **params):
                for k, v in params.items():
                    setattr(self, k, v)
                return self
            def fit(self, X, y):
                self.run_info_ = {"largest": self.largest, "own": len(y)}
                return super().fit(X, y)

        @register
        class JobwideMethod(Method):
            info = MethodInfo(name="jobwide", display_name="Jobwide", group="Classical", fits_on_target=True)
            def build(self, *, seed, device="cpu", n_jobs=1, **params):
                return Jobwide(seed)
            def job_params(self, size, **params):  # a tuple too: JSON reads it back as a list
                return {"largest": max(c.n_train for c in size.contexts()), "split": (size.n_test, size.n_classes),
                        "length": size.length}

        class JobwideNative(Jobwide):
            """Jobwide on the series as they come (a variable-length list: each resampled to 32 points)."""
            def fit(self, X, y):
                return super().fit(to_fixed_length(X, 32), y)
            def predict_proba(self, X):
                return super().predict_proba(to_fixed_length(X, 32))

        @register
        class JobwideNativeMethod(JobwideMethod):
            info = MethodInfo(name="jobwide_native", display_name="Jobwide native", group="Classical",
                              fits_on_target=True, input_kind="native")
            def build(self, *, seed, device="cpu", n_jobs=1, **params):
                return JobwideNative(seed)
            def query_chunk(self, size, **params):  # the length it is given as its chunk: a run records its chunk
                return size.length
    ''',
    "chunky.py": '''
        import json, os
        import numpy as np
        from chorustic.methods import CostModel, Method, MethodInfo, register
        from chorustic.methods import import_plugin_module
        Centroid = import_plugin_module(\"centroid\", __file__).Centroid

        class Chunky(Centroid):
            """Centroid with a softmax scale from the context only (each query's prediction depends on the
            context and that query alone, as the contract says; Centroid's scale is the batch's)."""
            def fit(self, X, y):
                super().fit(X, y)
                self.scale_ = float(np.asarray(X).reshape(len(X), -1).std()) ** 2 * 512
                return self
            def predict_proba(self, X):
                with open(os.environ["SPY_LOG"], "a") as fh:
                    fh.write(json.dumps({"n": len(X)}) + "\\n")
                X = np.asarray(X).reshape(len(X), -1)
                d = ((X[:, None, :] - self.centroids_[None]) ** 2).sum(-1)
                e = np.exp(-(d - d.min(1, keepdims=True)) / self.scale_)
                return e / e.sum(1, keepdims=True)

        @register
        class ChunkyMethod(Method):
            info = MethodInfo(name="chunky", display_name="Chunky", group="Classical", fits_on_target=True)
            # 1/40 of the query budget (1024 MB) per query: the harness predicts 40 test series at a time
            cost = CostModel(mem_kb_per_series=1024 * 1024 / 40)
            def build(self, *, seed, device="cpu", n_jobs=1, **params):
                return Chunky(seed)
    ''',
    "halting.py": '''
        import os
        from chorustic.methods import MethodInfo, import_plugin_module, register

        chunky = import_plugin_module("chunky", __file__)
        Chunky = chunky.Chunky

        def nth_call(count_file):
            """This call's number, counted in ``count_file`` over the attempts' processes."""
            n = int(open(count_file).read()) + 1 if os.path.exists(count_file) else 1
            open(count_file, "w").write(str(n))
            return n

        class Halting(Chunky):
            """Chunky, stopping in its call number $HALT_AT (counted in $HALT_COUNT) as a killed worker would."""
            def set_params(self, **params):  # the job's parameters, where a test gives the method some
                return self
            def predict_proba(self, X):
                if os.environ.get("HALT_AT") and nth_call(os.environ["HALT_COUNT"]) == int(os.environ["HALT_AT"]):
                    if os.environ.get("HALT_HOW") == "kill":
                        import signal
                        os.kill(os.getpid(), signal.SIGKILL)
                    raise RuntimeError("stopped in the middle of the context")
                return super().predict_proba(X)

        @register
        class HaltingMethod(chunky.ChunkyMethod):  # its cost model: chunks of 40 queries
            info = MethodInfo(name="halting", display_name="Halting", group="Classical", fits_on_target=True)
            def build(self, *, seed, device="cpu", n_jobs=1, **params):
                return Halting(seed)
    ''',
    "memo_nn.py": '''
        import os
        import numpy as np
        from chorustic.methods import MethodInfo, import_plugin_module, register
        from chorustic.methods.inputs import series_digests
        from chorustic.methods.pair_memo import PAIR_MEMO

        halting = import_plugin_module("halting", __file__)

        class MemoNN(halting.Halting):
            """1-NN on Euclidean distances through the job's pair memo (stopping as Halting does); the number of
            pairs each call computed goes to $PAIRS_LOG."""
            def fit(self, X, y):
                super().fit(X, y)
                self.X_, self.y_ = np.asarray(X).reshape(len(X), -1), np.asarray(y)
                self.digests_ = series_digests(X)
                return self
            def predict_proba(self, X):
                super().predict_proba(X)  # logs the call, stops in call $HALT_AT
                Q = np.asarray(X).reshape(len(X), -1)
                def compute(qi, ci):
                    # its call number $PAIRS_HALT_AT (counted in $PAIRS_COUNT) stops it
                    if os.environ.get("PAIRS_HALT_AT") and \\
                            halting.nth_call(os.environ["PAIRS_COUNT"]) == int(os.environ["PAIRS_HALT_AT"]):
                        raise RuntimeError("stopped in the middle of a chunk's distances")
                    with open(os.environ["PAIRS_LOG"], "a") as fh:
                        fh.write(f"{len(qi) * len(ci)}\\n")
                    return np.sqrt(((Q[qi][:, None] - self.X_[ci][None]) ** 2).sum(-1))
                d = PAIR_MEMO.distances(("euclidean", None), series_digests(X), self.digests_, compute)
                return (self.y_[d.argmin(1)][:, None] == self.classes_[None]).astype(float)

        @register
        class MemoNNMethod(halting.HaltingMethod):  # chunks of 40 queries
            info = MethodInfo(name="memo_nn", display_name="MemoNN", group="Classical", fits_on_target=True)
            def build(self, *, seed, device="cpu", n_jobs=1, **params):
                return MemoNN(seed)
    ''',
    "memo_embed.py": '''
        import os
        import numpy as np
        from chorustic.methods import MethodInfo, import_plugin_module, register
        from chorustic.methods.embedding_memo import EMBEDDING_MEMO

        halting = import_plugin_module("halting", __file__)

        def embed(part):
            """A frozen 'encoder': 8 values per series (one series per call); each call goes to $EMBED_LOG, and the
            call number $EMBED_HALT_AT of an attempt stops it (a killed fit)."""
            with open(os.environ["EMBED_LOG"], "a") as fh:
                fh.write("1\\n")
            if os.environ.get("EMBED_HALT_AT"):
                embed.calls = getattr(embed, "calls", 0) + 1
                if embed.calls == int(os.environ["EMBED_HALT_AT"]):
                    raise RuntimeError("stopped in the middle of the fit")
            return np.asarray(part, dtype=np.float64).reshape(len(part), -1)[:, ::19][:, :8] * 2.0

        class MemoEmbed(halting.Halting):
            """1-NN on embeddings kept in the job's embedding memo (stopping as Halting does)."""
            def fit(self, X, y):
                super().fit(X, y)
                self.Z_ = EMBEDDING_MEMO.embed(("toy", 19), np.asarray(X).reshape(len(X), -1), embed, 1)
                self.y_ = np.asarray(y)
                return self
            def predict_proba(self, X):
                super().predict_proba(X)  # logs the call, stops in call $HALT_AT
                Z = EMBEDDING_MEMO.embed(("toy", 19), np.asarray(X).reshape(len(X), -1), embed, 1)
                d = ((Z[:, None] - self.Z_[None]) ** 2).sum(-1)
                return (self.y_[d.argmin(1)][:, None] == self.classes_[None]).astype(float)

        @register
        class MemoEmbedMethod(halting.HaltingMethod):  # chunks of 40 queries
            info = MethodInfo(name="memo_embed", display_name="MemoEmbed", group="Classical", fits_on_target=True)
            def build(self, *, seed, device="cpu", n_jobs=1, **params):
                return MemoEmbed(seed)
    ''',
    "scores.py": '''
        import numpy as np
        from chorustic.methods import Method, MethodInfo, register
        from chorustic.methods import import_plugin_module
        Centroid = import_plugin_module(\"centroid\", __file__).Centroid

        class Scores(Centroid):
            """A plain estimator (no ContractClassifier): the full context gets unnormalised scores (rows
            summing to 3), 10-shot contexts a NaN in row 2, the others float32-rounded probabilities a little
            off 1 (within PROBA_TOL)."""
            def predict_proba(self, X):
                p = super().predict_proba(X)
                if self.n_fit_ > 20:
                    return 3.0 * p
                if self.n_fit_ == 20:
                    p[2, 0] = np.nan
                    return p
                return (p * (1 + 5e-5)).astype(np.float32)
            def fit(self, X, y):
                self.n_fit_ = len(y)
                return super().fit(X, y)

        @register
        class ScoresMethod(Method):
            info = MethodInfo(name="scores", display_name="Scores", group="Classical", fits_on_target=True)
            def build(self, *, seed, device="cpu", n_jobs=1, **params):
                return Scores(seed)
    ''',
    "chatty.py": '''
        import sys
        from chorustic.methods import Method, MethodInfo, register
        from chorustic.methods import import_plugin_module
        Centroid = import_plugin_module(\"centroid\", __file__).Centroid

        class Chatty(Centroid):
            """Prints 3 MB to stdout and to stderr in every fit (a verbose library), then one last line."""
            def fit(self, X, y):
                for stream in (sys.stdout, sys.stderr):
                    stream.write("FIRST-LINE\\n" + ("x" * 99 + "\\n") * 30_000 + "LAST-LINE\\n")
                    stream.flush()
                return super().fit(X, y)

        @register
        class ChattyMethod(Method):
            info = MethodInfo(name="chatty", display_name="Chatty", group="Classical", fits_on_target=True)
            def build(self, *, seed, device="cpu", n_jobs=1, **params):
                return Chatty(seed)
    ''',
    "broken.py": "this is not python (\n",
}


@pytest.fixture(scope="module")
def plugin_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("plugins")
    for name, src in PLUGINS.items():
        (d / name).write_text(textwrap.dedent(src))
    return d


@pytest.fixture(scope="module")
def gunpoint(tmp_path_factory):
    from chorustic.data import load_dataset

    root = tmp_path_factory.mktemp("gp")
    data_dir, cache_dir = root / "raw", root / "cache"
    ds = load_dataset("GunPoint", data_dir, cache_dir=cache_dir, offline=True)
    ctx = root / "contexts" / "GunPoint.json"
    write_contexts(ctx, build_contexts(ds.y_train, dataset="GunPoint", archive="UCR"))
    return {"ds": ds, "data_dir": str(data_dir), "cache_dir": str(cache_dir), "contexts": str(ctx)}


def _read(results, run):
    """The prediction file of a manifest's run: its path is relative to the results folder."""
    return read_result_file(Path(results) / run["result_file"])


def _spec(gunpoint, plugin_dir, results, plugin, protocols=("full", "fixed5", "fixed10", "prop20")):
    return JobSpec(method=plugin, plugin=plugin, dataset="GunPoint", archive="UCR", results_dir=str(results),
                   contexts_file=gunpoint["contexts"], data_dir=gunpoint["data_dir"],
                   cache_dir=gunpoint["cache_dir"], protocols=list(protocols), plugin_dir=str(plugin_dir))


def test_broken_plugin_file_is_reported_and_skipped(plugin_dir):
    disc = discover(plugin_dir)
    assert "broken.py" in disc.broken and "SyntaxError" in disc.broken["broken.py"]
    assert {"centroid", "flaky", "hog", "crash", "spy"} <= set(disc.methods)


def test_job_runs_every_context_and_writes_tsml_files(gunpoint, plugin_dir, tmp_path):
    manifest = run_job(_spec(gunpoint, plugin_dir, tmp_path, "centroid"))
    runs = {(r["protocol"], r["seed"]): r for r in manifest["runs"]}
    assert set(runs) == {("full", 0), ("prop20", 0)} | {(f"fixed{k}", s) for k in (5, 10) for s in range(5)}
    assert all(r["status"] == "ok" for r in runs.values())
    assert runs[("fixed5", 0)]["n_context"] == 10 and runs[("full", 0)]["n_context"] == 50
    f = read_result_file(result_path(tmp_path, "fixed5", "centroid", "GunPoint", 3))
    assert f.accuracy == pytest.approx(np.mean(f.y_pred == f.y_true))
    np.testing.assert_array_equal(f.y_true, gunpoint["ds"].y_test)
    assert f.accuracy == runs[("fixed5", 3)]["accuracy"]
    assert f.info["class_labels"] == ["1", "2"]
    assert 0.6 < runs[("full", 0)]["accuracy"] <= 1.0
    assert json.loads(manifest_path(tmp_path, "centroid", "GunPoint").read_text()) == manifest


def test_large_test_splits_are_predicted_in_chunks_with_the_same_predictions(gunpoint, plugin_dir, tmp_path,
                                                                             monkeypatch):
    """A method whose cost model holds QUERY_MEMORY_MB / 40 (1024 MB / 40) per query gets 40 queries per predict_proba call
    (GunPoint: 150 test series -> 40, 40, 40, 30), recorded in the run; the predictions equal those of the
    same fitted estimator asked for the whole test split at once."""
    log = tmp_path / "calls.jsonl"
    monkeypatch.setenv("SPY_LOG", str(log))
    chunked = run_job(_spec(gunpoint, plugin_dir, tmp_path / "chunky", "chunky", ["full"]))
    assert [json.loads(line)["n"] for line in log.read_text().splitlines()] == [40, 40, 40, 30]
    assert chunked["runs"][0]["extra"]["query_chunk"] == 40
    monkeypatch.setattr("chorustic.methods.cost.QUERY_MEMORY_MB", 1e9)  # the same job, one call
    whole = run_job(_spec(gunpoint, plugin_dir, tmp_path / "whole", "chunky", ["full"]))
    assert [json.loads(line)["n"] for line in log.read_text().splitlines()][4:] == [150]
    assert "query_chunk" not in whole["runs"][0]["extra"]
    a, b = (_read(tmp_path / d, m["runs"][0]) for m, d in ((chunked, "chunky"), (whole, "whole")))
    np.testing.assert_array_equal(a.proba, b.proba)


@pytest.mark.slow(reason="a job over every context in a worker (~7 s)")
def test_job_params_come_from_every_context_of_the_job(gunpoint, plugin_dir, tmp_path):
    """Method.job_params sees the whole job: each context's estimator gets the largest context of the job's
    protocols (fixed10: 20 series), the 10-series contexts too, and again when a resumed job runs only the
    contexts an earlier attempt left; a job whose parameters differ from an earlier attempt's runs every context
    again."""
    spec = _spec(gunpoint, plugin_dir, tmp_path, "jobwide", ["fixed5", "fixed10"])
    runs = run_job(spec)["runs"]
    assert {r["extra"]["own"] for r in runs} == {10, 20}
    assert {r["extra"]["largest"] for r in runs} == {20}
    manifest = json.loads(manifest_path(tmp_path, "jobwide", "GunPoint").read_text())
    manifest["runs"] = [r for r in manifest["runs"] if r["protocol"] == "fixed10"]  # the fixed5 ones left undone
    manifest.pop("finished", None)
    progress_path(tmp_path, "jobwide", "GunPoint").write_text(json.dumps(manifest))
    again = run_job(spec, resume=True)["runs"]
    assert [r for r in again if r["protocol"] == "fixed10"] == manifest["runs"]  # kept, not run again
    resumed = [r for r in again if r["protocol"] == "fixed5"]
    assert len(resumed) == 5 and {r["extra"]["largest"] for r in resumed} == {20}
    # the same contexts in a job of fixed5 alone get other job parameters: the kept runs are not reused
    manifest = json.loads(manifest_path(tmp_path, "jobwide", "GunPoint").read_text())
    manifest.pop("finished", None)
    progress_path(tmp_path, "jobwide", "GunPoint").write_text(json.dumps(manifest))
    alone = run_job(_spec(gunpoint, plugin_dir, tmp_path, "jobwide", ["fixed5"]), resume=True)
    assert alone["inputs"]["job_params"] == {"largest": 10, "split": [150, 2], "length": 512}  # resampled
    assert len(alone["runs"]) == 5 and {r["extra"]["largest"] for r in alone["runs"]} == {10}


def test_a_jobs_size_has_the_longest_series_of_its_contexts_and_test_split():
    """On a variable-length dataset a context's longest series can be longer than the test split's (a method
    that resamples to its context's longest, as TabICL, gets that length): the size the harness gives the
    costing hooks and Method.job_params has the longer of the two."""
    from chorustic.evaluation.job import _job_size

    test = [np.zeros((3, n), np.float32) for n in (7, 20, 12)]
    assert _job_size(5, test, 4).length == 20
    assert _job_size(5, test, 4, context_length=29).length == 29
    size = _job_size(9, test, 4, (5, 9), context_length=29)
    assert (size.n_train, size.n_test, size.n_channels, size.n_classes) == (9, 3, 3, 4)
    assert [(c.n_train, c.length) for c in size.contexts()] == [(5, 29), (9, 29)]
    assert _job_size(5, np.zeros((6, 2, 40), np.float32), context_length=0).length == 40


def test_a_variable_length_job_is_sized_by_the_longest_series_of_its_contexts(plugin_dir, tmp_path, monkeypatch):
    """A JapaneseVowels stand-in (series of 7-29 points) whose test series are cut to at most 12 points: the job
    parameters get the longest series of the job's contexts (its training series, longer than any test series),
    and each context's query chunk the longest of its own."""
    import chorustic.data
    from chorustic.data.standin import write_standin
    from chorustic.methods.inputs import series_lengths

    write_standin("JapaneseVowels", tmp_path / "raw")
    load = chorustic.data.load_dataset

    def short_test_series(*args, **kwargs):
        ds = load(*args, **kwargs)
        return dataclasses.replace(ds, X_test_native=[s[:, :12] for s in ds.X_test_native])

    monkeypatch.setattr(chorustic.data, "load_dataset", short_test_series)
    ds = short_test_series("JapaneseVowels", tmp_path / "raw", cache_dir=tmp_path / "cache", offline=True,
                           series="native")
    one_shot = {"full": False, "fixed_shot": {"shots": [1], "seeds": [0, 1, 2, 3, 4]},
                "proportional": {"percents": [], "seeds": []}}  # 9 series a context: their longest differ
    contexts = build_contexts(ds.y_train, dataset="JapaneseVowels", archive="UEA", protocols=one_shot)
    write_contexts(tmp_path / "JapaneseVowels.json", contexts)
    spec = JobSpec(method="jobwide_native", plugin="jobwide_native", dataset="JapaneseVowels", archive="UEA",
                   results_dir=str(tmp_path / "res"), contexts_file=str(tmp_path / "JapaneseVowels.json"),
                   data_dir=str(tmp_path / "raw"), cache_dir=str(tmp_path / "cache"), protocols=["fixed1"],
                   plugin_dir=str(plugin_dir))
    manifest = run_job(spec)
    train = series_lengths(ds.X_train_native)
    own = {int(e["seed"]): int(train[e["indices"]].max()) for e in contexts["contexts"] if e["protocol"] == "fixed1"}
    assert max(series_lengths(ds.X_test_native)) == 12 < max(own.values())
    assert manifest["inputs"]["job_params"]["length"] == max(own.values())
    runs = manifest["runs"]
    assert len(runs) == 5 and all(r["status"] == "ok" for r in runs)
    assert {r["seed"]: r["extra"]["query_chunk"] for r in runs} == {s: max(n, 12) for s, n in own.items()}


def test_the_query_chunk_bounds_a_jobs_memory_at_any_test_size():
    """Per-query memory (features, distances to the context) is held for one chunk only: the estimate grows
    with the test split by its input values alone, and a chunk's pairs fit QUERY_MEMORY_MB."""
    from chorustic.methods.cost import QUERY_MEMORY_MB, CostModel, JobSize

    gram = CostModel(mem_base_mb=0, mem_bytes_per_value=0, mem_bytes_per_pair=16)  # context x (context + chunk)
    crop = JobSize(7200, 16800, 1, 46)
    chunk = gram.query_chunk(crop)
    assert chunk * 7200 * 16 <= QUERY_MEMORY_MB * 2**20 < (chunk + 1) * 7200 * 16
    ten_times = dataclasses.replace(crop, n_test=168_000)
    assert gram.estimate(ten_times)[0] == gram.estimate(crop)[0] == 7200 * 16 * (7200 + chunk) / 2**20
    # a nearest-neighbour search holds the chunk's distances to the context only (no context x context)
    dtw = CostModel(mem_base_mb=0, mem_bytes_per_value=0, mem_bytes_per_query_pair=16)
    assert dtw.query_chunk(crop) == chunk
    assert dtw.estimate(ten_times)[0] == dtw.estimate(crop)[0] == 7200 * 16 * chunk / 2**20 <= QUERY_MEMORY_MB
    small = JobSize(50, 150, 1, 150)
    assert dtw.query_chunk(small) == gram.query_chunk(small) == 150  # everything fits: one call, as before
    assert CostModel().query_chunk(crop) == 16800  # no per-query memory declared: one call


def test_long_predictions_are_cut_into_checkpointed_chunks_unless_the_method_reruns_its_context():
    """A context whose prediction takes 3.5 x CHECKPOINT_S by its cost model is predicted in 4 chunks, each kept
    on disk as it finishes; a method that runs its context again in every call (an in-context learner) keeps
    its memory chunk; memory bounds a chunk first. The plugins: 1NN-DTW's full context of FaceDetection
    (~70 minutes) in chunks of at most CHECKPOINT_S, ChorusTIC's at its memory budget."""
    from chorustic.methods.cost import CHECKPOINT_MIN_QUERIES, CHECKPOINT_S, CostModel, JobSize

    size = JobSize(n_train=1000, n_test=1000, n_channels=1, length=100)
    per_pair = 3.5 * CHECKPOINT_S * 1e9 / (1000 * 2000)  # ns per (context series, series) pair
    slow = CostModel(time_job_s=1e6, time_base_s=0, time_ns_per_value=0, time_ns_per_series_pair=per_pair)
    assert slow.query_chunk(size) == 1000 and slow.checkpoint_chunk(size) == 250  # the job's own 1e6 s: not a context's
    assert dataclasses.replace(slow, context_per_call=True).checkpoint_chunk(size) == 1000
    assert dataclasses.replace(slow, time_ns_per_series_pair=per_pair / 4).checkpoint_chunk(size) == 1000
    assert dataclasses.replace(slow, mem_kb_per_series=1024 * 1024 / 100).checkpoint_chunk(size) == 100

    methods = discover().methods
    face = JobSize(n_train=5890, n_test=3524, n_channels=144, length=62)
    dtw = methods["dtw_1nn"]
    seconds = dtw.job_cost(face)[1]
    chunk = dtw.query_chunk(face)
    assert seconds > 3 * CHECKPOINT_S and chunk < face.n_test
    assert seconds * chunk / face.n_test <= CHECKPOINT_S * 1.05  # the job's own terms are not a context's
    # MotorImagery's 100 queries take 5.6 hours by the model: chunks of 16 keep the job's threads busy, not 34 of 3
    assert dtw.query_chunk(JobSize(n_train=278, n_test=100, n_channels=64, length=3000)) == CHECKPOINT_MIN_QUERIES
    icl = methods["chorustic"]
    assert icl.query_chunk(face) == icl.cost_model().query_chunk(face)


def _calls(log: Path) -> list[int]:
    """The sizes of the predict calls logged so far (and the log emptied)."""
    sizes = [json.loads(line)["n"] for line in log.read_text().splitlines()] if log.exists() else []
    log.unlink(missing_ok=True)
    return sizes


def _halted(gunpoint, plugin_dir, tmp_path, monkeypatch, how="raise"):
    """The halting method's full context stopped in its third chunk (of 40, 40, 40, 30); its spec and the
    context's partial file."""
    from chorustic.evaluation.checkpoints import partial_path

    monkeypatch.setenv("HALT_AT", "3")
    monkeypatch.setenv("HALT_HOW", how)
    monkeypatch.setenv("HALT_COUNT", str(tmp_path / "count"))
    spec = dataclasses.replace(_spec(gunpoint, plugin_dir, tmp_path / "res", "halting", ["full"]),
                               fingerprint='{"code_sha256":"a"}')
    return spec, partial_path(tmp_path / "res", "halting", "GunPoint", "full", 0)


def test_a_context_stopped_mid_prediction_continues_from_its_kept_chunks(gunpoint, plugin_dir, tmp_path,
                                                                         monkeypatch):
    """A context stopped in its third chunk keeps the first two on disk (never as a result); the job's next
    start predicts only the last two and writes the prediction file an uninterrupted run writes, bit for bit,
    with the time of both attempts; the partial file goes."""
    log = tmp_path / "calls.jsonl"
    monkeypatch.setenv("SPY_LOG", str(log))
    monkeypatch.setattr("chorustic.evaluation.checkpoints.SAVE_EVERY_S", 0.0)  # every chunk kept
    whole = run_job(_spec(gunpoint, plugin_dir, tmp_path / "whole", "halting", ["full"]))
    assert _calls(log) == [40, 40, 40, 30]
    spec, part = _halted(gunpoint, plugin_dir, tmp_path, monkeypatch)
    first = run_job(spec)
    assert first["runs"][0]["status"] == "failed" and "stopped in the middle" in first["runs"][0]["error"]
    assert _calls(log) == [40, 40]
    assert part.is_file() and not result_path(tmp_path / "res", "full", "halting", "GunPoint", 0).exists()
    kept_s = float(json.loads(str(np.load(part)["spent"]))["cpu_s"])
    monkeypatch.delenv("HALT_AT")
    again = run_job(spec)
    assert _calls(log) == [40, 30]
    run = again["runs"][0]
    assert run["status"] == "ok" and run["extra"]["resumed_at_query"] == 80 and not part.exists()
    assert run["cpu_time_s"] >= kept_s > 0 and run["extra"]["earlier_attempts_cpu_s"] == round(kept_s, 3)
    a, b = _read(tmp_path / "whole", whole["runs"][0]), _read(tmp_path / "res", again["runs"][0])
    np.testing.assert_array_equal(a.proba, b.proba)


@pytest.mark.parametrize("change", ["fingerprint", "chunk", "job parameters", "a damaged file"])
def test_partial_predictions_are_kept_only_when_made_from_the_same_inputs(gunpoint, plugin_dir, tmp_path,
                                                                          monkeypatch, change, capsys):
    log = tmp_path / "calls.jsonl"
    monkeypatch.setenv("SPY_LOG", str(log))
    monkeypatch.setattr("chorustic.evaluation.checkpoints.SAVE_EVERY_S", 0.0)
    spec, part = _halted(gunpoint, plugin_dir, tmp_path, monkeypatch)
    run_job(spec)
    assert _calls(log) == [40, 40] and part.is_file()
    monkeypatch.delenv("HALT_AT")
    expected = [40, 40, 40, 30]
    if change == "fingerprint":  # the method's code or parameters changed
        spec = dataclasses.replace(spec, fingerprint='{"code_sha256":"b"}')
    if change == "chunk":  # half the memory per query: chunks of 80
        monkeypatch.setattr("chorustic.methods.cost.QUERY_MEMORY_MB", 2048.0)
        expected = [80, 70]
    if change == "job parameters":  # another protocol selection gave the job another plan (Method.job_params)
        monkeypatch.setattr("chorustic.methods.base.Method.job_params", lambda self, size, **params: {"passes": 2})
    if change == "a damaged file":
        part.write_bytes(part.read_bytes()[:200])
    run = run_job(spec)["runs"][0]
    assert _calls(log) == expected
    assert run["status"] == "ok" and "resumed_at_query" not in run["extra"] and not part.exists()
    assert "predicting every query" in capsys.readouterr().err


def _pairs(log: Path) -> int:
    """The pairs the memo method computed so far (and the log emptied)."""
    n = sum(int(line) for line in log.read_text().split()) if log.exists() else 0
    log.unlink(missing_ok=True)
    return n


def _memo_job(gunpoint, plugin_dir, tmp_path, monkeypatch, results="res"):
    from chorustic.evaluation.checkpoints import memo_path

    monkeypatch.setenv("SPY_LOG", str(tmp_path / "calls.jsonl"))
    monkeypatch.setenv("PAIRS_LOG", str(tmp_path / "pairs.txt"))
    monkeypatch.setattr("chorustic.evaluation.checkpoints.SAVE_EVERY_S", 0.0)  # every chunk kept
    spec = dataclasses.replace(_spec(gunpoint, plugin_dir, tmp_path / results, "memo_nn", ["full", "fixed5"]),
                               fingerprint='{"code_sha256":"a"}')
    return spec, memo_path(tmp_path / results, "memo_nn", "GunPoint")


@pytest.mark.slow(reason="a stopped and a resumed DTW job (~6 s)")
def test_a_stopped_job_keeps_its_pair_memo_and_computes_each_pair_once_over_its_attempts(
        gunpoint, plugin_dir, tmp_path, monkeypatch, capsys):
    """A nearest-neighbour job stopped in its full context's third chunk (its 5-shot contexts then ran): its
    memo file keeps the pairs computed, so the retry computes only the pairs no attempt computed.
    Over both attempts the job computes each (test, training) pair once, as an uninterrupted job does, and
    writes the same predictions; the memo file goes when the job has finished every context."""
    spec, memo = _memo_job(gunpoint, plugin_dir, tmp_path, monkeypatch, "whole")
    whole = run_job(spec)
    assert _pairs(tmp_path / "pairs.txt") == 150 * 50 and not memo.exists()  # each pair once
    spec, memo = _memo_job(gunpoint, plugin_dir, tmp_path, monkeypatch)
    monkeypatch.setenv("HALT_AT", "3")
    monkeypatch.setenv("HALT_COUNT", str(tmp_path / "count"))
    first = run_job(spec)
    assert [r["status"] for r in first["runs"]].count("failed") == 1 and memo.is_file()
    computed = _pairs(tmp_path / "pairs.txt")
    assert 0 < computed < 150 * 50
    monkeypatch.delenv("HALT_AT")
    capsys.readouterr()
    again = run_job(spec)
    assert f"{computed} distances computed by an earlier attempt are kept" in capsys.readouterr().err
    assert computed + _pairs(tmp_path / "pairs.txt") == 150 * 50
    assert all(r["status"] == "ok" for r in again["runs"]) and not memo.exists()
    full = next(r for r in again["runs"] if r["protocol"] == "full")
    assert full["extra"]["resumed_at_query"] == 80
    for a, b in zip(whole["runs"], again["runs"]):
        np.testing.assert_array_equal(_read(tmp_path / "whole", a).proba, _read(tmp_path / "res", b).proba)


def test_a_job_stopped_in_a_chunks_distances_keeps_the_blocks_of_queries_computed_before(
        gunpoint, plugin_dir, tmp_path, monkeypatch, capsys):
    """A chunk's distances can take an hour (1NN-DTW's 16 queries of MotorImagery on one thread): the pair memo
    computes them in blocks of queries (here one query each, PAIR_BLOCK_S 0) and the job writes its memo file
    after each, so a job stopped at its fifth query's distances keeps the four queries' before. Over both
    attempts each pair is computed once, with the predictions of an uninterrupted job."""
    monkeypatch.setattr("chorustic.methods.pair_memo.PAIR_BLOCK_S", 0.0)
    monkeypatch.setattr("chorustic.evaluation.checkpoints.MEMO_WRITE_SHARE", 0.0)
    _memo_job(gunpoint, plugin_dir, tmp_path, monkeypatch)  # its logs and SAVE_EVERY_S 0

    def spec(results):
        return dataclasses.replace(_spec(gunpoint, plugin_dir, tmp_path / results, "memo_nn", ["full"]),
                                   fingerprint='{"code_sha256":"a"}')

    whole = run_job(spec("whole"))
    assert _pairs(tmp_path / "pairs.txt") == 150 * 50
    monkeypatch.setenv("PAIRS_HALT_AT", "5")
    monkeypatch.setenv("PAIRS_COUNT", str(tmp_path / "count"))
    first = run_job(spec("res"))["runs"][0]
    assert first["status"] == "failed" and "middle of a chunk's distances" in first["error"]
    assert _pairs(tmp_path / "pairs.txt") == 4 * 50
    monkeypatch.delenv("PAIRS_HALT_AT")
    capsys.readouterr()
    again = run_job(spec("res"))["runs"][0]
    assert f"{4 * 50} distances computed by an earlier attempt are kept" in capsys.readouterr().err
    assert _pairs(tmp_path / "pairs.txt") == 146 * 50 and again["status"] == "ok"
    np.testing.assert_array_equal(_read(tmp_path / "whole", whole["runs"][0]).proba,
                                  _read(tmp_path / "res", again).proba)


def _carry(bench, results, keep, names):
    """keep_work copies exactly ``names`` (and removes a stale file of an earlier copy), a second copy copies
    nothing; the machine's folder is then gone and the copy restored in its place."""
    import shutil

    (keep / "stale.npz").parent.mkdir(parents=True, exist_ok=True)
    (keep / "stale.npz").write_bytes(b"from an earlier copy")
    assert bench.keep_work(results, keep, "memo_nn", "GunPoint") == len(names)
    assert sorted(p.name for p in keep.rglob("*") if p.is_file()) == sorted(names)
    assert bench.keep_work(results, keep, "memo_nn", "GunPoint") == 0  # nothing changed: nothing copied
    shutil.rmtree(results)  # the machine is gone
    assert bench.restore_work(keep, results) == len(names)


def test_a_job_with_finished_contexts_continues_on_another_machine_from_the_work_a_folder_carried(
        gunpoint, plugin_dir, tmp_path, monkeypatch, capfd, benchmark_script):
    """benchmarks/archive_scale.py --keep: a job (run as `chorustic evaluate` runs it) stopped in its full
    context's third chunk with its 5-shot contexts done (its record: failed runs) is copied to a folder (record,
    partial predictions of the first chunk, pair memo, the 5-shot prediction files), its machine's folder goes,
    and from the copy restored in the same path its next start keeps the 5-shot contexts, predicts the full
    context from its second chunk and computes only the pairs no attempt computed, with the predictions of an
    uninterrupted job. Once the job has finished it keeps nothing."""
    bench = benchmark_script("archive_scale")
    spec, memo = _memo_job(gunpoint, plugin_dir, tmp_path, monkeypatch, "whole")
    whole = run_job(spec)
    assert _pairs(tmp_path / "pairs.txt") == 150 * 50
    spec, memo = _memo_job(gunpoint, plugin_dir, tmp_path, monkeypatch)
    monkeypatch.setenv("HALT_AT", "3")
    monkeypatch.setenv("HALT_COUNT", str(tmp_path / "count"))
    run_supervised(spec)  # its worker writes the partial file after the first chunk, the memo whole at the end
    computed = _pairs(tmp_path / "pairs.txt")
    _calls(tmp_path / "calls.jsonl")
    results, keep = tmp_path / "res", tmp_path / "repo" / "kept"
    _carry(bench, results, keep, ["GunPoint.failed.json", ".GunPoint.full.seed0.partial.npz", ".GunPoint.pairmemo.npz"]
           + ["testResample%d.csv" % i for i in range(5)])
    monkeypatch.delenv("HALT_AT")
    capfd.readouterr()
    again = run_supervised(spec)
    err = capfd.readouterr().err
    assert "5 finished run(s)" in err and f"{computed} distances computed by an earlier attempt are kept" in err
    assert _calls(tmp_path / "calls.jsonl") == [40, 40, 30]  # the full context from its second chunk only
    assert computed + _pairs(tmp_path / "pairs.txt") == 150 * 50
    assert all(r["status"] == "ok" for r in again["runs"]) and len(again["runs"]) == 6
    by_context = {(r["protocol"], r["seed"]): r for r in again["runs"]}
    for a in whole["runs"]:
        b = by_context[(a["protocol"], a["seed"])]
        np.testing.assert_array_equal(_read(tmp_path / "whole", a).proba, _read(tmp_path / "res", b).proba)
    assert bench.kept_work(results, "memo_nn", "GunPoint") == []  # the benchmark then removes the copy


def test_a_job_stopped_in_its_first_context_carries_its_partial_predictions_and_memo(
        gunpoint, plugin_dir, tmp_path, monkeypatch, capfd, benchmark_script):
    """The machine gone in the job's first context (1NN-DTW's full context of EigenWorms: hours), before any record
    is written: its partial predictions and pair memo are copied all the same (a copy that waited for a record would
    carry nothing), a copy taken before the job has written anything never empties the folder, and the next start
    from the restored copy continues at its second chunk, computing only the pairs not computed before."""
    bench = benchmark_script("archive_scale")
    spec, memo = _memo_job(gunpoint, plugin_dir, tmp_path, monkeypatch, "whole")
    spec = dataclasses.replace(spec, protocols=["full"])
    whole = run_job(spec)
    _pairs(tmp_path / "pairs.txt")
    spec, memo = _memo_job(gunpoint, plugin_dir, tmp_path, monkeypatch)
    spec = dataclasses.replace(spec, protocols=["full"])
    monkeypatch.setenv("HALT_AT", "3")
    monkeypatch.setenv("HALT_COUNT", str(tmp_path / "count"))
    run_supervised(spec)
    failure_record_path(tmp_path / "res", "memo_nn", "GunPoint").unlink()  # as a machine lost mid-context leaves it
    assert _pairs(tmp_path / "pairs.txt") == 80 * 50
    results, keep = tmp_path / "res", tmp_path / "repo" / "kept"
    _carry(bench, results, keep, [".GunPoint.full.seed0.partial.npz", ".GunPoint.pairmemo.npz"])
    for p in [p for p in results.rglob("*") if p.is_file()]:
        p.unlink()  # a job that holds no work yet: the copy stays as it is
    bench.keep_work(results, keep, "memo_nn", "GunPoint")
    assert len([p for p in keep.rglob("*") if p.is_file()]) == 2
    assert bench.restore_work(keep, results) == 2
    monkeypatch.delenv("HALT_AT")
    capfd.readouterr()
    again = run_supervised(spec)
    assert f"{80 * 50} distances computed by an earlier attempt are kept" in capfd.readouterr().err
    run = again["runs"][0]
    assert run["status"] == "ok" and run["extra"]["resumed_at_query"] == 40
    assert _pairs(tmp_path / "pairs.txt") == 70 * 50  # the second chunk's pairs came from the memo
    np.testing.assert_array_equal(_read(tmp_path / "whole", whole["runs"][0]).proba,
                                  _read(tmp_path / "res", run).proba)


def test_kept_work_names_the_harness_commit_that_made_it(tmp_path, benchmark_script):
    """A job carried over many sessions runs from the commit it started on: its kept work counts only under the
    same method code. The folder names that commit, and an attempt from another stops, saying which to run
    from (never discarding the work)."""
    bench = benchmark_script("archive_scale")
    keep = tmp_path / "kept" / "EigenWorms-f1" / "dtw_1nn"
    bench._note_harness(keep, "dtw_1nn")
    note = keep.with_name("dtw_1nn.harness.json")
    head = json.loads(note.read_text())["commit"]
    assert len(head) == 40 or head == "unknown"
    note.write_text(json.dumps({"commit": "0" * 40, "method": "dtw_1nn"}))
    keep.mkdir(parents=True)
    bench._note_harness(keep, "dtw_1nn")  # no work kept yet: this commit makes it
    assert json.loads(note.read_text())["commit"] == head
    note.write_text(json.dumps({"commit": "0" * 40, "method": "dtw_1nn"}))
    (keep / "runs").mkdir()
    (keep / "runs" / ".EigenWorms.pairmemo.npz").write_bytes(b"distances")
    with pytest.raises(SystemExit, match=f"git worktree add <dir> {'0' * 40}"):
        bench._note_harness(keep, "dtw_1nn")
    assert json.loads(note.read_text())["commit"] == "0" * 40  # the note still names the commit of the work


def test_a_stopped_job_keeps_its_embedding_memo_and_embeds_each_series_once_over_its_attempts(
        gunpoint, plugin_dir, tmp_path, monkeypatch, capsys):
    """A frozen-encoder job stopped in its full context's third chunk: its embedding memo file keeps the 50
    training series and the 80 test series embedded before, so the retry embeds only the other 70 test series;
    over both attempts each series is embedded once, as in an uninterrupted job, with the same predictions."""
    from chorustic.evaluation.checkpoints import memo_path

    def embedded() -> int:
        log = tmp_path / "embed.txt"
        n = len(log.read_text().split()) if log.exists() else 0
        log.unlink(missing_ok=True)
        return n

    monkeypatch.setenv("SPY_LOG", str(tmp_path / "calls.jsonl"))
    monkeypatch.setenv("EMBED_LOG", str(tmp_path / "embed.txt"))
    monkeypatch.setattr("chorustic.evaluation.checkpoints.SAVE_EVERY_S", 0.0)  # every chunk kept
    whole = run_job(dataclasses.replace(_spec(gunpoint, plugin_dir, tmp_path / "whole", "memo_embed", ["full"]),
                                        fingerprint='{"code_sha256":"a"}'))
    assert embedded() == 200
    spec = dataclasses.replace(_spec(gunpoint, plugin_dir, tmp_path / "res", "memo_embed", ["full"]),
                               fingerprint='{"code_sha256":"a"}')
    memo = memo_path(tmp_path / "res", "memo_embed", "GunPoint", "embedding")
    monkeypatch.setenv("HALT_AT", "3")
    monkeypatch.setenv("HALT_COUNT", str(tmp_path / "count"))
    first = run_job(spec)
    assert first["runs"][0]["status"] == "failed" and memo.is_file()
    assert embedded() == 130
    monkeypatch.delenv("HALT_AT")
    capsys.readouterr()
    again = run_job(spec)
    assert "130 embeddings computed by an earlier attempt are kept" in capsys.readouterr().err
    assert embedded() == 70
    assert again["runs"][0]["status"] == "ok" and not memo.exists()
    assert again["runs"][0]["extra"]["resumed_at_query"] == 80
    np.testing.assert_array_equal(_read(tmp_path / "whole", whole["runs"][0]).proba,
                                  _read(tmp_path / "res", again["runs"][0]).proba)


def test_a_job_stopped_in_its_fit_keeps_the_embeddings_its_batches_made(gunpoint, plugin_dir, tmp_path, monkeypatch,
                                                                       capsys):
    """A frozen encoder's fit can embed for hours: the memo file is written as its batches finish (spaced like the
    chunks' writes), so a job stopped in its first fit (here at its 20th series) keeps the 19 embedded before."""
    from chorustic.evaluation.checkpoints import memo_path

    monkeypatch.setenv("SPY_LOG", str(tmp_path / "calls.jsonl"))
    monkeypatch.setenv("EMBED_LOG", str(tmp_path / "embed.txt"))
    monkeypatch.setattr("chorustic.evaluation.checkpoints.SAVE_EVERY_S", 0.0)
    monkeypatch.setattr("chorustic.evaluation.checkpoints.MEMO_WRITE_SHARE", 0.0)  # every batch written
    spec = dataclasses.replace(_spec(gunpoint, plugin_dir, tmp_path / "res", "memo_embed", ["full"]),
                               fingerprint='{"code_sha256":"a"}')
    monkeypatch.setenv("EMBED_HALT_AT", "20")
    first = run_job(spec)
    assert first["runs"][0]["status"] == "failed" and "middle of the fit" in first["runs"][0]["error"]
    assert memo_path(tmp_path / "res", "memo_embed", "GunPoint", "embedding").is_file()
    monkeypatch.delenv("EMBED_HALT_AT")
    (tmp_path / "embed.txt").unlink()
    capsys.readouterr()
    again = run_job(spec)
    assert "19 embeddings computed by an earlier attempt are kept" in capsys.readouterr().err
    assert again["runs"][0]["status"] == "ok" and len((tmp_path / "embed.txt").read_text().split()) == 181


@pytest.mark.slow
def test_a_killed_worker_s_pair_memo_is_kept_as_it_was_last_written(gunpoint, plugin_dir, tmp_path, monkeypatch):
    """Under the supervisor, the memo job's worker killed (SIGKILL) in its full context's third chunk: the memo
    file holds the pairs of the chunks written before the kill (the first at once, later ones at most every
    SAVE_EVERY_S), the restarted worker and the job's next start read it, and over all attempts the job
    computes at most the pairs of the unwritten second chunk twice (without the file: 14,600 pairs here)."""
    spec, memo = _memo_job(gunpoint, plugin_dir, tmp_path, monkeypatch)
    monkeypatch.setenv("HALT_AT", "3")
    monkeypatch.setenv("HALT_HOW", "kill")
    monkeypatch.setenv("HALT_COUNT", str(tmp_path / "count"))
    first = run_supervised(spec)
    full = next(r for r in first["runs"] if r["protocol"] == "full")
    assert full["status"] == "failed" and "SIGKILL" in full["error"] and memo.is_file()
    monkeypatch.delenv("HALT_AT")
    again = run_supervised(spec)
    assert all(r["status"] == "ok" for r in again["runs"]) and not memo.exists()
    assert 150 * 50 <= _pairs(tmp_path / "pairs.txt") <= 150 * 50 + 40 * 50


def test_a_memo_file_that_cannot_be_written_never_stops_the_job(gunpoint, plugin_dir, tmp_path, monkeypatch,
                                                                 capsys):
    """A full disk when the memo is written (it can be GBs where the prediction files are KBs): the job says so
    once and finishes every context with the predictions of a job that kept its memo, the memo in memory."""
    import contextlib

    from chorustic.errors import NoSpaceError
    from chorustic.evaluation import checkpoints

    spec, memo = _memo_job(gunpoint, plugin_dir, tmp_path, monkeypatch, "whole")
    whole = run_job(spec)
    spec, memo = _memo_job(gunpoint, plugin_dir, tmp_path, monkeypatch)
    real = checkpoints.atomic_open

    @contextlib.contextmanager
    def full_disk(path, *args, **kwargs):
        if str(path).endswith(".pairmemo.npz"):
            raise NoSpaceError(path, kwargs.get("size"))
        with real(path, *args, **kwargs) as fh:
            yield fh

    monkeypatch.setattr(checkpoints, "atomic_open", full_disk)
    capsys.readouterr()
    done = run_job(spec)
    assert capsys.readouterr().err.count("the pair memo cannot be written (NoSpaceError") == 1
    assert all(r["status"] == "ok" for r in done["runs"]) and not memo.exists()
    assert _pairs(tmp_path / "pairs.txt") == 2 * 150 * 50  # each job computed each pair once
    for a, b in zip(whole["runs"], done["runs"]):
        np.testing.assert_array_equal(_read(tmp_path / "whole", a).proba, _read(tmp_path / "res", b).proba)


@pytest.mark.parametrize("change", ["fingerprint", "a library's version", "the numerics", "a damaged file"])
def test_a_pair_memo_is_kept_only_when_made_from_the_same_inputs(gunpoint, plugin_dir, tmp_path, monkeypatch,
                                                                 change, capsys):
    """A memo file made by other code, under another library version or other numerics pins (like the
    context's partial predictions), or damaged, is removed: the retry computes every pair."""
    spec, memo = _memo_job(gunpoint, plugin_dir, tmp_path, monkeypatch)
    monkeypatch.setenv("HALT_AT", "3")
    monkeypatch.setenv("HALT_COUNT", str(tmp_path / "count"))
    run_job(spec)
    assert memo.is_file()
    monkeypatch.delenv("HALT_AT")
    _pairs(tmp_path / "pairs.txt")
    expected = "made from other inputs"
    if change == "fingerprint":
        spec = dataclasses.replace(spec, fingerprint='{"code_sha256":"b"}')
    elif change == "a library's version":
        monkeypatch.setattr("chorustic.evaluation.job.KEPT_WORK_LIBRARIES", ("pytest",))
    elif change == "the numerics":
        monkeypatch.setenv("NUMBA_CPU_NAME", "skylake-avx512")
    else:
        memo.write_bytes(memo.read_bytes()[:300])
        expected = "unreadable"
        for f in memo.parent.glob(".*.partial.npz"):  # the memo file alone is what the retry could keep
            f.unlink()
    capsys.readouterr()
    run_job(spec)
    assert f"the pair memo of an earlier attempt was {expected}" in capsys.readouterr().err
    assert _pairs(tmp_path / "pairs.txt") == 150 * 50 and not memo.exists()


@pytest.mark.slow
def test_a_killed_worker_s_context_continues_from_its_first_chunk(gunpoint, plugin_dir, tmp_path, monkeypatch):
    """Under the supervisor, a worker killed (SIGKILL) in the third chunk of a context: the job records the
    context failed; its next start continues from the chunks the worker kept (the first at once, later ones
    at most every SAVE_EVERY_S) and predicts only the rest."""
    log = tmp_path / "calls.jsonl"
    monkeypatch.setenv("SPY_LOG", str(log))
    spec, part = _halted(gunpoint, plugin_dir, tmp_path, monkeypatch, how="kill")
    first = run_supervised(spec)
    assert first["runs"][0]["status"] == "failed" and "SIGKILL" in first["runs"][0]["error"]
    assert _calls(log) == [40, 40]
    kept = len(np.load(part)["proba"])
    assert kept in (40, 80)
    monkeypatch.delenv("HALT_AT")
    again = run_supervised(spec)
    run = again["runs"][0]
    assert run["status"] == "ok" and run["extra"]["resumed_at_query"] == kept
    assert sum(_calls(log)) == 150 - kept and not part.exists()


def test_same_seed_same_predictions(gunpoint, plugin_dir, tmp_path):
    a = run_job(_spec(gunpoint, plugin_dir, tmp_path / "a", "centroid", ["fixed5"]))
    b = run_job(_spec(gunpoint, plugin_dir, tmp_path / "b", "centroid", ["fixed5"]))
    for ra, rb in zip(a["runs"], b["runs"]):
        fa, fb = _read(tmp_path / "a", ra), _read(tmp_path / "b", rb)
        np.testing.assert_array_equal(fa.proba, fb.proba)


def test_failing_contexts_are_recorded_without_result_files(gunpoint, plugin_dir, tmp_path):
    manifest = run_job(_spec(gunpoint, plugin_dir, tmp_path, "flaky"))
    runs = {(r["protocol"], r["seed"]): r for r in manifest["runs"]}
    assert runs[("fixed5", 0)]["status"] == "failed"
    assert "ValueError: too few examples" in runs[("fixed5", 0)]["error"]
    assert not result_path(tmp_path, "fixed5", "flaky", "GunPoint", 0).exists()
    assert runs[("full", 0)]["status"] == "ok"  # one failure never stops the others
    assert result_path(tmp_path, "full", "flaky", "GunPoint", 0).exists()


def test_rows_that_are_not_probabilities_fail_the_run_and_rounding_is_renormalised(gunpoint, plugin_dir,
                                                                                      tmp_path):
    """A plain estimator (not a ContractClassifier) is held to the same probability clause: scores fail
    their run with a message naming the run, the row and what to do; float32 rounding within PROBA_TOL is
    renormalised in float64, never a failure."""
    manifest = run_job(_spec(gunpoint, plugin_dir, tmp_path, "scores", ["full", "fixed5", "fixed10"]))
    runs = {(r["protocol"], r["seed"]): r for r in manifest["runs"]}
    full = runs[("full", 0)]
    assert full["status"] == "failed"
    assert (f"[scores/GunPoint/full/seed0] Scores (from the plugin file {plugin_dir.name}/scores.py): predict_proba "
            "returned rows that are not probabilities" in full["error"]), full["error"]
    assert "row 0 sums to 3" in full["error"] and "apply a softmax" in full["error"]
    nan = runs[("fixed10", 0)]  # a NaN: the row, the column, the likely cause and the fix (issue 72, case 8)
    assert nan["status"] == "failed" and f"plugin file {plugin_dir.name}/scores.py" in nan["error"], nan["error"]
    assert "row 2 holds nan in column 0" in nan["error"] and "apply a softmax" in nan["error"]
    assert not result_path(tmp_path, "full", "scores", "GunPoint", 0).exists()
    assert failure_record_path(tmp_path, "scores", "GunPoint").exists()
    ok = [r for k, r in runs.items() if k[0] == "fixed5"]
    assert len(ok) == 5 and all(r["status"] == "ok" for r in ok)
    proba = _read(tmp_path, ok[0]).proba
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=0, atol=1e-12)


def test_method_only_ever_sees_test_features(gunpoint, plugin_dir, tmp_path, monkeypatch):
    log = tmp_path / "spy.jsonl"
    monkeypatch.setenv("SPY_LOG", str(log))
    run_job(_spec(gunpoint, plugin_dir, tmp_path, "spy", ["full", "fixed5"]))
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    assert [c["call"] for c in calls] == ["fit", "predict_proba"] * 6
    assert all(c["n"] == 150 and c["args"] == 0 and c["kwargs"] == [] for c in calls if c["call"] == "predict_proba")


def test_a_full_context_is_a_view_of_the_training_split_and_a_subset_a_copy():
    """FaceDetection's full context is 1.7 GB at 512 points: the job hands it to ``fit`` without a copy (the
    contract forbids a method to change its input in place: ``chorustic check-method``'s "inputs left
    unchanged"); a sampled context is the rows it names."""
    from chorustic.methods.inputs import take_series
    from chorustic.protocols.full import full_context

    X = np.arange(60, dtype=np.float32).reshape(10, 2, 3)
    full = take_series(X, full_context(np.zeros(10)))
    assert np.shares_memory(full, X) and np.array_equal(full, X)
    tail = take_series(X, np.arange(4, 10))
    assert np.shares_memory(tail, X) and np.array_equal(tail, X[4:])
    shots = take_series(X, np.array([0, 2, 5]))
    assert not np.shares_memory(shots, X) and np.array_equal(shots, X[[0, 2, 5]])
    with pytest.raises(IndexError):  # past the split: an error, as any index, never a shorter slice
        take_series(X, np.arange(8, 12))
    ragged = [X[i, :, : i % 3 + 1] for i in range(10)]
    assert all(a is ragged[i] for a, i in zip(take_series(ragged, [1, 4]), [1, 4]))


def test_rerun_removes_files_of_an_unfinished_attempt(gunpoint, plugin_dir, tmp_path):
    """A job about to run its contexts removes what an earlier attempt left of exactly those contexts; the
    files of contexts it does not run (another protocol selection's finished results) stay."""
    stale = result_path(tmp_path, "fixed5", "centroid", "GunPoint", 4)
    other = result_path(tmp_path, "full", "centroid", "GunPoint", 0)
    for p in (stale, other):
        p.parent.mkdir(parents=True)
        p.write_text("a file of an earlier attempt")
    assert clear_job_outputs(tmp_path, "centroid", "GunPoint", [("fixed5", s) for s in range(5)]) == [stale]
    assert not stale.exists() and other.exists()


@pytest.mark.slow(reason="jobs in workers with and without torch (~5 s)")
def test_the_worker_of_a_method_without_torch_never_loads_it(gunpoint, plugin_dir, tmp_path):
    """torch is the method's to load: a worker that loaded it for every job, or to see whether ``device: auto``
    has a GPU, held its libraries (190 MB with the CPU build, 470 MB with the CUDA build) in 1NN-DTW's jobs too,
    and on the CUDA build its smallest jobs went past their memory. A method whose cost
    model says it does not load torch runs ``auto`` on the CPU. The manifest's numerics say which libraries the
    worker loaded."""
    plain = run_supervised(dataclasses.replace(_spec(gunpoint, plugin_dir, tmp_path / "plain", "plain", ["fixed5"]),
                                               device="auto"))
    assert plain["runs"][0]["status"] == "ok" and plain["device"] == "cpu"
    assert plain["numerics"]["effective"]["torch_cpu_capability"] is None
    assert plain["numerics"]["effective"]["numpy_simd"] is not None
    # a method whose cost model leaves loads_torch at its default: auto asks torch for a GPU
    asked = run_supervised(dataclasses.replace(_spec(gunpoint, plugin_dir, tmp_path / "c", "centroid", ["fixed5"]),
                                               device="auto"))
    assert asked["numerics"]["effective"]["torch_cpu_capability"] is not None


@pytest.mark.slow
def test_supervisor_records_memory_limit_and_continues(gunpoint, plugin_dir, tmp_path):
    m = run_supervised(_spec(gunpoint, plugin_dir, tmp_path, "hog", ["full", "fixed5"]), mem_mb=1500)
    runs = {(r["protocol"], r["seed"]): r for r in m["runs"]}
    assert runs[("full", 0)]["status"] == "failed"
    assert "exceeded the memory limit of 1500 MB" in runs[("full", 0)]["error"]
    assert not result_path(tmp_path, "full", "hog", "GunPoint", 0).exists()
    assert all(runs[("fixed5", s)]["status"] == "ok" for s in range(5))
    # a job with a failed run is not finished: its manifest is kept under the failure name only
    assert failure_record_path(tmp_path, "hog", "GunPoint").exists()
    assert not manifest_path(tmp_path, "hog", "GunPoint").exists()


@pytest.mark.slow
def test_supervisor_records_a_killed_worker(gunpoint, plugin_dir, tmp_path):
    m = run_supervised(_spec(gunpoint, plugin_dir, tmp_path, "crash", ["fixed5", "full", "prop20"]))
    runs = {(r["protocol"], r["seed"]): r for r in m["runs"]}
    assert runs[("full", 0)]["status"] == "failed" and "SIGKILL" in runs[("full", 0)]["error"]
    assert runs[("prop20", 0)]["status"] == "ok" and runs[("fixed5", 2)]["status"] == "ok"


def test_aggregate_table_has_one_row_per_run(gunpoint, plugin_dir, tmp_path):
    run_job(_spec(gunpoint, plugin_dir, tmp_path, "centroid", ["full", "fixed10"]))
    run_job(_spec(gunpoint, plugin_dir, tmp_path, "flaky", ["full", "fixed5"]))
    df = aggregate_manifests(sorted((tmp_path / "runs").glob("*/*.json")))
    assert list(df.columns) == COLUMNS
    assert len(df) == 1 + 5 + 1 + 5
    failed = df[df.status == "failed"]
    assert set(failed.method) == {"flaky"} and failed.accuracy.isna().all()
    ok = df[df.status == "ok"]
    assert ok.accuracy.notna().all() and set(ok.family) == {"full", "fixed_shot"}
    assert df.loc[df.protocol == "fixed10", "budget"].eq(10).all()
    assert pd.isna(df.loc[df.protocol == "full", "budget"]).all()


def _start_supervisor(spec: JobSpec, tmp_path):
    """run_supervised in its own process; returns (process, worker pid) once the worker runs."""
    import subprocess
    import sys
    import time

    import psutil

    spec_file = tmp_path / "spec.json"
    spec_file.write_text(json.dumps(spec.__dict__))
    code = ("import json,sys; from chorustic.evaluation.job import JobSpec; "
            "from chorustic.evaluation.supervisor import run_supervised; "
            "run_supervised(JobSpec.from_dict(json.load(open(sys.argv[1]))))")
    proc = subprocess.Popen([sys.executable, "-c", code, str(spec_file)])
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        kids = [c for c in psutil.Process(proc.pid).children() if "chorustic.evaluation.worker" in " ".join(c.cmdline())]
        if kids:
            return proc, kids[0].pid
        time.sleep(0.2)
    proc.kill()
    raise AssertionError("worker did not start")


@pytest.mark.slow
@pytest.mark.parametrize("how", ["sigterm", "sigkill"])
def test_stopping_the_supervisor_stops_the_worker_and_records_nothing(gunpoint, plugin_dir, tmp_path, how):
    import signal
    import time

    import psutil

    spec = _spec(gunpoint, plugin_dir, tmp_path / "res", "sleepy", ["full"])
    proc, worker = _start_supervisor(spec, tmp_path)
    time.sleep(1.0)
    proc.send_signal(signal.SIGTERM if how == "sigterm" else signal.SIGKILL)
    proc.wait(timeout=30)
    deadline = time.monotonic() + 15
    while psutil.pid_exists(worker) and psutil.Process(worker).status() != psutil.STATUS_ZOMBIE:
        assert time.monotonic() < deadline, "the worker outlived its supervisor"
        time.sleep(0.2)
    assert proc.returncode != 0
    mpath = manifest_path(tmp_path / "res", "sleepy", "GunPoint")
    assert not mpath.exists()
    if how == "sigkill":  # a hard kill leaves the worker spec behind; the next attempt removes it
        assert list(mpath.parent.glob(".GunPoint.*.spec.json"))
        fast = dataclasses.replace(_spec(gunpoint, plugin_dir, tmp_path / "res", "centroid", ["full"]), method="sleepy")
        run_supervised(fast)
        assert not list(mpath.parent.glob(".GunPoint.*.spec.json"))


def _fits(log: Path) -> list[int]:
    """The context sizes the spy fitted on, in order (and the log emptied)."""
    sizes = [json.loads(line)["n"] for line in log.read_text().splitlines() if '"fit"' in line] if log.exists() else []
    log.unlink(missing_ok=True)
    return sizes


@pytest.mark.slow
def test_a_job_stopped_from_outside_continues_from_its_finished_runs(gunpoint, plugin_dir, tmp_path, monkeypatch):
    """Ctrl-C or a scheduler's SIGTERM after 6 of 11 contexts: the next start keeps those 6 (their files
    untouched) and fits only the other 5; nothing counts as finished before that."""
    import signal
    import time

    from chorustic.evaluation.job import progress_path

    log, block = tmp_path / "fits.jsonl", tmp_path / "block"
    monkeypatch.setenv("SPY_LOG", str(log))
    monkeypatch.setenv("PATIENT_BLOCK", str(block))
    block.touch()
    spec = _spec(gunpoint, plugin_dir, tmp_path / "res", "patient", ["full", "fixed5", "fixed10"])
    prog = progress_path(tmp_path / "res", "patient", "GunPoint")
    proc, _ = _start_supervisor(spec, tmp_path)
    deadline = time.monotonic() + 120
    while not (prog.exists() and len(json.loads(prog.read_text())["runs"]) == 6):  # full + 5 x fixed5
        assert time.monotonic() < deadline and proc.poll() is None, "the first 6 contexts did not finish"
        time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)
    assert proc.returncode != 0 and not manifest_path(tmp_path / "res", "patient", "GunPoint").exists()
    kept = {(r["protocol"], r["seed"]): r["result"]["sha256"] for r in json.loads(prog.read_text())["runs"]}
    assert sorted(_fits(log)) == [10] * 5 + [20, 50]  # the 20 was waiting when the signal came
    block.unlink()
    manifest = run_supervised(spec)
    assert _fits(log) == [20] * 5  # only the 10-shot contexts ran
    runs = {(r["protocol"], r["seed"]): r for r in manifest["runs"]}
    assert len(runs) == 11 and all(r["status"] == "ok" for r in runs.values())
    assert all(runs[k]["result"]["sha256"] == sha for k, sha in kept.items())
    assert not prog.exists() and manifest_path(tmp_path / "res", "patient", "GunPoint").exists()


@pytest.fixture(scope="module")
def finished_spy_job(gunpoint, plugin_dir, tmp_path_factory):
    """The spy's finished job on GunPoint (full and fixed5: 6 contexts), made once: each case below starts from
    a copy of its results folder (results are relocatable) instead of running it again."""
    import os
    import shutil

    root = tmp_path_factory.mktemp("finished_spy")
    ctx = root / "GunPoint.json"
    shutil.copy(gunpoint["contexts"], ctx)
    spec = dataclasses.replace(_spec(gunpoint, plugin_dir, root / "res", "spy", ["full", "fixed5"]),
                               contexts_file=str(ctx), fingerprint='{"code_sha256":"a"}')
    log, before = root / "fits.jsonl", os.environ.get("SPY_LOG")
    os.environ["SPY_LOG"] = str(log)
    try:
        done = run_supervised(spec)
    finally:
        if before is None:
            os.environ.pop("SPY_LOG", None)
        else:
            os.environ["SPY_LOG"] = before
    assert len(_fits(log)) == 6
    return root, done


@pytest.mark.parametrize("change", ["nothing", "fingerprint", "contexts", "data", "a library version", "numerics",
                                    "a prediction file", "a failed run", "a failure record"])
def test_an_interrupted_jobs_runs_are_kept_only_when_made_from_the_same_inputs(gunpoint, plugin_dir, tmp_path,
                                                                         monkeypatch, change, finished_spy_job):
    import shutil

    from chorustic.evaluation.job import progress_path

    log = tmp_path / "fits.jsonl"
    monkeypatch.setenv("SPY_LOG", str(log))
    template, done = finished_spy_job
    ctx = tmp_path / "GunPoint.json"
    shutil.copy(template / "GunPoint.json", ctx)
    shutil.copytree(template / "res", tmp_path / "res")
    spec = dataclasses.replace(_spec(gunpoint, plugin_dir, tmp_path / "res", "spy", ["full", "fixed5"]),
                               contexts_file=str(ctx), fingerprint='{"code_sha256":"a"}')
    # as an attempt stopped after 4 contexts leaves it: a progress file, no manifest
    mpath = manifest_path(tmp_path / "res", "spy", "GunPoint")
    state = json.loads(mpath.read_text())
    mpath.unlink()
    state["runs"] = state["runs"][:4]
    if change in ("a failed run", "a failure record"):
        state["runs"][3] = {**state["runs"][3], "status": "failed", "error": "exceeded the job's memory limit"}
    if change == "data":
        state["inputs"]["source_sha256"] = {"GunPoint_TRAIN.ts": "0" * 64}
    if change == "a library version":  # runs recorded under another numpy: the next start runs them again
        state["inputs"]["environment"]["libraries"]["numpy"] = "1.0.0"
    if change == "numerics":  # or with other numerics (pins off, or another processor)
        state["inputs"]["environment"]["numerics"] = {"env": {}, "portable": False}
    prog = progress_path(tmp_path / "res", "spy", "GunPoint")
    if change == "a failure record":  # a job that finished with a failed run (the rest not run: a time limit)
        failure_record_path(tmp_path / "res", "spy", "GunPoint").write_text(json.dumps(state))
    else:
        prog.write_text(json.dumps(state))
    if change == "fingerprint":
        spec = dataclasses.replace(spec, fingerprint='{"code_sha256":"b"}')
    if change == "contexts":
        ctx.write_text(ctx.read_text() + "\n")
    if change == "a prediction file":
        (tmp_path / "res" / state["runs"][1]["result_file"]).write_text("edited")
    manifest = run_supervised(spec)
    assert all(r["status"] == "ok" for r in manifest["runs"]) and len(manifest["runs"]) == 6
    expected = {"nothing": 2, "a failed run": 3, "a prediction file": 3, "a failure record": 3}.get(change, 6)
    assert len(_fits(log)) == expected
    assert manifest["inputs"]["contexts_sha256"] == sha256_file(ctx)
    assert not prog.exists() and not failure_record_path(tmp_path / "res", "spy", "GunPoint").exists()
    acc = {(r["protocol"], r["seed"]): r["accuracy"] for r in manifest["runs"]}
    assert acc == {(r["protocol"], r["seed"]): r["accuracy"] for r in done["runs"]}
    if change == "nothing":  # the kept runs' files are the first attempt's (a file records its fit time)
        assert [r["result"] for r in manifest["runs"][:4]] == [r["result"] for r in done["runs"][:4]]


def test_a_workers_output_in_the_jobs_log_is_bounded_and_says_what_was_cut(gunpoint, plugin_dir, tmp_path):
    """A plugin printing 3 MB per fit to each stream (issue 72, case 5): the job's log keeps the first and the
    last MiB of each stream, with one line saying how many bytes were cut, instead of all 12 MB; the run is ok."""
    log = tmp_path / "job.log"
    with open(log, "wb") as fh:
        manifest = run_supervised(_spec(gunpoint, plugin_dir, tmp_path / "res", "chatty", ["full"]),
                                  log_file=fh)
    assert [r["status"] for r in manifest["runs"]] == ["ok"]
    text = log.read_bytes()
    printed = 2 * (3_000_000 + 21)  # one fit, two streams
    assert len(text) < 4.2 * 2**20 < printed
    cuts = re.findall(rb"\[chorustic: ([\d,]+) bytes of this worker's output cut here", text)
    assert len(cuts) == 2, text[:200]  # one per stream of the one worker
    assert sum(int(c.replace(b",", b"")) for c in cuts) + text.count(b"x" * 99) * 100 > 0.99 * printed
    assert text.count(b"FIRST-LINE") == 2 and text.count(b"LAST-LINE") == 2  # the head and the end of each
