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

Large tables (flattened UEA rows are long: EigenWorms 6 x 17,984, DuckDuckGeese 1,345 x 270): a forward
pass holds about ``cell_tensors`` float32 tensors of ``embed_dim`` per (ensemble member, row, feature):
the column embeddings and the activations around them, 2.0-2.4 KB per cell for v1.1 and 2.9 KB for v2
(``embed_dim`` 128; measured with random weights of the real architectures, 60-480 rows of 128-1,024
features, one and eight members: benchmarks/results/archive_scale.md). :func:`forward_plan` sizes each
pass to :data:`WORK_MB` (a constant, so that the batches, and with them the float rounding, are the same
on every machine; ``max_memory_mb`` sets another budget): the ensemble batch is halved first, then the
query rows per pass are cut (query rows never attend to each other in TabICL, and the members are
independent, so neither changes predictions). A table whose one member with one query row needs more
than the budget runs at that minimum. If even that does not fit the memory available to the job (the
machine's or cgroup's, or the job's limit the harness exports), a ``MemoryError`` names the dataset size
and the fixes (more memory, a GPU, ``disk_offload_dir`` for tabicl's disk offloading). The harness
records that as a failed run, never as a number. The plugins' cost models add the same plan's memory
(:meth:`TabICLBase.job_cost`), so a job asks for what its passes hold.
"""

from __future__ import annotations

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

#: The working memory of one forward pass (MB): the ensemble batch and the query rows per pass are sized to
#: it, the same on every machine.
WORK_MB = 2048.0


def forward_plan(n_context: int, n_query: int, n_features: int, cell_bytes: float, members: int,
                 budget_mb: float = WORK_MB) -> tuple[int, int, float]:
    """(ensemble members per pass, query rows per pass, the pass's MB) for ``n_context`` context rows and
    ``n_query`` query rows of ``n_features`` features at ``cell_bytes`` per (member, row, feature): every
    member and query at once when they fit ``budget_mb``; else the ensemble batch halved, then the query
    rows cut; at least one member with one query row (the pass's MB then exceeds the budget)."""
    per_row_mb = n_features * cell_bytes / 2**20
    limit = max(float(budget_mb), (n_context + 1) * per_row_mb)
    chunk = max(1, int(n_query))
    members = max(1, int(members))
    while members > 1 and members * (n_context + chunk) * per_row_mb > limit:
        members = max(1, members // 2)
    if members * (n_context + chunk) * per_row_mb > limit:
        chunk = max(1, int(limit // max(per_row_mb, 1e-12)) - n_context)
    chunk = min(chunk, max(1, int(n_query)))
    return members, chunk, members * (n_context + chunk) * per_row_mb


def cell_bytes(cell_tensors: float, embed_dim: int = 128) -> float:
    """Bytes a forward pass holds per (ensemble member, row, feature): ``cell_tensors`` float32 tensors of
    ``embed_dim``."""
    return cell_tensors * embed_dim * 4


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
    pass in MB (None: :data:`WORK_MB`; a table whose smallest pass needs more is refused). A pass never
    plans beyond the memory available to the job (on a GPU: the device's free memory).
    ``checkpoint_version`` (the checkpoint's file name) is fixed by each plugin.
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
        cell_tensors: float = 5.0,
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
        self.cell_tensors = cell_tensors

    def _rows(self, X) -> np.ndarray:
        return flatten_channels(to_fixed_length(X, self.length_))

    def _cell_bytes(self) -> float:
        """Bytes a forward pass holds per (ensemble member, row, feature)."""
        return cell_bytes(self.cell_tensors, int(self.model_.model_config_.get("embed_dim", 128)))

    def _available_mb(self) -> float:
        """Memory the passes may take: the GPU's free memory on a GPU (tabicl offloads beyond it), else the
        job's (:func:`available_memory_mb`)."""
        if str(self.device).startswith("cuda"):
            import torch

            if torch.cuda.is_available():
                return torch.cuda.mem_get_info(torch.device(self.device))[0] / 2**20
        return max(0.0, available_memory_mb())

    def _plan(self, n_query: int) -> tuple[int, int]:
        """(ensemble members per forward, query rows per forward): :func:`forward_plan` at ``max_memory_mb``
        or :data:`WORK_MB`, within the memory available to the job. The same on every machine where the job
        has ``WORK_MB / 0.8`` free (its request covers it); less free memory cuts the passes further."""
        if self.disk_offload_dir:
            return int(self.batch_size), int(self.query_chunk_size or n_query)
        n_feat = int(self.n_features_)
        cell = self._cell_bytes()
        available = self._available_mb()
        have = min(available, float(self.max_memory_mb)) if self.max_memory_mb else available
        need = (self.n_context_ + 1) * n_feat * cell / 2**20  # one member, one query row
        if need > have:
            raise MemoryError(
                f"TabICL on {self.n_context_} context rows x {n_feat} features (channels x length, flattened) "
                f"needs about {need / 1024:.1f} GiB for one ensemble member with one query row "
                f"({cell / 1024:.1f} KB per row and feature); {have / 1024:.1f} GiB are available. "
                f"Run this job with more memory (resources mem_mb) or on a GPU, or set params.disk_offload_dir "
                f"to let tabicl offload column embeddings to disk."
            )
        budget = min(float(self.max_memory_mb or WORK_MB), 0.8 * available)
        queries = int(self.query_chunk_size) if self.query_chunk_size else n_query
        members = min(int(self.batch_size), int(self.n_estimators))
        members, chunk, _ = forward_plan(self.n_context_, queries, n_feat, cell, members, budget)
        return members, min(chunk, n_query)

    def _fit(self, X, y):
        self.length_ = int(series_lengths(X).max())
        F = self._rows(X)
        self.n_features_ = F.shape[1]
        self.n_context_ = F.shape[0]
        cls = _tabicl_classifier_class()
        self.model_ = cls(
            n_estimators=self.n_estimators,
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
        self.run_info_.update({"ensemble_batch": members, "query_chunk": chunk})
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
                                              "cell_tensors": None}  # and its cell_tensors
    #: The float32 tensors of ``embed_dim`` a forward pass holds per (member, row, feature), measured
    #: (module docstring): v1.1 2.0-2.4 KB per cell at ``embed_dim`` 128, taken at 5 (2.5 KB).
    cell_tensors: ClassVar[float] = 5.0
    weights_param = "checkpoint"
    resources: ClassVar[dict[str, Any]] = {"threads": 4, "mem_mb": 32000, "runtime": 360, "gpu": 1}
    #: Set from jobs on stand-ins with random weights of TabICL v1.1's architecture (benchmarks/archive_scale.py,
    #: one CPU thread under the pinned numerics; benchmarks/results/archive_scale.md): Crop at 1 % took 84 CPU-s,
    #: ShapesAll's shape at 10 % (60 + 60 rows of 512 features, 60 classes) 452; and one context of 20 + 20 rows of
    #: 128-1,024 features (7-72 s) and of 7 + 7 rows of 1,024-4,096 (42, 109, 283 s; benchmarks/many_classes.py),
    #: fitted by least squares within 0.96-1.09: ~0.52 ms per value (the members' column embeddings), ~25 ms per
    #: feature whatever the rows (per-column work), ~0.65 us per row and pair of its features (the row
    #: interaction attends over every feature of a row: the square of the features, which decides the flattened
    #: UEA datasets: PEMS-SF's 138,672 features, DuckDuckGeese's 363,150) and ~0.9 ms per (context row, row)
    #: pair (ICL). Memory: the forward passes' (job_cost) on top of ~950 MB and ~2 KB per value. Too few
    #: finished jobs to fit by --fit. On a GPU: the estimated gpu_speedup (and for the attention over features,
    #: half-precision flash attention on a GPU's matrix units against ~27 GFLOP/s on a CPU thread,
    #: gpu_speedup_feature_pairs) until one is measured.
    cost: ClassVar[CostModel] = CostModel(time_job_s=20, time_base_s=2, time_ns_per_value=520_000,
                                          time_ns_per_series_pair=900_000, time_ns_per_feature_pair=650,
                                          time_ns_per_feature=25_000_000, mem_base_mb=950, mem_bytes_per_value=2000,
                                          gpu_speedup=100, gpu_speedup_feature_pairs=2000, parallel_fraction=0.91,
                                          context_per_call=True)

    def hub_files(self, p: dict[str, Any]) -> list[HubFile]:
        return [HubFile(REPO_ID, self.checkpoint_file, revision=p["revision"])]

    def resolve(self, params: dict[str, Any]) -> dict[str, Any]:
        return {**super().resolve(params), "checkpoint_version": self.checkpoint_file,
                "cell_tensors": self.cell_tensors}

    def job_cost(self, size, **params: Any) -> tuple[float, float]:
        """The cost model's memory and time, plus what the forward passes hold (:func:`forward_plan` at
        ``max_memory_mb`` or :data:`WORK_MB` for the largest context, ``n_train`` rows, with the harness's chunk of queries:
        ``n_channels x length`` features at ``cell_tensors x 128 x 4`` bytes per member, row and feature)."""
        mem, seconds = super().job_cost(size, **params)
        p = self.params(params)
        chunk = int(p.get("query_chunk_size") or self.cost_model(**params).query_chunk(size))
        members = min(int(p.get("batch_size", 8)), int(p.get("n_estimators", 8)))
        _, _, work = forward_plan(size.n_train, chunk, size.n_channels * size.length, cell_bytes(self.cell_tensors),
                                  members, float(p.get("max_memory_mb") or WORK_MB))
        return mem + work, seconds

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
    )
    checkpoint_file = "tabicl-classifier-v1.1-20250506.ckpt"
