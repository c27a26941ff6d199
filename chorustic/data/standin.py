"""Stand-ins: random data with the exact shape of an archive dataset, for measuring cost at paper scale.

The largest datasets of the archives decide whether a paper-scale run finishes, and most of them are
not on a development machine. A stand-in is a pair of ``.ts`` files in the official layout with the
shape the registry records for the dataset (training and test sizes, channels, length, classes) and
random series (a class-dependent sinusoid on a random walk, so that a classifier finds some signal and
its trees, kernels and attention do realistic work). It goes through the same loader, contexts, jobs
and resources as the real dataset, so a job on it costs what the real job costs.

What the registry does not record is drawn and said so:

* **class balance**: balanced (largest remainder), the registry has class counts for no dataset;
* **lengths of a variable-length dataset**: uniform between half the maximum and the maximum, with
  at least one series at the maximum (the registry records only the maximum).

A stand-in can never pass for a result. Its files start with the line :data:`MARK` (a ``.ts`` comment,
followed by the stand-in's parameters as JSON), the loader carries it as
:attr:`~chorustic.data.loading.TimeSeriesDataset.standin`, every manifest and prediction file made from
it records it, and ``chorustic aggregate`` refuses such results (they never reach
``accuracies.csv``, a table or a report). :func:`write_standin` never writes into a folder it did not
write (a real dataset's folder is refused).

``series_fraction`` (and ``n_channels`` / ``length``) make a smaller stand-in of the same kind, for
measuring how a cost grows where the whole shape would take hours on the machine at hand.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from pathlib import Path
from typing import Any

import numpy as np

from chorustic.data.registry import get_info
from chorustic.io import atomic_open

__all__ = ["MARK", "StandInSpec", "standin_spec", "write_standin", "read_standin_mark"]

#: The first line of every stand-in ``.ts`` file (a comment for every ``.ts`` reader), followed by the
#: spec as JSON on the same line.
MARK = "# chorustic-standin"
#: Significant digits of the values written (the cost of a job does not depend on them).
_DIGITS = 5


@dataclasses.dataclass(frozen=True)
class StandInSpec:
    """The shape of a stand-in: the registry's, or a fraction of it."""

    name: str
    archive: str
    n_train: int
    n_test: int
    n_channels: int
    length: int
    """The maximum length (every series' length when ``equal_length``)."""
    n_classes: int
    equal_length: bool
    seed: int = 0
    series_fraction: float = 1.0

    @property
    def min_length(self) -> int:
        return self.length if self.equal_length else max(2, self.length // 2)

    @property
    def n_values(self) -> int:
        """Values of both splits at the maximum length (an upper bound for variable-length data)."""
        return (self.n_train + self.n_test) * self.n_channels * self.length

    def as_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "class_balance": "balanced (drawn; the registry has no class counts)",
                "lengths": ("equal" if self.equal_length else
                            f"uniform in [{self.min_length}, {self.length}] (drawn; the registry has only the maximum)")}


def standin_spec(name: str, *, series_fraction: float = 1.0, n_channels: int | None = None,
                 length: int | None = None, seed: int = 0) -> StandInSpec:
    """The stand-in of registry dataset ``name``; ``series_fraction`` scales both split sizes (each class
    keeps at least one training and one test series), ``n_channels`` / ``length`` replace those sizes."""
    if not 0 < series_fraction <= 1:
        raise ValueError(f"series_fraction must be in (0, 1], got {series_fraction}")
    info = get_info(name)
    k = info.n_classes

    def scaled(n: int) -> int:
        return max(k, int(round(n * series_fraction)))

    return StandInSpec(
        name=info.name, archive=info.archive, n_train=scaled(info.n_train), n_test=scaled(info.n_test),
        n_channels=int(n_channels or info.n_channels), length=int(length or info.length), n_classes=k,
        equal_length=info.equal_length, seed=int(seed), series_fraction=float(series_fraction),
    )


def _balanced_labels(n: int, k: int, rng: np.random.Generator) -> np.ndarray:
    counts = np.full(k, n // k)
    counts[: n - counts.sum()] += 1
    return rng.permutation(np.repeat(np.arange(k), counts))


def _series(rng: np.random.Generator, label: int, n_classes: int, channels: int, length: int) -> np.ndarray:
    t = np.linspace(0.0, 1.0, length)
    walk = np.cumsum(rng.standard_normal((channels, length)), axis=1) * (1.0 / math.sqrt(length))
    phase = rng.uniform(0, 2 * np.pi, size=(channels, 1))
    freq = 1.0 + label * 3.0 / max(1, n_classes - 1) + np.arange(channels)[:, None] % 3
    return walk + np.sin(2 * np.pi * freq * t[None, :] + phase)


def _write_split(path: Path, spec: StandInSpec, split: str, labels: np.ndarray, rng: np.random.Generator) -> None:
    class_names = [f"c{i}" for i in range(spec.n_classes)]
    fmt = f"{{:.{_DIGITS}g}}"
    with atomic_open(path, "w", encoding="utf-8", newline="\n") as fh:
        fh.write(f"{MARK} {json.dumps({**spec.as_dict(), 'split': split}, sort_keys=True)}\n")
        fh.write(f"@problemName {spec.name}\n@timeStamps false\n@missing false\n")
        fh.write(f"@univariate {'true' if spec.n_channels == 1 else 'false'}\n")
        if spec.n_channels > 1:
            fh.write(f"@dimensions {spec.n_channels}\n")
        fh.write(f"@equalLength {'true' if spec.equal_length else 'false'}\n")
        if spec.equal_length:
            fh.write(f"@seriesLength {spec.length}\n")
        fh.write(f"@classLabel true {' '.join(class_names)}\n@data\n")
        # one series at the maximum length in each split, the others drawn
        lengths = (np.full(len(labels), spec.length) if spec.equal_length
                   else rng.integers(spec.min_length, spec.length + 1, size=len(labels)))
        lengths[0] = spec.length
        for label, n in zip(labels, lengths):
            x = _series(rng, int(label), spec.n_classes, spec.n_channels, int(n))
            fh.write(":".join(",".join(map(fmt.format, row)) for row in x.tolist()))
            fh.write(f":{class_names[label]}\n")


def read_standin_mark(path: str | os.PathLike) -> dict[str, Any] | None:
    """The stand-in spec in the first line of a ``.ts`` file, or None for any other file."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            first = fh.readline(1 << 16)
    except OSError:
        return None
    if not first.startswith(MARK + " "):
        return None
    try:
        return json.loads(first[len(MARK) + 1:])
    except ValueError:
        return {"unreadable": first.strip()}


def standin_mark_of(dataset: str, data_dir: str | os.PathLike | None) -> dict[str, Any] | None:
    """The stand-in mark of ``dataset``'s training file in ``data_dir`` without reading the data (None for
    real data, or when the dataset is not there): for a record written before the data were read."""
    from chorustic.data.download import find_local, split_paths

    if data_dir is None:
        return None
    try:
        folder = find_local(dataset, data_dir)
    except (OSError, ValueError):
        return None
    return read_standin_mark(split_paths(folder, dataset)[0]) if folder is not None else None


def write_standin(spec: StandInSpec | str, data_dir: str | os.PathLike, **spec_options: Any) -> Path:
    """Write the stand-in's ``<data_dir>/<Name>/<Name>_{TRAIN,TEST}.ts``; return the folder.

    An existing stand-in of the same spec is kept as it is (its files are only written once); a folder
    holding anything else (a real dataset, another stand-in's files) is never touched: the call fails
    naming it.
    """
    if isinstance(spec, str):
        spec = standin_spec(spec, **spec_options)
    folder = Path(data_dir) / spec.name
    paths = {split: folder / f"{spec.name}_{split}.ts" for split in ("TRAIN", "TEST")}
    wanted = {split: {**spec.as_dict(), "split": split} for split in paths}
    if folder.exists():
        found = {split: read_standin_mark(p) for split, p in paths.items()}
        if all(found[s] == wanted[s] for s in paths):
            return folder
        others = [p.name for p in folder.iterdir() if p.name not in {q.name for q in paths.values()}
                  or read_standin_mark(p) is None]
        if others or any(found[s] is None and paths[s].exists() for s in paths):
            raise FileExistsError(
                f"{folder} holds files that are not a chorustic stand-in ({', '.join(sorted(others)) or 'the .ts files'}): "
                "a stand-in is never written over real data. Give the stand-ins their own data folder."
            )
    rng = np.random.default_rng([spec.seed, 0x57A9D])
    y_train = _balanced_labels(spec.n_train, spec.n_classes, rng)
    y_test = _balanced_labels(spec.n_test, spec.n_classes, rng)
    folder.mkdir(parents=True, exist_ok=True)
    _write_split(paths["TRAIN"], spec, "TRAIN", y_train, rng)
    _write_split(paths["TEST"], spec, "TEST", y_test, rng)
    return folder
