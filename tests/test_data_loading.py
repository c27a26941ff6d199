"""Loading (.ts via aeon) + preprocessing + on-disk cache, on the aeon-shipped and generated datasets."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from chorustic.cli import main
from chorustic.data import loading
from chorustic.data.download import aeon_data_dir
from chorustic.data.errors import MalformedDataFileError, MissingDataFileError, UnseenLabelError
from chorustic.data.loading import TimeSeriesDataset, load_dataset, read_ts_split
from chorustic.data.preprocessing import resample_linear


def write_ts(path: Path, name: str, series, labels, *, class_values=None, missing=None, equal=None) -> Path:
    """A .ts file in the official format; ``series``: list of (C, L) arrays (NaN allowed)."""
    series = [np.atleast_2d(np.asarray(s, dtype=float)) for s in series]
    C = series[0].shape[0]
    equal = len({s.shape[1] for s in series}) == 1 if equal is None else equal
    missing = any(np.isnan(s).any() for s in series) if missing is None else missing
    cv = class_values if class_values is not None else sorted(set(labels))
    lines = [
        "# generated for chorustic tests",
        f"@problemName {name}",
        "@timeStamps false",
        f"@missing {str(missing).lower()}",
        f"@univariate {str(C == 1).lower()}",
    ]
    if C > 1:
        lines.append(f"@dimensions {C}")
    lines.append(f"@equalLength {str(equal).lower()}")
    if equal:
        lines.append(f"@seriesLength {series[0].shape[1]}")
    lines += [f"@classLabel true {' '.join(cv)}", "@data"]
    for s, y in zip(series, labels):
        chans = [",".join("NaN" if np.isnan(v) else repr(float(v)) for v in ch) for ch in s]
        lines.append(":".join(chans) + f":{y}")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def make_dataset(root: Path, name: str, train, test) -> Path:
    folder = root / name
    write_ts(folder / f"{name}_TRAIN.ts", name, *train)
    write_ts(folder / f"{name}_TEST.ts", name, *test)
    return folder


def _torch512(x: np.ndarray) -> np.ndarray:
    return F.interpolate(
        torch.from_numpy(np.asarray(x, dtype=np.float64)), size=512, mode="linear", align_corners=False
    ).numpy()


# ---------------------------------------------------------------------------- aeon-shipped data
def test_japanese_vowels_variable_length_multichannel(tmp_path):
    ds = load_dataset("JapaneseVowels", tmp_path, cache_dir=tmp_path / "cache", progress=False)
    assert isinstance(ds, TimeSeriesDataset) and ds.archive == "UEA"
    assert ds.X_train.shape == (270, 12, 512) and ds.X_test.shape == (370, 12, 512)
    assert ds.X_train.dtype == np.float32 and ds.y_train.dtype == np.int64
    assert ds.n_classes == 9 and ds.n_channels == 12 and not ds.equal_length
    assert ds.classes.tolist() == [str(i) for i in range(1, 10)]
    assert set(ds.y_train.tolist()) == set(range(9))
    # the native series are those of the file, each resampled from its own length
    X_raw, y_raw, _ = read_ts_split(aeon_data_dir() / "JapaneseVowels" / "JapaneseVowels_TRAIN.ts")
    assert isinstance(ds.X_train_native, list) and len(ds.X_train_native) == 270
    lengths = [s.shape[-1] for s in ds.X_train_native]
    assert min(lengths) < max(lengths) <= 29
    for i in (0, 7, 269):
        np.testing.assert_allclose(ds.X_train_native[i], X_raw[i].astype(np.float32))
        np.testing.assert_allclose(ds.X_train[i], _torch512(X_raw[i][None])[0], rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(ds.classes[ds.y_train], y_raw)


def test_gunpoint_univariate_has_channel_axis(tmp_path):
    ds = load_dataset("GunPoint", tmp_path, progress=False)
    assert ds.archive == "UCR" and ds.X_train.shape == (50, 1, 512) and ds.X_test.shape == (150, 1, 512)
    assert (
        ds.equal_length and ds.X_train_native.shape == (50, 1, 150) and ds.X_test_native.dtype == np.float32
    )
    assert ds.classes.tolist() == ["1", "2"] and ds.cache_path is None
    np.testing.assert_allclose(
        ds.X_test, _torch512(ds.X_test_native.astype(np.float64)), rtol=1e-5, atol=1e-5
    )


def test_basicmotions_labels_keep_their_spelling(tmp_path):
    ds = load_dataset("BasicMotions", tmp_path, progress=False)
    assert ds.X_train.shape == (40, 6, 512)
    assert ds.classes.tolist() == ["Badminton", "Running", "Standing", "Walking"]  # sorted strings
    hd = load_dataset("BasicMotions", tmp_path, progress=False, label_order="header")
    assert hd.classes.tolist() == ["Standing", "Running", "Walking", "Badminton"]  # @classLabel order
    np.testing.assert_array_equal(ds.classes[ds.y_test], hd.classes[hd.y_test])


# ------------------------------------------------------------------------------- generated data
def test_missing_values_become_zero_before_resampling(tmp_path):
    tr = ([[1.0, np.nan, 3.0, 4.0], [np.nan, np.nan, 1.0, 2.0]], ["a", "b"])
    te = ([[0.5, 1.5, np.nan, 2.0]], ["b"])
    make_dataset(tmp_path, "Holes", tr, te)
    ds = load_dataset("Holes", tmp_path, progress=False)
    assert ds.archive == "local" and ds.equal_length
    np.testing.assert_array_equal(ds.X_train_native[0, 0], [1.0, 0.0, 3.0, 4.0])
    assert np.isfinite(ds.X_train).all() and np.isfinite(ds.X_test).all()
    np.testing.assert_allclose(
        ds.X_train[1], resample_linear(np.array([[0.0, 0.0, 1.0, 2.0]]), 512), atol=1e-6
    )


def test_variable_length_univariate_and_equal_length_collapse(tmp_path):
    rng = np.random.default_rng(1)
    tr = ([rng.normal(size=L) for L in (10, 20, 15)], ["1", "2", "1"])
    te = ([rng.normal(size=L) for L in (12, 30)], ["2", "1"])
    make_dataset(tmp_path, "Ragged", tr, te)
    ds = load_dataset("Ragged", tmp_path, progress=False)
    assert not ds.equal_length and [s.shape for s in ds.X_test_native] == [(1, 12), (1, 30)]
    for raw, res in zip(te[0], ds.X_test):
        np.testing.assert_allclose(res[0], _torch512(raw[None, None])[0, 0], rtol=1e-5, atol=1e-6)
    # a file declaring @equalLength false whose series all have one length: native is an array
    same = ([rng.normal(size=8) for _ in range(3)], ["1", "2", "1"])
    folder = tmp_path / "Flat"
    write_ts(folder / "Flat_TRAIN.ts", "Flat", *same, equal=False)
    write_ts(folder / "Flat_TEST.ts", "Flat", *same, equal=False)
    flat = load_dataset("Flat", tmp_path, progress=False)
    assert flat.equal_length and flat.X_train_native.shape == (3, 1, 8)


def test_unseen_test_label(tmp_path):
    make_dataset(tmp_path, "Unseen", ([[1.0, 2.0], [2.0, 3.0]], ["a", "b"]), ([[1.0, 2.0]], ["c"]))
    with pytest.raises(UnseenLabelError) as e:
        load_dataset("Unseen", tmp_path, progress=False)
    assert "Unseen" in str(e.value) and "'c'" in str(e.value) and "Unseen_TEST.ts" in str(e.value)


def test_malformed_and_missing_files_name_the_file(tmp_path):
    folder = make_dataset(tmp_path, "Broken", ([[1.0, 2.0, 3.0]], ["a"]), ([[1.0, 2.0, 3.0]], ["a"]))
    bad = folder / "Broken_TRAIN.ts"
    bad.write_text(bad.read_text().replace("1.0,2.0,3.0:a", "1.0,2.0:a\n4.0,5.0,6.0:a", 1))  # ragged rows
    with pytest.raises(MalformedDataFileError) as e:
        load_dataset("Broken", tmp_path, progress=False)
    assert str(bad) in str(e.value) and "chorustic download Broken" in str(e.value)
    bad.write_text("@problemName Broken\n@classLabel true a\n@data\nnot,numbers:a\n")
    with pytest.raises(MalformedDataFileError, match="Broken_TRAIN.ts"):
        load_dataset("Broken", tmp_path, progress=False, lock=False)  # the lock pinned the first version
    with pytest.raises(MissingDataFileError, match="Nope_TEST.ts"):
        read_ts_split(tmp_path / "Nope" / "Nope_TEST.ts", "Nope", "TEST")
    # channels that differ between TRAIN and TEST
    make_dataset(tmp_path, "Mixed", ([np.ones((2, 4))], ["a"]), ([np.ones((3, 4))], ["a"]))
    with pytest.raises(MalformedDataFileError, match="channels"):
        load_dataset("Mixed", tmp_path, progress=False)


# -------------------------------------------------------------------------------------- cache
def test_cache_hit_miss_and_keys(tmp_path, monkeypatch):
    rng = np.random.default_rng(2)
    tr = ([rng.normal(size=(2, 9)) for _ in range(4)], ["x", "y", "x", "y"])
    te = ([rng.normal(size=(2, 9)) for _ in range(3)], ["y", "x", "x"])
    folder = make_dataset(tmp_path, "Cached", tr, te)
    cache = tmp_path / "cache"
    first = load_dataset("Cached", tmp_path, cache_dir=cache, progress=False)
    assert first.cache_path is not None and first.cache_path.is_file()
    assert first.cache_path.parent == cache / "Cached" and first.cache_path.name.startswith("Cached-L512-")

    calls = []
    real = loading.read_ts_split
    monkeypatch.setattr(loading, "read_ts_split", lambda *a, **k: calls.append(a) or real(*a, **k))
    again = load_dataset("Cached", tmp_path, cache_dir=cache, progress=False)
    assert calls == []  # served from the cache
    for f in ("X_train", "y_train", "X_test", "y_test", "classes", "X_train_native", "X_test_native"):
        np.testing.assert_array_equal(getattr(again, f), getattr(first, f))
    assert again.source_sha256 == first.source_sha256 and again.cache_path == first.cache_path

    other_len = load_dataset("Cached", tmp_path, cache_dir=cache, length=64, progress=False)
    assert other_len.X_train.shape == (4, 2, 64) and other_len.cache_path != first.cache_path
    other_order = load_dataset("Cached", tmp_path, cache_dir=cache, label_order="header", progress=False)
    assert other_order.cache_path != first.cache_path

    # a changed source file gives a new key (the lock would refuse it: disable it for this check)
    calls.clear()
    write_ts(folder / "Cached_TEST.ts", "Cached", [rng.normal(size=(2, 9))], ["x"])
    changed = load_dataset("Cached", tmp_path, cache_dir=cache, progress=False, lock=False)
    assert calls and changed.cache_path != first.cache_path and changed.X_test.shape == (1, 2, 512)

    # a damaged cache file is ignored and rewritten
    calls.clear()
    first.cache_path.write_bytes(b"garbage")
    write_ts(folder / "Cached_TEST.ts", "Cached", *te)  # back to the original content
    healed = load_dataset("Cached", tmp_path, cache_dir=cache, progress=False)
    assert calls and healed.cache_path == first.cache_path
    np.testing.assert_array_equal(healed.X_test, first.X_test)
    assert load_dataset("Cached", tmp_path, cache_dir=cache, progress=False).cache_path == first.cache_path


def test_variable_length_roundtrip_through_cache(tmp_path):
    ds = load_dataset("JapaneseVowels", tmp_path, cache_dir=tmp_path / "c", progress=False)
    cached = load_dataset("JapaneseVowels", tmp_path, cache_dir=tmp_path / "c", progress=False)
    assert isinstance(cached.X_test_native, list) and len(cached.X_test_native) == 370
    for a, b in zip(ds.X_test_native, cached.X_test_native):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name", ["JapaneseVowels", "BasicMotions"])  # ragged and equal-length native series
def test_a_job_reads_only_the_series_its_method_takes(tmp_path, monkeypatch, name):
    """``series="native"`` / ``"resampled"`` never reads the other form from the cache (a native method on
    FaceDetection's 144 channels would otherwise hold 2.8 GB of resampled series it never uses)."""
    from chorustic.data import cache as cache_mod

    both = load_dataset(name, tmp_path, cache_dir=tmp_path / "c", progress=False)  # makes the cache
    read: list[str] = []
    real = cache_mod.load_arrays

    def spy(path, required=(), skip=()):
        out = real(path, required, skip)
        read.extend(out)
        return out

    monkeypatch.setattr(cache_mod, "load_arrays", spy)
    native = load_dataset(name, tmp_path, cache_dir=tmp_path / "c", progress=False, series="native")
    assert "X_train" not in read and "X_test" not in read
    assert native.X_train is None and native.X_test is None
    for a, b in zip(both.X_test_native, native.X_test_native):
        np.testing.assert_array_equal(a, b)
    assert (native.n_channels, native.length, native.equal_length) == (both.n_channels, 512, both.equal_length)
    np.testing.assert_array_equal(native.y_train, both.y_train)
    read.clear()
    resampled = load_dataset(name, tmp_path, cache_dir=tmp_path / "c", progress=False, series="resampled")
    assert not [k for k in read if "native" in k] and resampled.X_train_native is None
    np.testing.assert_array_equal(resampled.X_train, both.X_train)
    assert resampled.n_channels == both.n_channels and name in resampled.summary()
    # without a cache (the series are read from the files): the same fields
    bare = load_dataset(name, tmp_path, progress=False, series="native")
    assert bare.X_train is None and len(bare.X_train_native) == len(both.X_train_native)
    with pytest.raises(ValueError, match="series must be one of"):
        load_dataset(name, tmp_path, series="raw")


def test_same_input_same_arrays(tmp_path):
    a = load_dataset("ItalyPowerDemand", tmp_path / "a", progress=False)
    b = load_dataset("ItalyPowerDemand", tmp_path / "b", progress=False)
    np.testing.assert_array_equal(a.X_train, b.X_train)
    np.testing.assert_array_equal(a.y_test, b.y_test)
    assert a.source_sha256 == b.source_sha256


def test_preprocess_command(tmp_path, capsys):
    shutil.copytree(
        aeon_data_dir() / "GunPoint",
        tmp_path / "data" / "GunPoint",
        ignore=shutil.ignore_patterns("*.arff", "*.tsv"),
    )
    out_json = tmp_path / "pp.json"
    rc = main(
        [
            "preprocess",
            "GunPoint",
            "ArrowHead",
            "--data-dir",
            str(tmp_path / "data"),
            "--cache-dir",
            str(tmp_path / "cache"),
            "--offline",
            "--json",
            str(out_json),
            "--no-progress",
        ]
    )
    assert rc == 0
    import json

    rep = json.loads(out_json.read_text())["datasets"]
    assert rep["GunPoint"]["n_train"] == 50 and rep["ArrowHead"]["n_classes"] == 3
    assert Path(rep["GunPoint"]["cache_path"]).is_file()
    rc = main(
        [
            "preprocess",
            "GunPoint",
            "Beef",
            "--data-dir",
            str(tmp_path / "data"),
            "--cache-dir",
            str(tmp_path / "cache"),
            "--offline",
            "--no-progress",
        ]
    )
    err = capsys.readouterr().err
    assert rc == 1 and "Beef" in err and "offline" in err  # one failure, the other still done
