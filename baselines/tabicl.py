"""TabICL (Qu et al., ICML 2025), checkpoint ``tabicl-classifier-v1.1-20250506.ckpt``: a generic tabular
in-context learner applied to time series as tables (paper Sec. 4.1, "Generic ICL classifiers").

Protocol (paper: "we concatenate the channel-wise sequences of a sample into a fixed-dimensional
vector and treat the resulting samples as rows of a tabular classification task"):

* input: the **native** series; the channels of a case are concatenated into one row
  (``C x L`` features). Variable-length datasets: every series is first linearly resampled to the
  longest context series (queries to the same length).
* the ``tabicl`` package's ``TabICLClassifier`` with its recommended defaults (8 ensemble members,
  ``none``/``power`` normalisation, latin-square feature shuffles, class shifts, softmax temperature
  0.9), the context as training rows, no parameter update.
* weights: ``jingang/TabICL`` on Hugging Face, file above; resolved from ``params.checkpoint`` (a
  file or folder) or the Hugging Face cache (never downloaded during evaluation; ``chorustic
  fetch-weights tabicl`` downloads and verifies it).

Large tables (flattened UEA rows are long: FaceDetection 144 x 62 on 5,890 context rows, MotorImagery 64 x
3,000, DuckDuckGeese 1,345 x 270): tabicl embeds every cell of the table (row, feature) as ``embed_dim`` float32
per ensemble member (512 bytes at 128), and the row interaction needs all of a row's embeddings at once. On a
GPU, tabicl runs each stage (column embedding, row interaction, ICL) on batches sized to the device's free memory
and keeps the embeddings on the host beyond half of it; on a CPU it runs each stage at once, ~2.5 KB per cell
(v1.1, 300 + 100 rows of 1,024 features: 2.6 GB), and FaceDetection's one member would take ~130 GB.
:func:`budget_stages` makes a CPU batch the same way, each stage within :data:`STAGE_MB`, so a pass holds its
column embeddings and one stage's working memory: ``(members + 1) x rows x features x 512`` bytes for v1.1
(``reorders``: it embeds the first member's table once and reorders a copy for each member; measured: the 300 +
100 rows of 1,024 features took 1.4 GB above the process and 237 CPU-s instead of 332;
benchmarks/results/archive_scale.md), but ``members`` alone (no extra table) for a pass of one member (tabicl copies even a lone
member's table, which the plugin has it embed as it is, :func:`embed_lone_tables_once`; the largest tables, which
run one member at a time, hold half), and ``members`` for v2 (each member's own table, feature groups, and nothing
beside it); ``members`` at most 4 of the 8, tabicl running the members of
one normalisation together (:func:`ensemble_batch`). :func:`forward_plan` sizes each pass to :data:`WORK_MB` (a
constant, so that the batches, and with them the float rounding, are the same on every machine;
``max_memory_mb`` sets another budget): the ensemble batch is halved first, then the query rows per pass are cut
(query rows never attend to each other in TabICL, and the members are independent), but a pass keeps at least
:data:`MIN_QUERY_FRACTION` of its context rows as queries (each pass embeds the context again). A table whose
smallest pass needs more than the budget runs at that pass (FaceDetection: one member and all 3,524 queries, ~40 GB),
and the job's other contexts plan theirs within that pass's memory, which the job holds anyway (the harness sets
``job_pass_mb``, the largest pass of the job's contexts, :meth:`TabICLBase.job_params`; a fixed-shot or
proportional context of FaceDetection then runs its queries in one pass, not 2-17).
If it does not fit the memory available to the job (the machine's or cgroup's, or the job's limit the harness
exports; on a GPU also half its free memory), a ``MemoryError`` names the dataset size and the fixes (more
memory; on a GPU, ``disk_offload_dir`` for tabicl's disk offloading, which it does not do on a CPU). The harness
records that as a failed run, never as
a number. The plugins' cost models add the same plan's memory and its passes' time
(:meth:`TabICLBase.job_cost`), so a job asks for what its passes hold.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from chorustic.hub import HubFile
from chorustic.methods import CostModel, MethodInfo, MethodNotReady, register
from chorustic.methods.estimators import ContractClassifier
from chorustic.methods.inputs import flatten_channels, series_lengths, to_fixed_length
from chorustic.methods.weights import HubMethod, cached, file_key, frozen, load_torch_checkpoint

REPO_ID = "jingang/TabICL"

#: The classes one ICL pass of TabICL (v1.1 and v2) decodes (the checkpoints' ``max_classes``); over it, tabicl
#: runs its ICL once per node of a balanced tree of the classes, the tree of :mod:`chorustic.class_tree`.
MAX_CLASSES = 10

#: The column embeddings one forward pass may hold (MB): the ensemble batch and the query rows per pass are sized
#: to it, the same on every machine.
WORK_MB = 2048.0
#: The working memory of one stage of a forward pass on a CPU (MB): the column embedding runs on batches of
#: columns, the row interaction on batches of rows and the ICL on batches of tables sized to it by tabicl's own
#: memory estimator
#: (:func:`budget_stages`). Measured with random weights of v1.1 (300 + 100 rows of 1,024 features, one member,
#: one thread): 512 MB took 237 CPU-s and ~0.6x the budget above what the pass holds, 2,048 MB 343 CPU-s, the
#: whole stage at once 332 CPU-s and 2.6 GB.
STAGE_MB = 512.0
#: The most a whole stage of a pass holds per cell (row x feature x ensemble member: bytes), what bounds the working
#: memory of a table too small to batch. Measured with random weights of the released architectures, four members a
#: pass, the stages within :data:`STAGE_MB` (``benchmarks/tabicl_memory.py``, one thread, Intel Xeon, 2026-12-01): the
#: peak beyond the imports, the weights (~100 MB) and the pass's column embeddings was ~6-28 MB at 7,040 cells (75 + 35
#: rows of 16 features, v1.1 and v2: the jobs on PenDigits' 1 % stand-in, which peaked at 720-738 MB in all), 282 MB
#: at 27,840 (330 + 105 x 16), 290-360 MB at 32,640 (480 + 30 x 16), 400-420 MB at 75,072 (240 + 168 x 46) and
#: 478 MB at 93,312 (166 + 77 x 96): at most ~10.6 KB per cell, growing faster than the cells at a few hundred
#: context rows (the ICL's attention to them); 16 KB covers each.
WHOLE_STAGE_BYTES_PER_CELL = 16384.0
#: The row interaction's working memory per feature of a row (bytes), its input included: its batches are whole
#: rows (it attends over every feature of a row), so on a table of more than ~95,000 features one row alone holds
#: more than :data:`STAGE_MB` (:func:`stage_mb`). Measured with random weights on one row
#: (``benchmarks/tabicl_memory.py --row-stage``): v1.1 held 84, 144, 272, 380 and 680 MB at 8,192, 16,384, 32,768,
#: 65,536 and 131,072 features (~80 MB and 4.7 KB per feature beyond 65,536), v2 372 MB at 65,536; 5.5 KB per
#: feature covers 131,072 (704 MB) and that line's 1.74 GB at DuckDuckGeese's 363,150 (1.95 GB).
ROW_STAGE_BYTES_PER_FEATURE = 5632.0
#: The fewest query rows a pass carries, as a fraction of its context rows (where even one member's pass with
#: every query is over :data:`WORK_MB`): each pass embeds its context again, through every stage (the row
#: interaction's attention over a row's features included), so a pass of fewer queries than context rows costs
#: more time than the memory it saves (DuckDuckGeese, 50 + 50 rows of 363,150 features: 7 queries per pass would
#: hold half the memory and take 4.5x the time). At one, the passes of a context take at most twice the time of a
#: single pass (the cost model charges each, :meth:`TabICLBase.job_cost`) and hold at most twice what its
#: context alone needs.
MIN_QUERY_FRACTION = 1.0
#: tabicl's normalisations of the ensemble (``TabICLClassifier(norm_methods=None)``, its default): each member
#: uses one, and the members of one normalisation run together (:func:`ensemble_batch`).
NORM_METHODS = ("none", "power")


def forward_plan(n_context: int, n_query: int, n_features: int, cell_bytes: float, members: int,
                 budget_mb: float = WORK_MB, reorders: bool = True) -> tuple[int, int, float]:
    """(ensemble members per pass, query rows per pass, the pass's MB) for ``n_context`` context rows and
    ``n_query`` query rows of ``n_features`` features: a pass of ``m`` members over the context and ``q`` query
    rows holds ``m x (n_context + q) x n_features`` column embeddings of ``cell_bytes``, and one table more where
    ``reorders`` and ``m`` > 1 (v1.1 embeds the first member's table and reorders a copy of it for each member of
    the pass; a lone member's table is embedded as it is, :func:`embed_lone_tables_once`; v2 embeds each member's
    own table and holds nothing beside them). Every member and query
    at once when they fit ``budget_mb``; else the ensemble batch halved, then the query rows cut, but not below
    ``MIN_QUERY_FRACTION`` of the context rows (the pass's MB may then exceed the budget)."""
    per_row_mb = n_features * cell_bytes / 2**20
    n_query = max(1, int(n_query))
    members = max(1, int(members))

    def tables(m: int) -> float:
        return m + (1.0 if reorders and m > 1 else 0.0)

    def held(m: int, q: int) -> float:
        return tables(m) * (n_context + q) * per_row_mb

    while members > 1 and held(members, n_query) > budget_mb:
        members = max(1, members // 2)
    chunk = n_query
    if held(members, chunk) > budget_mb:
        least = max(1, math.ceil(n_context * MIN_QUERY_FRACTION))
        fits = int(budget_mb / max(tables(members) * per_row_mb, 1e-12)) - n_context
        chunk = min(n_query, max(least, fits))
    return members, chunk, held(members, chunk)


def stage_mb(n_features: int, n_cells: float | None = None) -> float:
    """The working memory of one stage of a forward pass over rows of ``n_features`` features (MB):
    :data:`STAGE_MB`, or one row of the row interaction where a row alone holds more (PEMS-SF's 138,672 flattened
    features, DuckDuckGeese's 363,150); given the pass's ``n_cells`` (its rows x features x ensemble members), no
    more than the whole stage at once holds (:data:`WHOLE_STAGE_BYTES_PER_CELL`): a small table's stage runs at once,
    far within :data:`STAGE_MB`."""
    batched = max(STAGE_MB, float(n_features) * ROW_STAGE_BYTES_PER_FEATURE / 2**20)
    if n_cells is None:
        return batched
    return min(batched, float(n_cells) * WHOLE_STAGE_BYTES_PER_CELL / 2**20)


def pass_stage_mb(n_context: int, n_query: int, n_features: int, members: int) -> float:
    """:func:`stage_mb` of a forward pass of ``members`` ensemble members over ``n_context`` context and ``n_query``
    query rows of ``n_features`` features (a pass of :func:`forward_plan`)."""
    return stage_mb(n_features, float(members) * (int(n_context) + int(n_query)) * int(n_features))


def ensemble_batch(n_estimators: int, batch_size: int, n_norm_methods: int = len(NORM_METHODS)) -> int:
    """The ensemble members one forward pass runs: tabicl deals the ``n_estimators`` members out to its
    normalisations in turn (:data:`NORM_METHODS`), runs one normalisation's members after the other's and each
    ``batch_size`` at a time, so a pass holds at most ``ceil(n_estimators / n_norm_methods)`` of them (8 members:
    4 with one normalisation, then 4 with the other)."""
    per_group = math.ceil(max(1, int(n_estimators)) / max(1, int(n_norm_methods)))
    return max(1, min(int(batch_size), per_group))


def column_embedding_factor(n_estimators: int, members: int, reorders: bool) -> int:
    """How many times over the cost model's a context's column embedding runs where its passes hold ``members``
    ensemble members. The model's per-value term was fitted on passes of one normalisation's members each
    (:func:`ensemble_batch`: 4 of 8). v1.1 (``reorders``) embeds one table per pass and reorders it for the pass's
    other members, so passes of fewer members embed it more often: 4 times at one member a pass (v1.1, 1,000 + 300
    rows of 512 features: 599-633 CPU-s at one member a pass, 349 by the model without this). v2 embeds every
    member's own table whatever the pass (feature groups)."""
    if not reorders:
        return 1
    group = ensemble_batch(n_estimators, n_estimators)
    return math.ceil(group / max(1, min(int(members), group)))


def pass_budget(max_memory_mb: float | None, job_pass_mb: float | None) -> float:
    """The memory (MB) a context's forward passes are planned within: ``max_memory_mb`` where set, else
    :data:`WORK_MB` or the job's largest pass (``job_pass_mb``, :meth:`TabICLBase.job_params`) whichever is more."""
    return float(max_memory_mb or max(WORK_MB, float(job_pass_mb or 0.0)))


def query_passes(n_query: int, chunk: int) -> int:
    """The forward passes (per ensemble batch) over ``n_query`` query rows at ``chunk`` per pass."""
    return max(1, math.ceil(max(1, int(n_query)) / max(1, int(chunk))))


def cell_bytes(embed_dim: int = 128) -> float:
    """Bytes of one column embedding (a row's feature, one ensemble member): ``embed_dim`` float32."""
    return embed_dim * 4.0


def available_memory_mb() -> float:
    """Memory this process may still use: the minimum of available RAM, the cgroup's remaining limit and,
    when the harness exports it (``$CHORUSTIC_MEM_LIMIT_MB``, the job's ``mem_mb``), that limit minus
    this process' resident memory."""
    import psutil

    avail = psutil.virtual_memory().available / 2**20
    job_limit = os.environ.get("CHORUSTIC_MEM_LIMIT_MB")
    if job_limit:
        try:
            avail = min(avail, float(job_limit) - psutil.Process().memory_info().rss / 2**20)
        except ValueError:
            pass
    for limit_f, usage_f in (
        ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
        ("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes"),
    ):
        try:
            limit = Path(limit_f).read_text().strip()
            if limit != "max" and int(limit) < 2**60:
                usage = int(Path(usage_f).read_text().strip())
                avail = min(avail, (int(limit) - usage) / 2**20)
                break
        except (OSError, ValueError):
            continue
    return float(avail)


def load_tabicl_model(path: str | os.PathLike, *, label: str, expected: str):
    """Build the TabICL module of a checkpoint (cached per process); a wrong file is a clear error."""
    path = Path(path)

    def load():
        from tabicl._model.tabicl import TabICL

        ckpt = load_torch_checkpoint(path, label=label, allow_pickle=False)
        if not isinstance(ckpt, dict) or "config" not in ckpt or "state_dict" not in ckpt:
            keys = list(ckpt)[:8] if isinstance(ckpt, dict) else type(ckpt).__name__
            raise MethodNotReady(
                f"{label}: {path} is not a TabICL checkpoint (expected a dict with 'config' and "
                f"'state_dict', found {keys}). Use {expected} from https://huggingface.co/{REPO_ID}."
            )
        try:
            model = TabICL(**ckpt["config"])
            model.load_state_dict(ckpt["state_dict"], strict=True)
        except (TypeError, RuntimeError) as exc:
            raise MethodNotReady(
                f"{label}: {path} does not match the installed tabicl architecture: "
                f"{str(exc).splitlines()[0]}. Use {expected} from {REPO_ID}."
            ) from exc
        return frozen(model), dict(ckpt["config"])

    return cached(("tabicl", file_key(path)), load)


@functools.cache
def _stage_budget_manager_class():
    """tabicl's ``InferenceManager`` with a CPU that batches like a GPU (built on first use: tabicl imports torch).

    On a GPU, tabicl's manager runs each stage of the model (column embedding, row interaction, in-context
    learning) on batches of columns or rows sized to the free memory by its own ``MemoryEstimator``; on a CPU it
    runs the whole stage at once, so that a table's working memory grows with rows x features without bound
    (FaceDetection flattened: 5,890 rows x 8,928 features, ~130 GB for one member). This one splits a CPU
    stage the same way, sized to :attr:`budget_mb` (a constant, so the batches, and with them the float
    rounding, are the same on every machine). A stage that fits runs at once as before; a batch is a subset of
    columns (column embedding), of rows (row interaction) or of tables (ICL: the ensemble members), which the
    stages treat independently."""
    import math

    import torch
    from tabicl._model.inference import InferenceManager, MemoryEstimator
    from tabicl._model.kv_cache import KVCache

    class StageBudgetManager(InferenceManager):
        budget_mb: float = STAGE_MB

        def __call__(self, forward_fn, inputs, auto_batch=True, output_repeat=1):
            first = next(iter(inputs.values()))
            plain = (not auto_batch or self.exe_device.type != "cpu" or not isinstance(first, torch.Tensor)
                     or first.dim() < 3 or any(isinstance(v, KVCache) for v in inputs.values()))
            if plain:
                return super().__call__(forward_fn, inputs, auto_batch=auto_batch, output_repeat=output_repeat)
            *dims, seq_len, in_dim = first.shape
            per_batch = MemoryEstimator.estimate_batch_size(seq_len, float(self.budget_mb), self.enc_name,
                                                            include_inputs=True, in_dim=in_dim)
            if per_batch >= math.prod(dims):
                return super().__call__(forward_fn, inputs, auto_batch=auto_batch, output_repeat=output_repeat)
            shape = (*dims, self.out_dim) if self.out_no_seq else (*dims, seq_len, self.out_dim)
            out = None
            for batch, index in self.create_multidim_batches(inputs, tuple(dims),
                                                             self.compute_split_sizes(tuple(dims), per_batch)):
                part = self._run_forward(forward_fn, batch)
                if out is None:
                    out = torch.empty(shape, dtype=part.dtype)
                out[index] = part
                del part, batch
            return out

    return StageBudgetManager


def budget_stages(model, budget_mb: float) -> None:
    """Let each stage of a TabICL ``model`` (its column embedder, row interactor and ICL predictor) batch on a CPU
    within ``budget_mb`` (:func:`_stage_budget_manager_class`)."""
    cls = _stage_budget_manager_class()
    for stage in (model.col_embedder, model.row_interactor, model.icl_predictor):
        mgr = stage.inference_mgr
        if not isinstance(mgr, cls):
            mgr.__class__ = cls
        mgr.budget_mb = float(budget_mb)


@functools.cache
def _lone_table_embedder_class(base: type) -> type:
    """tabicl's column embedder ``base``, embedding a pass of one table as it is (:func:`embed_lone_tables_once`)."""

    class LoneTableEmbedder(base):
        lone_tables_once = True

        def _inference_forward(self, X, y_train, embed_with_test=False, feature_shuffles=None, mgr_config=None):
            if feature_shuffles is not None and X.shape[0] == 1:
                feature_shuffles = None
            return super()._inference_forward(X, y_train, embed_with_test, feature_shuffles, mgr_config)

    return LoneTableEmbedder


def embed_lone_tables_once(model) -> None:
    """Let a TabICL ``model``'s column embedder hold a pass of one ensemble member once. Given the members' feature
    orders, tabicl embeds the first member's table and fills a reordered copy for every member of the pass, so
    that even a pass of one member holds its column embeddings twice (FaceDetection's: ~43 GB each). Each member's
    table already comes in its own order (the ensemble's shuffled columns), and without the orders tabicl embeds
    the table as it is: the same embeddings, held once. (With feature groups, v2, tabicl does not use the
    orders.)"""
    embedder = model.col_embedder
    if not getattr(embedder, "lone_tables_once", False):
        embedder.__class__ = _lone_table_embedder_class(type(embedder))


def _tabicl_classifier_class():
    from tabicl import TabICLClassifier

    class PreloadedTabICLClassifier(TabICLClassifier):
        """``TabICLClassifier`` whose model comes from :func:`load_tabicl_model` (validated, cached)."""

        def _load_model(self) -> None:
            self.model_, self.model_config_ = load_tabicl_model(
                self.model_path, label="TabICL", expected=self.checkpoint_version
            )
            self.model_path_ = Path(self.model_path)

    return PreloadedTabICLClassifier


class FlattenedTabICLClassifier(ContractClassifier):
    """TabICL on time series flattened to rows (channels concatenated). See the module docstring.

    ``checkpoint``: a local checkpoint file or folder (None: the Hugging Face cache); ``query_chunk_size``
    None: as many query rows per forward as the budget allows; ``max_memory_mb``: the budget of a forward
    pass in MB (None: :data:`WORK_MB`, or ``job_pass_mb`` where that is more; a table whose smallest pass
    needs more is refused). A pass never plans beyond the memory available to the job (on a GPU: the device's
    free memory). ``checkpoint_version`` (the checkpoint's file name) and ``reorders`` (:func:`forward_plan`) are
    fixed by each plugin; ``job_pass_mb``, the largest pass of the job's contexts
    (usually its largest context's), is set by the harness from the job's contexts (:meth:`TabICLBase.job_params`):
    the job asks for that memory anyway, so every context plans its passes within it instead of within
    :data:`WORK_MB`.
    """

    def __init__(
        self,
        checkpoint: str | Path | None = None,
        checkpoint_version: str = "",
        n_estimators: int = 8,
        batch_size: int = 8,
        query_chunk_size: int | None = None,
        offload_mode: str = "auto",
        disk_offload_dir: str | None = None,
        max_memory_mb: float | None = None,
        use_amp: str | bool = "auto",
        random_state: int = 0,
        device: str = "cpu",
        n_jobs: int = 1,
        verbose: bool = False,
        reorders: bool = True,
        job_pass_mb: float | None = None,
    ):
        self.checkpoint = checkpoint
        self.checkpoint_version = checkpoint_version
        self.n_estimators = n_estimators
        self.batch_size = batch_size
        self.query_chunk_size = query_chunk_size
        self.offload_mode = offload_mode
        self.disk_offload_dir = disk_offload_dir
        self.max_memory_mb = max_memory_mb
        self.use_amp = use_amp
        self.random_state = random_state
        self.device = device
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.reorders = reorders
        self.job_pass_mb = job_pass_mb

    def _rows(self, X) -> np.ndarray:
        return flatten_channels(to_fixed_length(X, self.length_))

    def _cell_bytes(self) -> float:
        """Bytes of one column embedding (one member, row and feature)."""
        return cell_bytes(int(self.model_.model_config_.get("embed_dim", 128)))

    def _available_mb(self) -> float:
        """Memory the column embeddings may take: the job's (:func:`available_memory_mb`), and on a GPU at least
        half its free memory (tabicl keeps a stage's output there up to that and moves it to the host beyond)."""
        available = max(0.0, available_memory_mb())
        if str(self.device).startswith("cuda"):
            import torch

            if torch.cuda.is_available():
                available = max(available, 0.5 * torch.cuda.mem_get_info(torch.device(self.device))[0] / 2**20)
        return available

    def _plan(self, n_query: int) -> tuple[int, int]:
        """(ensemble members per forward, query rows per forward): :func:`forward_plan` at ``max_memory_mb``,
        else at :data:`WORK_MB` or ``job_pass_mb`` whichever is more, within the memory available to the job
        less one stage's working memory (:func:`pass_stage_mb`: the stages of the context's uncut pass, what
        :meth:`TabICLBase.job_cost` charges). The same on every machine where the job has what it
        asked for (:meth:`TabICLBase.job_cost`: the largest pass, the stage and the preprocessing); with less
        free memory than ``job_pass_mb`` needs, each context plans within :data:`WORK_MB` as it would alone, and
        a table whose smallest pass does not fit what is available is refused with the fixes."""
        n_feat = int(self.n_features_)
        queries = min(n_query, int(self.query_chunk_size)) if self.query_chunk_size else n_query
        members = ensemble_batch(self.n_estimators, self.batch_size)
        # what the stages of the largest pass this context can plan hold (a smaller pass, fewer): job_cost's charge
        stage = self.stage_mb_ = pass_stage_mb(self.n_context_, queries, n_feat, members)
        if self.disk_offload_dir and str(self.device).startswith("cuda"):  # tabicl offloads only from a GPU
            return int(self.batch_size), int(self.query_chunk_size or n_query)
        cell = self._cell_bytes()
        available = self._available_mb()
        have = min(available, float(self.max_memory_mb)) if self.max_memory_mb else available
        target = pass_budget(self.max_memory_mb, self.job_pass_mb)
        if target > WORK_MB and not self.max_memory_mb and available - stage < target:
            target = WORK_MB  # less free than the job asked for: each context within WORK_MB, as without the job's
        budget = min(target, max(0.0, available - stage))
        self.pass_budget_mb_ = budget
        members, chunk, held = forward_plan(self.n_context_, queries, n_feat, cell, members, budget,
                                            bool(self.reorders))
        if held > have:
            raise MemoryError(
                f"TabICL on {self.n_context_} context rows x {n_feat} features (channels x length, flattened) "
                f"needs about {held / 1024:.1f} GiB for the column embeddings of one forward pass ({members} "
                f"ensemble member(s), {chunk} query rows; {cell / 1024:.1f} KB per row and feature); "
                f"{have / 1024:.1f} GiB are available. Run this job with more memory (resources mem_mb), or on a "
                f"GPU with params.disk_offload_dir set to let tabicl offload column embeddings to disk."
            )
        return members, min(chunk, n_query)

    def _fit(self, X, y):
        self.length_ = int(series_lengths(X).max())
        F = self._rows(X)
        self.n_features_ = F.shape[1]
        self.n_context_ = F.shape[0]
        cls = _tabicl_classifier_class()
        self.model_ = cls(
            n_estimators=self.n_estimators,
            norm_methods=list(NORM_METHODS),
            batch_size=self.batch_size,
            model_path=str(self.checkpoint),
            allow_auto_download=False,
            checkpoint_version=self.checkpoint_version,
            device=self.device,
            use_amp=self.use_amp,
            offload_mode=self.offload_mode,
            disk_offload_dir=self.disk_offload_dir,
            random_state=self.random_state,
            n_jobs=self.n_jobs,
            verbose=self.verbose,
        )
        self.model_.fit(F, y)
        self.run_info_.update(
            {
                "checkpoint": str(self.checkpoint),
                "checkpoint_version": self.checkpoint_version,
                "n_features": int(self.n_features_),
                "series_length": self.length_,
                "variable_length_resampled": isinstance(X, list),
            }
        )

    def _predict_proba(self, X):
        F = self._rows(X)
        members, chunk = self._plan(F.shape[0])
        self.model_.batch_size = members
        budget_stages(self.model_.model_, STAGE_MB)
        embed_lone_tables_once(self.model_.model_)
        self.run_info_.update({"ensemble_batch": members, "query_chunk": chunk,
                               "stage_mb": round(self.stage_mb_, 3),
                               "query_passes": query_passes(F.shape[0], chunk), "job_pass_mb": self.job_pass_mb,
                               "pass_budget_mb": round(self.pass_budget_mb_, 3)})
        out = [self.model_.predict_proba(F[s : s + chunk]) for s in range(0, F.shape[0], chunk)]
        proba = np.concatenate(out, axis=0)
        cols = np.asarray(self.model_.classes_, dtype=np.int64)
        full = np.zeros((proba.shape[0], len(self.classes_)))
        full[:, cols] = proba
        return full


class TabICLBase(HubMethod):
    """Shared by ``tabicl`` and ``tabicl_v2``: only the checkpoint file differs."""

    checkpoint_file: ClassVar[str]
    estimator = FlattenedTabICLClassifier
    fixed_params: ClassVar[dict[str, Any]] = {"checkpoint_version": None,  # the plugin's checkpoint_file
                                              "reorders": None,  # and reorders
                                              "job_pass_mb": None}  # the harness's (job_params)
    #: Whether a pass embeds one table and reorders a copy of it for each of its members (v1.1): the pass then holds
    #: that table beside its members' (:func:`forward_plan`; a pass of one member does without it,
    #: :func:`embed_lone_tables_once`), and passes of fewer members embed the context's columns more often
    #: (:func:`column_embedding_factor`).
    reorders: ClassVar[bool] = True
    weights_param = "checkpoint"
    #: Ceilings: the column embeddings of the largest flattened tables on the host of a GPU job (on FaceDetection
    #: TabICL and TabICLv2 hold ~40 GB and ask for 78 GB with the safety margin; job_cost; the
    #: paper's machine had 251 GiB for its four GPUs); and two days, a cluster's usual longest partition, for the
    #: feature-heavy tables on one GPU (tabicl_v2/DuckDuckGeese ~18 h by the estimated GPU speed-ups).
    resources: ClassVar[dict[str, Any]] = {"threads": 4, "mem_mb": 144000, "runtime": 2880, "gpu": 1}
    #: Time: fitted (benchmarks/archive_scale.py --fit) on 11 jobs on stand-ins with random weights of TabICL v1.1's
    #: architecture (one CPU thread under the pinned numerics; benchmarks/results/archive_scale.md: Crop, ShapesAll,
    #: PenDigits, ElectricDevices and FordA at 1-10 % of their series, 25-424 CPU-s), within 0.69-1.44 of each:
    #: ~16 ms per row of a context's table (the 8 members' passes of a row through the ICL transformer's projections
    #: and MLPs), ~0.13 ms per value (the column embedding), and ~13 ms per query and pass of the class tree beyond
    #: the first (tabicl decodes at most 10 classes and runs its ICL once per node of a balanced tree of the classes:
    #: Crop's 24 classes take 4 passes, ShapesAll's 60 take 7). Three terms the fit keeps, measured on one context of
    #: their own (benchmarks/tabicl_memory.py): ~7 us per (context row, row) pair, the ICL's attention of every row
    #: to the context (one context of 1,000 and of 4,000 context rows with 200 queries of 8 features took 28 and
    #: 177 CPU-s: 13.5 ms per row and 7.0 us per pair, as its FLOPs at ~27 GFLOP/s on a thread give; it decides a
    #: context of thousands of rows: Crop's 7,200), ~25 ms per feature whatever the rows (per-column work), and
    #: ~0.65 us per row and pair of its features (the row interaction attends over every feature of a row: the
    #: square of the features, which decides the flattened UEA datasets: PEMS-SF's 138,672 features,
    #: DuckDuckGeese's 363,150; that stage alone took 60-67 ns per member, row and feature pair, 0.74-0.83 of this
    #: term's 81 per member, on one row of 8,192 to 131,072 features, flat from 32,768: benchmarks/tabicl_memory.py
    #: --row-stage); one context of 20 + 20 rows of 128-1,024 features (7-72 s) and of 7 + 7 rows of 1,024-4,096
    #: (42, 109, 283 s; benchmarks/many_classes.py) set the last two; with the per-value term of the jobs, the
    #: tables of benchmarks/results/tabicl_memory.csv (7 + 7 to 300 + 100 rows of 256-16,384 features) take 0.91-1.39
    #: of this model (`python benchmarks/tabicl_memory.py --fit benchmarks/results/tabicl_memory.csv`). Until
    #: 2026-11-30 the model was set by hand from Crop and ShapesAll alone, both over 10 classes: their class tree's
    #: passes were charged as 0.9 ms per (context row, row) pair, 3.6-11x PenDigits' jobs (10 classes) and 85x the
    #: one context of 4,000 rows.
    #: Memory: the forward passes' (job_cost) on top of ~950 MB and 128 bytes per value (tabicl's preprocessing:
    #: 4,000 rows of 1,024 features took 92 bytes per value to fit and 140 with the ensemble's views of every row,
    #: model weights included; the 2 KB per value before came from one-shot passes); within 0.68-1.27 of the jobs
    #: (TabICL's and TabICLv2's, 2026-12-01: benchmarks/results/archive_scale.md).
    #: On a GPU: the estimated gpu_speedup (and for the attention over features, half-precision flash attention on
    #: a GPU's matrix units against ~27 GFLOP/s on a CPU thread, gpu_speedup_feature_pairs) until one is measured.
    cost: ClassVar[CostModel] = CostModel(time_job_s=3.64, time_base_s=0, time_ns_per_value=127_000,
                                          time_ns_per_series=16_000_000, time_ns_per_series_pair=7_000,
                                          time_ns_per_tree_query=13_300_000, tree_max_classes=MAX_CLASSES,
                                          time_ns_per_feature_pair=650,
                                          time_ns_per_feature=25_000_000, mem_base_mb=950, mem_bytes_per_value=128,
                                          gpu_speedup=100, gpu_speedup_feature_pairs=2000, parallel_fraction=0.91,
                                          context_per_call=True)

    def hub_files(self, p: dict[str, Any]) -> list[HubFile]:
        return [HubFile(REPO_ID, self.checkpoint_file, revision=p["revision"])]

    def resolve(self, params: dict[str, Any]) -> dict[str, Any]:
        return {**super().resolve(params), "checkpoint_version": self.checkpoint_file,
                "reorders": self.reorders}

    def _pass_plan(self, context, budget_mb: float | None = None, **params: Any) -> tuple[int, int, float]:
        """:func:`forward_plan` as :meth:`FlattenedTabICLClassifier._plan` makes it for one ``context`` (a
        :class:`~chorustic.methods.cost.JobSize` of one context) and the harness's chunk of its queries
        (``embed_dim`` 128), within ``budget_mb`` (None: ``max_memory_mb`` or :data:`WORK_MB`)."""
        p = self.params(params)
        chunk = min(int(p.get("query_chunk_size") or self.query_chunk(context, **params)), context.n_test)
        members = ensemble_batch(int(p.get("n_estimators", 8)), int(p.get("batch_size", 8)))
        budget = float(budget_mb or p.get("max_memory_mb") or WORK_MB)
        return forward_plan(context.n_train, chunk, context.n_channels * context.length, cell_bytes(), members,
                            budget, self.reorders)

    def repeated_embedding_s(self, context, members: int, again: int = 0, **params: Any) -> float:
        """The time (s, one thread) a ``context``'s column embedding takes beyond the cost model's where its passes
        hold ``members`` ensemble members (:func:`column_embedding_factor`), over its rows and the ``again``
        context rows its later query passes embed once more."""
        model = self.cost_model(**params)
        extra = column_embedding_factor(int(self.params(params).get("n_estimators", 8)), members, self.reorders) - 1
        rows = context.n_train + context.n_test + again
        return extra * model.time_ns_per_value * rows * context.n_channels * context.length / 1e9

    def _job_pass_mb(self, size, **params: Any) -> float:
        """The largest pass of the job's contexts, each planned on its own (MB; 0 without a context): usually the
        largest context's, but a smaller context can hold more where more of the ensemble fits its pass."""
        return max((self._pass_plan(c, **params)[2] for c in size.contexts() if c.n_train > 0), default=0.0)

    def job_params(self, size, **params: Any) -> dict[str, Any]:
        """``job_pass_mb``: the largest pass of the job's contexts (:meth:`_job_pass_mb`), within which every
        context plans its own (none where ``max_memory_mb`` sets the budget)."""
        if self.params(params).get("max_memory_mb"):
            return {}
        return {"job_pass_mb": round(self._job_pass_mb(size, **params), 3)}

    def job_cost(self, size, **params: Any) -> tuple[float, float]:
        """The cost model's memory and time, plus what the forward passes hold and the passes' repeated
        contexts: the column embeddings of the largest context's pass (:func:`forward_plan`, ``embed_dim`` 128)
        and one stage's working memory (:func:`pass_stage_mb`: what its pass's stage holds at most); and where a
        context's queries take several passes (each context plans within the largest one's, :meth:`job_params`),
        each pass after the first embeds the context again, costed as that many more query rows; and where a pass
        holds fewer ensemble members than one normalisation's, v1.1's column embedding runs once per pass
        (:meth:`repeated_embedding_s`)."""
        model = self.cost_model(**params)
        mem, seconds = super().job_cost(size, **params)
        budget = pass_budget(self.params(params).get("max_memory_mb"),
                             self.job_params(size, **params).get("job_pass_mb"))
        band = self.cost_band(size, **params)
        held = stage = 0.0
        for c in size.contexts():
            if c.n_train == 0:
                continue
            members, chunk, pass_mb = self._pass_plan(c, budget, **params)
            held = max(held, pass_mb)
            stage = max(stage, pass_stage_mb(c.n_train, chunk, c.n_channels * c.length, members))
            again = (query_passes(c.n_test, chunk) - 1) * c.n_train
            if again:
                seconds += (model.estimate(dataclasses.replace(c, n_test=c.n_test + again), band=band)[1]
                            - model.estimate(c, band=band)[1])
            seconds += self.repeated_embedding_s(c, members, again, **params)
        return mem + held + stage, seconds

    def load(self, params: dict[str, Any], resolved: dict[str, Any]) -> None:
        load_tabicl_model(resolved["checkpoint"], label=self.label, expected=self.checkpoint_file)


@register
class TabICLMethod(TabICLBase):
    info = MethodInfo(
        name="tabicl",
        display_name="TabICL",
        group="Generic ICL",
        fits_on_target=False,
        input_kind="native",
        needs_gpu=True,
        description="tabicl TabICLClassifier, checkpoint tabicl-classifier-v1.1-20250506, channels flattened",
        reference="Qu et al. TabICL: a tabular foundation model for in-context learning on large data. ICML 2025",
        pretraining_data="synthetic tabular datasets of its prior only (Qu et al. 2025)",
        benchmark_in_pretraining="no",
    )
    checkpoint_file = "tabicl-classifier-v1.1-20250506.ckpt"
