"""The classical state of the art as published: the bake-off redux reference results of HIVE-COTE 2,
MultiRocket-Hydra, QUANT, MiniRocket and 1NN-DTW ("reported, not reproduced", marked with a dagger), resample
0 of each dataset (the archive's train/test split, the one the full-context protocol evaluates), from aeon's
results loaders (chorustic/data/published.py: downloaded once into ``data/raw/published/`` with its source
URL and date, or read from a copy put there by hand).

Each is named ``published_<plugin>`` after the plugin of this harness that re-runs it (HIVE-COTE 2 has none:
``published_hc2``); the report's table "harness re-run vs published" compares the two per dataset. The
bake-off redux covers the UCR archive (112 of its 128 datasets: the equal-length ones); a method's jobs are the
datasets its file has.
"""

from __future__ import annotations

from chorustic.data.published import PUBLISHED_ESTIMATORS
from chorustic.methods import register
from chorustic.methods.reported import published_method

BAKE_OFF = ("Middlehurst, Schäfer, Bagnall. Bake off redux: a review and experimental evaluation of recent time "
            "series classification algorithms. DMKD 2024 (reference results of aeon's results loaders)")

for _estimator, (_display, _plugin) in PUBLISHED_ESTIMATORS.items():
    register(published_method(name=f"published_{_plugin or _estimator.lower()}", display_name=f"{_display} (bake-off)",
                              estimator=_estimator, reference=BAKE_OFF))

del _estimator, _display, _plugin
