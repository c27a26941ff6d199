"""benchmarks/archive_scale.py: its table keeps every earlier row when its columns grow."""

from __future__ import annotations

import csv

import pytest


@pytest.fixture(scope="module")
def bench(benchmark_script):
    return benchmark_script("archive_scale")


def test_a_table_from_before_the_last_columns_keeps_its_rows_under_the_current_header(bench, tmp_path):
    """Rows measured before ``torch`` and ``threads`` existed stay as they were, those columns empty (one thread,
    the CPU build); a new row appends under the current header. A table with columns of another benchmark is
    refused, never rewritten."""
    old = bench.COLUMNS[:-2]
    path = tmp_path / "t.csv"
    rows = [{c: f"{c}{i}" for c in old} for i in range(3)]
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=old)
        w.writeheader()
        w.writerows(rows)
    bench._upgrade_header(path)
    with open(path, "a", newline="") as fh:
        csv.DictWriter(fh, fieldnames=bench.COLUMNS).writerow({c: "new" for c in bench.COLUMNS})
    back = list(csv.DictReader(open(path, newline="")))
    assert list(back[0]) == bench.COLUMNS and len(back) == 4
    assert [{c: r[c] for c in old} for r in back[:3]] == rows
    assert all(r["torch"] == r["threads"] == "" for r in back[:3]) and back[3]["threads"] == "new"
    before = path.read_bytes()
    bench._upgrade_header(path)  # current: untouched
    assert path.read_bytes() == before
    other = tmp_path / "other.csv"
    other.write_text("method,held_mb\nx,1\n")
    with pytest.raises(SystemExit, match="held_mb"):
        bench._upgrade_header(other)
    assert other.read_text() == "method,held_mb\nx,1\n"
