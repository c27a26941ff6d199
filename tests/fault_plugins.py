"""Tiny method plugins for the fault tests (a plugin folder is selected with ``CHORUSTIC_BASELINES``).

* ``centroid``: nearest class centroid on the resampled series (milliseconds per context), with a
  ``shrink`` parameter that changes its predictions;
* ``flaky``: the same, but fails every fixed-shot context while the file named by ``$FLAKY_FAIL``
  exists (a transient failure: removing the file "fixes" it without changing the plugin's code);
* ``broken``: a plugin file that does not import.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

PLUGINS = {
    "centroid.py": """
        import numpy as np
        from chorustic.methods import Method, MethodInfo, register

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
            default_params = {"shrink": 0.0}
            def build(self, *, seed, device="cpu", n_jobs=1, shrink=0.0):
                return Centroid(seed, shrink)
    """,
    "flaky.py": """
        import os
        from chorustic.methods import Method, MethodInfo, register
        from chorustic_plugins.centroid import Centroid

        class Flaky(Centroid):
            def fit(self, X, y):
                if len(y) <= 20 and os.path.exists(os.environ.get("FLAKY_FAIL", "/nonexistent")):
                    raise RuntimeError("flaky: the service this method needs is down")
                return super().fit(X, y)

        @register
        class FlakyMethod(Method):
            info = MethodInfo(name="flaky", display_name="Flaky", group="Classical", fits_on_target=True)
            def build(self, *, seed, device="cpu", n_jobs=1):
                return Flaky(seed)
    """,
    "broken.py": "import a_module_that_does_not_exist  # the plugin's dependency is not installed\n",
}


def write_plugins(folder: Path, names=None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, src in PLUGINS.items():
        if names is None or name.removesuffix(".py") in names:
            (folder / name).write_text(textwrap.dedent(src))
    return folder
