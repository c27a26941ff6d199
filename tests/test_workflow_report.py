"""`snakemake --report`: one self-contained HTML holds every table and figure `chorustic report` wrote, the
coverage page and the reproduction check, grouped by archive and protocol, each with its caption."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from chorustic.cli import main
from chorustic.reports.catalog import FOLDERS, describe
from chorustic.testing.accuracies import SyntheticMethod, write_synthetic_accuracies
from chorustic.testing.workflow import SNAKEFILE, run_snakemake

pytestmark = pytest.mark.slow(reason="builds the demo's report with Snakemake once for the module (~10 s)")

REPO = Path(__file__).resolve().parents[1]

METHODS = (
    SyntheticMethod("chorustic", "ChorusTIC", "Time-series ICL", False, 0.05),
    SyntheticMethod("tabicl", "TabICL", "Generic ICL", False, -0.02),
    SyntheticMethod("minirocket", "MiniRocket", "Classical", True, 0.03),
)


def _embedded(html: str, name: str) -> dict:
    """The JSON object the report assigns to a JavaScript variable (``var name = {...}``)."""
    start = re.search(rf"\bvar {name} = (?=\{{)", html).end()
    return json.JSONDecoder().raw_decode(html[start:])[0]


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    work = tmp_path_factory.mktemp("smk_report")
    write_synthetic_accuracies(
        work / "results",
        methods=METHODS,
        uea=("BasicMotions", "Epilepsy", "Libras"),
        ucr=("ArrowHead", "Coffee", "GunPoint"),
        protocols=("full", "fixed5", "prop20", "prop40"),
        n_seeds=2,
        failures=(("tabicl", "Coffee", "fixed5", 1),),
    )
    assert (
        main(
            [
                "report",
                "--results",
                str(work / "results"),
                "--out",
                str(work / "reports"),
                "--reference",
                "chorustic",
                "--formats",
                "png",
                "--reference-results",  # the page of reports.reference_results (here: the run itself)
                str(work / "results"),
            ]
        )
        == 0
    )
    proc = run_snakemake(
        "-s", str(SNAKEFILE), "-d", str(work), "--configfile", str(REPO / "config" / "demo.yaml"),
        "--cores", "1", "--report", str(work / "report.html"), cwd=work, timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    html = (work / "report.html").read_text()
    return work, html, _embedded(html, "results"), _embedded(html, "categories")


def test_every_table_and_figure_is_in_the_report_with_a_caption(report):
    work, html, results, categories = report
    expected = {
        f"reports/{folder}/{p.name}"
        for folder, ext in FOLDERS.items()
        for p in (work / "reports" / folder).glob(f"*.{ext}")
    }
    assert {
        "reports/figures/cost_ucr.png",
        "reports/figures/mcm_uea.png",
        "reports/tables/table_cost_uea.html",
        "reports/figures/cd_ucr.png",
        "reports/overview/coverage.html",
        "reports/reproduction/reproduction.html",
        "reports/reproduction/reference_results.html",
    } <= expected
    assert set(results) == expected
    for path, entry in results.items():
        text = re.sub(r"<[^>]+>", "", entry["caption"])
        assert len(text.split()) >= 20, (path, text)  # a caption that says what the result shows
        assert entry["mime_type"] in ("image/png", "text/html")
        assert entry["data_uri"].startswith("data:"), "self-contained: results are embedded"
        assert list(entry["labels"]) == ["Result"]
    assert "Accuracy against cost" in results["reports/figures/cost_ucr.png"]["caption"]
    assert "create_multi_comparison_matrix" in results["reports/figures/mcm_uea.png"]["caption"]


def test_results_are_grouped_by_archive_and_protocol(report):
    _, html, results, categories = report
    assert set(categories) == {"Overview", "UCR", "UEA"}
    assert set(categories["UEA"]) == {
        "1. Full context",
        "2. Fixed-shot",
        "3. Proportional",
        "5. Accuracy and cost",
        "6. Spread, intervals, measures",
    }
    assert set(categories["Overview"]) == {"Coverage and missing runs", "Reproduction check"}
    for cat, subs in categories.items():
        for sub, paths in subs.items():
            for p in paths:
                d = describe(Path(p).parent.name, Path(p).stem)
                assert (d["category"], d["subcategory"]) == (cat, sub)
    assert "ChorusTIC benchmark (demo profile)" in html  # the workflow description
    coverage = results["reports/overview/coverage.html"]["data_uri"]
    assert coverage.startswith("data:text/html")
