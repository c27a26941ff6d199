"""Stand-ins: random data with an archive dataset's exact shape that goes through the real loader and jobs,
and never reaches a results table."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from chorustic.data import get_info, load_dataset
from chorustic.data.standin import read_standin_mark, standin_spec, write_standin


@pytest.mark.parametrize("name", ["ItalyPowerDemand", "JapaneseVowels", "Chinatown"])
def test_a_standin_has_the_registry_shape(tmp_path, name):
    """Training and test sizes, channels, (maximum) length and classes are the registry's; every class is in
    both splits and balanced; a variable-length dataset's lengths reach its maximum."""
    write_standin(name, tmp_path / "data")
    ds = load_dataset(name, tmp_path / "data", cache_dir=tmp_path / "cache", offline=True,
                      lock=str(tmp_path / "lock.json"))
    info = get_info(name)
    assert (ds.n_train, ds.n_test, ds.n_channels, ds.n_classes) == (info.n_train, info.n_test, info.n_channels,
                                                                    info.n_classes)
    assert ds.X_train.shape[-1] == 512  # preprocessed as the real dataset is
    lengths = [s.shape[-1] for s in (ds.X_train_native if not ds.equal_length else [ds.X_train_native[0]])]
    assert max(lengths) == info.length
    assert ds.equal_length == info.equal_length
    if not info.equal_length:
        assert min(lengths) < info.length
    for y in (ds.y_train, ds.y_test):
        counts = np.bincount(y, minlength=info.n_classes)
        assert counts.min() >= 1 and counts.max() - counts.min() <= 1
    assert ds.standin["name"] == name and ds.standin["series_fraction"] == 1.0
    # read again from the cache: still marked
    again = load_dataset(name, tmp_path / "data", cache_dir=tmp_path / "cache", offline=True,
                         lock=str(tmp_path / "lock.json"))
    assert again.standin == ds.standin


def test_a_fraction_scales_the_series_and_keeps_every_class(tmp_path):
    spec = standin_spec("Crop", series_fraction=0.01)
    assert (spec.n_train, spec.n_test, spec.n_classes, spec.length) == (72, 168, 24, 46)
    tiny = standin_spec("Crop", series_fraction=0.0001)
    assert tiny.n_train == tiny.n_test == 24  # one series of each class
    with pytest.raises(ValueError, match="series_fraction"):
        standin_spec("Crop", series_fraction=2)


def test_writing_is_idempotent_and_never_touches_real_data(tmp_path):
    folder = write_standin("GunPoint", tmp_path / "data", series_fraction=0.1)
    train = folder / "GunPoint_TRAIN.ts"
    before = train.stat().st_mtime_ns
    assert write_standin("GunPoint", tmp_path / "data", series_fraction=0.1) == folder
    assert train.stat().st_mtime_ns == before
    # another stand-in spec replaces the first (both are files the harness wrote)
    write_standin("GunPoint", tmp_path / "data", series_fraction=0.2)
    assert read_standin_mark(train)["series_fraction"] == 0.2
    # a real dataset's folder (the aeon copy) is never written over
    real = tmp_path / "real"
    load_dataset("GunPoint", real, offline=True)
    real_train = real / "GunPoint" / "GunPoint_TRAIN.ts"
    text = real_train.read_bytes()
    with pytest.raises(FileExistsError, match="not a chorustic stand-in"):
        write_standin("GunPoint", real)
    assert real_train.read_bytes() == text and read_standin_mark(real_train) is None


def _standin_job(tmp_path) -> Path:
    """Chinatown's stand-in (half its series) and a config evaluating 1NN-DTW on it at full context."""
    data = tmp_path / "data"
    subprocess.run([sys.executable, "-m", "chorustic", "standin", "Chinatown", "--data-dir", str(data),
                    "--series-fraction", "0.5"], check=True, capture_output=True)
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(json.dumps({
        "profile": "standin-test",
        "paths": {k: str(tmp_path / k) for k in ("cache_dir", "results_dir", "reports_dir", "logs_dir")}
        | {"data_dir": str(data)},
        "data": {"offline": True, "lock_file": str(tmp_path / "lock.json")},
        "datasets": {"archives": ["UCR"], "include": ["Chinatown"]},
        "protocols": {"full": True, "fixed_shot": {"shots": [], "seeds": []},
                      "proportional": {"percents": [], "seeds": []}},
        "evaluate": ["dtw_1nn"], "methods": {"dtw_1nn": {"plugin": "dtw_1nn", "params": {"window": 0.1}}},
        "reports": {"reference_method": "dtw_1nn"},
    }))
    return cfg


@pytest.mark.slow(reason="evaluates and aggregates a stand-in (~7 s)")
def test_results_made_on_a_standin_never_reach_the_table(tmp_path):
    """Through the real CLI: a job on a stand-in runs and records the stand-in in its manifest and
    prediction files; `chorustic aggregate` turns its runs into failed rows naming the stand-in."""
    cfg = _standin_job(tmp_path)
    ev = subprocess.run([sys.executable, "-m", "chorustic", "evaluate", "--config", str(cfg), "--methods", "dtw_1nn",
                         "--datasets", "Chinatown", "--no-isolation"], capture_output=True, text=True)
    assert ev.returncode == 0, ev.stderr
    manifest = json.loads((tmp_path / "results_dir" / "runs" / "dtw_1nn" / "Chinatown.json").read_text())
    assert manifest["standin"]["name"] == "Chinatown"
    run = manifest["runs"][0]
    assert run["status"] == "ok"  # the job itself ran: what is measured
    from chorustic.evaluation.results import read_result_file

    assert read_result_file(tmp_path / "results_dir" / run["result_file"]).info["standin"]["series_fraction"] == 0.5
    ag = subprocess.run([sys.executable, "-m", "chorustic", "aggregate", "--config", str(cfg)],
                        capture_output=True, text=True)
    assert ag.returncode == 1 and "stand-in" in ag.stderr
    import pandas as pd

    table = pd.read_csv(tmp_path / "results_dir" / "accuracies.csv")
    assert list(table.status) == ["failed"] and table.accuracy.isna().all()
    assert "stand-in" in table.error[0]


@pytest.mark.slow(reason="a job stopped in its worker (~6 s)")
def test_a_job_stopped_before_its_first_context_still_names_the_standin(tmp_path):
    """A worker stopped before it read the data (here: a time limit of a few milliseconds) leaves a
    failed manifest; made on a stand-in, it says so like every other manifest."""
    cfg = _standin_job(tmp_path)
    ev = subprocess.run([sys.executable, "-m", "chorustic", "evaluate", "--config", str(cfg), "--methods", "dtw_1nn",
                         "--datasets", "Chinatown", "--runtime", "0.0001"], capture_output=True, text=True)
    assert ev.returncode == 1, ev.stderr
    failed = json.loads((tmp_path / "results_dir" / "runs" / "dtw_1nn" / "Chinatown.failed.json").read_text())
    assert [r["status"] for r in failed["runs"]] == ["failed"] and "time limit" in failed["runs"][0]["error"]
    assert failed["standin"]["name"] == "Chinatown" and failed["standin"]["series_fraction"] == 0.5
