"""The archive registry: the 128 UCR and 30 UEA datasets of the paper, with their metadata.

Source of the metadata
----------------------
``archive_summary.csv`` (package data, copied from the project's reference material) lists every
dataset of the UCR 2018 archive (128 univariate problems) and of the UEA 2018 archive (30
multivariate problems): split sizes, series length (the maximum length for variable-length
problems), channels, classes, whether all series have the same length, whether values are
missing, how each row was verified against independent sources and free-text flags. Row order is
the registry order (:func:`list_datasets`).

``InsectWingbeatSubset``
------------------------
The paper's UEA-30 table lists ``InsectWingbeatSubset`` instead of the full ``InsectWingbeat``
(30,000 train / 20,000 test series, 200 channels, 10 classes). The Mantis / TIC-FM line of work
evaluates a subsample of the original problem, but neither those papers nor ``mantis-tsfm``
document how it was drawn (their readers load ready-made ``x_train.npy`` / ``y_train.npy`` files).
The paper's per-dataset accuracies for it are multiples of 0.001, consistent with 1000 test
series. This harness therefore defines the subset reproducibly as

* a **class-stratified sample of 1000 training and 1000 test series** of the official
  ``InsectWingbeat`` TRAIN and TEST files (every class gets its proportional share, largest
  remainders first; InsectWingbeat is balanced, so 100 series per class and split),
* drawn with ``numpy.random.default_rng(seed)`` (``seed = 0``; the TEST draw uses an independent
  child stream of the same seed), kept in the original file order,
* written in the official layout ``InsectWingbeatSubset/InsectWingbeatSubset_{TRAIN,TEST}.ts``:
  the selected data lines are copied verbatim under the source header, so every value is
  byte-identical to the official file, plus a ``subset.json`` manifest with the parameters, the
  source files' SHA-256 and the selected row indices.

Size and seed are configurable (:class:`SubsetSpec`, ``chorustic download --subset-train ...``);
see :mod:`chorustic.data.subsets`. Everything downstream treats the result as a normal dataset.
The full ``InsectWingbeat`` stays known to the registry as the subset's *source* (``get_info``
accepts it) but is not one of the 158 benchmark datasets.
"""

from __future__ import annotations

import csv
import dataclasses
import difflib
import functools
from importlib import resources
from typing import TYPE_CHECKING

from chorustic.data.errors import UnknownDatasetError

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = [
    "ARCHIVES",
    "AEON_SHIPPED",
    "DatasetInfo",
    "SubsetSpec",
    "INSECTWINGBEAT_SUBSET",
    "SUBSETS",
    "UnknownDatasetError",
    "download_source",
    "get_info",
    "list_datasets",
    "in_archives",
    "registry_frame",
    "is_known",
]

ARCHIVES = ("UCR", "UEA")

#: The classification datasets shipped inside the aeon wheel (``aeon/datasets/data``); they are
#: available offline and are what the tests and the demo profile use.
AEON_SHIPPED: tuple[str, ...] = (
    "ACSF1",
    "ArrowHead",
    "GunPoint",
    "ItalyPowerDemand",
    "OSULeaf",
    "PickupGestureWiimoteZ",
    "BasicMotions",
    "JapaneseVowels",
)


@dataclasses.dataclass(frozen=True)
class DatasetInfo:
    """Metadata of one dataset of the registry."""

    name: str
    archive: str
    """``"UCR"`` or ``"UEA"``."""
    n_train: int
    n_test: int
    length: int
    """Series length; the maximum length for variable-length datasets."""
    n_channels: int
    n_classes: int
    equal_length: bool
    missing_values: bool
    flags: str
    """Free-text notes (variable length, missing values, disagreeing sources, derivation)."""
    verification: str = ""
    """How the row was checked against independent sources (from ``archive_summary.csv``)."""
    benchmark: bool = True
    """False for a dataset that is only the source of a derived benchmark dataset."""

    @property
    def univariate(self) -> bool:
        return self.n_channels == 1


@dataclasses.dataclass(frozen=True)
class SubsetSpec:
    """A class-stratified subsample of an official dataset (see the module docstring)."""

    name: str
    source: str
    n_train: int = 1000
    n_test: int = 1000
    seed: int = 0

    def __post_init__(self) -> None:
        if self.n_train < 1 or self.n_test < 1:
            raise ValueError(f"{self.name}: subset sizes must be positive, got {self.n_train}/{self.n_test}")
        if self.seed < 0:
            raise ValueError(f"{self.name}: the subset seed must be non-negative, got {self.seed}")

    def params(self) -> dict:
        return {
            "source": self.source,
            "n_train": self.n_train,
            "n_test": self.n_test,
            "seed": self.seed,
            "method": "class-stratified, largest remainder, numpy default_rng, original order",
        }


#: The paper's UEA-30 ``InsectWingbeatSubset`` (defaults; configurable per call).
INSECTWINGBEAT_SUBSET = SubsetSpec(
    "InsectWingbeatSubset", "InsectWingbeat", n_train=1000, n_test=1000, seed=0
)
#: Derived benchmark datasets by name.
SUBSETS: dict[str, SubsetSpec] = {INSECTWINGBEAT_SUBSET.name: INSECTWINGBEAT_SUBSET}


def download_source(name: str) -> str:
    """The dataset whose files a download of ``name`` fetches: a subset's source, else ``name``."""
    return SUBSETS[name].source if name in SUBSETS else name


def _as_bool(value: str, where: str) -> bool:
    v = value.strip().lower()
    if v in ("true", "1", "yes"):
        return True
    if v in ("false", "0", "no"):
        return False
    raise ValueError(f"archive_summary.csv: cannot read {value!r} as a boolean ({where})")


@functools.lru_cache(maxsize=1)
def _load() -> tuple[dict[str, DatasetInfo], tuple[str, ...]]:
    """All known datasets by name (benchmark + sources) and the benchmark names in registry order."""
    text = resources.files("chorustic.data").joinpath("archive_summary.csv").read_text(encoding="utf-8")
    infos: dict[str, DatasetInfo] = {}
    order: list[str] = []
    for i, row in enumerate(csv.DictReader(text.splitlines()), start=2):
        where = f"line {i}, {row.get('name')}"
        info = DatasetInfo(
            name=row["name"].strip(),
            archive=row["archive"].strip(),
            n_train=int(row["n_train"]),
            n_test=int(row["n_test"]),
            length=int(row["length"]),
            n_channels=int(row["n_channels"]),
            n_classes=int(row["n_classes"]),
            equal_length=_as_bool(row["equal_length"], where),
            missing_values=_as_bool(row["missing_values"], where),
            flags=(row.get("flags") or "").strip(),
            verification=(row.get("verification") or "").strip(),
        )
        if info.archive not in ARCHIVES:
            raise ValueError(f"archive_summary.csv: unknown archive {info.archive!r} ({where})")
        infos[info.name] = info
        order.append(info.name)
    for spec in SUBSETS.values():
        src = infos[spec.source]
        infos[spec.source] = dataclasses.replace(src, benchmark=False)
        derived = dataclasses.replace(
            src,
            name=spec.name,
            n_train=spec.n_train,
            n_test=spec.n_test,
            flags=(
                f"derived: class-stratified subsample of {spec.source} ({spec.n_train} train / "
                f"{spec.n_test} test, seed {spec.seed}); length = max length of {spec.source}; " + src.flags
            ),
            verification="derived",
            benchmark=True,
        )
        infos[spec.name] = derived
        order[order.index(spec.source)] = spec.name
    return infos, tuple(order)


def _check_archive(archive: str | None) -> str | None:
    if archive is None:
        return None
    a = archive.upper()
    if a not in ARCHIVES:
        raise ValueError(
            f"unknown archive {archive!r}: expected one of {', '.join(ARCHIVES)} (or None for both)"
        )
    return a


def list_datasets(archive: str | None = None) -> list[str]:
    """The benchmark datasets in registry order: 128 ``"UCR"``, 30 ``"UEA"``, or all 158 (``None``)."""
    archive = _check_archive(archive)
    infos, order = _load()
    return [n for n in order if archive is None or infos[n].archive == archive]


def in_archives(datasets: list[str], archives) -> list[str]:
    """Those of ``datasets`` in one of ``archives`` (a method run's ``archives``; None or empty: all), in order."""
    if not archives:
        return list(datasets)
    return [d for d in datasets if get_info(d).archive in archives]


def is_known(name: str) -> bool:
    """True for a benchmark dataset or the source of a derived one."""
    return name in _load()[0]


def get_info(name: str) -> DatasetInfo:
    """Metadata of ``name``; an unknown name raises :class:`UnknownDatasetError` naming close matches."""
    infos, _ = _load()
    try:
        return infos[name]
    except (KeyError, TypeError):
        pass
    names = list(infos)
    by_lower = {n.lower(): n for n in names}
    suggestions: list[str] = []
    if isinstance(name, str):
        if name.lower() in by_lower:
            suggestions.append(by_lower[name.lower()])
        for m in difflib.get_close_matches(name.lower(), list(by_lower), n=3, cutoff=0.6):
            if by_lower[m] not in suggestions:
                suggestions.append(by_lower[m])
    hint = f" Did you mean {', '.join(repr(s) for s in suggestions)}?" if suggestions else ""
    raise UnknownDatasetError(
        str(name),
        f"unknown dataset {name!r}: not one of the 128 UCR / 30 UEA datasets of the registry.{hint} "
        "Run `chorustic datasets` for the list. The workflow and its tables are the archives'; a dataset of your "
        "own is read by `chorustic preprocess` / `contexts` / `audit` and classified with the Python API "
        "(docs/reproducing.md, \"Classify a dataset of your own\").",
    )


def registry_frame(archive: str | None = None) -> "pd.DataFrame":
    """The registry as a DataFrame, one row per benchmark dataset, in registry order."""
    import pandas as pd

    infos, _ = _load()
    rows = [dataclasses.asdict(infos[n]) for n in list_datasets(archive)]
    columns = [f.name for f in dataclasses.fields(DatasetInfo)]
    return pd.DataFrame(rows, columns=columns)
