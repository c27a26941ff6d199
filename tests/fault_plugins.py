"""Tiny method plugins for the fault tests (a plugin folder is selected with ``CHORUSTIC_BASELINES``).

* ``centroid``: nearest class centroid on the resampled series (milliseconds per context), with a
  ``shrink`` parameter that changes its predictions;
* ``flaky``: the same, but fails every fixed-shot context while the file named by ``$FLAKY_FAIL``
  exists (a transient failure: removing the file "fixes" it without changing the plugin's code);
* ``broken``: a plugin file that does not import;
* ``hog``: the same as ``centroid``, but allocates far beyond any job's memory on the full context;
* ``sleepy``: the same as ``centroid``, but its fit of the full context takes ``$SLEEPY_S`` seconds (a
  method making progress on a machine slower than its cost model assumed).

:func:`full_disk` turns a file's ``fsync`` into ``[Errno 28] No space left on device`` (what a full disk
does), for the files matching ``$CHORUSTIC_TEST_FULL_DISK``; ``FULL_DISK_SITE`` first on ``PYTHONPATH``
installs it in every Python process started with it (the evaluation worker, ``snakemake``'s commands).
"""

from __future__ import annotations

import errno
import fnmatch
import os
import re
import textwrap
from pathlib import Path

PLUGINS = {
    "centroid.py": """
        import numpy as np
        from chorustic.methods import CostModel, Method, MethodInfo, register

        class Centroid:
            def __init__(self, seed=0, shrink=0.0):
                self.seed, self.shrink = seed, shrink
            def get_params(self, deep=True):
                return {"seed": self.seed, "shrink": self.shrink}
            def fit(self, X, y):
                X = np.asarray(X).reshape(len(y), -1)
                self.classes_ = np.unique(y)
                self.c_ = np.stack([X[y == c].mean(0) for c in self.classes_]) * (1.0 - self.shrink)
                return self
            def predict_proba(self, X):
                X = np.asarray(X).reshape(len(X), -1)
                d = ((X[:, None, :] - self.c_[None]) ** 2).sum(-1)
                e = np.exp(-(d - d.min(1, keepdims=True)) / (d.std() + 1e-9))
                return e / e.sum(1, keepdims=True)
            def predict(self, X):
                return self.classes_[self.predict_proba(X).argmax(1)]

        @register
        class CentroidMethod(Method):
            info = MethodInfo(name="centroid", display_name="Centroid", group="Classical", fits_on_target=True)
            cost = CostModel(loads_torch=False)  # numpy only: the worker never imports torch
            default_params = {"shrink": 0.0}
            def build(self, *, seed, device="cpu", n_jobs=1, shrink=0.0):
                return Centroid(seed, shrink)
    """,
    "flaky.py": """
        import os
        from chorustic.methods import CostModel, Method, MethodInfo, register
        from chorustic.methods import import_plugin_module
        Centroid = import_plugin_module(\"centroid\", __file__).Centroid

        class Flaky(Centroid):
            def fit(self, X, y):
                if len(y) <= 20 and os.path.exists(os.environ.get("FLAKY_FAIL", "/nonexistent")):
                    raise RuntimeError("flaky: the service this method needs is down")
                return super().fit(X, y)

        @register
        class FlakyMethod(Method):
            info = MethodInfo(name="flaky", display_name="Flaky", group="Classical", fits_on_target=True)
            cost = CostModel(loads_torch=False)  # numpy only: the worker never imports torch
            def build(self, *, seed, device="cpu", n_jobs=1):
                return Flaky(seed)
    """,
    "broken.py": "import a_module_that_does_not_exist  # the plugin's dependency is not installed\n",
    "hog.py": """
        import numpy as np
        from chorustic.methods import CostModel, Method, MethodInfo, register
        from chorustic.methods import import_plugin_module
        Centroid = import_plugin_module(\"centroid\", __file__).Centroid

        class Hog(Centroid):
            def fit(self, X, y):
                if len(y) > 20:  # the full context: allocate far beyond the job's memory limit
                    self.blob_ = [np.ones(50_000_000) for _ in range(40)]
                return super().fit(X, y)

        @register
        class HogMethod(Method):
            info = MethodInfo(name="hog", display_name="Hog", group="Classical", fits_on_target=True)
            cost = CostModel(loads_torch=False)  # numpy only: the worker never imports torch
            def build(self, *, seed, device="cpu", n_jobs=1):
                return Hog(seed)
    """,
    "sleepy.py": """
        import os, time
        from chorustic.methods import CostModel, Method, MethodInfo, register
        from chorustic.methods import import_plugin_module
        Centroid = import_plugin_module(\"centroid\", __file__).Centroid

        class Sleepy(Centroid):
            def fit(self, X, y):
                if len(y) > 20:  # the full context: slower than the cost model assumed, but getting there
                    time.sleep(float(os.environ.get("SLEEPY_S", "0")))
                return super().fit(X, y)

        @register
        class SleepyMethod(Method):
            info = MethodInfo(name="sleepy", display_name="Sleepy", group="Classical", fits_on_target=True)
            cost = CostModel(loads_torch=False)  # numpy only: the worker never imports torch
            def build(self, *, seed, device="cpu", n_jobs=1):
                return Sleepy(seed)
    """,
}

FULL_DISK_ENV = "CHORUSTIC_TEST_FULL_DISK"
FULL_DISK_SITE = Path(__file__).resolve().parent / "full_disk"


def full_disk(fsync):
    """``os.fsync`` that fails with ENOSPC (no file name, as the operating system says it) for a file whose
    final path matches one of the patterns in ``$CHORUSTIC_TEST_FULL_DISK`` (``os.pathsep``-separated
    ``fnmatch`` patterns; chorustic.io writes ``.<name>.<random>.tmp`` and renames it to ``<name>``)."""

    def hooked(fd):
        patterns = [p for p in os.environ.get(FULL_DISK_ENV, "").split(os.pathsep) if p]
        if patterns:
            try:
                where = os.readlink(f"/proc/self/fd/{fd}")
            except OSError:
                where = ""
            folder, name = os.path.split(where)
            m = re.fullmatch(r"\.(.+)\.\w{8}\.tmp", name)
            final = os.path.join(folder, m.group(1)) if m else where
            if final and any(fnmatch.fnmatch(final, p) for p in patterns):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return fsync(fd)

    hooked.full_disk = True
    return hooked


def write_plugins(folder: Path, names=None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, src in PLUGINS.items():
        if names is None or name.removesuffix(".py") in names:
            (folder / name).write_text(textwrap.dedent(src))
    return folder
