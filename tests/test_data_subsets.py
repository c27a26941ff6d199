"""InsectWingbeatSubset: the class-stratified, seeded, verbatim subsample."""

from __future__ import annotations

import json

import numpy as np
import pytest

from chorustic.data.loading import read_ts_split
from chorustic.data.registry import SubsetSpec
from chorustic.data.subsets import MANIFEST_NAME, build_subset, stratified_indices


def test_stratified_indices_sizes_and_proportions():
    labels = np.repeat(["a", "b", "c"], [50, 30, 20])
    idx = stratified_indices(labels, 10, np.random.default_rng(0))
    assert len(idx) == 10 and len(set(idx)) == 10 and np.all(np.diff(idx) > 0)  # distinct, file order
    assert {c: int((labels[idx] == c).sum()) for c in "abc"} == {"a": 5, "b": 3, "c": 2}
    # largest remainders: 7 of (50, 30, 20) -> exact 3.5, 2.1, 1.4 -> 3+1, 2, 1
    idx7 = stratified_indices(labels, 7, np.random.default_rng(0))
    assert [int((labels[idx7] == c).sum()) for c in "abc"] == [4, 2, 1]
    np.testing.assert_array_equal(
        idx, stratified_indices(labels, 10, np.random.default_rng(0))
    )  # deterministic
    assert not np.array_equal(idx, stratified_indices(labels, 10, np.random.default_rng(1)))
    np.testing.assert_array_equal(stratified_indices(labels, 500, np.random.default_rng(0)), np.arange(100))


def test_balanced_source_gives_equal_class_counts():
    labels = np.tile([str(i) for i in range(10)], 3000)  # InsectWingbeat-like: 10 balanced classes
    idx = stratified_indices(labels, 1000, np.random.default_rng(0))
    assert np.unique(labels[idx], return_counts=True)[1].tolist() == [100] * 10


def _source(tmp_path, n_train=40, n_test=30):
    folder = tmp_path / "src"
    folder.mkdir()
    rng = np.random.default_rng(3)
    for split, n in (("TRAIN", n_train), ("TEST", n_test)):
        lines = [
            "# source comment",
            "@problemName InsectWingbeat",
            "@timeStamps false",
            "@missing false",
            "@univariate false",
            "@dimensions 2",
            "@equalLength false",
            "@classLabel true x y z",
            "@data",
        ]
        for i in range(n):
            L = int(rng.integers(3, 9))
            lines.append(
                ":".join(",".join(f"{v:.5f}" for v in rng.normal(size=L)) for _ in range(2))
                + ":"
                + "xyz"[i % 3]
            )
            if i == 5:
                lines.append("")  # a blank line is not a row
        (folder / f"InsectWingbeat_{split}.ts").write_text("\n".join(lines) + "\n")
    return folder


def test_build_subset_writes_the_official_layout_verbatim(tmp_path):
    src = _source(tmp_path)
    spec = SubsetSpec("InsectWingbeatSubset", "InsectWingbeat", n_train=12, n_test=9, seed=0)
    dest = build_subset(spec, src, tmp_path / "out" / "InsectWingbeatSubset")
    assert sorted(p.name for p in dest.iterdir()) == [
        "InsectWingbeatSubset_TEST.ts",
        "InsectWingbeatSubset_TRAIN.ts",
        MANIFEST_NAME,
    ]
    manifest = json.loads((dest / MANIFEST_NAME).read_text())
    assert manifest["params"] == spec.params() and len(manifest["rows"]["TRAIN"]) == 12
    src_rows = [ln for ln in (src / "InsectWingbeat_TRAIN.ts").read_text().splitlines()[9:] if ln.strip()]
    out_text = (dest / "InsectWingbeatSubset_TRAIN.ts").read_text()
    out_rows = out_text.split("@data\n", 1)[1].splitlines()
    assert out_rows == [src_rows[i] for i in manifest["rows"]["TRAIN"]]  # byte-identical lines, file order
    assert "@problemName InsectWingbeatSubset" in out_text and "seed 0" in out_text.splitlines()[0]
    X, y, meta = read_ts_split(dest / "InsectWingbeatSubset_TEST.ts", "InsectWingbeatSubset")
    assert len(X) == 9 and X[0].shape[0] == 2 and sorted(set(y)) == ["x", "y", "z"]
    assert np.unique(y, return_counts=True)[1].tolist() == [3, 3, 3]
    # rebuilding with the same spec gives the same bytes; another seed another sample
    again = build_subset(spec, src, tmp_path / "again" / "InsectWingbeatSubset")
    assert (again / "InsectWingbeatSubset_TRAIN.ts").read_bytes() == (
        dest / "InsectWingbeatSubset_TRAIN.ts"
    ).read_bytes()
    other = build_subset(
        SubsetSpec("InsectWingbeatSubset", "InsectWingbeat", 12, 9, seed=1), src, tmp_path / "o" / "S"
    )
    assert json.loads((other / MANIFEST_NAME).read_text())["rows"] != manifest["rows"]


def test_build_subset_errors(tmp_path):
    src = _source(tmp_path)
    with pytest.raises(ValueError, match="only 40"):
        build_subset(SubsetSpec("InsectWingbeatSubset", "InsectWingbeat", 41, 5), src, tmp_path / "x")
    assert not (tmp_path / "x").exists() and not list(tmp_path.glob(".tmp-*"))
    with pytest.raises(ValueError):
        SubsetSpec("S", "InsectWingbeat", 0, 5)
