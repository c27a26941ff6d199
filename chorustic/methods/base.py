"""The method contract every plugin in ``baselines/`` follows.

A *method* is a plugin class: metadata (:class:`MethodInfo`) plus a factory of sklearn-style
estimators. The harness never touches a method's internals; it only

1. builds an estimator with ``method.build(seed=..., device=..., n_jobs=..., **params)``,
2. calls ``estimator.fit(X_context, y_context)`` with the labeled context of one protocol run,
3. calls ``estimator.predict_proba(X_query)`` on the complete test split (test labels never reach it).

Estimator contract (sklearn/aeon style)
---------------------------------------
* ``fit(X, y) -> self``. ``X`` is the context: a float32 array ``(n, C, L)``; for
  ``input_kind == "resampled"`` always ``L == 512`` (paper App. C.2); for ``input_kind == "native"``
  the unresampled series, an array ``(n, C, L)`` for equal-length datasets or a list of ``(C, L_i)``
  arrays for variable-length ones (missing values already replaced by 0). ``y`` is int64 in
  ``0..K-1`` (labels encoded on the training split).
* ``predict_proba(X) -> (n_query, len(classes_))`` float array of class probabilities: non-negative,
  rows sum to 1 within :data:`PROBA_TOL` (the method's own probabilities: the harness never rescales
  them; a method that produces scores or logits applies a softmax), columns ordered as ``classes_``
  (the classes seen in ``fit``; never more).
* ``predict(X) -> classes_[argmax predict_proba]``.
* ``classes_`` after ``fit``; ``get_params()`` returns the constructor parameters.
* ``fit`` and ``predict_proba`` leave ``X`` as it is: the harness hands the context and the queries as
  views of the dataset's arrays where it can (no copy of a full training split), which every later context
  of the job reads. A method that changes its input in place works on a copy.
* Same seed, same machine, same inputs -> identical outputs.

A method that cannot run (missing weights, missing checkout, no GPU) raises :class:`MethodNotReady`
from ``check_ready`` (and from ``build``) with a message that names what is missing and how to fix it.
"""

from __future__ import annotations

import abc
import dataclasses
import inspect
from pathlib import Path
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np

from chorustic.errors import did_you_mean, known_keywords
from chorustic.methods.cost import CostModel, JobSize

__all__ = [
    "HARNESS_KEYWORDS",
    "CostModel",
    "GROUPS",
    "INPUT_KINDS",
    "BENCHMARK_IN_PRETRAINING",
    "MethodInfo",
    "Method",
    "ReportedMethod",
    "Estimator",
    "MethodNotReady",
    "PROBA_ADVICE",
    "PROBA_TOL",
    "estimator_defaults",
    "probability_rows_problem",
]

#: Table groups, as in the paper's tables, plus the classical state of the art.
GROUPS = ("Time-series ICL", "Generic ICL", "Frozen TSFM", "Classical")
#: What the estimator receives: the paper's 512-length resampled arrays or the native series.
INPUT_KINDS = ("resampled", "native")
#: Whether a method's pretraining data includes series of the UCR or UEA archives
#: (``MethodInfo.benchmark_in_pretraining``; the leakage audit of every table).
BENCHMARK_IN_PRETRAINING = ("no", "yes", "unknown")


#: How far (absolute) a row of ``predict_proba`` may sum from 1, and a probability lie below 0. float32
#: rounding stays far inside it (a float32 softmax over 10,000 classes, normalised by naive summation,
#: sums to 1 within 3e-5); scores, unnormalised weights or a dropped class are far outside it.
PROBA_TOL = 1e-4
#: What to do about rows that are not probabilities (part of every message that refuses them).
PROBA_ADVICE = (
    "Return class probabilities (non-negative, rows summing to 1: the harness does not rescale them), "
    "or apply a softmax to scores or logits (scipy.special.softmax(scores, axis=1))"
)


def probability_rows_problem(proba: np.ndarray, tol: float = PROBA_TOL) -> str | None:
    """Why the rows of ``proba`` ``(n, K)`` are not class probabilities within ``tol``, naming the first
    offending row (a NaN or infinite value, a sum more than ``tol`` from 1, or a value below ``-tol``); None
    when they are."""
    proba = np.asarray(proba, dtype=np.float64)
    not_finite = np.flatnonzero(~np.isfinite(proba).all(axis=1))
    if not_finite.size:
        i = int(not_finite[0])
        j = int(np.flatnonzero(~np.isfinite(proba[i]))[0])
        return (
            f"row {i} holds {proba[i, j]} in column {j} ({not_finite.size} of {len(proba)} rows hold NaN or "
            "infinite values: a division by zero or an overflow in the method, e.g. an exp of large scores)"
        )
    negative = np.flatnonzero((proba < -tol).any(axis=1))
    if negative.size:
        i = int(negative[0])
        return (
            f"row {i} holds the negative probability {proba[i].min():.6g} "
            f"({negative.size} of {len(proba)} rows below -{tol:g})"
        )
    sums = proba.sum(axis=1)
    off = np.flatnonzero(np.abs(sums - 1.0) > tol)
    if off.size:
        i = int(off[0])
        return (
            f"row {i} sums to {sums[i]:.6g}, not 1 ({off.size} of {len(proba)} rows off by more than the "
            f"tolerance {tol:g})"
        )
    return None


class MethodNotReady(RuntimeError):
    """The method cannot run here; the message says what is missing and how to provide it."""


def ready_or_raise(*checks: Any) -> list[Any]:
    """Run every check (a callable raising :class:`MethodNotReady`) and return their values; if any raised,
    raise one :class:`MethodNotReady` whose message lists every problem (a user fixing the first then
    meeting the next is what this avoids)."""
    values, problems = [], []
    for check in checks:
        try:
            values.append(check())
        except MethodNotReady as exc:
            problems.append(str(exc))
            values.append(None)
    if len(problems) == 1:
        raise MethodNotReady(problems[0])
    if problems:
        raise MethodNotReady(f"{len(problems)} problems: " + " ALSO: ".join(f"({i}) {p}" for i, p in
                                                                         enumerate(problems, 1)))
    return values


#: The keys of a method's ``resources`` (Snakemake's names): threads, memory in MB, time limit in minutes, GPUs.
RESOURCE_KEYS = ("threads", "mem_mb", "runtime", "gpu")


@known_keywords
@dataclasses.dataclass(frozen=True)
class MethodInfo:
    """Metadata of a method, used by the DAG, the CLI and every report."""

    name: str
    """Plugin id, lowercase with underscores (``"minirocket"``). Config entries refer to it."""
    display_name: str
    """Name in tables and figures (``"MiniRocket"``, ``"MantisV2+LR"``)."""
    group: str
    """One of :data:`GROUPS`."""
    fits_on_target: bool
    """True when a classifier is fitted on the target training split ("Target fit" column)."""
    input_kind: str = "resampled"
    """One of :data:`INPUT_KINDS`."""
    needs_gpu: bool = False
    """True when the method is impractical without a GPU (it must still run, slowly, on CPU)."""
    reported: bool = False
    """True for methods whose accuracies come from a CSV ("reported, not reproduced")."""
    description: str = ""
    reference: str = ""
    pretraining_data: str = ""
    """What the method's weights were pretrained on, with its source (paper section or README), for the
    leakage audit: ``"none: fitted on the target training split only"`` for a classical method."""
    benchmark_in_pretraining: str = "unknown"
    """One of :data:`BENCHMARK_IN_PRETRAINING`: ``"yes"`` when the pretraining data includes series of the
    UCR or UEA archives (the test sets may have been seen: every table marks the method with a double
    dagger), ``"no"`` when it does not (or the method is not pretrained), ``"unknown"`` when the sources
    do not say."""

    def __post_init__(self) -> None:
        if not self.name or not self.name.replace("_", "").isalnum() or self.name.lower() != self.name:
            raise ValueError(f"method name {self.name!r} must be lowercase letters, digits and underscores")
        if self.group not in GROUPS:
            raise ValueError(f"method {self.name!r}: group {self.group!r} is not one of {GROUPS}")
        if self.input_kind not in INPUT_KINDS:
            raise ValueError(f"method {self.name!r}: input_kind {self.input_kind!r} is not one of {INPUT_KINDS}")
        if self.benchmark_in_pretraining not in BENCHMARK_IN_PRETRAINING:
            raise ValueError(f"method {self.name!r}: benchmark_in_pretraining {self.benchmark_in_pretraining!r} is "
                             f"not one of {BENCHMARK_IN_PRETRAINING}")


@runtime_checkable
class Estimator(Protocol):
    classes_: np.ndarray

    def fit(self, X: Any, y: np.ndarray) -> "Estimator": ...

    def predict_proba(self, X: Any) -> np.ndarray: ...

    def predict(self, X: Any) -> np.ndarray: ...

    def get_params(self, deep: bool = True) -> dict: ...


#: Estimator constructor keywords the harness sets itself (the run's seed, device and threads) or leaves
#: at their defaults: never method parameters.
HARNESS_KEYWORDS = ("random_state", "seed", "device", "n_jobs", "verbose", "progress")


def estimator_defaults(estimator: type, exclude: tuple[str, ...] = ()) -> dict[str, Any]:
    """The constructor parameters of ``estimator`` with their defaults, except the harness' keywords
    (:data:`HARNESS_KEYWORDS`) and ``exclude``: a plugin's parameters, written once, in the estimator."""
    out = {}
    for name, p in inspect.signature(estimator.__init__).parameters.items():
        if name == "self" or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if name in HARNESS_KEYWORDS or name in exclude:
            continue
        out[name] = None if p.default is inspect.Parameter.empty else p.default
    return out


class _Parametrised:
    """The parameters of a plugin: ``default_params`` updated with a config's ``params``."""

    info: ClassVar[MethodInfo]
    default_params: ClassVar[dict[str, Any]] = {}

    def params(self, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
        """Default parameters updated with ``overrides`` (unknown keys are an error)."""
        merged = dict(self.default_params)
        for key, value in (overrides or {}).items():
            if key not in merged:
                raise ValueError(
                    f"method {self.info.name!r} has no parameter {key!r}; "
                    f"known parameters: {sorted(merged) or 'none'}"
                )
            merged[key] = value
        self.validate(merged)
        return merged

    def validate(self, params: dict[str, Any]) -> None:
        """Raise ValueError naming a parameter whose value the method cannot use (default: no check).
        Called by :meth:`params`, so a bad value in the config stops the workflow before any job runs."""


class Method(_Parametrised, abc.ABC):
    """Base class of a runnable method plugin: metadata (``info``) plus one estimator.

    The short form: set ``info`` and ``estimator`` (an sklearn-style class, usually derived from
    :class:`chorustic.methods.estimators.ContractClassifier`). The method's parameters are then the
    estimator's constructor parameters with their defaults (:func:`estimator_defaults`), and
    :meth:`build` makes the estimator with the config's values, the seed (``random_state`` or
    ``seed``), ``device`` and ``n_jobs``. A plugin whose estimator needs local files (weights, a
    checkout) computes them from the parameters in :meth:`resolve`. ``build`` can also be written by
    hand (then ``default_params`` lists the parameters).
    """

    info: ClassVar[MethodInfo]
    #: The estimator class :meth:`build` makes (None: the plugin writes ``build`` itself).
    estimator: ClassVar[type | None] = None
    #: Estimator keywords the plugin fixes (not parameters a config can set), e.g. which backbone.
    fixed_params: ClassVar[dict[str, Any]] = {}
    #: Parameters besides the estimator's own: inputs of :meth:`resolve` (a revision, a file name).
    extra_params: ClassVar[dict[str, Any]] = {}
    #: Default keyword parameters of ``build``; config ``params`` override them. Derived from
    #: ``estimator`` (and ``extra_params``) when the plugin does not list them.
    default_params: ClassVar[dict[str, Any]] = {}
    #: Default resources of one evaluate job (one method on one dataset, every protocol context), in
    #: Snakemake terms; the config may override them per method. ``runtime`` is in minutes, ``gpu``
    #: the number of GPUs the job wants (0 = CPU).
    resources: ClassVar[dict[str, Any]] = {"threads": 1, "mem_mb": 4000, "runtime": 60, "gpu": 0}
    #: Importable modules or packages whose source is part of the method besides its plugin file, the
    #: classes it derives from and the ``chorustic`` modules it imports at module level (those are found
    #: automatically): e.g. ``("chorustic.model",)`` for a plugin that imports its model lazily. A change
    #: to any of them re-runs the method's evaluations (see :mod:`chorustic.evaluation.integrity`).
    code: ClassVar[tuple[str, ...]] = ()

    #: How one evaluate job's peak memory and time grow with its dataset (:class:`CostModel`). A job
    #: asks for the estimate (with a safety margin), never more than ``resources`` above: those are
    #: the upper bounds, what the largest datasets of the archives need.
    cost: ClassVar[CostModel] = CostModel()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        res = cls.__dict__.get("resources")
        if isinstance(res, dict):
            unknown = [k for k in res if k not in RESOURCE_KEYS]
            if unknown:
                raise TypeError(f"{cls.__name__}.resources has no key {unknown[0]!r}."
                                f"{did_you_mean(unknown[0], RESOURCE_KEYS)} Its keys: {', '.join(RESOURCE_KEYS)}")
        est = cls.__dict__.get("estimator")
        if est is not None and not isinstance(est, type):
            raise TypeError(f"{cls.__name__}.estimator must be the estimator class, not an instance "
                            f"({type(est).__name__}(...)): write `estimator = {type(est).__name__}`")
        if "default_params" not in cls.__dict__ and cls.estimator is not None:
            cls.default_params = {
                **estimator_defaults(cls.estimator, exclude=tuple(cls.fixed_params)),
                **cls.extra_params,
            }

    def cost_model(self, **params: Any) -> CostModel:
        """The :class:`~chorustic.methods.cost.CostModel` of a run with ``params``: :attr:`cost`; override it
        when the parameters pick another model (a small checkpoint)."""
        return self.cost

    def cost_band(self, size: JobSize, **params: Any) -> float | None:
        """Alignment cells per time point of an elastic distance at ``size`` (None: the whole length, or
        no elastic distance); override it when a parameter limits the band (a DTW window)."""
        return None

    def job_cost(self, size: JobSize, **params: Any) -> tuple[float, float]:
        """(peak memory in MB, time in s) of one evaluate job of ``size`` run with ``params``: the
        :meth:`cost_model` at ``size`` with the :meth:`cost_band`."""
        return self.cost_model(**params).estimate(size, band=self.cost_band(size, **params))

    def job_params(self, size: JobSize, **params: Any) -> dict[str, Any]:
        """Estimator parameters that follow from the whole job, not from one context: ``size`` holds every
        context the job evaluates (``context_train``, done or not, so that a resumed job sets the same). The
        harness sets them on each context's estimator (``set_params``) after :meth:`build`. They must be a
        function of ``size`` and ``params`` only, the same on every machine (TabICL: the memory of its largest
        context's forward pass, within which the smaller contexts plan theirs). Default: none."""
        return {}

    def query_chunk(self, size: JobSize, **params: Any) -> int:
        """How many test series the harness predicts at once for a context of ``size`` (the cost model's
        :meth:`~chorustic.methods.cost.CostModel.checkpoint_chunk`): a large test split is predicted in
        chunks, so a method never holds (test x context) or (test x features) beyond a fixed budget, and a
        long prediction is kept on disk chunk by chunk (at most ``CHECKPOINT_S`` of it lost when stopped)."""
        return self.cost_model(**params).checkpoint_chunk(size, band=self.cost_band(size, **params))

    @property
    def label(self) -> str:
        """``"Display name (name)"``: how messages name the method."""
        return f"{self.info.display_name} ({self.info.name})"

    def resolve(self, params: dict[str, Any]) -> dict[str, Any]:
        """Estimator keywords computed from the merged ``params``: where the run's weights and code are on
        this machine (local paths). The one place a plugin turns a parameter into a file; raises
        :class:`MethodNotReady` naming what is missing and how to provide it. Default: nothing."""
        return {}

    def build(self, *, seed: int, device: str = "cpu", n_jobs: int = 1, **params: Any) -> Estimator:
        """Return a fresh, unfitted estimator (the default makes :attr:`estimator`, see the class docstring)."""
        if self.estimator is None:
            raise NotImplementedError(f"{type(self).__name__} sets no `estimator` and does not implement build()")
        p = self.params(params)
        accepted = inspect.signature(self.estimator.__init__).parameters
        kwargs = {k: v for k, v in p.items() if k in accepted}
        kwargs.update(self.fixed_params)
        kwargs.update(self.resolve(p))
        seed_kw = "random_state" if "random_state" in accepted else "seed" if "seed" in accepted else None
        harness = {seed_kw: int(seed), "device": device, "n_jobs": n_jobs}
        kwargs.update({k: v for k, v in harness.items() if k in accepted})
        return self.estimator(**kwargs)

    def check_packages(self, params: dict[str, Any]) -> None:
        """Raise :class:`MethodNotReady` if a package the method imports is missing or fails to import
        (default: nothing to check). Checked with the weights, so that one message names every problem."""

    def load(self, params: dict[str, Any], resolved: dict[str, Any]) -> Any:
        """Load once what :meth:`resolve` found, as the last step of :meth:`check_ready` (default: nothing)."""

    def check_ready(self, **params: Any) -> None:
        """Raise :class:`MethodNotReady` if weights, checkouts or packages are missing (what
        :meth:`check_packages` and :meth:`resolve` find missing, every problem in one message), or if what
        they found does not :meth:`load`."""
        p = self.params(params)
        _, resolved = ready_or_raise(lambda: self.check_packages(p), lambda: self.resolve(p))
        self.load(p, resolved)

    def fetch_weights(self, **params: Any) -> list[Path]:
        """Download and verify what the method needs (on a connected machine); return the paths."""
        return []


class ReportedMethod(_Parametrised, abc.ABC):
    """A method that is never run: its per-dataset accuracies come from a CSV.

    Carried through every table and figure, always marked "reported, not reproduced".
    """

    @abc.abstractmethod
    def reported_accuracies(self, **params: Any):
        """Return a ``pandas.DataFrame`` with columns ``dataset, protocol, seed, accuracy``."""

    def covered_datasets(self, **params: Any) -> set[str] | None:
        """The datasets it reports, where that is known without downloading anything: the run plan gives it
        jobs on those only, so a dataset it does not report is neither a job nor a missing run (and never
        shrinks the datasets every method is compared on). None (the default): not known beforehand; every
        dataset gets a job, and one without a reported value is a failed run saying so."""
        return None
