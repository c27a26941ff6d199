"""TabICLv2 (Qu et al., 2026), checkpoint ``tabicl-classifier-v2-20260212.ckpt``: the same protocol as
``tabicl`` (channels flattened into rows, ``TabICLClassifier`` defaults, memory planning); only the
checkpoint differs. See ``baselines/tabicl.py``.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from chorustic.methods import CostModel, MethodInfo, import_plugin_module, register

_tabicl = import_plugin_module("tabicl", __file__)


@register
class TabICLv2Method(_tabicl.TabICLBase):
    info = MethodInfo(
        name="tabicl_v2",
        display_name="TabICLv2",
        group="Generic ICL",
        fits_on_target=False,
        input_kind="native",
        needs_gpu=True,
        description="tabicl TabICLClassifier, checkpoint tabicl-classifier-v2-20260212, channels flattened",
        reference="Qu et al. TabICLv2. 2026",
    )
    checkpoint_file = "tabicl-classifier-v2-20260212.ckpt"
    #: 2.9 KB per (member, row, feature) measured at ``embed_dim`` 128 (baselines/tabicl.py), taken at 6 (3.0 KB).
    cell_tensors: ClassVar[float] = 6.0
    #: TabICL's cost model with 1.7x its time: Crop at 1 % took 143 CPU-s against v1.1's 84 (random weights
    #: of the real architectures, benchmarks/results/archive_scale.md); its own thread scaling
    #: (benchmarks/thread_scaling.py: 1.54x on 2 threads).
    cost: ClassVar[CostModel] = dataclasses.replace(_tabicl.TabICLMethod.cost.scaled_time(1.7), parallel_fraction=0.70)
