"""A method's fingerprint: what determines its results, so that a result made otherwise is never reused.

The fingerprint of a method run is its plugin, its complete parameters (the plugin's defaults merged with the
config's) and a SHA-256 over the method's code: the plugin file, the files of the classes it derives from and
of the ``chorustic``/plugin modules it imports at module level, and the modules it declares in
``Method.code`` (:func:`code_text`: without comment lines, cost models and costing hooks, which change no
prediction, so refitting a cost model re-makes no result). :func:`method_fingerprint` makes it from a plugin and
its parameters; :attr:`chorustic.run_plan.PlannedJob.fingerprint` for a run of a configuration.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib.util
import inspect
import io
import json
import os
import sys
import tokenize
from pathlib import Path
from typing import Any

from chorustic.io import sha256_file
from chorustic.paths import REPO_ROOT

__all__ = ["COST_HOOKS", "code_text", "method_code_files", "code_sha256", "fingerprint_text", "method_fingerprint"]

#: Harness modules every plugin uses for its declaration only (not for computing results). The cost model
#: sizes a job's resources and its query chunks, and a query's prediction does not depend on its chunk (but for
#: float rounding: a chunk of other shape can sum in another order).
_DECLARATION_MODULES = {"chorustic.methods", "chorustic.methods.base", "chorustic.methods.registry",
                        "chorustic.methods.cost"}


def _module_files(name: str) -> list[Path]:
    """Source files of an importable module, or of every module of a package."""
    mod = sys.modules.get(name)
    origin = getattr(mod, "__file__", None) if mod is not None else None
    if origin is None:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            return []
        if spec is None:
            return []
        if spec.submodule_search_locations:
            return sorted(p for d in spec.submodule_search_locations for p in Path(d).rglob("*.py"))
        origin = spec.origin
    if origin is None or not origin.endswith(".py"):
        return []
    path = Path(origin)
    if path.name == "__init__.py":
        return sorted(path.parent.rglob("*.py"))
    return [path]


def method_code_files(method: Any, plugin_file: str | os.PathLike | None = None) -> list[Path]:
    """The source files whose content determines ``method``'s results (see the module docstring)."""
    files: set[Path] = set()
    if plugin_file is not None:
        files.add(Path(plugin_file).resolve())
    cls = type(method)
    for base in cls.__mro__:
        mod = getattr(base, "__module__", "") or ""
        if mod in _DECLARATION_MODULES or mod.startswith(("builtins", "abc")):
            continue
        try:
            src = inspect.getsourcefile(base)
        except TypeError:
            src = None
        if src:
            files.add(Path(src).resolve())
    module = sys.modules.get(cls.__module__)
    for value in vars(module).values() if module is not None else ():
        name = value.__name__ if inspect.ismodule(value) else getattr(value, "__module__", None)
        if not isinstance(name, str) or not name.startswith(("chorustic.", "chorustic_plugins.")):
            continue
        if name in _DECLARATION_MODULES:
            continue
        if inspect.ismodule(value):
            files.update(p.resolve() for p in _module_files(name))
        else:
            owner = sys.modules.get(name)
            if getattr(owner, "__file__", None):
                files.add(Path(owner.__file__).resolve())
    for name in getattr(method, "code", ()) or ():
        files.update(p.resolve() for p in _module_files(name))
    return sorted(files)


#: A method's costing hooks (:class:`chorustic.methods.Method`): they size a job, they compute no prediction.
#: ``job_params`` is not one: what it sets on the estimator (TabICL's passes) is part of how a result is computed.
COST_HOOKS = ("cost_model", "cost_band", "job_cost", "query_chunk")


def _is_cost_model(node: ast.stmt, in_class: bool = False) -> bool:
    """A module- or class-level statement that sets a cost model: ``cost = ...`` / ``cost: ... = ...``, any
    name bound to ``CostModel(...)``, or (in a class) a costing hook's definition (:data:`COST_HOOKS`)."""
    if in_class and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return node.name in COST_HOOKS
    if isinstance(node, ast.Assign):
        targets, value = node.targets, node.value
    elif isinstance(node, ast.AnnAssign) and node.value is not None:
        targets, value = [node.target], node.value
    else:
        return False
    if any(isinstance(t, ast.Name) and t.id == "cost" for t in targets):
        return True
    func = value.func if isinstance(value, ast.Call) else None
    return (isinstance(func, ast.Name) and func.id == "CostModel") or (
        isinstance(func, ast.Attribute) and func.attr == "CostModel")


def code_text(path: str | os.PathLike) -> bytes:
    """The part of a method's source file that determines its predictions: the file without its comment
    lines and its cost-model statements and costing hooks (:func:`_is_cost_model`), which only size a
    job's resources and its query chunks. Lines are dropped by the positions Python's parser gives them,
    so the text is the same under every Python version; a file that does not parse counts in full."""
    return _code_text_of(Path(path).read_bytes())


def _code_text_of(raw: bytes) -> bytes:
    """:func:`code_text` of a file's bytes."""
    try:
        tree = ast.parse(raw)
    except (SyntaxError, ValueError):
        return raw
    # comment lines, as the tokenizer finds them (a line of a string literal that starts with "#" stays)
    drop = {tok.start[0] for tok in tokenize.tokenize(io.BytesIO(raw).readline)
            if tok.type == tokenize.COMMENT and tok.line.lstrip().startswith("#")}
    for node in tree.body:
        inner = node.body if isinstance(node, ast.ClassDef) else []
        for stmt, in_class in [(node, False), *((st, True) for st in inner)]:
            if _is_cost_model(stmt, in_class):
                first = min([stmt.lineno, *(d.lineno for d in getattr(stmt, "decorator_list", []))])
                drop.update(range(first, (stmt.end_lineno or stmt.lineno) + 1))
    lines = raw.splitlines(keepends=True)
    return b"".join(line for i, line in enumerate(lines, 1) if i not in drop)


@functools.cache
def _code_text_digest(raw: bytes) -> str:
    """The digest of :func:`code_text` of a file's bytes, kept for the process by the bytes: the method runs
    of a configuration share most of their code files (the paper profile's 20 runs name 214 files, 47
    distinct), and each text is parsed once, however often it is named."""
    return hashlib.sha256(_code_text_of(raw)).hexdigest()


def _code_sha256(files: list[Path]) -> str:
    h = hashlib.sha256()
    for f in files:
        try:
            rel = f.relative_to(REPO_ROOT).as_posix()
        except ValueError:
            rel = f.name
        digest = _code_text_digest(f.read_bytes()) if f.suffix == ".py" else sha256_file(f)
        h.update(rel.encode() + b"\0" + digest.encode() + b"\n")
    return h.hexdigest()


def code_sha256(files: list[Path]) -> str:
    """The SHA-256 over :func:`code_text` of every file (by its path in the repository)."""
    return _code_sha256(files)


def method_fingerprint(plugin: str, method: Any, params: dict[str, Any], plugin_file: str | os.PathLike | None) -> str:
    """The fingerprint of ``plugin`` with ``params`` as one canonical JSON string; ``method`` None: a plugin file
    that fails to import, whose own text (``plugin_file``) is then the method's code."""
    if method is not None:
        params = method.params(params)
        files = method_code_files(method, plugin_file)
    else:
        files = [Path(plugin_file)] if plugin_file is not None and Path(plugin_file).is_file() else []
    return fingerprint_text({"plugin": plugin, "params": params, "code_sha256": _code_sha256(files)})


def fingerprint_text(doc: Any) -> str:
    """A fingerprint (as a manifest records it) as the run plan's canonical JSON string (:attr:`chorustic.run_plan.PlannedJob.fingerprint`)."""
    return json.dumps(doc, sort_keys=True, default=str, separators=(",", ":"))
