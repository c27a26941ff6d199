"""The embedding memo (chorustic.methods.embedding_memo): each series is embedded once per job, in batches of
one fixed size, and what the memo returns is what embedding the series again gives."""

from __future__ import annotations

import numpy as np
import pytest

from chorustic.methods.embedding_memo import ENTRY_OVERHEAD_BYTES, EmbeddingMemo


class Encoder:
    """A stand-in encoder that records the batches it is given; row ``i``'s embedding depends on the series and
    on the batch's size (as a convolution's rounding may), never on the other series of the batch."""

    def __init__(self):
        self.batches = []

    def __call__(self, part):
        part = np.asarray(part, dtype=np.float32)
        self.batches.append(part.copy())
        return np.stack([part.sum(axis=1), part.max(axis=1) + len(part)], axis=1)


def series(n, length=8, seed=0):
    return np.random.default_rng(seed).standard_normal((n, length)).astype(np.float32)


def test_every_series_is_embedded_once_in_batches_of_one_size():
    memo, enc = EmbeddingMemo(), Encoder()
    S = series(10)
    a = memo.embed("k", S[:7], enc, batch=4)
    assert [len(b) for b in enc.batches] == [4, 4]  # 7 series: a batch of 4, then 3 and one copy of the last
    assert np.array_equal(enc.batches[1][3], S[6])
    assert memo.take_counts() == {"embeddings_computed": 7, "embeddings_reused": 0, "embedding_padding": 1}
    b = memo.embed("k", S[3:], enc, batch=4)  # 4 known, 3 new
    assert len(enc.batches) == 3 and np.array_equal(enc.batches[2][:3], S[7:])
    assert memo.take_counts() == {"embeddings_computed": 3, "embeddings_reused": 4, "embedding_padding": 1}
    assert np.array_equal(b[:4], a[3:])
    fresh = EmbeddingMemo().embed("k", S[3:], Encoder(), batch=4)
    assert np.array_equal(b, fresh)  # what embedding them alone gives


def test_series_are_known_by_their_contents_and_the_key():
    memo, enc = EmbeddingMemo(), Encoder()
    S = series(3)
    twice = np.concatenate([S, S[::-1]])
    out = memo.embed("k", twice, enc, batch=2)
    assert memo.computed == 3  # a series met twice in one call is embedded once
    assert np.array_equal(out[3:], out[:3][::-1])
    memo.embed("other readout", S, enc, batch=2)
    assert memo.computed == 6
    memo.embed("k", S.astype(np.float64), enc, batch=2)  # another dtype: other series
    assert memo.computed == 9


def test_variable_length_series_are_embedded_as_given():
    memo = EmbeddingMemo()
    S = [np.arange(n, dtype=np.float32) for n in (3, 5, 4)]
    seen = []

    def enc(part):
        seen.append([len(s) for s in part])
        return np.array([[float(len(s)), float(np.sum(s))] for s in part])

    out = memo.embed("k", S, enc, batch=2)
    assert seen == [[3, 5], [4, 4]]
    assert out[:, 0].tolist() == [3, 5, 4]


def test_the_memo_keeps_what_fits_its_bound_and_computes_the_rest_again():
    row = 2 * 4 + ENTRY_OVERHEAD_BYTES  # 2 float32 values and the entry
    memo, enc = EmbeddingMemo(max_mb=3.5 * row / 2**20), Encoder()
    S = series(5)
    first = memo.embed("k", S, enc, batch=5)
    assert len(memo) == 3 and memo.nbytes == 3 * row
    again = memo.embed("k", S, enc, batch=5)
    assert memo.take_counts()["embeddings_computed"] == 5 + 2
    assert np.array_equal(first, again)
    memo.clear()
    assert len(memo) == 0 and memo.nbytes == 0


def test_an_encoder_returning_the_wrong_rows_is_refused():
    memo = EmbeddingMemo()
    with pytest.raises(ValueError, match="for 4 series"):
        memo.embed("k", series(3), lambda part: np.zeros((len(part) - 1, 2)), batch=4)



def test_a_memo_written_and_read_back_hands_out_the_same_embeddings_without_computing():
    """What a job's memo file holds (chorustic.evaluation.checkpoints.KeptMemo): every table with its key, each
    embedding bit for bit; the memo read back computes nothing for those series."""
    import io
    import zipfile

    memo = EmbeddingMemo()
    X = np.random.default_rng(0).normal(size=(9, 32)).astype(np.float32)
    key = ("encoder", ("weights.bin", 123, 456), "Head", 4)
    first = memo.embed(key, X, lambda part: np.asarray(part)[:, :8] * 2, 4)
    memo.embed(("other", 1), X[:3], lambda part: np.asarray(part)[:, :5], 2)
    assert memo.changes == 12
    buf = io.BytesIO()
    memo.write(buf, key="the job's inputs")
    again = EmbeddingMemo()
    assert again.read(zipfile.ZipFile(io.BytesIO(buf.getvalue()))) == 12
    assert again.nbytes == memo.nbytes and again.changes == 0
    np.testing.assert_array_equal(again.embed(key, X, lambda part: pytest.fail("computed again"), 4), first)
    assert again.take_counts()["embeddings_reused"] == 9
    with pytest.raises(ValueError, match="bound"):  # a file beyond the memo's bound is refused, held tables kept
        EmbeddingMemo(max_mb=0.001).read(zipfile.ZipFile(io.BytesIO(buf.getvalue())))
    with pytest.raises(KeyError):  # not a memo file at all
        again.read(zipfile.ZipFile(io.BytesIO(_zip_with("other.npy"))))
    assert len(again) == 12


def _zip_with(name: str) -> bytes:
    import io
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr(name, b"")
    return buf.getvalue()
