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


def test_a_running_job_s_work_is_copied_as_it_goes_and_when_it_ends(bench, tmp_path, monkeypatch, capsys):
    """--keep while the job runs: what it has written is copied at each turn and once more when it ends (the
    memo it wrote last included); a copy that fails is said and never stops the job."""
    import sys

    results, keep = tmp_path / "results", tmp_path / "kept"
    runs = results / "runs" / "m"
    code = (f"import pathlib, time; r = pathlib.Path({str(runs)!r}); r.mkdir(parents=True); "
            "(r / '.D.full.seed0.partial.npz').write_bytes(b'rows'); time.sleep(1.0); "
            "(r / '.D.pairmemo.npz').write_bytes(b'distances')")
    monkeypatch.setattr(bench, "KEEP_EVERY_S", 0.2)
    assert bench._run_keeping([sys.executable, "-c", code], tmp_path / "log", keep, results, "m", "D") == 0
    assert sorted(p.name for p in keep.rglob("*") if p.is_file()) == [".D.full.seed0.partial.npz", ".D.pairmemo.npz"]

    def full_disk(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(bench, "keep_work", full_disk)
    assert bench._run_keeping([sys.executable, "-c", "import time; time.sleep(0.5); raise SystemExit(3)"],
                              tmp_path / "log", keep, results, "m", "D") == 3
    assert "the kept work could not be copied" in capsys.readouterr().err


def test_rows_of_code_a_method_no_longer_runs_do_not_count_in_the_fit(bench):
    """Multivariate 1NN-DTW before 2026-12-01 read each cell's channels strided: those rows measure code that no
    longer runs (what ``--fit`` skips); its univariate rows, later rows and other methods' rows do not."""
    row = {"method": "dtw_1nn", "n_channels": "6", "date": "2026-11-30"}
    assert bench.superseded(row)
    assert not bench.superseded({**row, "n_channels": "1"})
    assert not bench.superseded({**row, "date": "2026-12-01"})
    assert not bench.superseded({**row, "method": "quant"})
