"""Paper App. C.2 preprocessing: NaN -> 0, length 512 (the resampler: tests/test_resampling.py), label encoding."""

from __future__ import annotations

import numpy as np
import pytest

from chorustic.data.errors import UnseenLabelError
from chorustic.data.preprocessing import class_order, encode_labels, fill_missing, to_model_length
from chorustic.resampling import resample_linear

def test_fill_missing_before_resampling():
    x = np.array([[1.0, np.nan, 3.0, np.nan]])
    filled = fill_missing(x)
    np.testing.assert_array_equal(filled, [[1.0, 0.0, 3.0, 0.0]])
    out = to_model_length(filled[None], 8)
    assert np.isfinite(out).all()
    np.testing.assert_allclose(out[0], resample_linear(filled, 8).astype(np.float32))
    clean = np.array([1.0, 2.0])
    assert fill_missing(clean) is not None and np.shares_memory(fill_missing(clean), clean)  # no copy needed


def test_variable_length_series_resampled_each_on_its_own():
    rng = np.random.default_rng(0)
    series = [rng.normal(size=(2, L)) for L in (5, 17, 5, 300, 1)]
    out = to_model_length(series, 512)
    assert out.shape == (5, 2, 512) and out.dtype == np.float32
    for s, o in zip(series, out):
        np.testing.assert_array_equal(o, resample_linear(s, 512).astype(np.float32))
    with pytest.raises(ValueError, match="channel"):
        to_model_length([np.zeros((1, 3)), np.zeros((2, 3))], 8)


def test_class_order_numeric_then_string():
    assert class_order(["10", "2", "1", "2"]).tolist() == ["1", "2", "10"]
    assert class_order(["-1", "1", "0.5"]).tolist() == ["-1", "0.5", "1"]
    assert class_order(["b", "a", "10", "9"]).tolist() == ["10", "9", "a", "b"]  # not all numeric: strings
    assert class_order(["nan", "1"]).tolist() == ["1", "nan"]  # 'nan' is not a finite number
    assert class_order(
        ["Standing", "Running", "Walking"],
        order="header",
        header=["Walking", "Standing", "Running", "Unused"],
    ).tolist() == ["Walking", "Standing", "Running"]
    with pytest.raises(ValueError, match="label order"):
        class_order(["a"], order="random")


def test_encode_labels_fit_on_train_reused_on_test():
    ytr, yte, classes = encode_labels(["2", "10", "1", "2"], ["1", "10", "10"], dataset="X")
    assert classes.tolist() == ["1", "2", "10"]
    assert ytr.dtype == np.int64 and ytr.tolist() == [1, 2, 0, 1] and yte.tolist() == [0, 2, 2]
    # a class present only in train is still a class; test need not cover every class
    _, yte, classes = encode_labels(["a", "b", "c"], ["a"], dataset="X")
    assert classes.tolist() == ["a", "b", "c"] and yte.tolist() == [0]


def test_unseen_test_label_is_a_clear_error():
    with pytest.raises(UnseenLabelError) as e:
        encode_labels(["a", "b"], ["a", "zebra"], dataset="MyData", test_file="/x/MyData_TEST.ts")
    msg = str(e.value)
    assert "MyData" in msg and "'zebra'" in msg and "/x/MyData_TEST.ts" in msg
    assert isinstance(e.value, ValueError) and e.value.labels == ("zebra",)
