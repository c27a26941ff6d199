"""tsml-format prediction files: content, round trip, atomicity."""

import numpy as np
import pytest

from chorustic.evaluation.results import ResultFileError, read_result_file, result_path, write_result_file


def test_result_path_layout(tmp_path):
    p = result_path(tmp_path, "fixed5", "minirocket", "GunPoint", 3)
    assert p == tmp_path / "fixed5" / "minirocket" / "Predictions" / "GunPoint" / "testResample3.csv"


def test_write_and_read_back(tmp_path):
    y = np.array([0, 1, 2, 1])
    proba = np.array([[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.5, 0.1, 0.4], [0.2, 0.3, 0.5]])
    p = result_path(tmp_path, "full", "m", "Toy", 0)
    acc = write_result_file(p, dataset="Toy", method="m", seed=0, y_true=y, proba=proba, fit_time_s=1.2345,
                            predict_time_s=0.5, memory_bytes=123456, info={"class_labels": ["a", "b", "c"]},
                            description="protocol=full")
    assert acc == 0.5
    lines = p.read_text().splitlines()
    assert lines[0] == "Toy,m,TEST,0,MILLISECONDS,protocol=full"
    assert lines[2].split(",")[:6] == ["0.5", "1234", "500", "-1", "123456", "3"]
    assert lines[3].startswith("0,0,,0.7,")
    r = read_result_file(p)
    assert r.accuracy == 0.5 and r.n_classes == 3 and r.info["class_labels"] == ["a", "b", "c"]
    np.testing.assert_array_equal(r.y_pred, [0, 1, 0, 2])
    np.testing.assert_allclose(r.proba, proba)


def test_no_partial_file_when_writing_fails(tmp_path):
    p = result_path(tmp_path, "full", "m", "Toy", 0)
    with pytest.raises(ValueError):
        write_result_file(p, dataset="Toy", method="m", seed=0, y_true=np.array([0, 1]),
                          proba=np.array([[np.nan, 1.0], [0.5, 0.5]]), fit_time_s=0, predict_time_s=0,
                          memory_bytes=0, info={})
    assert not p.exists()
    assert list(p.parent.glob("*")) == [] if p.parent.exists() else True


def test_malformed_file_is_a_clear_error(tmp_path):
    p = tmp_path / "bad.csv"
    p.write_text("just one line\n")
    with pytest.raises(ResultFileError, match="bad.csv"):
        read_result_file(p)


def test_probabilities_read_back_bit_identical(tmp_path):
    rng = np.random.default_rng(3)
    proba = rng.dirichlet(np.ones(7), size=300) ** 3  # every digit of repr, tiny values among them
    proba[::5] = np.eye(7)[rng.integers(0, 7, 60)]
    y = rng.integers(0, 7, 300)
    p = tmp_path / "r.csv"
    write_result_file(p, dataset="Toy", method="m", seed=0, y_true=y, proba=proba, fit_time_s=0,
                      predict_time_s=0, memory_bytes=0, info={})
    r = read_result_file(p)
    assert r.proba.dtype == np.float64 and r.proba.flags.c_contiguous
    np.testing.assert_array_equal(r.proba, proba)
    np.testing.assert_array_equal(r.y_true, y)
    np.testing.assert_array_equal(r.y_pred, proba.argmax(axis=1))


@pytest.mark.parametrize("line, problem", [
    ("1,0,,0.5,0.5,0.0", "line 2 has 6 fields, not 5"),  # a probability more than its classes
    ("1,0,,0.5", "line 2 has 4 fields, not 5"),
    ("1.5,0,,0.5,0.5", "whole number"),
    ("1,0,,0.5,x", "x"),
    ("1,0,,0.5,#0.5", "#0.5"),  # not a comment
    ("nan,0,,0.5,0.5", "whole number"),
])
def test_a_malformed_prediction_line_is_a_clear_error(tmp_path, line, problem):
    p = tmp_path / "r.csv"
    write_result_file(p, dataset="Toy", method="m", seed=0, y_true=np.array([0, 1]),
                      proba=np.array([[0.9, 0.1], [0.2, 0.8]]), fit_time_s=0, predict_time_s=0,
                      memory_bytes=0, info={})
    good = p.read_text().splitlines()
    p.write_text("\n".join(good[:4] + [line]) + "\n")
    with pytest.raises(ResultFileError, match="r.csv") as err:
        read_result_file(p)
    assert problem in str(err.value)


def test_a_file_without_prediction_lines_reads_as_empty(tmp_path):
    p = tmp_path / "r.csv"
    write_result_file(p, dataset="Toy", method="m", seed=0, y_true=np.zeros(0, int), proba=np.zeros((0, 3)),
                      fit_time_s=0, predict_time_s=0, memory_bytes=0, info={})
    r = read_result_file(p)
    assert r.proba.shape == (0, 3) and r.y_true.shape == (0,)
