"""The pair memo keeps (query, context series) distances across a job's contexts: a distance it hands out is
the one computing it gives, each pair is computed once while the memo has room, and it never holds more than
its bound."""

from __future__ import annotations

import zipfile

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


def test_with_a_block_hook_the_unknown_queries_are_computed_and_kept_block_by_block(monkeypatch):
    """The memo keeps each block's pairs and calls ``after_block`` (the job writes its file) once PAIR_BLOCK_S of
    blocks are kept since its last call: the first block holds ``lanes`` queries, the next as many rounds of
    ``lanes`` as fit in PAIR_BLOCK_S at the pace measured (a clock where a query costs 10 s on each of 2 lanes:
    2, then 12 queries of 60 s each). The distances are those of one call; a block that fails leaves the
    blocks before it kept."""
    import chorustic.methods.pair_memo as pm

    rng = np.random.default_rng(4)
    train, test = rng.normal(size=(6, 3)), rng.normal(size=(31, 3))
    dq, dc = series_digests(test), series_digests(train)
    clock = [0.0]
    monkeypatch.setattr(pm.time, "perf_counter", lambda: clock[0])
    monkeypatch.setattr(pm, "PAIR_BLOCK_S", 60.0)

    class Paced(Recorder):
        fail_at = None

        def __call__(self, qi, ci):
            if len(self.calls) == self.fail_at:
                raise RuntimeError("stopped")
            clock[0] += 10.0 * len(qi) / 2  # two lanes at 10 s a query
            return super().__call__(qi, ci)

    memo = PairMemo(max_mb=1)
    kept = []
    memo.after_block = lambda: kept.append(memo.n_pairs)
    rec = Paced(test, train)
    np.testing.assert_array_equal(memo.distances("d", dq, dc, rec, lanes=2), _dist(test, train))
    assert [len(qi) for qi, _ in rec.calls] == [2, 12, 12, 5]
    assert kept == [14 * 6, 26 * 6]  # 70 s, then 60 s; the last 25 s are the caller's to save

    memo = PairMemo(max_mb=1)
    memo.after_block = lambda: None
    rec = Paced(test, train)
    rec.fail_at = 2  # the third block
    with pytest.raises(RuntimeError):
        memo.distances("d", dq, dc, rec, lanes=2)
    assert memo.n_pairs == 14 * 6
    memo.after_block = None  # without the hook: what is unknown, in one call
    rec = Recorder(test, train)
    np.testing.assert_array_equal(memo.distances("d", dq, dc, rec), _dist(test, train))
    (qi, ci), = rec.calls
    assert list(qi) == list(range(14, 31)) and list(ci) == list(range(6))


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


def _grown_memo(rng):
    """A memo of two distances whose rows were made before some of their columns (so rows differ in length)."""
    train, test = rng.normal(size=(9, 3)), rng.normal(size=(7, 3))
    memo = PairMemo(max_mb=1)
    dq, dc = series_digests(test), series_digests(train)
    memo.distances(("dtw", None), dq[:4], dc[:3], Recorder(test[:4], train[:3]))
    memo.distances(("dtw", None), dq[2:], dc[5:], Recorder(test[2:], train[5:]))
    memo.distances(("dtw", 0.1), dq, dc, Recorder(test, train))
    return memo, train, test


def test_a_written_memo_reads_back_as_the_same_pairs(tmp_path):
    """A memo written to a file and read into a fresh one hands out the same distances, bit for bit, and
    computes what the written one would (here: ("dtw", None)'s whole block, which has unknown pairs in every
    row and column; ("dtw", 0.1)'s none)."""
    rng = np.random.default_rng(4)
    memo, train, test = _grown_memo(rng)
    memo.distances(object(), [b"q"], [b"c"], lambda qi, ci: np.zeros((1, 1)))  # a key with no readable repr
    path = tmp_path / "memo.npz"
    with open(path, "wb") as fh:
        memo.write(fh, note="hello")
    again = PairMemo(max_mb=1)
    assert str(np.load(path)["note"]) == "hello"  # an .npz file
    with zipfile.ZipFile(path) as zf:
        assert again.read(zf) == memo.n_pairs - 1  # every pair but the unreadable key's
    dq, dc = series_digests(test), series_digests(train)
    memo.take_counts()
    for key in (("dtw", None), ("dtw", 0.1)):
        rec, ref = Recorder(test, train), Recorder(test, train)
        got, want = again.distances(key, dq, dc, rec), memo.distances(key, dq, dc, ref)
        np.testing.assert_array_equal(got, want)
        assert sum(q.size * c.size for q, c in rec.calls) == sum(q.size * c.size for q, c in ref.calls)
    counts = again.take_counts()
    assert counts == memo.take_counts() and counts["distances_computed"] == 7 * 9


def test_a_memo_beyond_the_bound_is_not_read(tmp_path):
    rng = np.random.default_rng(5)
    memo, _, _ = _grown_memo(rng)
    with open(tmp_path / "memo.npz", "wb") as fh:
        memo.write(fh)
    small = PairMemo(max_mb=memo.nbytes / 2**20 / 4)
    small.distances("held", [b"q"], [b"c"], lambda qi, ci: np.ones((1, 1)))
    with zipfile.ZipFile(tmp_path / "memo.npz") as zf, pytest.raises(ValueError, match="bound"):
        small.read(zf)
    assert small.n_pairs == 1  # what it held is untouched


def test_a_kept_memo_is_written_when_it_grew_and_its_time_has_come(tmp_path, monkeypatch):
    """KeptMemo writes the memo when it holds new pairs, at most every SAVE_EVERY_S and never sooner than
    MEMO_WRITE_SHARE times its last write's seconds (unless forced), and never an empty memo; a file made from
    another key is removed, not read."""
    from chorustic.evaluation import checkpoints
    from chorustic.evaluation.checkpoints import KeptMemo

    clock = [1000.0]
    monkeypatch.setattr(checkpoints, "_clock", lambda: clock[0])
    path = tmp_path / ".GunPoint.pairmemo.npz"
    memo = PairMemo(max_mb=1)
    kept = KeptMemo(path, {"fingerprint": "a"}, memo)
    assert kept.load() == 0 and not kept.save(force=True) and not path.exists()  # nothing to write
    rng = np.random.default_rng(6)
    train, test = rng.normal(size=(5, 3)), rng.normal(size=(6, 3))
    dq, dc = series_digests(test), series_digests(train)
    memo.distances("d", dq[:2], dc, Recorder(test[:2], train))
    assert kept.save() and path.exists()  # the first write comes at once
    memo.distances("d", dq[2:4], dc, Recorder(test[2:4], train))
    assert not kept.save()  # new pairs, too soon
    clock[0] += checkpoints.SAVE_EVERY_S
    write = memo.write
    monkeypatch.setattr(memo, "write", lambda fh, **kw: (clock.__setitem__(0, clock[0] + 10.0), write(fh, **kw)))
    assert kept.save() and not kept.save(force=True)  # written (in 10 s); then nothing new to write
    memo.distances("d", dq[4:], dc, Recorder(test[4:], train))
    clock[0] += checkpoints.SAVE_EVERY_S
    assert not kept.save()  # a 10 s write waits 20 x 10 s, not SAVE_EVERY_S
    clock[0] += checkpoints.MEMO_WRITE_SHARE * 10.0 - checkpoints.SAVE_EVERY_S
    assert kept.save() and kept.write_s == 20.0
    fresh = PairMemo(max_mb=1)
    assert KeptMemo(path, {"fingerprint": "a"}, fresh).load() == 6 * 5
    other = KeptMemo(path, {"fingerprint": "b"}, PairMemo(max_mb=1))
    assert other.load() == 0 and "other inputs" in other.discarded and not path.exists()


def _memo_file(tmp_path, edit=None):
    """A memo file of 4 x 5 pairs written through KeptMemo (key {"k": 1}); ``edit(members)`` changes its
    members (name -> array) before they are written as an .npz."""
    from chorustic.evaluation.checkpoints import KeptMemo

    rng = np.random.default_rng(7)
    train, test = rng.normal(size=(5, 3)), rng.normal(size=(4, 3))
    memo = PairMemo(max_mb=1)
    memo.distances(("dtw", None), series_digests(test), series_digests(train), Recorder(test, train))
    path = tmp_path / ".X.pairmemo.npz"
    KeptMemo(path, {"k": 1}, memo).save(force=True)
    if edit is not None:
        members = dict(np.load(path))
        edit(members)
        np.savez(path, **members)
    return path


def _changed_key(m):
    m["key0"] = np.array("object()")


def _duplicate(m):
    m["cols0"][1] = m["cols0"][0]


def _huge(m):
    m["cols0"] = np.lib.stride_tricks.as_strided(np.zeros(16, np.uint8), shape=(2**20, 16), strides=(0, 1))


@pytest.mark.parametrize("damage", ["a table's key", "a series named twice", "a header beyond the bound",
                                    "a damaged compressed member", "distances cut short", "not a zip file"])
def test_a_damaged_memo_file_is_removed_and_the_memo_left_empty(tmp_path, damage):
    """Whatever is wrong with a memo file (edited members, a member larger than the memo's bound announced in
    its header, damaged compression, a truncated file), loading it removes it, says why and leaves the memo
    as it was: a job then computes its pairs as if it had none."""
    import zipfile

    from chorustic.evaluation.checkpoints import KeptMemo

    edits = {"a table's key": _changed_key, "a series named twice": _duplicate, "a header beyond the bound": _huge}
    path = _memo_file(tmp_path, edits.get(damage))
    if damage == "a damaged compressed member":  # deflated, then a byte of the distances' data changed
        members = {n: zipfile.ZipFile(path).read(n) for n in zipfile.ZipFile(path).namelist()}
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
            for n, data in members.items():
                zf.writestr(n, data)
        raw = bytearray(path.read_bytes())
        at = raw.index(b"d0.npy") + 40
        raw[at] ^= 0xFF
        path.write_bytes(bytes(raw))
    if damage == "distances cut short":
        path.write_bytes(path.read_bytes()[:-300])
    if damage == "not a zip file":
        path.write_text("hello")
    memo = PairMemo(max_mb=1)
    kept = KeptMemo(path, {"k": 1}, memo)
    assert kept.load() == 0 and kept.discarded.startswith("unreadable") and not path.exists()
    assert memo.n_pairs == 0
    why = {"a table's key": "key is not", "a series named twice": "twice", "a header beyond the bound": "bound"}
    assert why.get(damage, "") in kept.discarded


def test_a_memo_that_cannot_be_written_is_given_up(tmp_path):
    from chorustic.evaluation.checkpoints import KeptMemo

    (tmp_path / "runs").write_text("a file where the memo's folder would be")
    memo = PairMemo(max_mb=1)
    memo.distances("d", [b"q" * 16], [b"c" * 16], lambda qi, ci: np.ones((1, 1)))
    kept = KeptMemo(tmp_path / "runs" / "m" / ".X.pairmemo.npz", {"k": 1}, memo)
    assert not kept.save(force=True) and kept.given_up
    memo.distances("d", [b"r" * 16], [b"c" * 16], lambda qi, ci: np.ones((1, 1)))
    assert not kept.save(force=True)  # given up: no further attempt
