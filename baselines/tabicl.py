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

Large tables (flattened UEA rows are long: EigenWorms 6 x 17,984, DuckDuckGeese 1,345 x 270): the
column-embedding output of one ensemble member takes ``rows x features x embed_dim x 4`` bytes.
Before running, that size is compared with the memory available to the job (``max_memory_mb`` or
the machine's/cgroup's available memory); the ensemble batch and the number of query rows per
forward pass are reduced to fit (query rows never attend to each other in TabICL, so splitting the
query set does not change predictions). If even one member with one query chunk does not fit, a
``MemoryError`` names the dataset size and the fixes (more memory, a GPU, ``disk_offload_dir`` for
tabicl's disk offloading). The harness records that as a failed run, never as a number.
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
    None: as many query rows per forward as memory allows; ``max_memory_mb`` None: the memory available
    to the job. ``checkpoint_version`` (the checkpoint's file name) is fixed by each plugin.
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

    def _rows(self, X) -> np.ndarray:
        return flatten_channels(to_fixed_length(X, self.length_))

    def _budget_mb(self) -> float:
        if self.max_memory_mb:
            return float(self.max_memory_mb)
        return max(0.0, available_memory_mb())

    def _plan(self, n_query: int) -> tuple[int, int]:
        """(ensemble members per forward, query rows per forward) that fit the memory budget."""
        embed_dim = int(self.model_.model_config_.get("embed_dim", 128))
        n_feat = int(self.n_features_)
        per_row_mb = n_feat * embed_dim * 4 / 2**20  # column-embedding output of one row, one member
        budget = 0.5 * self._budget_mb()  # headroom for activations, the input copies and the heads
        if self.disk_offload_dir:
            return int(self.batch_size), int(self.query_chunk_size or n_query)
        rows_fit = int(budget // max(per_row_mb, 1e-9))
        if rows_fit < self.n_context_ + 1:
            need = (self.n_context_ + 1) * per_row_mb / 0.5
            raise MemoryError(
                f"TabICL on {self.n_context_} context rows x {n_feat} features (channels x length, flattened) "
                f"needs about {need / 1024:.1f} GiB for one ensemble member with one query row "
                f"({embed_dim}-dim column embeddings); {self._budget_mb() / 1024:.1f} GiB are available. "
                f"Run this job with more memory (resources mem_mb) or on a GPU, or set params.disk_offload_dir "
                f"to let tabicl offload column embeddings to disk."
            )
        chunk = int(self.query_chunk_size) if self.query_chunk_size else n_query
        members = int(self.batch_size)
        # shrink the ensemble batch first, then the query chunk
        while members > 1 and members * (self.n_context_ + chunk) > rows_fit:
            members = max(1, members // 2)
        if members * (self.n_context_ + chunk) > rows_fit:
            chunk = max(1, rows_fit - self.n_context_)
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
    fixed_params: ClassVar[dict[str, Any]] = {"checkpoint_version": None}  # the plugin's checkpoint_file
    weights_param = "checkpoint"
    resources: ClassVar[dict[str, Any]] = {"threads": 4, "mem_mb": 32000, "runtime": 360, "gpu": 1}
    #: Set from jobs on stand-ins with random weights of TabICL v1.1's architecture (benchmarks/archive_scale.py,
    #: one CPU thread; benchmarks/results/archive_scale.md): Crop at 1 % took 84 CPU-s, at 3 % more than 264
    #: (stopped at the benchmark's limit), PEMS-SF at 1 % (7 + 7 rows of 138,672 features) more than 580 s
    #: and 4.1 GB (stopped at its memory limit): ~10 s per context (the ensemble's preprocessing), ~55 us per
    #: value (column embeddings: rows x features x 128 float32 per member, ~2 KB per value held) and
    #: ~250 us per (context row, row) pair (row interaction and ICL). Too few finished jobs to fit by
    #: --fit. On a GPU: the estimated gpu_speedup until one is measured.
    cost: ClassVar[CostModel] = CostModel(time_job_s=20, time_base_s=10, time_ns_per_value=55_000,
                                          time_ns_per_series_pair=250_000, mem_base_mb=950, mem_bytes_per_value=2000,
                                          gpu_speedup=100, parallel_fraction=0.91,
                                          context_per_call=True)

    def hub_files(self, p: dict[str, Any]) -> list[HubFile]:
        return [HubFile(REPO_ID, self.checkpoint_file, revision=p["revision"])]

    def resolve(self, params: dict[str, Any]) -> dict[str, Any]:
        return {**super().resolve(params), "checkpoint_version": self.checkpoint_file}

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
