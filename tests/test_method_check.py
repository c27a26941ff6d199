"""`chorustic check-method`: the README's "Adding a method" example runs as written and passes every
clause (tests/test_docs.py runs it too, as a reader would; this test names the clauses); the plugin a
method author first writes (an sklearn pipeline without predict_proba, fed (n, C, L) arrays) fails with
one clear line per broken clause."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import numpy as np
import pytest

from chorustic.cli import main
from chorustic.methods.base import PROBA_TOL

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
    words = line.split("#")[0].split()
    assert words[2] == "--methods", "the README spells the plugin's name with --methods"
    name = words[3]
    file = re.search(r"`baselines/(\w+)\.py`", section).group(1)
    assert name == file, "the README checks the plugin it adds"
    (tmp_path / f"{file}.py").write_text(code[0])

    rc = main(["check-method", "--methods", name, "--plugin-dir", str(tmp_path)])
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
    tol = re.search(r"`PROBA_TOL` = ([0-9.e-]+)", contract)  # the contract page states the tolerance in force
    assert tol and float(tol.group(1)) == PROBA_TOL, "docs/adding-a-method.md states another PROBA_TOL"


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
    rc = main(["check-method", "--methods", "no_proba", "--plugin-dir", str(broken_plugin)])
    out = capsys.readouterr().out
    assert rc == 1
    api = next(ln for ln in out.splitlines() if "estimator API" in ln)
    assert api.startswith("FAIL") and "predict_proba" in api and "probabilities are required" in api
    assert "PASS  metadata" in out and "PASS  ready" in out
    assert re.search(r"^SKIP  fit returns self", out, re.M)


def test_parameters_and_names_are_checked(broken_plugin, capsys):
    rc = main(["check-method", "--methods", "no_proba", "--plugin-dir", str(broken_plugin), "--param", "alpah=2"])
    out = capsys.readouterr().out
    assert rc == 1 and re.search(r"^FAIL  parameters: .*no parameter 'alpah'", out, re.M), out
    assert main(["check-method", "--methods", "nosuch", "--plugin-dir", str(broken_plugin)]) == 2
    assert "unknown method 'nosuch'" in capsys.readouterr().err


def test_fit_on_3d_input_is_reported_as_a_contract_failure(tmp_path, capsys):
    """A 2-D-only estimator (the shape error the harness would hit on every run) fails `fit`, naming the
    input the harness passes."""
    code = textwrap.dedent(BROKEN).replace("RidgeClassifier(alpha=alpha)", "LogisticRegression(C=alpha)")
    code = code.replace("import RidgeClassifier", "import LogisticRegression")
    (tmp_path / "no_proba.py").write_text(code)
    assert main(["check-method", "--methods", "no_proba", "--plugin-dir", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    fit = next(ln for ln in out.splitlines() if "fit returns self" in ln)
    assert fit.startswith("FAIL") and "(n, C, L)" in fit and "dim 3" in fit, fit


# --------------------------------------------------------------------------------------------------
# a plugin's probabilities are its own: rows that are not probabilities are refused, never rescaled
# --------------------------------------------------------------------------------------------------

SCALED = """
import numpy as np

from chorustic.methods import Method, MethodInfo, register
from chorustic.methods.estimators import ContractClassifier


class ScaledEstimator(ContractClassifier):
    \"\"\"Nearest class mean; its 'probabilities' are a softmax times ``scale`` (0.5: rows summing to 0.5).\"\"\"

    def __init__(self, scale: float = 0.5, random_state: int = 0):
        self.scale = scale
        self.random_state = random_state

    def _fit(self, X, y):
        Z = np.asarray(X).mean(axis=1)
        self.means_ = np.stack([Z[y == k].mean(axis=0) for k in range(len(self.classes_))])

    def _predict_proba(self, X):
        d = ((np.asarray(X).mean(axis=1)[:, None, :] - self.means_[None]) ** 2).sum(-1)
        e = np.exp(-(d - d.min(axis=1, keepdims=True)))
        return self.scale * e / e.sum(axis=1, keepdims=True)


@register
class Scaled(Method):
    info = MethodInfo(name="scaled", display_name="Scaled", group="Classical", fits_on_target=True)
    estimator = ScaledEstimator
"""


def test_scaled_scores_fail_the_contract_with_the_row_sum_and_the_tolerance(tmp_path, capsys):
    """Rows summing to 0.5 used to pass all 17 clauses (the base class rescaled them); the check now sees
    what ``_predict_proba`` returned and fails, naming the estimator, the row sum, the tolerance and the fix."""
    (tmp_path / "scaled.py").write_text(textwrap.dedent(SCALED))
    assert main(["check-method", "--methods", "scaled", "--plugin-dir", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if re.match(r"(PASS|FAIL|SKIP)  probabilities\b", ln))
    assert line.startswith("FAIL"), out
    for part in ("ScaledEstimator._predict_proba", "sums to 0.5", "tolerance 0.0001", "softmax"):
        assert part in line, (part, line)
    # the same method returning its probabilities passes every clause
    assert main(["check-method", "--methods", "scaled", "--plugin-dir", str(tmp_path), "--param", "scale=1.0"]) == 0
    assert "FAIL" not in capsys.readouterr().out


def test_non_finite_probabilities_name_the_row_the_plugin_file_and_the_fix(tmp_path, capsys):
    """A NaN in ``_predict_proba``'s rows (issue 72, case 8): the message names the estimator and its plugin
    file, the first row and column holding it, its likely cause and the fix, as for any other bad row."""
    (tmp_path / "scaled.py").write_text(textwrap.dedent(SCALED))
    assert main(["check-method", "--methods", "scaled", "--plugin-dir", str(tmp_path), "--param", "scale=.nan"]) == 1
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if re.match(r"(PASS|FAIL|SKIP)  probabilities\b", ln))
    for part in ("FAIL", f"ScaledEstimator._predict_proba ({tmp_path.name}/scaled.py)", "row 0 holds nan in column 0",
                 "overflow", "softmax"):
        assert part in line, (part, line)


class _Model:
    """What a method's model returns: float32-rounded softmax rows times ``scale``."""

    def __init__(self, scale: float):
        self.scale = scale

    def fit(self, X, y):
        self.classes_ = np.unique(y)
        return self

    def predict_proba(self, X):
        logits = np.random.default_rng(0).normal(size=(len(X), len(self.classes_)))
        e = np.exp(logits - logits.max(axis=1, keepdims=True))
        return (self.scale * e / e.sum(axis=1, keepdims=True)).astype(np.float32)


def _estimators(scale: float):
    """One estimator per contract base class, each producing ``_Model(scale)``'s rows."""
    from chorustic.methods.estimators import (
        AeonContractClassifier,
        ContractClassifier,
        FrozenEmbeddingClassifier,
    )

    class Plain(ContractClassifier):
        def _fit(self, X, y):
            self.model_ = _Model(scale).fit(X, y)

        def _predict_proba(self, X):
            return self.model_.predict_proba(X)

    class Aeon(AeonContractClassifier):
        def _make(self):
            return _Model(scale)

    class Backbone:
        key = ("mean-backbone",)

        def embed(self, series):
            return np.asarray(series).mean(axis=-1, keepdims=True)

    class Frozen(FrozenEmbeddingClassifier):
        def _backbone(self):
            return Backbone()

    return {
        "ContractClassifier": Plain(),
        "AeonContractClassifier": Aeon(),
        "FrozenEmbeddingClassifier": Frozen(head="lr"),
    }


@pytest.mark.parametrize("base", ["ContractClassifier", "AeonContractClassifier", "FrozenEmbeddingClassifier"])
def test_every_contract_base_refuses_rows_that_are_not_probabilities(base):
    from chorustic.methods.check import synthetic_task

    X, y = synthetic_task("native", 12, 2, seed=0)

    def fitted(scale):
        est = _estimators(scale)[base].fit(X, y)
        if base == "FrozenEmbeddingClassifier":  # the head is the model (make_head's heads give probabilities)
            est.head_ = _Model(scale).fit(None, y)
        return est

    # float32 rounding passes (rows renormalised in float64); rows summing to 0.5 or 1.001 are refused
    p = fitted(1.0).predict_proba(X)
    assert p.dtype == np.float64 and np.abs(p.sum(axis=1) - 1).max() < 1e-12 and (p >= 0).all()
    for scale in (0.5, 1.001):
        with pytest.raises(RuntimeError, match=r"_predict_proba .*row 0 sums to .*tolerance 0\.0001.*softmax"):
            fitted(scale).predict_proba(X)


@pytest.mark.parametrize(
    "rows, message",
    [
        ([[0.5, 0.5], [0.0, 0.0]], "row 1 sums to 0, not 1"),  # used to become uniform
        ([[1.5, -0.5], [0.5, 0.5]], "row 0 holds the negative probability -0.5"),  # used to be clipped
    ],
)
def test_rows_of_zeros_and_negative_probabilities_are_refused(rows, message):
    from chorustic.methods.estimators import ContractClassifier

    class Fixed(ContractClassifier):
        def _fit(self, X, y):
            pass

        def _predict_proba(self, X):
            return np.asarray(rows)

    X = np.zeros((2, 1, 8), dtype=np.float32)
    est = Fixed().fit(X, np.array([0, 1]))
    with pytest.raises(RuntimeError, match=re.escape(message)):
        est.predict_proba(X)
    ok = [[0.25, 0.75], [1.0, -1e-9]]  # a rounding-level negative is clipped to 0
    rows[:] = ok
    assert np.array_equal(est.predict_proba(X), [[0.25, 0.75], [1.0, 0.0]])


# --------------------------------------------------------------------------------------------------
# `chorustic check-method baselines/my_method.py`: the path of a plugin file, what an author types first
# --------------------------------------------------------------------------------------------------


def test_check_method_takes_the_path_of_a_plugin_file(tmp_path):
    """Through the real command line, from the folder holding baselines/: the file's method is checked."""
    import os
    import subprocess
    import sys

    plugins = tmp_path / "baselines"
    plugins.mkdir()
    code = textwrap.dedent(SCALED).replace("scale: float = 0.5", "scale: float = 1.0")
    (plugins / "my_method.py").write_text(code.replace('name="scaled"', 'name="my_method"'))
    env = {**os.environ, "CHORUSTIC_BASELINES": str(plugins),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-m", "chorustic", "check-method", "baselines/my_method.py"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert out.returncode == 0, out.stdout + out.stderr
    head = "checking my_method (baselines/my_method.py), parameters: plugin defaults"
    assert out.stdout.startswith(head), out.stdout
    clauses = [ln for ln in out.stdout.splitlines() if ln.startswith(("PASS", "FAIL", "SKIP"))]
    assert len(clauses) == 18 and all(ln.startswith("PASS") for ln in clauses), out.stdout
    assert "note:" not in out.stdout  # the file is in the plugin folder


TWO_METHODS = SCALED + """

@register
class Probabilities(Method):
    info = MethodInfo(name="probabilities", display_name="Probs", group="Classical", fits_on_target=True)
    estimator = ScaledEstimator
    fixed_params = {"scale": 1.0}
"""


def test_a_file_outside_the_plugin_folder_with_two_methods_checks_both(tmp_path, capsys):
    elsewhere = tmp_path / "drafts"
    elsewhere.mkdir()
    (elsewhere / "two.py").write_text(textwrap.dedent(TWO_METHODS))
    rc = main(["check-method", "--methods", str(elsewhere / "two.py"), "--plugin-dir", str(tmp_path / "baselines")])
    out = capsys.readouterr().out
    assert rc == 1, out  # one of the two fails
    note = r"^note: .*two\.py is not in the plugin folder .*baselines.*CHORUSTIC_BASELINES"
    assert re.search(note, out, re.M), out
    assert "registers 2 methods: scaled, probabilities" in out
    assert "checking scaled (" in out and "checking probabilities (" in out
    assert out.rstrip().endswith("scaled: FAILED; probabilities: ok"), out


def test_a_plugin_path_that_is_missing_broken_or_registers_nothing_says_so(tmp_path, capsys):
    assert main(["check-method", "--methods", str(tmp_path / "nope.py")]) == 2
    assert "no plugin file" in capsys.readouterr().err
    (tmp_path / "empty.py").write_text("X = 1\n")
    assert main(["check-method", "--methods", str(tmp_path / "empty.py")]) == 1
    assert re.search(r"^FAIL  plugin file registers a method: .*empty\.py registers none; .*@register",
                     capsys.readouterr().out, re.M)
    (tmp_path / "broken.py").write_text("import no_such_package_xyz\n")
    assert main(["check-method", "--methods", str(tmp_path / "broken.py")]) == 1
    out = capsys.readouterr().out
    assert re.search(r"^FAIL  plugin file loads: .*broken\.py:1: ModuleNotFoundError", out, re.M), out
    assert out.rstrip().endswith("0 passed, 1 failed, 0 skipped (the other clauses need the plugin to load)"), out
    (tmp_path / "ok.py").write_text(textwrap.dedent(SCALED))
    assert main(["check-method", "--methods", str(tmp_path / "ok.py"), "--config", "x.yaml"]) == 2
    assert "--config selects a method run by its name" in capsys.readouterr().err


IN_PLACE = """
import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin

from chorustic.methods import Method, MethodInfo, register


class InPlaceEstimator(ClassifierMixin, BaseEstimator):
    \"\"\"Nearest class mean on series it centres in place: the caller's array changes.\"\"\"

    def __init__(self, random_state: int = 0):
        self.random_state = random_state

    def fit(self, X, y):
        X -= X.mean(axis=-1, keepdims=True)
        self.classes_ = np.unique(y)
        Z = X.mean(axis=1)
        self.means_ = np.stack([Z[y == k].mean(axis=0) for k in self.classes_])
        return self

    def predict_proba(self, X):
        X = X - X.mean(axis=-1, keepdims=True)
        d = ((X.mean(axis=1)[:, None, :] - self.means_[None]) ** 2).sum(-1)
        e = np.exp(-(d - d.min(axis=1, keepdims=True)))
        return e / e.sum(axis=1, keepdims=True)

    def predict(self, X):
        return self.classes_[self.predict_proba(X).argmax(axis=1)]


@register
class InPlace(Method):
    info = MethodInfo(name="in_place", display_name="InPlace", group="Classical", fits_on_target=True)
    estimator = InPlaceEstimator
"""


def test_a_method_that_changes_its_input_in_place_fails_the_contract(tmp_path, capsys):
    """The harness hands a full training split as a view of the dataset's array (no copy): a fit that centres
    its X in place would change what every later context of the job reads. The check names fit and the fix."""
    (tmp_path / "in_place.py").write_text(textwrap.dedent(IN_PLACE))
    assert main(["check-method", "--methods", "in_place", "--plugin-dir", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if "inputs left unchanged" in ln)
    assert line.startswith("FAIL") and "fit changed its input X in place" in line and "copy" in line, line
    assert "predict_proba" not in line, line


# --- plugin-author mistakes (issue 69): one line naming the file, the line and the fix ------------------------

FLAT = """\
from sklearn.linear_model import LogisticRegression

from chorustic.methods import CostModel, Method, MethodInfo, register
from chorustic.methods.estimators import ContractClassifier
from chorustic.methods.inputs import flatten_channels


class FlatEstimator(ContractClassifier):
    def __init__(self, C: float = 1.0, random_state: int = 0):
        self.C = C
        self.random_state = random_state

    def _fit(self, X, y):
        self.model_ = LogisticRegression(C=self.C, max_iter=200).fit(flatten_channels(X), y)

    def _predict_proba(self, X):
        return self.model_.predict_proba(flatten_channels(X))


@register
class Flat(Method):
    info = MethodInfo(name="flat", display_name="Flat", group="Classical",
                      fits_on_target=True)
    estimator = FlatEstimator
    resources = {"threads": 1, "mem_mb": 4000, "runtime": 60, "gpu": 0}
    cost = CostModel(mem_kb_per_series=80)
"""

PLUGIN_MISTAKES = [
    ("MethodInfo key", "fits_on_target=True)", "fit_on_target=True)", 22,
     ("TypeError: MethodInfo has no field 'fit_on_target'.", "Did you mean 'fits_on_target'?")),
    ("CostModel key", "CostModel(mem_kb_per_series=80)", "CostModel(mem_kb_per_serie=80)", 26,
     ("TypeError: CostModel has no field 'mem_kb_per_serie'.", "Did you mean 'mem_kb_per_series',", "help(chorustic.methods.cost.CostModel)")),
    ("resources key", '"runtime": 60', '"run_time": 60', 21,
     ("TypeError: Flat.resources has no key 'run_time'.", "Did you mean 'runtime'?")),
    ("estimator instance", "estimator = FlatEstimator\n", "estimator = FlatEstimator()\n", 21,
     ("estimator must be the estimator class, not an instance", "write `estimator = FlatEstimator`")),
    ("no estimator", "    estimator = FlatEstimator\n", "", 20,
     ("Flat sets no `estimator`", "estimator = MyEstimator")),
    ("import error", "from sklearn.linear_model import LogisticRegression",
     "from sklearn.linear_model import LogisticRegresion", 1, ("ImportError: cannot import name 'LogisticRegresion'",)),
    ("syntax error", "    def _fit(self, X, y):", "    def _fit(self, X, y)", 13, ("SyntaxError:",)),
]


@pytest.mark.parametrize("what, old, new, line, says", PLUGIN_MISTAKES, ids=[m[0] for m in PLUGIN_MISTAKES])
def test_a_plugin_author_mistake_is_one_line_with_file_line_and_fix(what, old, new, line, says, tmp_path, capsys,
                                                                     monkeypatch):
    """A misspelled MethodInfo / CostModel / resources key, an estimator instance or none, an import or a
    syntax error: check-method prints one FAIL line naming plugin file:line and the fix, then its summary
    line; `chorustic methods` lists the file with the same line."""
    assert old in FLAT
    (tmp_path / "baselines").mkdir()
    plugin = tmp_path / "baselines" / "flat.py"
    plugin.write_text(FLAT.replace(old, new, 1))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CHORUSTIC_BASELINES", str(tmp_path / "baselines"))
    assert main(["check-method", "--methods", "baselines/flat.py"]) == 1
    out = capsys.readouterr().out
    fail = [x for x in out.splitlines() if x.startswith("FAIL")]
    assert len(fail) == 1 and fail[0].startswith(f"FAIL  plugin file loads: baselines/flat.py:{line}: "), out
    for fragment in says:
        assert fragment in fail[0], out
    assert "Traceback" not in out and out.rstrip().endswith("(the other clauses need the plugin to load)"), out
    assert main(["check-method", "--methods", "flat"]) == 1  # by its name: the same line
    assert fail[0] in capsys.readouterr().out


def test_the_same_plugin_without_mistakes_passes(tmp_path, capsys):
    (tmp_path / "flat.py").write_text(FLAT)
    assert main(["check-method", "--methods", str(tmp_path / "flat.py")]) == 0, capsys.readouterr().out


def test_a_sibling_plugin_is_imported_from_the_folder_of_the_plugin_that_asks(tmp_path):
    """import_plugin_module: a sibling already imported from another plugin folder (another test's, another
    $CHORUSTIC_BASELINES) is not that folder's plugin; the asking plugin gets its own folder's file."""
    from chorustic.methods import discover

    variant = textwrap.dedent("""\
        from chorustic.methods import import_plugin_module, register
        from chorustic.methods.base import MethodInfo

        base = import_plugin_module("sib_base", __file__)


        @register
        class Variant(base.Base):
            info = MethodInfo(name="sib_variant", display_name="Sib variant", group="Classical",
                              fits_on_target=True)
        """)
    for folder, shrink in (("a", 0.1), ("b", 0.7)):
        d = tmp_path / folder
        d.mkdir()
        (d / "sib_base.py").write_text(FLAT.replace("class Flat(Method)", "class Base(Method)")
                                       .replace('name="flat", display_name="Flat"',
                                                f'name="sib_base_{folder}", display_name="Sib {folder}"')
                                       + f"\nSHRINK = {shrink}\n")
        (d / "sib_variant.py").write_text(variant)
    assert discover(tmp_path / "a").methods["sib_variant"].estimator.__module__ == "chorustic_plugins.sib_base"
    got = discover(tmp_path / "b", only="sib_variant").methods["sib_variant"]
    import sys
    assert sys.modules["chorustic_plugins.sib_base"].SHRINK == 0.7
    assert Path(sys.modules[type(got).__mro__[1].__module__].__file__).parent == tmp_path / "b"
