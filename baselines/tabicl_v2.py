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
        pretraining_data="synthetic tabular datasets of its prior only (Qu et al. 2026)",
        benchmark_in_pretraining="no",
    )
    checkpoint_file = "tabicl-classifier-v2-20260212.ckpt"
    #: v2 embeds each member's table itself (feature groups, whatever the pass; no reordered copy) and holds nothing
    #: beside the members' tables: its column stage returns with exactly theirs alive (v1.1's too), and its grouped
    #: inputs are 3 float32 per cell against 128 (benchmarks/tabicl_memory.py's held MB). The half table charged
    #: until 2026-11-30 came from resident memory that glibc's heap had kept of freed blocks (876 MB resident after
    #: the stage against 803 MB of embeddings on 300 + 100 rows of 1,024 features, 4 members a pass): with freed
    #: blocks returned (MALLOC_MMAP_THRESHOLD_) v2's peak is v1.1's; benchmarks/results/archive_scale.md.
    reorders: ClassVar[bool] = False
    #: TabICL's form (baselines/tabicl.py), fitted on TabICLv2's own jobs: Crop, ShapesAll, PenDigits, ElectricDevices
    #: and FordA at 1-10 % of their series with random weights of the real architecture (benchmarks/archive_scale.py
    #: --fit; benchmarks/results/archive_scale.md), within 0.72-1.39 of each. The terms the fit keeps, measured on one
    #: context of their own: ~8 us per (context row, row) pair (one context of 1,000 and of 4,000 context rows with 200
    #: queries of 8 features took 34 and 212 CPU-s; benchmarks/tabicl_memory.py), its work per feature whatever the
    #: rows, 3.5x v1.1's (one context of 7 + 7 rows of 2,048, 4,096 and 8,192 features took 246, 572 and 1,440
    #: CPU-s), and its row interaction's attention over every feature of a row, v1.1's (the same three blocks of 128
    #: dimensions: 65-75 ns per member, row and feature pair on one row of 16,384-65,536 features, 5-15 % more than
    #: v1.1's 60-67 and still 0.80-0.92 of the term; `--row-stage`), which decides the widest tables
    #: (DuckDuckGeese's 363,150 flattened features). Over 10 classes v2 also embeds the columns once per digit of
    #: a class's mixed-radix code (target-aware column embedding), which its fitted class-tree term absorbs. Its
    #: memory is v1.1's model; its own thread scaling (benchmarks/thread_scaling.py: 1.54x on 2 threads).
    cost: ClassVar[CostModel] = dataclasses.replace(
        _tabicl.TabICLMethod.cost, parallel_fraction=0.70, time_job_s=3.59, time_ns_per_value=671_000,
        time_ns_per_series=17_500_000, time_ns_per_series_pair=8_000, time_ns_per_tree_query=62_700_000,
        time_ns_per_feature=_tabicl.TabICLMethod.cost.time_ns_per_feature * 3.5)
