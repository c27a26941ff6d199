"""The full method contract, clause by clause, on generated data (``chorustic check-method NAME``).

:func:`check_method` runs every clause the harness relies on against one plugin and returns one
:class:`Clause` per check (passed, failed with the reason, or skipped because an earlier clause
failed). The same function backs the command line (one PASS/FAIL line per clause), the test suite
(``tests/test_baselines_contract.py`` runs it for every discovered plugin) and method authors' own
checks. The data are generated (:func:`synthetic_task`): separable classes of the shapes the
harness hands a method, so a contract failure is never a data problem.

What the harness does with a method (and so what is checked): it builds an estimator with
``method.build(seed=..., device=..., n_jobs=..., **params)``, calls ``fit(X, y)`` with a context of
``X`` float32 ``(n, C, L)`` (``L == 512`` for ``input_kind="resampled"``; for ``"native"`` the series
as they are, a list of ``(C, L_i)`` arrays when lengths vary) and ``y`` int64 in ``0..K-1``, then
``predict_proba(X_query)``, whose columns follow ``classes_``.
"""

from __future__ import annotations

import dataclasses
import inspect
import traceback
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from chorustic.methods.base import (
    GROUPS,
    INPUT_KINDS,
    PROBA_ADVICE,
    PROBA_TOL,
    RESOURCE_KEYS,
    Method,
    MethodNotReady,
    ReportedMethod,
    probability_rows_problem,
)

__all__ = [
    "Clause",
    "ContractRun",
    "check_estimator_contract",
    "check_method",
    "estimator_clauses",
    "synthetic_task",
    "RESOURCE_KEYS",
]


@dataclasses.dataclass
class Clause:
    """One contract clause: ``status`` is ``"pass"``, ``"fail"`` or ``"skip"``."""

    name: str
    status: str
    detail: str = ""

    @property
    def passed(self) -> bool:
        return self.status == "pass"

    def line(self) -> str:
        tag = {"pass": "PASS", "fail": "FAIL", "skip": "SKIP"}[self.status]
        return f"{tag}  {self.name}" + (f": {self.detail}" if self.detail else "")


@dataclasses.dataclass
class ContractRun:
    method: str
    clauses: list[Clause]
    observed: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return all(c.status != "fail" for c in self.clauses)

    @property
    def failed(self) -> list[Clause]:
        return [c for c in self.clauses if c.status == "fail"]

    def report(self) -> str:
        return "\n".join(c.line() for c in self.clauses)


def synthetic_task(
    kind: str, n: int, channels: int, seed: int, k: int = 3, variable: bool = False
) -> tuple[np.ndarray | list[np.ndarray], np.ndarray]:
    """A separable task: class ``c`` has a bump at a class-specific position, on every channel.

    ``kind="resampled"`` gives length 512 (the paper's input), ``"native"`` length 64, or with
    ``variable=True`` a list of ``(channels, L_i)`` arrays with ``L_i`` in 40..89. Labels are
    ``0..k-1``, every class present when ``n >= k``.
    """
    rng = np.random.default_rng(seed)
    y = np.arange(n) % k
    rng.shuffle(y)
    length = 512 if kind == "resampled" else 64
    X = []
    for c in y:
        L = int(rng.integers(40, 90)) if variable else length
        t = np.linspace(0, 1, L)
        base = np.exp(-((t - (0.2 + 0.6 * c / max(1, k - 1))) ** 2) / 0.005)
        X.append(
            (
                base[None, :] * (1 + np.arange(channels)[:, None]) + 0.1 * rng.normal(size=(channels, L))
            ).astype(np.float32)
        )
    return (X if variable else np.stack(X)), y.astype(np.int64)


def _n(X) -> int:
    return len(X) if isinstance(X, list) else int(np.shape(X)[0])


def _take(X, idx):
    return [X[i] for i in idx] if isinstance(X, list) else np.asarray(X)[idx]


def _error(exc: BaseException) -> str:
    msg = " ".join(f"{type(exc).__name__}: {exc}".split())
    return msg if len(msg) <= 400 else msg[:397] + "..."


class _Clauses:
    """Collects clauses; ``run`` records a pass, or a fail with the exception's message."""

    def __init__(self) -> None:
        self.items: list[Clause] = []

    def add(self, name: str, ok: bool, detail: str = "") -> bool:
        self.items.append(Clause(name, "pass" if ok else "fail", "" if ok else detail))
        return ok

    def skip(self, name: str, why: str) -> None:
        self.items.append(Clause(name, "skip", why))

    def run(self, name: str, fn: Callable[[], Any], hint: str = "") -> tuple[bool, Any]:
        try:
            value = fn()
        except AssertionError as exc:
            self.add(name, False, str(exc) + (f" ({hint})" if hint else ""))
            return False, None
        except Exception as exc:  # noqa: BLE001 - the clause records any failure
            self.add(name, False, _error(exc) + (f" ({hint})" if hint else ""))
            return False, None
        self.add(name, True)
        return True, value


@dataclasses.dataclass
class _Subject:
    """What the estimator checks share: how to build the estimator, the data, and what earlier checks saw."""

    build: Callable[[int], Any]
    X_context: Any
    y_context: np.ndarray
    X_query: Any
    atol: float
    check_missing_class: bool
    check_query_order: bool
    est: Any = None
    proba: np.ndarray | None = None
    observed: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def classes(self) -> np.ndarray:
        return np.unique(self.y_context)

    @property
    def n_query(self) -> int:
        return _n(self.X_query)


def check_build(t: _Subject) -> None:
    t.est = t.build(0)


def check_api(t: _Subject) -> None:
    missing = [
        a for a in ("fit", "predict_proba", "predict", "get_params") if not callable(getattr(t.est, a, None))
    ]
    _assert(
        not missing,
        f"the estimator {type(t.est).__name__} has no {', '.join(missing)}; the harness calls fit(X, y) "
        "and predict_proba(X) (class probabilities are required: a classifier without predict_proba "
        "can be wrapped, e.g. chorustic.methods.estimators.ContractClassifier, or use one that has it)",
    )


def check_get_params(t: _Subject) -> None:
    _assert(isinstance(t.est.get_params(), dict), "get_params() must return a dict")


def check_predict_proba_signature(t: _Subject) -> None:
    sig = inspect.signature(t.est.predict_proba)
    required = [
        p
        for p in sig.parameters.values()
        if p.default is inspect.Parameter.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    _assert(len(required) == 1, f"predict_proba must take only X (the query series), signature is {sig}")


def _copy(X):
    return [np.array(x) for x in X] if isinstance(X, list) else np.array(X)


def _unchanged(before, X) -> bool:
    if isinstance(X, list):
        return len(before) == len(X) and all(np.array_equal(a, b) for a, b in zip(before, X))
    return np.array_equal(before, X)


def check_fit(t: _Subject) -> None:
    before = _copy(t.X_context)
    _assert(t.est.fit(t.X_context, t.y_context) is t.est, "fit(X, y) must return self")
    t.observed["fit changed its X"] = not _unchanged(before, t.X_context)


def check_classes(t: _Subject) -> None:
    got = getattr(t.est, "classes_", None)
    _assert(
        np.array_equal(np.asarray(got), t.classes),
        f"classes_ must be the classes of the context {t.classes.tolist()}, "
        f"got {got if got is not None else 'no classes_ attribute'}",
    )


def check_probabilities(t: _Subject) -> None:
    before = _copy(t.X_query)
    proba = np.asarray(t.est.predict_proba(t.X_query), dtype=np.float64)
    t.observed["predict_proba changed its X"] = not _unchanged(before, t.X_query)
    shape = (t.n_query, len(t.classes))
    _assert(proba.shape == shape, f"predict_proba shape {proba.shape} != (n_query, n_classes) = {shape}")
    _assert(np.all(np.isfinite(proba)), "probabilities must be finite")
    _assert_probabilities(proba)
    t.proba = t.observed["proba"] = proba


def check_inputs_unchanged(t: _Subject) -> None:
    changed = [f for f in ("fit", "predict_proba") if t.observed.get(f"{f} changed its X")]
    _assert(
        not changed,
        f"{' and '.join(changed)} changed its input X in place: the harness hands the context and the queries "
        "as views of the dataset's arrays, which every later context of the job reads; work on a copy",
    )


def check_predict(t: _Subject) -> None:
    _assert(
        np.array_equal(
            np.asarray(t.est.predict(t.X_query)), np.asarray(t.est.classes_)[np.argmax(t.proba, axis=1)]
        ),
        "predict(X) must equal classes_[argmax predict_proba(X)]",
    )


def check_same_seed(t: _Subject) -> None:
    proba2 = np.asarray(t.build(0).fit(t.X_context, t.y_context).predict_proba(t.X_query), dtype=np.float64)
    _assert(
        np.allclose(t.proba, proba2, atol=t.atol, rtol=0),
        f"same seed gave different probabilities (max diff {np.abs(t.proba - proba2).max():.2e})",
    )


def check_query_order(t: _Subject) -> None:
    perm = np.random.default_rng(1).permutation(t.n_query)
    proba_p = np.asarray(t.est.predict_proba(_take(t.X_query, perm)))
    _assert(
        np.allclose(proba_p, t.proba[perm], atol=1e-4, rtol=0),
        "predictions depend on the order or composition of the query set (each query's "
        "prediction may depend on the context and that query only)",
    )


def check_missing_class(t: _Subject) -> None:
    classes = t.classes
    drop = classes[1]
    keep = np.flatnonzero(t.y_context != drop)
    est = t.build(0).fit(_take(t.X_context, keep), t.y_context[keep])
    p3 = np.asarray(est.predict_proba(t.X_query))
    seen = classes[classes != drop]
    _assert(
        np.array_equal(np.asarray(est.classes_), seen),
        f"context without class {drop}: classes_ {est.classes_} != seen classes {seen}",
    )
    _assert(
        p3.shape == (t.n_query, len(seen)),
        f"context without class {drop}: probabilities of shape {p3.shape}, expected {(t.n_query, len(seen))}",
    )
    _assert_probabilities(p3, f"context without class {drop}: ")
    t.observed["proba_missing_class"] = p3


def check_other_input(Xc: Any, yc: np.ndarray, Xq: Any) -> Callable[[_Subject], None]:
    """The estimator also handles another kind of input (univariate, variable length)."""

    def check(t: _Subject) -> None:
        p = np.asarray(t.build(0).fit(Xc, yc).predict_proba(Xq))
        k = len(np.unique(yc))
        _assert(p.shape == (_n(Xq), k), f"probabilities of shape {p.shape}, expected {(_n(Xq), k)}")
        _assert_probabilities(p)

    return check


_API = "estimator API (fit, predict_proba, predict, get_params)"
#: Why a check is skipped when the check it needs failed.
_NEEDS = {
    "build returns an estimator": "the estimator could not be built or lacks the API",
    _API: "the estimator could not be built or lacks the API",
    "fit returns self": "fit failed",
    "probabilities": "predict_proba failed",
}


def _estimator_checks(t: _Subject, extra_inputs: dict[str, tuple[Any, np.ndarray, Any]]):
    """(name, check, the check it needs, hint, reason it does not apply) in order, aeon-style."""
    fit_hint = f"X is {_describe(t.X_context)}, y int64 in 0..{len(t.classes) - 1}"
    api = _API
    yield "build returns an estimator", check_build, None, "", None
    yield api, check_api, "build returns an estimator", "", None
    yield "get_params", check_get_params, api, "", None
    yield "predict_proba takes only X", check_predict_proba_signature, api, "", None
    yield "fit returns self", check_fit, api, fit_hint, None
    yield "classes_", check_classes, "fit returns self", "", None
    hint = f"predict_proba(X) -> (n_query, len(classes_)), rows sum to 1 within {PROBA_TOL:g}"
    yield "probabilities", check_probabilities, "fit returns self", hint, None
    yield "inputs left unchanged", check_inputs_unchanged, "probabilities", "", None
    yield "predict", check_predict, "probabilities", "", None
    yield "same seed, same output", check_same_seed, "probabilities", "", None
    unchecked = None if t.check_query_order else "not checked for this method"
    yield "query order", check_query_order, "probabilities", "", unchecked
    unchecked = None if (t.check_missing_class and len(t.classes) >= 3) else "needs >= 3 classes"
    yield "missing class", check_missing_class, "probabilities", "", unchecked
    for name, (Xc, yc, Xq) in extra_inputs.items():
        yield name, check_other_input(Xc, yc, Xq), "probabilities", f"X is {_describe(Xc)}", None


def estimator_clauses(
    build: Callable[[int], Any],
    X_context: Any,
    y_context: np.ndarray,
    X_query: Any,
    *,
    check_missing_class: bool = True,
    check_query_order: bool = True,
    atol: float = 1e-6,
    extra_inputs: dict[str, tuple[Any, np.ndarray, Any]] | None = None,
) -> Iterator[Clause | tuple[str, Any]]:
    """The estimator contract as named checks (``check_*``), one :class:`Clause` each (and
    ``("observed", dict)`` last). ``build(seed)`` makes a fresh estimator. A check whose prerequisite
    failed is skipped with the reason. ``extra_inputs`` maps a clause name to another
    ``(X_context, y_context, X_query)`` the estimator must also handle (univariate, variable length)."""
    t = _Subject(
        build, X_context, np.asarray(y_context), X_query, atol, check_missing_class, check_query_order
    )
    t.observed["classes"] = t.classes
    status: dict[str, str] = {}
    why: dict[str, str] = {}
    c = _Clauses()
    for name, check, needs, hint, unchecked in _estimator_checks(t, extra_inputs or {}):
        if needs is not None and status.get(needs) != "pass":
            why[name] = why.get(needs) or _NEEDS[needs]
            c.skip(name, why[name])
            status[name] = "skip"
        elif unchecked is not None:
            c.skip(name, unchecked)
            status[name] = "skip"
        else:
            ok, _ = c.run(name, lambda check=check: check(t), hint)
            status[name] = "pass" if ok else "fail"
        yield from c.items
        c.items.clear()
    yield ("observed", t.observed)


def _assert(cond: bool, msg: str) -> None:
    if not cond:
        raise AssertionError(msg)


def _assert_probabilities(proba: np.ndarray, prefix: str = "") -> None:
    """Rows of class probabilities within :data:`PROBA_TOL`, else the row, its sum and what to do."""
    problem = probability_rows_problem(proba)
    _assert(problem is None, f"{prefix}{problem}. {PROBA_ADVICE}")


def _describe(X) -> str:
    if isinstance(X, list):
        return f"a list of {len(X)} arrays (C, L_i), C={X[0].shape[0]}"
    return f"an array of shape {tuple(np.shape(X))} (n, C, L), {np.asarray(X).dtype}"


def _metadata_clauses(method: Any) -> list[Clause]:
    c = _Clauses()
    info = getattr(method, "info", None)
    c.run(
        "metadata",
        lambda: _assert(
            info is not None and info.group in GROUPS and info.input_kind in INPUT_KINDS,
            f"info must be a MethodInfo with group in {GROUPS} and input_kind in {INPUT_KINDS}",
        ),
    )
    if isinstance(method, Method):

        def _res():
            res = getattr(method, "resources", None)
            _assert(
                isinstance(res, dict) and set(res) == set(RESOURCE_KEYS),
                f"resources must be a dict with the keys {RESOURCE_KEYS}, got {res!r}",
            )
            _assert(
                int(res["threads"]) >= 1
                and float(res["mem_mb"]) > 0
                and float(res["runtime"]) > 0
                and int(res["gpu"]) >= 0,
                f"resources out of range: {res}",
            )

        c.run("resources", _res)

        def _sig():
            sig = inspect.signature(method.build)
            names = set(sig.parameters)
            has_kwargs = any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values())
            missing = [k for k in ("seed", "device", "n_jobs") if k not in names and not has_kwargs]
            _assert(
                not missing, f"build() must accept the keywords seed, device, n_jobs (missing: {missing})"
            )
            unknown = [k for k in method.default_params if k not in names and not has_kwargs]
            _assert(not unknown, f"build() does not accept the default parameter(s) {unknown}")

        c.run("build signature", _sig)
    return c.items


def check_method(
    method: Method | ReportedMethod,
    params: dict[str, Any] | None = None,
    *,
    device: str = "cpu",
    n_context: int = 24,
    n_query: int = 9,
    check_missing_class: bool = True,
    check_query_order: bool = True,
) -> ContractRun:
    """Run the full contract of ``method`` with ``params`` (merged over its defaults) on generated data.

    Never raises for a contract violation: every clause is recorded. A method that is not ready here
    (missing weights or checkout) fails the ``ready`` clause with its message; the estimator clauses
    are then skipped.
    """
    name = getattr(getattr(method, "info", None), "name", type(method).__name__)
    clauses = _metadata_clauses(method)
    c = _Clauses()
    ok, merged = c.run("parameters", lambda: method.params(params or {}))
    clauses += c.items
    if not ok:
        return ContractRun(name, clauses + [Clause("ready", "skip", "parameters rejected")])

    if isinstance(method, ReportedMethod):
        c = _Clauses()

        def _reported():
            table = method.reported_accuracies(**merged)
            cols = ["dataset", "protocol", "seed", "accuracy"]
            _assert(
                list(table.columns) == cols, f"reported_accuracies() columns {list(table.columns)} != {cols}"
            )
            acc = table["accuracy"].astype(float)
            _assert(bool(((acc >= 0) & (acc <= 1)).all()), "reported accuracies must lie in [0, 1]")
            _assert(not table.duplicated(["dataset", "protocol", "seed"]).any(), "a run is reported twice")
            return len(table)

        c.run("reported accuracies", _reported)
        return ContractRun(name, clauses + c.items)

    try:
        method.check_ready(**merged)
        clauses.append(Clause("ready", "pass"))
    except MethodNotReady as exc:
        clauses.append(Clause("ready", "fail", f"MethodNotReady: {exc}"))
        return ContractRun(
            name, clauses + [Clause("estimator contract", "skip", "the method is not ready here")]
        )
    except Exception as exc:  # noqa: BLE001
        clauses.append(Clause("ready", "fail", _error(exc)))
        return ContractRun(name, clauses + [Clause("estimator contract", "skip", "check_ready() raised")])

    kind = method.info.input_kind
    X, y = synthetic_task(kind, n_context, 2, seed=0)
    Xq, _ = synthetic_task(kind, n_query, 2, seed=1)
    Xu, yu = synthetic_task(kind, max(6, n_context // 2), 1, seed=2)
    extra = {"univariate input (C = 1)": (Xu, yu, Xu[:4])}
    if kind == "native":
        Xv, yv = synthetic_task(kind, max(6, n_context // 2), 2, seed=3, variable=True)
        Xvq, _ = synthetic_task(kind, 5, 2, seed=4, variable=True)
        extra["variable-length input (list of (C, L_i) arrays)"] = (Xv, yv, Xvq)

    def build(seed: int):
        return method.build(seed=seed, device=device, n_jobs=1, **merged)

    observed: dict[str, Any] = {}
    try:
        for item in estimator_clauses(
            build,
            X,
            y,
            Xq,
            check_missing_class=check_missing_class,
            check_query_order=check_query_order,
            extra_inputs=extra,
        ):
            if isinstance(item, tuple):
                observed = item[1]
            else:
                clauses.append(item)
    except Exception:  # pragma: no cover - a bug in the checker itself must still be visible
        clauses.append(Clause("contract checker", "fail", traceback.format_exc().strip().splitlines()[-1]))
    return ContractRun(name, clauses, observed)


def check_estimator_contract(
    build: Callable[[int], Any],
    X_context: Any,
    y_context: np.ndarray,
    X_query: Any,
    *,
    check_missing_class: bool = True,
    check_query_order: bool = True,
    atol: float = 1e-6,
) -> dict[str, Any]:
    """Assert the method contract for estimators made by ``build(seed)``; return what was observed.

    Checks: sklearn-style API (``fit`` returns self, ``get_params``, ``predict_proba`` takes only X),
    probability shape ``(n_query, n_classes_in_context)``, finite non-negative rows summing to 1
    (within :data:`~chorustic.methods.base.PROBA_TOL`),
    ``predict`` = ``classes_[argmax]``, classes come from the context only (a context missing a class
    gives probabilities for the seen classes only), same seed -> identical output, and query order
    does not matter (each query's prediction depends on the context and that query only: no test
    labels or test-set statistics). Raises AssertionError with a message on the first violation.
    """
    observed: dict[str, Any] = {}
    for item in estimator_clauses(
        build,
        X_context,
        y_context,
        X_query,
        check_missing_class=check_missing_class,
        check_query_order=check_query_order,
        atol=atol,
    ):
        if isinstance(item, tuple):
            observed = item[1]
        elif item.status == "fail":
            raise AssertionError(f"{item.name}: {item.detail}")
    return observed
