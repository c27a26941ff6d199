"""Stand-ins for the few names the authors' UniShape and NuTime code imports from ``timm`` and ``fastai``, for
test machines where those packages cannot be imported.

Their model code needs ``timm`` (both) and ``fastai`` (UniShape's ``models/networks.py``: ``from fastai.basics
import *``). Their conda environments install both (``workflow/envs/unishape_rf.yaml``, ``nutime_rf.yaml``), but
a test machine may have neither: ``timm`` imports ``torchvision``, whose PyPI wheels are built against torch's
CUDA build and do not load with the CPU build, and ``fastai`` pulls in spaCy and torchvision. Inside
:func:`authors_deps` the import of a package that fails is answered by a stand-in module holding only what the
authors' modules import, so that their real classes can be built and run:

* ``timm.models.layers``: ``trunc_normal_`` (torch's ``nn.init.trunc_normal_``, the same sampler, which torch
  took from timm) and ``DropPath`` (stochastic depth; the identity in eval mode; the checkpoints' configurations
  use ``path_dropout=0``, so the authors' code builds none);
* ``timm.optim``, ``timm.scheduler``, ``timm.loss``: the names their training utilities import, as classes that
  refuse to be built (nothing that extracts features uses them);
* ``fastai.basics``: ``Module`` (an ``nn.Module`` whose ``__init__`` need not call ``super().__init__()``, as
  fastai's), ``init_linear`` (fastai's rule: the bias drawn from N(0, ``bias_std``), the weight re-initialised
  only by an ``init`` function; UniShape's convolutions have no bias and pass none) and ``noop``.

None of it changes a tensor the plugins compute from given weights: the state dicts (names, shapes) and the
forward passes are the authors'. A package that imports is always used as it is; :func:`authors_deps` reports
which of the two each name was. Never used by a run (test scaffolding only).
"""

from __future__ import annotations

import contextlib
import importlib
import sys
import types
from collections.abc import Iterator, Sequence

__all__ = ["authors_deps", "importable"]

#: package -> the module whose import decides whether the real package works.
PROBES = {"timm": "timm.models.layers", "fastai": "fastai.basics"}


def importable(module: str) -> str | None:
    """None when ``module`` imports, else why not (the error, in one line)."""
    try:
        importlib.import_module(module)
    except Exception as exc:  # noqa: BLE001 - a broken install raises more than ImportError
        return f"{type(exc).__name__}: {exc}".splitlines()[0]
    return None


class _Unavailable:
    """A training utility of the stand-in: importable, refuses to be built."""

    def __init__(self, *args, **kwargs):
        raise NotImplementedError(
            f"{type(self).__name__} is a stand-in (chorustic.testing.authors_deps): install the real package"
        )


def _module(name: str, **attrs) -> types.ModuleType:
    mod = types.ModuleType(name, f"stand-in for {name} (chorustic.testing.authors_deps)")
    mod.__dict__.update(attrs)
    mod.__chorustic_standin__ = True
    return mod


def _timm() -> dict[str, types.ModuleType]:
    import torch
    from torch import nn

    class DropPath(nn.Module):
        """Stochastic depth per sample (timm's ``DropPath``); the identity in eval mode or with ``drop_prob=0``."""

        def __init__(self, drop_prob: float = 0.0, scale_by_keep: bool = True):
            super().__init__()
            self.drop_prob, self.scale_by_keep = float(drop_prob), scale_by_keep

        def forward(self, x):
            if self.drop_prob == 0.0 or not self.training:
                return x
            keep = 1.0 - self.drop_prob
            mask = x.new_empty((x.shape[0],) + (1,) * (x.ndim - 1)).bernoulli_(keep)
            return x * (mask / keep if self.scale_by_keep else mask)

    def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0):
        return torch.nn.init.trunc_normal_(tensor, mean=mean, std=std, a=a, b=b)

    layers = _module("timm.models.layers", trunc_normal_=trunc_normal_, DropPath=DropPath)
    unavailable = {n: type(n, (_Unavailable,), {}) for n in (
        "Lars", "Lamb", "StepLRScheduler", "PlateauLRScheduler", "CosineLRScheduler",
        "LabelSmoothingCrossEntropy", "SoftTargetCrossEntropy")}
    models = _module("timm.models", layers=layers)
    mods = {
        "timm.models.layers": layers,
        "timm.layers": _module("timm.layers", trunc_normal_=trunc_normal_, DropPath=DropPath),
        "timm.models": models,
        "timm.optim": _module("timm.optim", Lars=unavailable["Lars"], Lamb=unavailable["Lamb"]),
        "timm.scheduler": _module("timm.scheduler", **{k: unavailable[k] for k in (
            "StepLRScheduler", "PlateauLRScheduler", "CosineLRScheduler")}),
        "timm.loss": _module("timm.loss", **{k: unavailable[k] for k in (
            "LabelSmoothingCrossEntropy", "SoftTargetCrossEntropy")}),
    }
    root = _module("timm", __version__="stand-in", __path__=[], models=models, layers=mods["timm.layers"],
                   optim=mods["timm.optim"], scheduler=mods["timm.scheduler"], loss=mods["timm.loss"])
    root.__path__ = []  # a package: its submodules above resolve through sys.modules
    models.__path__ = []
    return {"timm": root, **mods}


def _fastai() -> dict[str, types.ModuleType]:
    import torch
    from torch import nn

    class _PreInit(type):
        def __call__(cls, *args, **kwargs):
            obj = cls.__new__(cls)
            nn.Module.__init__(obj)  # fastai's Module.__pre_init__
            obj.__init__(*args, **kwargs)
            return obj

    class Module(nn.Module, metaclass=_PreInit):
        """fastai's ``Module``: ``nn.Module.__init__`` runs before the subclass's ``__init__``."""

        def __init__(self):
            pass

    def init_linear(m, act_func=None, init="auto", bias_std=0.01):
        if getattr(m, "bias", None) is not None and bias_std is not None:
            if bias_std != 0:
                torch.nn.init.normal_(m.bias, 0, bias_std)
            else:
                m.bias.data.zero_()
        if init == "auto":
            if act_func in (torch.nn.functional.relu_, torch.nn.functional.leaky_relu_):
                init = torch.nn.init.kaiming_uniform_
            else:
                init = getattr(act_func.__class__, "__default_init__", None) or getattr(act_func, "__default_init__", None)
        if init is not None:
            init(m.weight)

    def noop(x=None, *args, **kwargs):
        return x

    basics = _module("fastai.basics", Module=Module, init_linear=init_linear, noop=noop,
                     __all__=["Module", "init_linear", "noop"])
    root = _module("fastai", __version__="stand-in", __path__=[], basics=basics)
    return {"fastai": root, "fastai.basics": basics}


_BUILDERS = {"timm": _timm, "fastai": _fastai}


@contextlib.contextmanager
def authors_deps(packages: Sequence[str] = ("timm", "fastai"), *, force: bool = False) -> Iterator[dict[str, str]]:
    """Inside the block, each of ``packages`` (``"timm"``, ``"fastai"``) imports: the real one where it works,
    else its stand-in (``force=True``: the stand-in always). Yields ``{package: "installed" | "stand-in (why)"}``.
    The stand-ins leave ``sys.modules`` when the block ends (objects built inside keep working)."""
    used: dict[str, str] = {}
    added: list[str] = []
    saved: dict[str, types.ModuleType] = {}
    try:
        for pkg in packages:
            why = "forced" if force else importable(PROBES[pkg])
            if why is None:
                used[pkg] = "installed"
                continue
            owned = [k for k in sys.modules if k == pkg or k.startswith(pkg + ".")]
            for k in owned:  # a real package that failed half way, or one set aside by force
                saved[k] = sys.modules.pop(k)
            for name, mod in _BUILDERS[pkg]().items():
                sys.modules[name] = mod
                added.append(name)
            used[pkg] = f"stand-in ({why})"
        yield used
    finally:
        for name in added:
            sys.modules.pop(name, None)
        sys.modules.update(saved)
