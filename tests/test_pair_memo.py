"""The pair memo keeps (query, context series) distances across a job's contexts: a distance it hands out is
the one computing it gives, each pair is computed once while the memo has room, and it never holds more than
its bound."""

from __future__ import annotations

import numpy as np
import pytest

from chorustic.methods.inputs import series_digests
from chorustic.methods.pair_memo import PairMemo


def _dist(Q, C):
    return np.sqrt(((Q[:, None, :] - C[None, :, :]) ** 2).sum(-1))


class Recorder:
    """``compute`` for the memo over series ``Q`` and ``C``, recording the pairs it was asked for."""

    def __init__(self, Q, C):
        self.Q, self.C, self.calls = Q, C, []

    def __call__(self, qi, ci):
        self.calls.append((qi.copy(), ci.copy()))
        return _dist(self.Q[qi], self.C[ci])


def test_each_pair_is_computed_once_across_contexts_of_any_order():
    rng = np.random.default_rng(0)
    train, test = rng.normal(size=(30, 5)), rng.normal(size=(12, 5))
    dq = series_digests(test)
    memo = PairMemo(max_mb=1)
    contexts = [rng.permutation(30)[:10], np.arange(30), rng.permutation(30)[:20], np.array([3, 3, 7])]
    computed = 0
    for ctx in contexts:
        for chunk in (slice(0, 5), slice(5, 12)):  # the harness predicts in chunks
            got = memo.distances("euclid", dq[chunk], series_digests(train[ctx]), Recorder(test[chunk], train[ctx]))
            np.testing.assert_array_equal(got, _dist(test[chunk], train[ctx]))
        computed += memo.take_counts()["distances_computed"]
    # the first context computes its 10 x 12 pairs, the full one the other 20 series; the rest only read
    assert computed == 12 * 30
    assert memo.take_counts() == {"distances_computed": 0, "distances_reused": 0}


def test_only_the_unknown_block_is_computed():
    rng = np.random.default_rng(1)
    train, test = rng.normal(size=(8, 3)), rng.normal(size=(6, 3))
    memo = PairMemo(max_mb=1)
    dq, dc = series_digests(test), series_digests(train)
    memo.distances("d", dq, dc[:5], Recorder(test, train[:5]))  # a context of 5 series
    rec = Recorder(test, train)
    got = memo.distances("d", dq, dc, rec)
    np.testing.assert_array_equal(got, _dist(test, train))
    # the full context: every query's pairs with the 3 new series only
    (qi, ci), = rec.calls
    assert list(qi) == list(range(6)) and list(ci) == [5, 6, 7]
    counts = memo.take_counts()
    assert counts == {"distances_computed": 6 * 5 + 6 * 3, "distances_reused": 6 * 5}


def test_distances_are_kept_per_distance_key():
    rng = np.random.default_rng(2)
    train, test = rng.normal(size=(4, 3)), rng.normal(size=(3, 3))
    memo = PairMemo(max_mb=1)
    dq, dc = series_digests(test), series_digests(train)
    memo.distances(("dtw", None), dq, dc, Recorder(test, train))
    rec = Recorder(test, train)
    memo.distances(("dtw", 0.1), dq, dc, rec)  # another window: another distance, computed again
    assert len(rec.calls) == 1


def test_the_memo_stays_within_its_bound_and_still_answers():
    rng = np.random.default_rng(3)
    train, test = rng.normal(size=(400, 4)), rng.normal(size=(300, 4))
    memo = PairMemo(max_mb=0.5)  # 65,536 pairs: less than 300 x 400
    dq, dc = series_digests(test), series_digests(train)
    for ctx in (np.arange(100), np.arange(400), np.arange(50, 250)):
        got = memo.distances("d", dq, [dc[i] for i in ctx], Recorder(test, train[ctx]))
        np.testing.assert_array_equal(got, _dist(test, train[ctx]))
        assert memo.nbytes <= memo.max_bytes
    assert memo.nbytes == 300 * 100 * 8  # the first context's pairs were kept; the full one's did not fit


def test_series_are_known_by_their_values_dtype_and_shape():
    a = np.arange(12, dtype=np.float32).reshape(1, 3, 4)
    assert series_digests(a) == series_digests(a.copy())
    assert series_digests(a) != series_digests(a.reshape(1, 4, 3))
    assert series_digests(a) != series_digests(a.astype(np.float64))
    b = a.copy()
    b[0, 0, 0] = 0.5
    assert series_digests(a) != series_digests(b)
    # a variable-length collection: a list of (channels, length) arrays
    assert len(set(series_digests([a[0, :, :2], a[0, :, :3], a[0, :, :2]]))) == 2


def test_compute_must_answer_the_block_it_was_asked():
    memo = PairMemo(max_mb=1)
    with pytest.raises(ValueError, match="expected"):
        memo.distances("d", [b"q"], [b"c1", b"c2"], lambda qi, ci: np.zeros((1, 1)))
