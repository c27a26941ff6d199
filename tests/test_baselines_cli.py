"""`chorustic methods`: every discovered method with metadata and readiness, broken plugin files
listed (never fatal); CSV output; a config's method runs."""

from __future__ import annotations

import csv
import io

import pytest

from chorustic.cli import main

PAPER = {
    "tabicl",
    "tabicl_v2",
    "moment_svm",
    "mantis_rf",
    "mantisv2_lr",
    "mantisv2_rf",
    "unishape_rf",
    "nutime_rf",
    "tic_fm",
    "tict",
    "minirocket",
    "multirocket_hydra",
    "quant",
    "dtw_1nn",
}


def run(argv, capsys):
    code = main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_methods_lists_every_baseline_with_metadata(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty"))
    monkeypatch.setenv("CHORUSTIC_CHECKOUTS", str(tmp_path / "none"))
    code, out, _ = run(["methods", "--format", "csv"], capsys)
    rows = list(csv.DictReader(io.StringIO(out)))
    by = {r["name"]: r for r in rows}
    assert PAPER <= set(by)
    assert by["minirocket"]["status"] == "ready" and by["minirocket"]["group"] == "Classical"
    assert by["tict"]["status"] == "reported" and "reported, not reproduced" in by["tict"]["detail"]
    assert by["tabicl"]["status"] == "not ready" and "fetch-weights tabicl" in by["tabicl"]["detail"]
    assert by["nutime_rf"]["status"] == "not ready" and "git clone" in by["nutime_rf"]["detail"]
    assert by["moment_svm"]["gpu"] == "1" and by["moment_svm"]["input_kind"] == "native"
    code, out, _ = run(["methods", "--no-check"], capsys)
    assert code == 0 and "MultiRocket-Hydra" in out and "target_fit" in out


def test_broken_plugin_files_are_listed_not_fatal(capsys, tmp_path):
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "good.py").write_text(
        "from chorustic.methods import register\nfrom chorustic.methods.reported import reported_method\n"
        "register(reported_method(name='good', display_name='Good', group='Classical', csv='x.csv'))\n"
    )
    (plugins / "broken.py").write_text("import a_package_that_does_not_exist\n")
    code, out, _ = run(["methods", "--plugin-dir", str(plugins)], capsys)
    assert code == 1
    assert "good" in out and "broken.py" in out and "a_package_that_does_not_exist" in out
    code, out, _ = run(["methods", "--plugin-dir", str(plugins), "--format", "csv"], capsys)
    assert "broken plugin" in out


def test_methods_with_a_config_lists_its_runs(capsys):
    pytest.importorskip("chorustic.data.registry")
    _, out, _ = run(["methods", "--config", "config/demo.yaml", "--no-check"], capsys)
    for name in ("minirocket", "multirocket_hydra", "quant", "dtw_1nn"):
        assert name in out
