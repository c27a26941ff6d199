"""Plugin discovery: every ``*.py`` file in the plugin folder that registers a method is a method.

A plugin file registers its class(es) with the :func:`register` decorator::

    from chorustic.methods import Method, MethodInfo, register

    @register
    class MiniRocket(Method):
        info = MethodInfo(name="minirocket", display_name="MiniRocket", group="Classical",
                          fits_on_target=True, input_kind="native")
        def build(self, *, seed, device="cpu", n_jobs=1, **params): ...

A file that fails to import (syntax error, missing dependency, invalid metadata) is reported in
:attr:`Discovery.broken` with its traceback and skipped; the other methods stay available.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import sys
import traceback
from pathlib import Path
from types import ModuleType

from chorustic.errors import UnknownMethodError, did_you_mean
from chorustic.methods.base import Method, ReportedMethod

__all__ = [
    "Discovery",
    "PluginLoadError",
    "default_plugin_dir",
    "discover",
    "discover_file",
    "import_plugin_module",
    "load_module_file",
    "plugin_problem",
    "register",
]


class PluginLoadError(RuntimeError):
    """The plugin file of a requested method failed to import (the message has the reason and the fix)."""

_REGISTERED: dict[str, type] = {}


def register(cls: type) -> type:
    """Class decorator that registers a :class:`Method` or :class:`ReportedMethod` subclass."""
    if not (isinstance(cls, type) and issubclass(cls, (Method, ReportedMethod))):
        raise TypeError(f"@register expects a Method or ReportedMethod subclass, got {cls!r}")
    info = getattr(cls, "info", None)
    if info is None:
        raise TypeError(f"{cls.__name__} has no `info = MethodInfo(...)`")
    if issubclass(cls, ReportedMethod) and not info.reported:
        raise TypeError(f"{cls.__name__} is a ReportedMethod but info.reported is False")
    if issubclass(cls, Method) and cls.estimator is None and cls.build is Method.build:
        raise TypeError(f"{cls.__name__} sets no `estimator` and writes no build(): set `estimator = MyEstimator` "
                        "(an sklearn-style class; see chorustic.methods.estimators.ContractClassifier)")
    existing = _REGISTERED.get(info.name)
    if existing is not None and existing.__qualname__ != cls.__qualname__:
        raise ValueError(f"method name {info.name!r} registered twice ({existing.__qualname__}, {cls.__qualname__})")
    _REGISTERED[info.name] = cls
    return cls


def default_plugin_dir() -> Path:
    """``$CHORUSTIC_BASELINES`` if set, else the repository's ``baselines/`` folder."""
    env = os.environ.get("CHORUSTIC_BASELINES")
    if env:
        return Path(env)
    from chorustic.paths import REPO_ROOT

    return REPO_ROOT / "baselines"


@dataclasses.dataclass
class Discovery:
    methods: dict[str, Method | ReportedMethod]
    broken: dict[str, str]
    """plugin file -> traceback of the failure"""
    sources: dict[str, str]
    """method name -> plugin file"""
    problems: dict[str, str] = dataclasses.field(default_factory=dict)
    """plugin file -> the failure in one line, at the plugin file's own line (:func:`plugin_problem`)"""

    def problem(self, file: str) -> str:
        """The failure of the broken plugin ``file`` in one line ("flat_logreg.py:31: TypeError: ...")."""
        if file in self.problems:
            return self.problems[file]
        tb = self.broken.get(file, "").strip()
        return tb.splitlines()[-1] if tb else "unknown error"

    def get(self, name: str) -> Method | ReportedMethod:
        try:
            return self.methods[name]
        except KeyError:
            for file, tb in self.broken.items():
                if Path(file).stem == name:
                    last = self.problem(file)
                    raise PluginLoadError(
                        f"the plugin file {file} of method {name!r} failed to import: {last}. Fix the file or install "
                        "what it needs (`chorustic methods` shows the full traceback)."
                    ) from None
            hint = ""
            if self.broken:
                hint = f" (plugin files that failed to load: {', '.join(sorted(self.broken))})"
            raise UnknownMethodError(
                f"unknown method {name!r}.{did_you_mean(name, self.methods)} "
                f"Known methods: {', '.join(sorted(self.methods))}{hint}"
            ) from None


def plugin_problem(path: str | os.PathLike, exc: BaseException) -> str:
    """``exc``, raised while importing the plugin file ``path``, in one line at the plugin's own line:
    ``baselines/flat_logreg.py:31: TypeError: MethodInfo has no field 'fit_on_target'. Did you mean
    'fits_on_target'? ...`` (the traceback's last frame in that file; a syntax error's own line)."""
    path = Path(path)
    line = None
    if isinstance(exc, SyntaxError) and exc.filename and Path(exc.filename).resolve() == path.resolve():
        line = exc.lineno
    else:
        for frame in traceback.extract_tb(exc.__traceback__):
            if Path(frame.filename).resolve() == path.resolve():
                line = frame.lineno
    try:
        shown = path.resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        shown = path
    message = str(exc.msg if isinstance(exc, SyntaxError) else exc).strip().replace("\n", " ")
    return f"{shown}{f':{line}' if line else ''}: {type(exc).__name__}: {message}"


def _load_plugin_file(path: Path, methods: dict, broken: dict, sources: dict, problems: dict | None = None) -> None:
    """Import one plugin file and record what it registered (or why it failed: its traceback in ``broken``,
    the failure in one line in ``problems``)."""
    problems = {} if problems is None else problems
    before = dict(_REGISTERED)
    module_name = f"chorustic_plugins.{path.stem}"
    try:
        load_module_file(module_name, path)
    except Exception as exc:
        for name in set(_REGISTERED) - set(before):  # roll back a partially imported file
            del _REGISTERED[name]
        broken[path.name] = traceback.format_exc()
        problems[path.name] = plugin_problem(path, exc)
        return
    new = {n: c for n, c in _REGISTERED.items() if n not in before or before[n] is not c}
    if not new:
        new = {n: c for n, c in _REGISTERED.items() if getattr(c, "__module__", None) == module_name}
    for name, cls in new.items():
        try:
            methods[name] = cls()
            sources[name] = path.name
        except Exception as exc:
            broken[path.name] = traceback.format_exc()
            problems[path.name] = plugin_problem(path, exc)


def discover(plugin_dir: str | os.PathLike | None = None, only: str | None = None) -> Discovery:
    """Import every plugin file in ``plugin_dir`` and return the methods it registered.

    With ``only``, first try just ``<plugin_dir>/<only>.py`` (the convention for a plugin named like
    its file): an evaluation job needs one method, and importing every plugin's dependencies costs
    seconds per job. If that file does not register ``only``, every file is imported as usual.
    """
    plugin_dir = Path(plugin_dir) if plugin_dir is not None else default_plugin_dir()
    methods: dict[str, Method | ReportedMethod] = {}
    broken: dict[str, str] = {}
    sources: dict[str, str] = {}
    problems: dict[str, str] = {}
    if not plugin_dir.is_dir():
        broken[str(plugin_dir)] = f"plugin folder {plugin_dir} does not exist"
        return Discovery(methods, broken, sources)
    if only is not None and (plugin_dir / f"{only}.py").is_file():
        _load_plugin_file(plugin_dir / f"{only}.py", methods, broken, sources, problems)
        if only in methods:
            return Discovery(methods, broken, sources, problems)
        methods, broken, sources, problems = {}, {}, {}, {}
    for path in sorted(plugin_dir.glob("*.py")):
        if path.name.startswith("_"):
            continue
        _load_plugin_file(path, methods, broken, sources, problems)
    return Discovery(methods, broken, sources, problems)


def discover_file(path: str | os.PathLike) -> Discovery:
    """The methods one plugin file registers, imported as :func:`discover` imports it (wherever the file
    is; ``sources`` maps each method to the file's path as given). A file that fails to import, or does not
    exist, is in ``broken``."""
    path = Path(path)
    methods: dict[str, Method | ReportedMethod] = {}
    broken: dict[str, str] = {}
    sources: dict[str, str] = {}
    problems: dict[str, str] = {}
    if not path.is_file():
        broken[str(path)] = f"plugin file {path} does not exist"
        return Discovery(methods, broken, sources)
    _load_plugin_file(path, methods, broken, sources, problems)
    return Discovery(methods, broken, {name: str(path) for name in sources}, problems)


def load_module_file(module_name: str, path: str | os.PathLike) -> ModuleType:
    """Import the file ``path`` as the module ``module_name`` (in ``sys.modules``; removed again when
    importing it fails)."""
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(module_name, None)
        raise
    return module


def import_plugin_module(name: str, near: str | os.PathLike) -> ModuleType:
    """Import the sibling plugin file ``<dir of near>/<name>.py`` (as ``chorustic_plugins.<name>``, the
    module name discovery uses), e.g. to reuse its estimator class in a variant plugin."""
    mod_name = f"chorustic_plugins.{name}"
    path = Path(near).resolve().parent / f"{name}.py"
    cached = sys.modules.get(mod_name)
    # the module of that name imported from another plugin folder (another $CHORUSTIC_BASELINES) is another
    # plugin: import this folder's file
    if cached is not None and getattr(cached, "__file__", None) and Path(cached.__file__).resolve() == path:
        return cached
    return load_module_file(mod_name, path)
