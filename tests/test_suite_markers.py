"""The slow marker and tests/README.md's table of the slowest tests agree (issue 74).

``-m "not slow"`` is the edit-test loop; it stays fast only while every test that takes more than
SLOW_S seconds carries the ``slow`` marker. The table in tests/README.md lists the 15 slowest tests of
the whole suite as measured on the developers' machine; this test asks pytest itself (its collection,
so module, class and parameter marks count) which of them are marked, and checks that each listed test
exists, that the table's ``slow`` column says what the code says, that every test the table times at
SLOW_S or more is marked, and that a test over 60 s says why it is slow.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
SLOW_S = 5.0  # the threshold pyproject.toml's marker description states
ROW = re.compile(r"^\|\s*`(tests/[\w/]+\.py::[^`]+)`\s*\|\s*([\d.]+)\s*\|\s*(yes|no)\s*\|(.*)\|\s*$")


def table_rows() -> list[tuple[str, float, bool, str]]:
    rows = []
    for line in (TESTS / "README.md").read_text().splitlines():
        m = ROW.match(line)
        if m:
            rows.append((m[1], float(m[2]), m[3] == "yes", m[4].strip()))
    return rows


_COLLECT = """
import sys, pytest
class Marks:
    def pytest_collection_finish(self, session):
        for item in session.items:
            print("NODE", item.nodeid, int(item.get_closest_marker("slow") is not None))
sys.exit(pytest.main(["--collect-only", "-q", "-n0", "-p", "no:randomly", "-p", "no:cacheprovider",
                      "--durations=0", *sys.argv[1:]], plugins=[Marks()]))
"""


def collected(files: list[str]) -> dict[str, bool]:
    """The node ids pytest collects from ``files``, each with whether it carries the ``slow`` marker (one
    collection, in a fresh process: module, class and parameter marks count)."""
    out = subprocess.run([sys.executable, "-c", _COLLECT, *files], cwd=REPO, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode in (0, 5), out.stdout[-2000:] + out.stderr[-2000:]
    return {ln.split()[1]: ln.split()[2] == "1" for ln in out.stdout.splitlines() if ln.startswith("NODE ")}


def has_reason(node_id: str) -> bool:
    """Whether the test's slow marker says why: ``slow(reason=...)``, or a comment on the marker's line."""
    file, name = node_id.split("::")[0], node_id.split("::")[-1].split("[")[0]
    source = (REPO / file).read_text()
    lines = source.splitlines()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.Assign)) and (getattr(node, "name", None) == name or (
                isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "pytestmark" for t in node.targets))):
            decorators = node.decorator_list if isinstance(node, ast.FunctionDef) else [node.value]
            for d in decorators:
                text = ast.unparse(d)
                if "mark.slow" in text and ("reason=" in text or "#" in lines[d.lineno - 1]):
                    return True
    return False


@pytest.fixture(scope="module")
def every() -> dict[str, bool]:
    """Every test of the suite, with whether it is marked slow (one collection)."""
    return collected(["tests"])


@pytest.mark.slow(reason="collects the whole suite in a fresh process (~14 s)")
def test_the_table_lists_the_15_slowest_tests_and_the_markers_agree(every):
    rows = table_rows()
    assert len(rows) == 15, f"tests/README.md lists {len(rows)} timed tests, not 15"
    assert [r[1] for r in rows] == sorted((r[1] for r in rows), reverse=True), "the table is not sorted by time"
    assert all(r[3] for r in rows), "every row says what its test proves"
    for node_id, seconds, said_slow, _ in rows:
        assert node_id in every, f"tests/README.md lists {node_id}, which pytest does not collect"
        marked = every[node_id]
        assert marked == said_slow, f"{node_id}: the table says slow={said_slow}, the code says {marked}"
        assert marked or seconds < SLOW_S, f"{node_id} takes {seconds:g} s (>= {SLOW_S:g} s) but is not marked slow"
        assert seconds <= 60 or has_reason(node_id), f"{node_id} takes {seconds:g} s: its slow marker needs a reason"


def test_the_reason_reader_sees_both_forms(tmp_path, monkeypatch):
    f = tmp_path / "tests" / "test_forms.py"
    f.parent.mkdir()
    f.write_text("import pytest\n@pytest.mark.slow(reason='r')\ndef test_a(): pass\n"
                 "@pytest.mark.slow  # why\ndef test_b(): pass\n@pytest.mark.slow\ndef test_c(): pass\n")
    monkeypatch.setattr(sys.modules[__name__], "REPO", tmp_path)
    assert [has_reason(f"tests/test_forms.py::{n}") for n in ("test_a", "test_b", "test_c")] == [True, True, False]

