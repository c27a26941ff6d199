"""Method contract and plugin discovery (see :mod:`chorustic.methods.base`)."""

from chorustic.methods.base import (
    GROUPS,
    INPUT_KINDS,
    CostModel,
    Estimator,
    Method,
    MethodInfo,
    MethodNotReady,
    PROBA_TOL,
    ReportedMethod,
)
from chorustic.methods.registry import Discovery, default_plugin_dir, discover, import_plugin_module, register

__all__ = [
    "GROUPS",
    "CostModel",
    "INPUT_KINDS",
    "Estimator",
    "Method",
    "MethodInfo",
    "MethodNotReady",
    "PROBA_TOL",
    "ReportedMethod",
    "Discovery",
    "default_plugin_dir",
    "discover",
    "import_plugin_module",
    "register",
]
