"""benchmarks/tabicl_memory.py: its held MB are the tensors a forward pass keeps, and its CSV keeps every row."""

from __future__ import annotations

import csv

import pytest


@pytest.fixture(scope="module")
def bench(benchmark_script):
    return benchmark_script("tabicl_memory")


@pytest.mark.slow
@pytest.mark.parametrize("version, batch, members", [("v1", 1, 1), ("v2", 8, 4)])
def test_held_mb_is_the_passes_column_embeddings(bench, tmp_path, version, batch, members):
    """A tiny checkpoint of each layout (v1.1: no feature groups, v2: grouped and target-aware columns), 60 + 20 rows
    of 300 features: the tensors alive after a column stage are the pass's members' tables of embed_dim float32 per
    cell (300 features and the class tokens), with little beside them (the rows' inputs), for a lone member (which
    the plugin embeds once) as for 4 members a pass."""
    pytest.importorskip("tabicl")
    from chorustic.testing.checkpoints import TABICL_TINY, write_tabicl

    layout = {"col_feature_group": False, "col_target_aware": False} if version == "v1" else {}
    name = "tabicl-classifier-v1.1-20250506.ckpt" if version == "v1" else "tabicl-classifier-v2-20260212.ckpt"
    ckpt = write_tabicl(tmp_path / name, **layout)
    r = bench.measure(ckpt, 60, 20, 300, batch, "budget")
    assert r["ensemble_batch"] == members
    tokens = 300 + TABICL_TINY.get("row_num_cls", 4)
    table_mb = 80 * tokens * TABICL_TINY["embed_dim"] * 4 / 2**20
    assert members * table_mb <= r["held_mb"] <= members * table_mb * 1.25, (r["held_mb"], table_mb)


def test_a_csv_from_before_the_new_columns_keeps_its_rows(bench, tmp_path):
    """Appending to a CSV written before ``held_mb`` and ``mmap_threshold`` existed rewrites its header and keeps
    every earlier row, those columns empty; the new row carries them."""
    old = bench.CSV_COLUMNS[:-2]
    path = tmp_path / "t.csv"
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(old)
        w.writerow(["2026-11-29", "cpu", "v1", 7, 7, 1024, 8, "budget", 4, 46, 567, 1271])
    bench.append_row(str(path), {"version": "v2", "n_context": 600, "n_query": 300, "features": 256, "members": 1,
                                 "mode": "budget", "ensemble_batch": 1, "cpu_s": 227.5, "before_mb": 573.6,
                                 "peak_mb": 1060.1, "held_mb": 115.2, "mmap_threshold": 1048576})
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert tuple(rows[0]) == bench.CSV_COLUMNS
    assert [r["peak_mb"] for r in rows] == ["1271", "1060.1"]
    assert (rows[0]["held_mb"], rows[0]["mmap_threshold"]) == ("", "")
    assert (rows[1]["held_mb"], rows[1]["mmap_threshold"]) == ("115.2", "1048576")
