"""How one evaluate job's peak memory and time grow with its dataset: a plugin's cost declaration.

A plugin sets ``cost = CostModel(...)`` (:class:`chorustic.methods.base.Method`); the workflow turns the
estimate for each job's :class:`JobSize` into the job's Snakemake resources (:mod:`chorustic.resources`,
which adds the safety margins and the site's limits). What every job needs beside its method
(:data:`JOB_OVERHEAD_MB`) and the least memory a job can be given (:data:`MIN_JOB_MEM_MB`) are here too.
"""

from __future__ import annotations

import dataclasses

__all__ = [
    "CostModel", "JobSize", "QUERY_MEMORY_MB", "JOB_OVERHEAD_MB", "MIN_WORKER_MB", "MIN_JOB_MEM_MB", "job_memory_problem",
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


@dataclasses.dataclass(frozen=True)
class JobSize:
    """The size of one job's input, as the method sees it."""

    n_train: int
    n_test: int
    n_channels: int
    length: int
    """The series length the method receives: 512 for ``resampled`` methods, the native (maximum) length otherwise."""
    n_contexts: int = 1
    """Protocol contexts the job evaluates (each is one fit on at most ``n_train`` series and one
    prediction of the ``n_test`` series)."""

    @property
    def n_series(self) -> int:
        return self.n_train + self.n_test

    @property
    def n_values(self) -> int:
        """Input values: every series of both splits, every channel, every time point."""
        return self.n_series * self.n_channels * self.length


@dataclasses.dataclass(frozen=True)
class CostModel:
    """Peak memory and running time of one evaluate job as a function of its :class:`JobSize`.

    With ``N = n_train + n_test`` series, ``V = N * n_channels * length`` input values and
    ``P = n_train * N * n_channels`` (context series x all series, per channel: a Gram matrix, a
    ridge/SVM fit, in-context attention)::

        peak memory (MB) = mem_base_mb + mem_bytes_per_value * V / 2**20
                           + mem_kb_per_series * H / 1024 + mem_bytes_per_pair * n_train * H / 2**20
        time (s)         = time_job_s + n_contexts * (time_base_s + (time_ns_per_value * V
                           + time_ns_per_value_channel * V * n_channels + time_ns_per_pair * P
                           + time_ns_per_cell * n_train * n_test * n_channels * length * band) / 1e9)

    ``H = n_train + q`` is the series held at once: the context and one chunk of ``q`` queries
    (:meth:`query_chunk`: as many as fit :data:`QUERY_MEMORY_MB` at ``mem_kb_per_series`` +
    ``mem_bytes_per_pair * n_train`` each; all of them when that is 0 or they fit).
    ``band`` is the number of alignment cells per time point of an elastic distance (the whole length
    for unconstrained DTW; see :meth:`estimate`). Each context fits on at most ``n_train`` series, so the
    time is an upper bound per context. Times are for one CPU thread; more threads or a GPU only make
    a job faster. Coefficients are measured with ``benchmarks/job_costs.py`` where the method runs
    offline; a job adds :data:`chorustic.resources.MEM_SAFETY` / :data:`~chorustic.resources.TIME_SAFETY` on top.
    """

    mem_base_mb: float = 700.0
    """The worker with its imports and model weights, before any data."""
    mem_bytes_per_value: float = 16.0
    """Per input value: the data itself (float32) and the method's working copies."""
    mem_kb_per_series: float = 0.0
    """Per series held at once (the context and a chunk of queries): features or embeddings."""
    mem_bytes_per_pair: float = 0.0
    """Per (context series, series held) pair: Gram, distance or attention matrices."""
    time_job_s: float = 10.0
    """Once per job: imports, JIT compilation, loading weights."""
    time_base_s: float = 1.0
    """Per context: fit and predict overhead independent of the data size."""
    time_ns_per_value: float = 500.0
    """Per context and input value (transforms, encoders)."""
    time_ns_per_value_channel: float = 0.0
    """Per context, input value and channel: attention across the channels of each time step."""
    time_ns_per_pair: float = 0.0
    """Per context and (context series, series, channel): ridge/SVM fits, attention over the context."""
    time_ns_per_cell: float = 0.0
    """Per context and alignment cell of a pairwise elastic distance."""
    gpu_speedup: float | None = None
    """How many times faster one GPU runs a job's per-context work than one CPU thread (``time_job_s`` is
    not sped up). An estimate until measured on a GPU; ``chorustic plan-run`` prints it with the GPU
    hours. None: the method gains nothing from a GPU (its GPU jobs are billed at the CPU time)."""
    model_length: int | None = None
    """The length the method computes on whatever the input's (an encoder that resamples or pads every
    series to 512): replaces the job's ``length``."""

    def query_chunk(self, size: JobSize) -> int:
        """How many queries the harness predicts at once for a context of ``size.n_train`` series: as many
        as fit :data:`QUERY_MEMORY_MB` at this model's per-query memory (at least 1; all when they fit)."""
        per_query = self.mem_kb_per_series * 1024 + self.mem_bytes_per_pair * size.n_train
        if per_query <= 0:
            return max(1, size.n_test)
        return max(1, min(size.n_test, int(QUERY_MEMORY_MB * 2**20 / per_query + 1e-9)))

    def estimate(self, size: JobSize, *, band: float | None = None) -> tuple[float, float]:
        """(peak memory in MB, time in seconds), without safety margins."""
        if self.model_length is not None:
            size = dataclasses.replace(size, length=self.model_length)
        band = float(size.length if band is None else band)
        held = size.n_train + self.query_chunk(size)
        pairs = size.n_train * size.n_series
        cells = size.n_train * size.n_test * size.n_channels * size.length * band
        mem = (self.mem_base_mb + self.mem_bytes_per_value * size.n_values / 2**20
               + self.mem_kb_per_series * held / 1024 + self.mem_bytes_per_pair * size.n_train * held / 2**20)
        per_context = self.time_base_s + (self.time_ns_per_value * size.n_values
                                          + self.time_ns_per_value_channel * size.n_values * size.n_channels
                                          + self.time_ns_per_pair * pairs * size.n_channels
                                          + self.time_ns_per_cell * cells) / 1e9
        return mem, self.time_job_s + size.n_contexts * per_context
