"""What keeping a job's pair memo on disk costs: the seconds and memory to write and read its memo file.

A nearest-neighbour job writes its memo (:class:`chorustic.methods.pair_memo.PairMemo`) to its memo file as
it grows (:class:`chorustic.evaluation.checkpoints.KeptMemo`: at most every SAVE_EVERY_S, and not again
before MEMO_WRITE_SHARE times the last write's seconds), and reads it at the job's start. This builds a memo
of ``--test`` x ``--train`` float64 pairs (one distance; 1NN-DTW's memo of a whole test split against the
training split), writes it through KeptMemo and reads it into a fresh memo, timing both and measuring
the process's peak memory (ru_maxrss) before and after each step: writing goes row by row, so its peak
should not grow by more than a row; reading holds the memo once more (the memo the job then uses).

    python benchmarks/pair_memo_file.py [--test 8236] [--train 1000] [--dir /tmp]

The defaults are StarLightCurves' full shape (8,236 test series, 1,000 training series: a 63 MB memo).
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

import numpy as np


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main(argv=None) -> None:
    from chorustic.evaluation.checkpoints import KeptMemo
    from chorustic.methods.pair_memo import PairMemo

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--test", type=int, default=8236)
    ap.add_argument("--train", type=int, default=1000)
    ap.add_argument("--dir", default=None, help="where the memo file is written (default: a temporary folder)")
    args = ap.parse_args(argv)

    rng = np.random.default_rng(0)
    queries = [rng.bytes(16) for _ in range(args.test)]
    context = [rng.bytes(16) for _ in range(args.train)]
    memo = PairMemo()
    for start in range(0, args.test, 256):  # as the harness's chunks fill it: no block as large as the memo
        q = queries[start:start + 256]
        memo.distances(("dtw", None), q, context, lambda qi, ci: rng.random((qi.size, ci.size)))
    built = _peak_mb()
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        path = Path(tmp) / ".Dataset.pairmemo.npz"
        kept = KeptMemo(path, {"fingerprint": "benchmark"}, memo)
        t0, c0 = time.perf_counter(), time.process_time()
        kept.save(force=True)
        write_s, write_cpu = time.perf_counter() - t0, time.process_time() - c0
        written = _peak_mb()
        size_mb = path.stat().st_size / 2**20
        fresh = PairMemo()
        t0 = time.perf_counter()
        n = KeptMemo(path, {"fingerprint": "benchmark"}, fresh).load()
        read_s = time.perf_counter() - t0
        read = _peak_mb()
    assert n == args.test * args.train
    print(f"memo of {args.test} x {args.train} pairs: {memo.nbytes / 2**20:.1f} MB held, file {size_mb:.1f} MB")
    print(f"write: {write_s:.2f} s ({write_cpu:.2f} CPU-s, {size_mb / write_s:.0f} MB/s), "
          f"peak memory {built:.0f} -> {written:.0f} MB")
    print(f"read:  {read_s:.2f} s ({size_mb / read_s:.0f} MB/s), peak memory {written:.0f} -> {read:.0f} MB")


if __name__ == "__main__":
    main()
