"""How one evaluate job's peak memory and time grow with its dataset: a plugin's cost declaration.

A plugin sets ``cost = CostModel(...)`` (:class:`chorustic.methods.base.Method`); the workflow turns the
estimate for each job's :class:`JobSize` into the job's Snakemake resources (:mod:`chorustic.resources`,
which adds the safety margins and the site's limits). What every job needs beside its method
(:data:`JOB_OVERHEAD_MB`) and the least memory a job can be given (:data:`MIN_JOB_MEM_MB`) are here too.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os

from chorustic.class_tree import class_tree_passes
from chorustic.errors import known_keywords

__all__ = [
    "CHECKPOINT_MIN_QUERIES", "CHECKPOINT_S", "CostModel", "EMBEDDING_MEMO_MB", "JobSize", "PAIR_MEMO_MB", "QUERY_MEMORY_MB",
    "PAIR_BLOCK_S", "SERIES_CACHE_BYTES", "JOB_OVERHEAD_MB",
    "MIN_WORKER_MB", "TORCH_CUDA_BUILD_MB", "installed_torch_version", "torch_build", "torch_build_of",
    "MIN_JOB_MEM_MB", "job_memory_problem",
]

#: Resident memory of what runs beside the evaluation worker in one job: the Snakemake job process
#: (which parses the workflow; ~250 MB measured) and the supervising script (~100 MB), with room to spare.
JOB_OVERHEAD_MB = 600
#: The least resident memory the method's worker needs at all: Python, numpy, the harness and a small
#: dataset (a nearest-centroid method on GunPoint peaks at ~160 MB; with torch imported, ~300 MB).
MIN_WORKER_MB = 300
#: The least memory an evaluation job can be given (``methods.<run>.resources.mem_mb``, ``--mem-mb``):
#: what runs beside the worker plus the worker's own minimum.
MIN_JOB_MEM_MB = JOB_OVERHEAD_MB + MIN_WORKER_MB


#: What the CUDA build of torch holds resident beyond its CPU build in a job, before any GPU is touched (its
#: CUDA libraries' code and data): ``pip install torch`` installs the CUDA build on Linux, the CPU build comes
#: from PyTorch's CPU index. The cost models' coefficients are fitted on the CPU build; :meth:`CostModel.estimate`
#: adds this for a method that loads torch (:attr:`CostModel.loads_torch`) where the jobs run the CUDA build
#: (:func:`torch_build`). The largest of the differences measured on the tiny jobs (ShapesAll's stand-in at
#: 1 %) of eight methods that load torch, 279-378 MB (benchmarks/results/archive_scale.md, "torch's build");
#: loading torch alone: 284 MB.
TORCH_CUDA_BUILD_MB = 380.0


def torch_build() -> str:
    """The torch build the jobs are costed for: ``$CHORUSTIC_TORCH_BUILD`` (``cpu`` or ``cuda``) where set (a
    workflow whose jobs run in the methods' conda environments, which install the PyPI wheel, while this
    environment has another build), else the installed one: ``"cpu"`` for a ``+cpu`` version (PyPI's CPU
    index), ``"cuda"`` otherwise: the PyPI wheel for Linux, and where no torch is installed here."""
    env = os.environ.get("CHORUSTIC_TORCH_BUILD")
    if env:
        if env not in ("cpu", "cuda"):
            raise ValueError(f"CHORUSTIC_TORCH_BUILD={env!r}: expected 'cpu' or 'cuda' (the torch build the "
                             "evaluation jobs run with), or unset it to cost the installed one")
        return env
    return _installed_torch_build()


def torch_build_of(version: str | None) -> str:
    """The build a torch ``version`` string names: ``"cpu"`` for a ``+cpu`` version (PyPI's CPU index), else
    ``"cuda"`` (the PyPI wheel for Linux; and no torch at all)."""
    return "cpu" if version and version.endswith("+cpu") else "cuda"


def installed_torch_version() -> str | None:
    """The installed torch's version (from its metadata, without loading it), or None."""
    import importlib.metadata

    try:
        return importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        return None


@functools.cache
def _installed_torch_build() -> str:
    return torch_build_of(installed_torch_version())


def job_memory_problem(mem_mb: float, where: str) -> str | None:
    """None when an evaluation job of ``mem_mb`` can run at all, else the message naming ``where`` and the minimum."""
    if mem_mb >= MIN_JOB_MEM_MB:
        return None
    return (f"{where}: {mem_mb:g} MB is less than an evaluation job needs to run at all: at least {MIN_JOB_MEM_MB} MB "
            f"({JOB_OVERHEAD_MB} MB for Snakemake's job process and the supervisor, {MIN_WORKER_MB} MB for the "
            f"method's worker); set it to {MIN_JOB_MEM_MB} or more")


#: What the predictions of one context may hold at once beyond the context's own needs (MB): the harness
#: predicts the test split in chunks of :meth:`CostModel.query_chunk` queries, so that no method holds
#: (test x context) distances or (test x features) matrices of a whole large test split. A constant, not a
#: setting: the chunks depend on the dataset's shape and the method only, so a run's predictions do not
#: depend on the machine's memory.
QUERY_MEMORY_MB = 1024.0
#: The longest (s, by the cost model) a context's prediction runs between two checkpoints: the harness keeps
#: the probabilities of each chunk of queries on disk as it goes (``chorustic.evaluation.checkpoints``), and a
#: method whose queries cost the same whatever their chunk (:attr:`CostModel.context_per_call` False) has its
#: longer predictions cut into chunks of at most this long (but :data:`CHECKPOINT_MIN_QUERIES`), so a job
#: stopped by a signal or a time limit loses at most that much of a context's prediction (1NN-DTW's full
#: context of StarLightCurves: 9.6 hours by the model, 58 chunks of 142 queries). A constant, like the query
#: chunks: the chunks depend on the dataset's shape and the method only.
CHECKPOINT_S = 600.0
#: The fewest queries a chunk cut for time holds: a job's threads share out a chunk's queries (aeon's DTW runs
#: one query per thread at a time), so a chunk of fewer would leave threads idle (1NN-DTW's full context of
#: MotorImagery, 5.6 hours by the model for 100 queries: 7 chunks of 16, not 34 of 3).
CHECKPOINT_MIN_QUERIES = 16
#: About how long (s) the job's pair memo computes distances before it keeps them and the job may write its
#: memo file (:attr:`chorustic.methods.pair_memo.PairMemo.after_block`): a chunk's unknown pairs are computed
#: in blocks of queries, the first as many as the job's threads, the next sized by the time per query measured
#: so far, so a job stopped in the middle of a chunk (1NN-DTW's 16 queries of MotorImagery: an hour on one
#: thread) computes again only the block it was in. The same distances: a pair's does not depend on the other
#: series of the call that computed it.
PAIR_BLOCK_S = 60.0
#: The most memory (MB) one job keeps its (query, context series) distances in across its contexts
#: (:class:`chorustic.methods.pair_memo.PairMemo`, 8 bytes per pair): the test split's pairs with every
#: training series of ElectricDevices (7,711 x 8,926) or Crop (16,800 x 7,200) fit; InsectWingbeat's
#: (20,000 x 30,000, 4.8 GB) do not, and its contexts compute their own. A constant, like the query chunks.
PAIR_MEMO_MB = 2048.0
#: The most memory (MB) one job keeps its frozen embeddings in across its contexts
#: (:class:`chorustic.methods.embedding_memo.EmbeddingMemo`, one float32 vector per series and channel): the test
#: split and every training series of FaceDetection (9,414 series x 144 channels) fit at MOMENT's 768 dimensions
#: (4.3 GB; a job that embedded them per context would take 8x as long) and at Mantis-8M's 256 (1.6 GB);
#: InsectWingbeat's (50,000 x 200 channels, 11.9 GB at 256) do not, and its contexts embed their own. A constant,
#: like the pair memo's; a job asks for the memory of what its memo keeps, not for the bound.
EMBEDDING_MEMO_MB = 8192.0
#: One series (all its channels, float64) above this size no longer stays in a core's own cache (1 MiB: the L2
#: of this machine's EPYC cores; 1-2 MiB on current Xeons) while an elastic distance sweeps it once per
#: alignment cell: its pointwise distances cost about twice as much per channel (1NN-DTW on the full stand-ins
#: of PEMS-SF, 1.1 MB per series, and DuckDuckGeese, 2.9 MB: 1.2 ns per cell and channel against 0.57).
SERIES_CACHE_BYTES = 2**20


@dataclasses.dataclass(frozen=True)
class JobSize:
    """The size of one job's input, as the method sees it."""

    n_train: int
    n_test: int
    n_channels: int
    length: int
    """The series length the method receives: 512 for ``resampled`` methods, the native (maximum) length otherwise.
    A variable-length dataset is costed at its maximum length (the registry records only that): an upper bound
    for a method that compares series at their own lengths (1NN-DTW), exact for one that pads them. A running job
    gives its costing hooks and ``Method.job_params`` the longest series of its test split and of its contexts
    (a context resampled to its own longest, as TabICL's, can be longer than the test split's): at most the
    registry's maximum."""
    n_contexts: int = 1
    """Protocol contexts the job evaluates (each is one fit on at most ``n_train`` series and one
    prediction of the ``n_test`` series)."""
    context_train: tuple[int, ...] = ()
    """The training series of each context (``expected_train_size``: a 5-shot context of 3 classes
    holds 15); empty: every one of the ``n_contexts`` contexts fits on all ``n_train``."""
    n_classes: int = 2
    """The dataset's classes (a context of ``k`` series holds at most ``k`` of them)."""
    mean_length: float | None = None
    """The mean native length of a variable-length dataset where it is known (a stand-in draws its lengths),
    for a method that compares series at their own lengths (``Method.cost_band``); None: ``length``."""

    def __post_init__(self):
        if self.context_train and len(self.context_train) != self.n_contexts:
            object.__setattr__(self, "n_contexts", len(self.context_train))

    def contexts(self) -> list["JobSize"]:
        """One size per context: its own training series, the same test split."""
        train = self.context_train or (self.n_train,) * self.n_contexts
        return [dataclasses.replace(self, n_train=min(int(k), self.n_train), n_contexts=1, context_train=())
                for k in train]

    @property
    def n_series(self) -> int:
        return self.n_train + self.n_test

    @property
    def n_train_used(self) -> int:
        """The training series the contexts use between them, each counted once: at most ``n_train`` (what a job's
        memo keeps of the training split)."""
        return min(self.n_train, sum(c.n_train for c in self.contexts()))

    @property
    def n_values(self) -> int:
        """Input values: every series of both splits, every channel, every time point."""
        return self.n_series * self.n_channels * self.length


@known_keywords
@dataclasses.dataclass(frozen=True)
class CostModel:
    """Peak memory and running time of one evaluate job as a function of its :class:`JobSize`.

    With ``N = n_train + n_test`` series, ``V = N * n_channels * length`` input values and
    ``P = n_train * N * n_channels`` (context series x all series, per channel: a Gram matrix, a
    ridge/SVM fit, in-context attention)::

        peak memory (MB) = mem_base_mb + (mem_bytes_per_value * V + mem_bytes_per_model_value * V'
                           + mem_bytes_per_row_point * min(R * length, model_row_points)) / 2**20
                           + mem_kb_per_series * H / 1024 + mem_bytes_per_pair * n_train * H / 2**20
                           + mem_bytes_per_query_pair * n_train * q / 2**20
                           + mem_bytes_per_memo_pair * n_test * n_memo / 2**20
                           + mem_bytes_per_memo_embedding * E / 2**20 + mem_kb_per_query * q / 1024
        time (s)         = time_job_s + time_ns_per_input_value * V / 1e9
                           + sum over contexts of (time_base_s + (time_ns_per_value * V
                           + time_ns_per_channel_value * V_all + time_ns_per_series * N + time_ns_per_pair * P
                           + (time_ns_per_cell * n_channels + time_ns_per_path_cell) * n_train * n_test * length * band
                           + time_ns_per_series_pair * n_train * N
                           + time_ns_per_column * n_channels * length * log2(n_train)
                           + time_ns_per_column_class * n_channels * length * (classes - 1)
                           + time_ns_per_column_series * n_channels * length * n_train * (1 - 1 / classes)
                             * log2(n_train)
                           + time_ns_per_dilated_value * V * max(1, log2(length / 8))
                           + time_ns_per_cell_spilled * n_channels * n_train * n_test * length * band
                             [a series above SERIES_CACHE_BYTES only]
                           + time_ns_per_multichannel_cell * n_train * n_test * length * band
                             [n_channels > 1 only]
                           + time_ns_per_tree_query * (passes(classes) - 1) * n_test
                             [tree_max_classes set only]
                           + time_ns_per_feature_pair * N * (n_channels * length)**2
                           + time_ns_per_feature * n_channels * length
                           + (time_ns_per_member_series * N + time_ns_per_member_pair * n_train * N) * members)
                           / 1e9)

    ``members`` is the in-context ensemble members whose in-context stage runs apart (:meth:`members`): the
    distinct label shifts, ``min(ensemble_shifts, classes)``, times the distinct channel draws,
    ``ensemble_draws`` for a series of two channels or more and one for a univariate series.

    With :attr:`context_per_call`, a context whose queries take ``k`` calls (:meth:`query_chunk`) runs its
    ``n_train`` series ``k`` times: ``N`` (and so ``V``) counts ``k * n_train + n_test`` series in the terms of
    the values, the series, the series pairs and the members.

    With :attr:`memo_embeddings`, where the job's memo holds its embeddings (:meth:`memo_series`), the values
    (``time_ns_per_value``) are not summed over the contexts: each series of the test split and of the training
    series the contexts use is embedded once per job, and the memory holds ``mem_bytes_per_memo_embedding``
    per such series and channel (``E``; at most :data:`EMBEDDING_MEMO_MB`).

    With :attr:`memo_pairs`, where the job's memo holds its pairs (:meth:`memo_train`), the pair terms (the
    cells, path cells, spilled cells, multichannel cells and series pairs) are not summed over the contexts:
    they are paid once, for one context of every training series the contexts use (reading a pair back costs
    too little to measure: 0.1-9 CPU-s for the 15 later contexts of a full job), and the memory holds
    ``mem_bytes_per_memo_pair * n_test * that many`` more.

    In the time, ``V`` within a context counts at most :attr:`model_channels` channels (or their
    :attr:`channel_encodings`) and ``V_all`` every channel of the input (both at :attr:`model_length`).
    ``V'`` counts the values the method computes on at once: of the ``R`` series held at once (the ``H``
    below, at most :attr:`model_rows`), at most :attr:`model_channels` channels (or their
    :attr:`channel_encodings`).
    ``H = n_train + q`` is the series held at once: the context and one chunk of ``q`` queries
    (:meth:`query_chunk`: as many as fit :data:`QUERY_MEMORY_MB` at ``mem_kb_per_series`` +
    ``mem_bytes_per_pair * n_train`` + ``mem_bytes_per_query_pair * n_train`` each, + ``mem_bytes_per_row_point
    * length`` where ``R`` is not capped;
    all of them when that is 0 or they fit). A method that computes on its queries in chunks of its own
    (:attr:`query_rows`) holds ``H = n_train + min(q, query_rows)`` series, and each of the call's ``q``
    queries holds ``mem_kb_per_query`` (0 without ``query_rows``): its chunk is as many queries as fit
    :data:`QUERY_MEMORY_MB` at ``mem_kb_per_query`` + ``mem_bytes_per_query_pair * n_train`` (the copies
    of their input are in ``V``, whatever the chunk).
    ``classes = min(n_classes, n_train)`` are the context's classes.
    ``band`` is the number of alignment cells per time point of an elastic distance (the whole length
    for unconstrained DTW; see :meth:`estimate`). In the time, ``n_train`` (and so ``N``, ``V``, ``P``) is
    each context's own training size (:attr:`JobSize.context_train`: a 5-shot context fits on 5 series
    per class), and ``n_channels`` is at most :attr:`model_channels` (or what :attr:`channel_encodings` says a
    series of that many channels costs); the memory is the largest
    context's. Times are CPU seconds of one thread; more threads (:meth:`thread_speedup`) or a GPU only make a
    job faster.
    Coefficients are fitted by ``benchmarks/archive_scale.py --fit`` on jobs measured on stand-ins of the
    archives' largest shapes (``benchmarks/results/archive_scale.csv``); a job adds
    :data:`chorustic.resources.MEM_SAFETY` / :data:`~chorustic.resources.TIME_SAFETY` on top.
    """

    mem_base_mb: float = 700.0
    """The worker with its imports (torch's CPU build for a method that loads it) and model weights, before any data."""
    mem_bytes_per_value: float = 16.0
    """Per input value: the data itself (float32) and the method's working copies."""
    mem_bytes_per_model_value: float = 0.0
    """Per value the method computes on at once (the series held, at most :attr:`model_rows` of them, at
    most :attr:`model_channels` channels): an encoder's per-channel state."""
    mem_bytes_per_row_point: float = 0.0
    """Per time point of each series the method computes on at once (at most :attr:`model_rows`; None: every
    series held, the context and a chunk of queries), whatever the channels: a convolution stack's outputs,
    which have a kernel axis instead of the channel axis (Hydra's 512 kernels per dilation, on its batch of
    256 series)."""
    mem_kb_per_series: float = 0.0
    """Per series held at once (the context and a chunk of queries): features or embeddings."""
    mem_bytes_per_pair: float = 0.0
    """Per (context series, series held) pair: Gram, distance or attention matrices."""
    mem_bytes_per_query_pair: float = 0.0
    """Per (query of a chunk, context series) pair only: the distances of a chunk of queries to the context
    and their sort (a nearest-neighbour search), with no (context x context) matrix."""
    mem_kb_per_query: float = 0.0
    """Per query of a prediction call, for a method that computes on its queries in chunks of its own
    (:attr:`query_rows`): what it keeps of every query until the call returns (ChorusTIC: its signal
    representations and its members' logits), beyond the copies of the input the values' term counts."""
    time_job_s: float = 10.0
    """Once per job: imports, JIT compilation, loading weights."""
    time_ns_per_input_value: float = 20.0
    """Once per job and input value of every channel: the harness reading its arrays from the preprocessed cache
    and checking them (the same for every method, which the fits of ``benchmarks/archive_scale.py`` keep
    fixed): 2-33 ns per value on stand-ins of the largest shapes (``benchmarks/job_reading.py``)."""
    time_base_s: float = 1.0
    """Per context: fit and predict overhead independent of the data size."""
    time_ns_per_value: float = 500.0
    """Per context and input value (transforms, encoders)."""
    time_ns_per_series: float = 0.0
    """Per context and series (context and queries), whatever its channels and length: the per-row layers
    of an in-context model (channel mixing, row interaction) on a fixed number of slots."""
    time_ns_per_pair: float = 0.0
    """Per context and (context series, series, channel): ridge/SVM fits, attention over the context."""
    time_ns_per_cell: float = 0.0
    """Per context, alignment cell of a pairwise elastic distance and channel: the pointwise distances."""
    time_ns_per_dilated_value: float = 0.0
    """Per context, input value and dyadic dilation of the length (``log2(length / 8)``, at least 1): a stack
    of dilated convolutions with a dilation per power of two (Hydra's), whose work per value grows with the
    length where ROCKET's fixed number of features does not."""
    time_ns_per_path_cell: float = 0.0
    """Per context and alignment cell, whatever the channels: the warping path's dynamic programme (one
    cell per pair of time points; what dominates a univariate distance)."""
    time_ns_per_cell_spilled: float = 0.0
    """Per context, alignment cell and channel of series larger than :data:`SERIES_CACHE_BYTES`, on top of
    :attr:`time_ns_per_cell`: the pointwise distances read such a series from the shared cache, not the
    core's own."""
    time_ns_per_column: float = 0.0
    """Per context, column (channel x time point) and level of trees grown on the context (log2 of its
    series): a forest's split search over feature columns that grow with the series (QUANT's)."""
    time_ns_per_column_class: float = 0.0
    """Per context, column (channel x time point) and class of the context beyond the first: a forest whose
    trees split until their leaves are pure needs at least one split per extra class, each searching a
    fraction of every column's features (QUANT's extra trees on few series of many classes)."""
    time_ns_per_column_series: float = 0.0
    """Per context, column and ``n_train * (1 - 1 / classes) * log2(n_train)``: the splits a forest grown to
    pure leaves makes on series that do not separate (about ``n_train * (1 - 1 / classes)``), each level of
    the trees visiting every series."""
    time_ns_per_series_pair: float = 0.0
    """Per context and (context series, series), whatever the channels: a nearest-neighbour search's
    per-pair work, a ridge fit on a fixed number of features (the Gram matrix of the context)."""
    time_ns_per_multichannel_cell: float = 0.0
    """Per context and alignment cell of multivariate series (two channels or more), whatever their number: the
    loop over the channels of a pointwise distance, which a univariate distance does not run (aeon's DTW with a
    series' channels side by side, under the pinned haswell code of portable numerics: ~0.3-1 ns per cell from
    one channel to two, then ~0.12 ns per channel; ~20 ns more with the channels strided;
    ``benchmarks/dtw_cells.py``, ``benchmarks/results/archive_scale.md``)."""
    time_ns_per_tree_query: float = 0.0
    """Per context, query and pass of the class tree beyond the first (:attr:`tree_max_classes`): an
    in-context learner that decodes at most ``tree_max_classes`` classes runs its in-context stage once per
    node of a balanced tree over more (:func:`chorustic.class_tree.class_tree_passes`: 7 passes for 60
    classes at 10), every query in each; the row encoders run once."""
    time_ns_per_feature_pair: float = 0.0
    """Per context, series (context and queries) and pair of its flattened features (``(n_channels x length)``
    squared): attention across the features of a row (TabICL's row interaction attends over every feature of a
    flattened series, 7,000 times the work of 1,024 features at PEMS-SF's 138,672)."""
    time_ns_per_feature: float = 0.0
    """Per context and flattened feature (``n_channels x length``), whatever the series: work per column of a
    table (TabICL's per-column preprocessing and the column embedding's inducing points), which a context of
    few rows and many features is made of."""
    time_ns_per_member_series: float = 0.0
    """Per context, series (context and queries) and in-context ensemble member (:meth:`members`): the work of
    an in-context stage on each row that runs once per member (ChorusTIC's row interaction per channel draw,
    its ICL transformer's per-row layers per draw and label shift)."""
    time_ns_per_member_pair: float = 0.0
    """Per context, (context series, series) and in-context ensemble member: the in-context attention of every
    row to the context rows, once per member (ChorusTIC's ICL: ~7,500 context rows of PenDigits, 8 label shifts
    and 4 channel draws)."""
    time_ns_per_channel_value: float = 0.0
    """Per context and input value of every channel, whatever :attr:`model_channels`: what a method that computes
    on a few channels at a time does first on all of them (MiniRocket's and MultiRocket's per-dilation sums over
    every channel before a kernel adds its own few: ~140 and ~250 ns per value; on DuckDuckGeese's 1,345 channels
    a model without it was 3.7x short)."""
    tree_max_classes: int | None = None
    """The most classes one in-context pass decodes (ChorusTIC's ``K_max``); None: no class tree."""
    memo_pairs: bool = False
    """The method keeps each (query, context series) distance across the job's contexts
    (:class:`chorustic.methods.pair_memo.PairMemo`) and computes a pair once per job, where the test split's
    pairs with the training series of every context fit :data:`PAIR_MEMO_MB` (:meth:`memo_train`)."""
    mem_bytes_per_memo_pair: float = 0.0
    """Per pair the memo keeps (:attr:`memo_pairs`): a float64 distance."""
    memo_embeddings: bool = False
    """The method keeps each series' embedding (every channel's) across the job's contexts
    (:class:`chorustic.methods.embedding_memo.EmbeddingMemo`) and embeds a series once per job, where the
    embeddings of the test split and of the training series the contexts use fit :data:`EMBEDDING_MEMO_MB`
    (:meth:`memo_series`)."""
    mem_bytes_per_memo_embedding: float = 0.0
    """Per (series, channel) the embedding memo keeps (:attr:`memo_embeddings`): the float32 vector and its
    entry (:data:`chorustic.methods.embedding_memo.ENTRY_OVERHEAD_BYTES`); the memo holds at most
    :data:`EMBEDDING_MEMO_MB`."""
    context_per_call: bool = False
    """Every prediction call runs the whole context again (an in-context learner: the context is part of each
    call's input), so a chunk of queries costs a pass over the context too, and the harness predicts in no
    more chunks than :data:`QUERY_MEMORY_MB` asks for (:meth:`checkpoint_chunk`). False: the fit did the
    context's work (features, a memo of distances) and a chunk costs its own queries only."""
    loads_torch: bool = True
    """The method computes with torch, so its worker loads it: the job's peak holds torch's libraries, more of
    them with the CUDA build (:data:`TORCH_CUDA_BUILD_MB`), and ``device: auto`` asks torch for a GPU. False
    (1NN-DTW; aeon loads torch for the other classical methods where it is installed): the harness never loads
    torch for its jobs, and ``auto`` is the CPU."""
    gpu_speedup: float | None = None
    """How many times faster one GPU runs a job's per-context work than one CPU thread (``time_job_s`` is
    not sped up). An estimate until measured on a GPU; ``chorustic plan-run`` prints it with the GPU
    hours. None: the method gains nothing from a GPU (its GPU jobs are billed at the CPU time)."""
    gpu_speedup_feature_pairs: float | None = None
    """How many times faster one GPU runs the feature-pair term (``time_ns_per_feature_pair``) than one CPU
    thread: attention in half precision on a GPU's matrix units gains far more than the rest of a model's
    work. An estimate until measured on a GPU. None: ``gpu_speedup``."""
    parallel_fraction: float | None = None
    """The share of a job's per-context work that runs on all of its threads (Amdahl's law: ``n`` threads
    run it ``1 / ((1 - p) + p / n)`` times faster than one; :meth:`thread_speedup`), measured by
    ``benchmarks/thread_scaling.py`` (one thread against two, on free cores). None: not measured, taken as 1
    (every thread fully used), an optimistic wall time."""
    model_channels: int | None = None
    """The most channels the method computes on per series (the time's terms use ``min(n_channels,
    model_channels)``; the memory's hold the whole input): a ROCKET kernel reads a few random channels
    whatever their number, ChorusTIC's RSSC draws ``G * S`` channels per draw. None: every channel."""
    channel_encodings: tuple[float, ...] | None = None
    """What a series of ``c`` channels costs, in channels (entry ``c - 1``; the last entry for more): in the time's
    terms and in the values the method computes on at once (``V'``), where the channels a method encodes are not
    ``min(c, model_channels)`` (ChorusTIC's signal level encodes each distinct channel of each group of each RSSC
    draw: 1 for 1 channel, 2 for 2, ~44 for 6, 64 from ~16 on). The input's values are held as they are. None:
    :attr:`model_channels`."""
    ensemble_shifts: int | None = None
    """Label-shift members of an in-context ensemble whose in-context stage runs once per distinct shift (at
    most the context's classes; :meth:`members`). None: one."""
    ensemble_draws: int | None = None
    """Channel-draw members of an in-context ensemble whose in-context stage runs once per draw of a
    multivariate series (a univariate series has one distinct draw; :meth:`members`). None: one."""
    model_rows: int | None = None
    """The most series an encoder processes at once (ChorusTIC's signal-level chunk of 128 rows): caps
    the series of ``mem_bytes_per_model_value``. None: every series held."""
    query_rows: int | None = None
    """The most queries the method computes on at once, whatever the size of a prediction call: its own chunks
    (ChorusTIC's task level embeds and interacts 512 rows at a time and its ICL attends from 512 queries at a
    time). The per-series and pair terms of the memory count at most this many of a call's queries, and every
    query of the call holds :attr:`mem_kb_per_query` until the call returns, which is what the harness's
    :meth:`query_chunk` fits to :data:`QUERY_MEMORY_MB` (the copies of the input the call makes are in the
    values' term, whatever the chunk). None: the method computes on every query of a call at once."""
    model_row_points: int | None = None
    """The most time points (series x length) the method computes on at once: caps the ``R * length`` of
    ``mem_bytes_per_row_point`` (a convolution over batches of fewer series when they are long). None: no
    cap beyond :attr:`model_rows`."""
    model_length: int | None = None
    """The length the method computes on whatever the input's (an encoder that resamples or pads every
    series to 512): replaces the job's ``length``."""

    def thread_speedup(self, threads: int) -> float:
        """How many times faster ``threads`` threads run the per-context work than one (Amdahl's law with
        :attr:`parallel_fraction`; ``threads`` where it is not measured)."""
        n = max(1, int(threads))
        p = 1.0 if self.parallel_fraction is None else min(1.0, max(0.0, float(self.parallel_fraction)))
        return 1.0 / ((1.0 - p) + p / n)

    def scaled_time(self, factor: float) -> "CostModel":
        """This model with every time coefficient times ``factor`` (a variant that runs the same work slower)."""
        return dataclasses.replace(self, **{k: getattr(self, k) * factor for k in self.TIME_COEFFICIENTS
                                            if k != "time_ns_per_input_value"})

    def query_chunk(self, size: JobSize) -> int:
        """How many queries the harness predicts at once for a context of ``size.n_train`` series: as many
        as fit :data:`QUERY_MEMORY_MB` at this model's per-query memory (at least 1; all when they fit): its
        features or embeddings, its pairs with the context, and, where the method computes on every series
        of a call at once (:attr:`model_rows` None), its per-time-point working memory. A method that
        computes on its queries in chunks of its own (:attr:`query_rows`) holds per query of the call only
        what it keeps until the call returns (:attr:`mem_kb_per_query`); the copies of the input it makes are
        the values' term (:attr:`mem_bytes_per_value`, fitted on calls of whole test splits), which counts
        every value of the dataset whatever the chunk."""
        if self.query_rows is not None:  # the method chunks its own work: a query holds its result until the end
            per_query = self.mem_kb_per_query * 1024 + self.mem_bytes_per_query_pair * size.n_train
        else:
            per_query = (self.mem_kb_per_series * 1024
                         + (self.mem_bytes_per_pair + self.mem_bytes_per_query_pair) * size.n_train)
        if self.model_rows is None:  # the method computes on every query of the chunk at once
            per_query += self.mem_bytes_per_row_point * self._effective(size, channels=False).length
        if per_query <= 0:
            return max(1, size.n_test)
        return max(1, min(size.n_test, int(QUERY_MEMORY_MB * 2**20 / per_query + 1e-9)))

    def context_seconds(self, size: JobSize, *, band: float | None = None) -> float:
        """The per-context time of ``size`` on one thread (s): every time term but the job's start and its
        reading of the data, fit included (``band`` as in :meth:`estimate`)."""
        terms = self.time_terms(size, band=band)
        return float(sum(getattr(self, k) * t for k, t in zip(self.TIME_COEFFICIENTS[2:], terms[2:])))

    def checkpoint_chunk(self, size: JobSize, *, band: float | None = None) -> int:
        """How many queries the harness predicts between two checkpoints in a context of ``size`` (one
        context): the :meth:`query_chunk`, cut so that each chunk takes at most :data:`CHECKPOINT_S` by this
        model (its per-context time, fit included, ``band`` as in :meth:`estimate`) but holds at least
        :data:`CHECKPOINT_MIN_QUERIES`, unless the method runs its context again in every call
        (:attr:`context_per_call`)."""
        chunk = self.query_chunk(size)
        if self.context_per_call or size.n_test <= 1:
            return chunk
        seconds = self.context_seconds(dataclasses.replace(size, n_contexts=1, context_train=()), band=band)
        pieces = max(1, math.ceil(seconds / CHECKPOINT_S - 1e-9))
        return max(1, min(chunk, max(CHECKPOINT_MIN_QUERIES, math.ceil(size.n_test / pieces))))

    #: The time coefficients (ns or s), in the order of :meth:`time_terms`.
    TIME_COEFFICIENTS = ("time_job_s", "time_ns_per_input_value", "time_base_s", "time_ns_per_value",
                         "time_ns_per_series", "time_ns_per_pair", "time_ns_per_cell", "time_ns_per_series_pair",
                         "time_ns_per_column", "time_ns_per_path_cell", "time_ns_per_dilated_value",
                         "time_ns_per_column_class", "time_ns_per_column_series", "time_ns_per_cell_spilled",
                         "time_ns_per_multichannel_cell", "time_ns_per_tree_query", "time_ns_per_feature_pair",
                         "time_ns_per_feature", "time_ns_per_member_series", "time_ns_per_member_pair",
                         "time_ns_per_channel_value")
    #: The memory coefficients, in the order of :meth:`memory_terms`.
    MEMORY_COEFFICIENTS = ("mem_base_mb", "mem_bytes_per_value", "mem_kb_per_series", "mem_bytes_per_pair",
                           "mem_bytes_per_model_value", "mem_bytes_per_row_point", "mem_bytes_per_query_pair",
                           "mem_bytes_per_memo_pair", "mem_bytes_per_memo_embedding", "mem_kb_per_query")

    def memo_train(self, size: JobSize) -> int:
        """The training series whose pairs with the test split the job's memo keeps: every series its contexts
        use (at most ``n_train``) where those pairs fit :data:`PAIR_MEMO_MB`; 0 without a memo."""
        if not self.memo_pairs:
            return 0
        used = size.n_train_used
        return used if 8 * used * size.n_test <= PAIR_MEMO_MB * 2**20 else 0

    def memo_series(self, size: JobSize) -> int:
        """The series whose embeddings the job's memo keeps, each embedded once per job: the test split and every
        training series its contexts use (at most ``n_train``), where their embeddings of every channel fit
        :data:`EMBEDDING_MEMO_MB`; 0 without an embedding memo or where they do not fit (every context then
        embeds its own series and the test split, an upper bound: the memo keeps what fits)."""
        if not self.memo_embeddings:
            return 0
        used = size.n_train_used + size.n_test
        held = used * size.n_channels * self.mem_bytes_per_memo_embedding
        return used if held <= EMBEDDING_MEMO_MB * 2**20 else 0

    def _effective(self, size: JobSize, *, channels: bool = True, encodings: bool = False) -> JobSize:
        """``size`` as the method computes on it: :attr:`model_length`, at most :attr:`model_channels`
        (``channels``: not for the input, which is held whole), or with ``encodings`` what
        :attr:`channel_encodings` says its channels cost."""
        if self.model_length is not None:
            size = dataclasses.replace(size, length=self.model_length)
        if channels and encodings and self.channel_encodings:
            table = self.channel_encodings
            size = dataclasses.replace(size, n_channels=table[min(size.n_channels, len(table)) - 1])
        elif channels and self.model_channels is not None:
            size = dataclasses.replace(size, n_channels=min(size.n_channels, self.model_channels))
        return size

    def members(self, size: JobSize) -> int:
        """The in-context ensemble members whose in-context stage runs apart on a context of ``size``: its distinct
        label shifts (at most its classes) times its distinct channel draws (one for a univariate series)."""
        classes = max(1, min(size.n_classes, size.n_train))
        shifts = min(self.ensemble_shifts or 1, classes)
        draws = (self.ensemble_draws or 1) if size.n_channels > 1 else 1
        return shifts * draws

    def context_calls(self, size: JobSize) -> int:
        """The prediction calls a context of ``size`` takes (:attr:`context_per_call`: each runs the context
        again, :meth:`query_chunk`); 1 where the fit did the context's work."""
        if not self.context_per_call or size.n_test <= 1:
            return 1
        return max(1, math.ceil(size.n_test / self.query_chunk(size)))

    def time_terms(self, size: JobSize, *, band: float | None = None) -> tuple[float, ...]:
        """What multiplies each of :data:`TIME_COEFFICIENTS` in the job's time (seconds = their dot
        product): summed over the job's contexts, each at its own training size. What
        ``benchmarks/archive_scale.py --fit`` fits the coefficients on."""
        out = [1.0, size.n_values / 1e9] + [0.0] * (len(self.TIME_COEFFICIENTS) - 2)
        original, size = size, self._effective(size, encodings=True)
        b = float(size.length if band is None else band)

        def pairs(c: JobSize, calls: int = 1) -> None:  # the terms of a context's pairs: what a memo pays once per job
            out[6] += c.n_train * c.n_test * c.n_channels * c.length * b / 1e9
            out[7] += c.n_train * (c.n_train * calls + c.n_test) / 1e9
            out[9] += c.n_train * c.n_test * c.length * b / 1e9
            if c.n_channels * c.length * 8 > SERIES_CACHE_BYTES:
                out[13] += c.n_train * c.n_test * c.n_channels * c.length * b / 1e9
            if c.n_channels > 1:
                out[14] += c.n_train * c.n_test * c.length * b / 1e9

        memo = self.memo_train(size)
        embedded = self.memo_series(size)
        for c in original.contexts():
            if c.n_train == 0:  # a context the job skips
                continue
            # its calls and members by its own channels; its terms by what the method computes on, but for the
            # work on every channel of its input (c_in)
            calls, members, c_in = self.context_calls(c), self.members(c), self._effective(c, channels=False)
            c = self._effective(c, encodings=True)
            # the series each context's calls run (the context once per call where every call runs it again)
            run = c.n_train * calls + c.n_test
            out[2] += 1.0
            out[20] += run * c_in.n_channels * c_in.length / 1e9
            if not embedded:
                out[3] += run * c.n_channels * c.length / 1e9
            out[4] += run / 1e9
            out[18] += members * run / 1e9
            out[19] += members * c.n_train * run / 1e9
            out[5] += c.n_train * c.n_series * c.n_channels / 1e9
            out[8] += c.n_channels * c.length * math.log2(max(2, c.n_train)) / 1e9
            out[10] += c.n_values * max(1.0, math.log2(c.length / 8)) / 1e9
            columns = c.n_channels * c.length
            classes = max(1, min(c.n_classes, c.n_train))
            out[11] += columns * (classes - 1) / 1e9
            out[12] += columns * c.n_train * (1 - 1 / classes) * math.log2(max(2, c.n_train)) / 1e9
            if self.tree_max_classes is not None:
                out[15] += (class_tree_passes(classes, self.tree_max_classes) - 1) * c.n_test / 1e9
            out[16] += c.n_series * float(c.n_channels * c.length) ** 2 / 1e9
            out[17] += c.n_channels * c.length / 1e9
            if not memo:
                pairs(c, calls)
        if memo:
            pairs(dataclasses.replace(size, n_train=memo, n_contexts=1, context_train=()))
        if embedded:  # every series the job uses, embedded once
            out[3] += embedded * size.n_channels * size.length / 1e9
        return tuple(out)

    def memory_terms(self, size: JobSize) -> tuple[float, ...]:
        """What multiplies each of :data:`MEMORY_COEFFICIENTS` in the job's peak memory (MB): the largest
        context (all ``n_train`` series) with a chunk of queries held at once."""
        model = self._effective(size, encodings=True)
        size = self._effective(size, channels=False)
        chunk = self.query_chunk(size)
        held = size.n_train + (chunk if self.query_rows is None else min(chunk, self.query_rows))
        rows = held if self.model_rows is None else min(held, self.model_rows)
        points = rows * model.length if self.model_row_points is None else min(rows * model.length,
                                                                              self.model_row_points)
        embeddings = 0.0
        if self.memo_embeddings:  # what the memo keeps: every series the job uses, at most its bound
            used = size.n_train_used + size.n_test
            embeddings = used * size.n_channels
            if self.mem_bytes_per_memo_embedding > 0:
                embeddings = min(embeddings, EMBEDDING_MEMO_MB * 2**20 / self.mem_bytes_per_memo_embedding)
        return (1.0, size.n_values / 2**20, held / 1024, size.n_train * held / 2**20,
                rows * model.n_channels * model.length / 2**20, points / 2**20, size.n_train * chunk / 2**20,
                size.n_test * self.memo_train(size) / 2**20, embeddings / 2**20,
                (chunk if self.query_rows is not None else 0) / 1024)

    def torch_build_mb(self, build: str) -> float:
        """What torch's ``build`` (``"cpu"``, ``"cuda"``) adds to this method's peak over the CPU build its
        coefficients are fitted on."""
        return TORCH_CUDA_BUILD_MB if self.loads_torch and build == "cuda" else 0.0

    def gpu_seconds(self, size: JobSize | None, seconds: float) -> float:
        """The job's ``seconds`` on one CPU thread (its estimate, without safety margins) on one GPU: the fixed
        ``time_job_s`` as it is, the feature-pair term at :attr:`gpu_speedup_feature_pairs`, the rest at
        :attr:`gpu_speedup` (``seconds`` itself where there is none). The feature-pair term keeps the share of the
        per-context time it has in this model at ``size``, also where a plugin's ``job_cost`` charged more than
        the model (TabICL's passes that embed their context again)."""
        if not self.gpu_speedup:
            return seconds
        fixed = min(float(self.time_job_s), seconds)
        pairs = 0.0
        if self.time_ns_per_feature_pair and size is not None:
            term = self.time_terms(size)[self.TIME_COEFFICIENTS.index("time_ns_per_feature_pair")]
            modelled = self.estimate(size)[1]
            compute = modelled - min(float(self.time_job_s), modelled)
            share = min(1.0, self.time_ns_per_feature_pair * term / compute) if compute > 0 else 0.0
            pairs = share * (seconds - fixed)
        rest = seconds - fixed - pairs
        return fixed + rest / self.gpu_speedup + pairs / (self.gpu_speedup_feature_pairs or self.gpu_speedup)

    def estimate(self, size: JobSize, *, band: float | None = None) -> tuple[float, float]:
        """(peak memory in MB, time in seconds), without safety margins; the memory with torch's CUDA libraries
        where the method loads torch and the installed build is CUDA (:data:`TORCH_CUDA_BUILD_MB`)."""
        mem = sum(getattr(self, k) * t for k, t in zip(self.MEMORY_COEFFICIENTS, self.memory_terms(size)))
        mem += self.torch_build_mb(torch_build())
        seconds = sum(getattr(self, k) * t for k, t in zip(self.TIME_COEFFICIENTS, self.time_terms(size, band=band)))
        return mem, seconds
