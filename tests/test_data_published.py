"""Published classical results (issue 73.4): the bake-off redux reference results read with aeon's results
loaders from a local copy downloaded once (chorustic/data/published.py), the `published_<plugin>` reported
methods (baselines/published.py) and the report's "harness re-run vs published" tables. Offline: a local
HTTP server serves files in the published format."""

from __future__ import annotations

import functools
import http.server
import threading

import numpy as np
import pandas as pd
import pytest

from chorustic.data.published import PublishedResultsError, published_accuracies, published_file, source_record

PUBLISHED = {  # the published format: a header of resample ids, one row per dataset
    "HC2": "Resamples:,0,1,2\nGunPoint,1.0,0.99,0.98\nArrowHead,0.88,0.9,0.87\nCoffee,1.0,1.0,1.0\n",
    "MiniROCKET": "Resamples:,0,1,2\nGunPoint,0.98,0.97,0.99\nArrowHead,0.86,0.85,0.88\n",
}


@pytest.fixture()
def server(tmp_path):
    root = tmp_path / "served"
    (root / "classification" / "accuracy").mkdir(parents=True)
    for est, text in PUBLISHED.items():
        (root / "classification" / "accuracy" / f"{est}_accuracy.csv").write_text(text)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *a: None
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def test_downloaded_once_recorded_and_read_with_aeons_loader(server, tmp_path):
    cache = tmp_path / "published"
    got = published_accuracies("HC2", cache, base_url=server).set_index("dataset")["accuracy"]
    assert got.to_dict() == {"GunPoint": 1.0, "ArrowHead": 0.88, "Coffee": 1.0}  # resample 0 only
    rec = source_record(cache, "HC2")
    assert rec["url"] == f"{server}/classification/accuracy/HC2_accuracy.csv" and len(rec["sha256"]) == 64
    assert rec["retrieved"][:4].isdigit()
    # the local copy is read from now on, also offline and with the server gone
    again = published_accuracies("HC2", cache, base_url="http://127.0.0.1:9", offline=True)
    assert len(again) == 3


def test_no_copy_and_no_network_says_where_to_put_one(tmp_path):
    with pytest.raises(PublishedResultsError, match=r"not in .*HC2_accuracy.csv and downloads are off: put a copy"):
        published_accuracies("HC2", tmp_path, offline=True)
    with pytest.raises(PublishedResultsError, match="cannot download the published results of QUANT"):
        published_accuracies("QUANT", tmp_path, base_url="http://127.0.0.1:9")
    bad = published_file(tmp_path, "HC2")
    bad.parent.mkdir(parents=True, exist_ok=True)
    bad.write_text("GunPoint,0.7\n")  # no header: no dataset
    with pytest.raises(PublishedResultsError, match="holds no dataset"):
        published_accuracies("HC2", tmp_path, offline=True)
    bad.write_text("Resamples:,0\nGunPoint,87.5\n")  # percentages
    with pytest.raises(PublishedResultsError, match=r"outside \[0, 1\] for \['GunPoint'\]"):
        published_accuracies("HC2", tmp_path, offline=True)


def test_published_methods_cover_the_datasets_of_their_file(server, tmp_path):
    from chorustic.methods import discover
    from chorustic.methods.base import MethodNotReady

    disc = discover()
    m = disc.get("published_minirocket")
    assert m.info.reported and m.info.display_name == "MiniRocket (bake-off)" and m.info.group == "Classical"
    params = {"cache": str(tmp_path / "pub"), "base_url": server}
    assert m.covered_datasets(**params) is None  # not downloaded yet: nothing is fetched at plan time
    table = m.reported_accuracies(**params)
    assert list(table.columns) == ["dataset", "protocol", "seed", "accuracy"] and set(table["protocol"]) == {"full"}
    assert m.covered_datasets(**params) == {"GunPoint", "ArrowHead"}
    with pytest.raises(MethodNotReady, match="published_quant"):
        disc.get("published_quant").check_ready(cache=str(tmp_path / "none"), offline=True)
    assert {n for n in disc.methods if n.startswith("published_")} == {
        "published_hc2", "published_multirocket_hydra", "published_quant", "published_minirocket", "published_dtw_1nn"}


@pytest.mark.slow(reason="builds a report with published results (~6 s)")
def test_the_report_puts_published_results_beside_the_paper_tables_and_compares_the_re_runs(tmp_path):
    from chorustic.reports.build import ReportConfig, build_report
    from chorustic.testing.accuracies import SyntheticMethod, synthetic_accuracies

    methods = (SyntheticMethod("chorustic", "ChorusTIC", "Time-series ICL", False, 0.05),
               SyntheticMethod("minirocket", "MiniRocket", "Classical", True, 0.03),
               SyntheticMethod("tabicl", "TabICL", "Generic ICL", False, 0.0),
               SyntheticMethod("published_minirocket", "MiniRocket (bake-off)", "Classical", True, 0.03,
                               reported=True, archives=("UCR",), protocols=("full",)),
               SyntheticMethod("published_hc2", "HIVE-COTE 2 (bake-off)", "Classical", True, 0.06,
                               reported=True, archives=("UCR",), protocols=("full",)))
    ucr = ("ArrowHead", "Coffee", "GunPoint", "ItalyPowerDemand", "OSULeaf", "Beef")
    df = synthetic_accuracies(methods=methods, uea=("BasicMotions", "Epilepsy"), ucr=ucr, protocols=("full",),
                              n_seeds=1)
    # the published results cover 5 of the 6 UCR datasets
    df = df[~((df["method"].str.startswith("published_")) & (df["dataset"] == "Beef"))]
    results = tmp_path / "results"
    results.mkdir()
    df.to_csv(results / "accuracies.csv", index=False)
    res = build_report(results, tmp_path / "reports", ReportConfig(figure_formats=("png",)))
    assert res.problems == [], res.problems
    tables = tmp_path / "reports" / "tables"
    t2 = (tables / "table2_ucr_main.md").read_text()
    assert "bake-off" not in t2 and "6 datasets on which all 3 methods have a result" in t2  # the paper's table
    beside = (tables / "table_ucr_with_published.md").read_text()
    assert "HIVE-COTE 2 (bake-off)\u2020" in beside and "5 datasets on which all 5 methods have a result" in beside
    diffs = pd.read_csv(tables / "published_vs_rerun.csv")
    assert set(diffs["method"]) == {"minirocket"} and len(diffs) == 5
    ok = df[(df["method"] == "minirocket")].set_index("dataset")["accuracy"]
    pub = df[(df["method"] == "published_minirocket")].set_index("dataset")["accuracy"]
    np.testing.assert_allclose(diffs.set_index("dataset")["diff_pp"].sort_index(),
                               (100 * (ok - pub)).dropna().sort_index())
    summary = pd.read_csv(tables / "table_published_ucr.csv").iloc[0]
    assert summary["n_datasets"] == 5 and summary["diff_pp"] == pytest.approx(diffs["diff_pp"].mean())
    assert "Harness re-run against published results" in (tables / "table_published_ucr.md").read_text()


def test_each_rerun_is_paired_with_its_published_run_and_differs_in_points():
    import pandas as pd

    from chorustic.reports.published import published_differences, published_pairs

    meta = pd.DataFrame({"reported": [False, True, True]}, index=["rocket", "published_rocket", "published_hc2"])
    assert published_pairs(meta) == {"rocket": "published_rocket"}  # hc2 has no re-run
    rows = [("UCR", d, m, s, a) for d, m, s, a in [
        ("GunPoint", "rocket", "ok", 0.90), ("GunPoint", "published_rocket", "reported", 0.95),
        ("Coffee", "rocket", "ok", 1.00), ("Coffee", "published_rocket", "reported", 0.98),
        ("Wine", "rocket", "failed", None), ("Wine", "published_rocket", "reported", 0.8)]]
    df = pd.DataFrame(rows, columns=["archive", "dataset", "method", "status", "accuracy"]).assign(
        protocol="full", seed=0)
    diffs = published_differences(df, meta)
    assert diffs["dataset"].tolist() == ["Coffee", "GunPoint"]  # a failed re-run is not compared
    assert diffs["diff_pp"].round(6).tolist() == [2.0, -5.0]
