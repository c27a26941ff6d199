"""`chorustic check-method`: the README's "Adding a method" example runs as written and passes every
clause (tests/test_docs.py runs it too, as a reader would; this test names the clauses); the plugin a
method author first writes (an sklearn pipeline without predict_proba, fed (n, C, L) arrays) fails with
one clear line per broken clause."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from chorustic.cli import main

ROOT = Path(__file__).resolve().parents[1]


def readme_section(title: str) -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else None]


def test_readme_plugin_example_passes_the_full_contract(tmp_path, capsys):
    section = readme_section("Adding a method")
    code = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(code) == 1, "the README's 'Adding a method' section has one Python example"
    commands = re.findall(r"```bash\n(.*?)```", section, re.S)
    line = next(ln for ln in commands[0].splitlines() if ln.startswith("chorustic check-method"))
    name = line.split()[2]
    file = re.search(r"`baselines/(\w+)\.py`", section).group(1)
    assert name == file, "the README checks the plugin it adds"
    (tmp_path / f"{file}.py").write_text(code[0])

    rc = main(["check-method", name, "--plugin-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert rc == 0, out
    lines = [ln for ln in out.splitlines() if ln.startswith(("PASS", "FAIL", "SKIP"))]
    assert lines and all(ln.startswith("PASS") for ln in lines), out
    for clause in ("fit returns self", "probabilities", "classes_", "missing class", "univariate input"):
        assert any(clause in ln for ln in lines), (clause, out)
    # the section says what the estimator receives and must return; docs/adding-a-method.md has the contract
    assert "(n, C, L)" in section and "predict_proba" in section and "docs/adding-a-method.md" in section
    contract = (ROOT / "docs" / "adding-a-method.md").read_text()
    assert "(n, C, L)" in contract and "predict_proba" in contract and "Probabilities are required" in contract


BROKEN = """
from sklearn.linear_model import RidgeClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from chorustic.methods import Method, MethodInfo, register


@register
class NoProba(Method):
    info = MethodInfo(name="no_proba", display_name="Ridge", group="Classical", fits_on_target=True)
    default_params = {"alpha": 1.0}

    def build(self, *, seed, device="cpu", n_jobs=1, alpha=1.0):
        return make_pipeline(StandardScaler(), RidgeClassifier(alpha=alpha))
"""


@pytest.fixture()
def broken_plugin(tmp_path):
    (tmp_path / "no_proba.py").write_text(textwrap.dedent(BROKEN))
    return tmp_path


def test_a_classifier_without_probabilities_fails_with_a_clear_line(broken_plugin, capsys):
    rc = main(["check-method", "no_proba", "--plugin-dir", str(broken_plugin)])
    out = capsys.readouterr().out
    assert rc == 1
    api = next(ln for ln in out.splitlines() if "estimator API" in ln)
    assert api.startswith("FAIL") and "predict_proba" in api and "probabilities are required" in api
    assert "PASS  metadata" in out and "PASS  ready" in out
    assert re.search(r"^SKIP  fit returns self", out, re.M)


def test_parameters_and_names_are_checked(broken_plugin, capsys):
    rc = main(["check-method", "no_proba", "--plugin-dir", str(broken_plugin), "--param", "alpah=2"])
    out = capsys.readouterr().out
    assert rc == 1 and re.search(r"^FAIL  parameters: .*no parameter 'alpah'", out, re.M), out
    assert main(["check-method", "nosuch", "--plugin-dir", str(broken_plugin)]) == 2
    assert "unknown method 'nosuch'" in capsys.readouterr().err


def test_fit_on_3d_input_is_reported_as_a_contract_failure(tmp_path, capsys):
    """A 2-D-only estimator (the shape error the harness would hit on every run) fails `fit`, naming the
    input the harness passes."""
    code = textwrap.dedent(BROKEN).replace("RidgeClassifier(alpha=alpha)", "LogisticRegression(C=alpha)")
    code = code.replace("import RidgeClassifier", "import LogisticRegression")
    (tmp_path / "no_proba.py").write_text(code)
    assert main(["check-method", "no_proba", "--plugin-dir", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    fit = next(ln for ln in out.splitlines() if "fit returns self" in ln)
    assert fit.startswith("FAIL") and "(n, C, L)" in fit and "dim 3" in fit, fit
