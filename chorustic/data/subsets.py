"""Derived benchmark datasets: class-stratified subsamples of an official dataset.

The paper's ``InsectWingbeatSubset`` is the only one (see :mod:`chorustic.data.registry` for why
and how it is defined). :func:`build_subset` writes it in the official layout,
``<dest>/<Name>_{TRAIN,TEST}.ts``, by copying the selected data lines of the source files verbatim
under the source header (``@problemName`` renamed, a comment saying how it was made), so every
value is byte-identical to the official release and aeon's reader reads it like any other file.
``<dest>/subset.json`` records the parameters, the source files' SHA-256 and the selected rows.

Sampling (deterministic, documented):

* rows are the non-blank data lines after ``@data``, numbered from 0 in file order;
* the label of a row is the text after its last ``:``;
* per split, class ``c`` with ``n_c`` rows gets ``floor(n * n_c / N)`` rows, the remaining rows go
  to the classes with the largest fractional parts (ties: sorted label order);
* within a class, ``rng.permutation`` of its row numbers, the first quota rows are kept;
  classes are visited in sorted label order; the kept rows are written in file order;
* ``rng`` is ``numpy.random.default_rng`` of the first (TRAIN) or second (TEST) child of
  ``numpy.random.SeedSequence(seed)``.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Sequence

import numpy as np

from chorustic.data._fs import make_temp_dir, replace_dir
from chorustic.data.errors import DataError, DataFileError, MalformedDataFileError, MissingDataFileError
from chorustic.data.registry import SubsetSpec
from chorustic.io import sha256_file

__all__ = ["stratified_indices", "build_subset", "read_manifest", "MANIFEST_NAME", "SubsetSizeError"]

MANIFEST_NAME = "subset.json"


class SubsetSizeError(DataError, ValueError):
    """More series requested than the source split holds."""


MANIFEST_FORMAT = 1


def stratified_indices(labels: Sequence[str], n: int, rng: np.random.Generator) -> np.ndarray:
    """Row numbers of a class-stratified sample of size ``n`` (all rows if ``n >= len(labels)``)."""
    labels = np.asarray(labels)
    total = len(labels)
    if n >= total:
        return np.arange(total)
    classes, inverse = np.unique(labels, return_inverse=True)
    counts = np.bincount(inverse, minlength=len(classes))
    quota_exact = counts * n / total
    quota = np.floor(quota_exact).astype(np.int64)
    remainder = n - int(quota.sum())
    if remainder:
        order = np.argsort(-(quota_exact - quota), kind="stable")
        quota[order[:remainder]] += 1
    chosen = []
    for c in range(len(classes)):
        rows = np.flatnonzero(inverse == c)
        chosen.append(rng.permutation(rows)[: quota[c]])
    return np.sort(np.concatenate(chosen))


def _scan(path: Path, dataset: str) -> tuple[list[bytes], list[str]]:
    """Header lines (through ``@data``) and the label of every data row."""
    header: list[bytes] = []
    labels: list[str] = []
    in_data = False
    with open(path, "rb") as fh:
        for line in fh:
            if not in_data:
                header.append(line)
                if line.strip().lower().startswith(b"@data"):
                    in_data = True
                continue
            stripped = line.strip()
            if not stripped:
                continue
            if b":" not in stripped:
                raise MalformedDataFileError(
                    f"{path}: data line {len(labels) + 1} has no ':'-separated class label; cannot build "
                    f"{dataset} from it. Delete the file and download it again.",
                    dataset=dataset,
                    path=path,
                )
            labels.append(stripped.rsplit(b":", 1)[1].decode("utf-8", "replace").strip())
    if not in_data:
        raise MalformedDataFileError(
            f"{path}: no @data line; not a .ts file. Delete it and download it again.",
            dataset=dataset,
            path=path,
        )
    if not labels:
        raise MalformedDataFileError(f"{path}: no data rows after @data.", dataset=dataset, path=path)
    return header, labels


def _write(
    src: Path, dst: Path, header: list[bytes], keep: np.ndarray, spec: SubsetSpec, split: str, src_sha: str
) -> None:
    keep_set = set(int(i) for i in keep)
    comment = (
        f"# {spec.name}: class-stratified subsample of {len(keep)} rows of {src.name} "
        f"(sha256 {src_sha}), seed {spec.seed}, {split} stream; written by chorustic "
        f"(see chorustic/data/subsets.py). Data lines are copied verbatim.\n"
    ).encode()
    with open(dst, "wb") as out:
        out.write(comment)
        for line in header:
            if line.strip().lower().startswith(b"@problemname"):
                eol = b"\r\n" if line.endswith(b"\r\n") else b"\n"
                line = b"@problemName " + spec.name.encode() + eol
            out.write(line)
        row = 0
        with open(src, "rb") as fh:
            in_data = False
            for line in fh:
                if not in_data:
                    if line.strip().lower().startswith(b"@data"):
                        in_data = True
                    continue
                if not line.strip():
                    continue
                if row in keep_set:
                    out.write(line if line.endswith(b"\n") else line + b"\n")
                row += 1


def read_manifest(folder: Path) -> dict | None:
    try:
        return json.loads((Path(folder) / MANIFEST_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def manifest_matches(manifest: dict | None, spec: SubsetSpec) -> bool:
    return bool(manifest) and manifest.get("params") == spec.params()


def build_subset(spec: SubsetSpec, source_folder: str | os.PathLike, dest: str | os.PathLike) -> Path:
    """Write ``spec`` from ``<source_folder>/<source>_{TRAIN,TEST}.ts`` into ``dest`` (atomically:
    a temporary folder next to ``dest`` renamed into place)."""
    source_folder, dest = Path(source_folder), Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    seeds = np.random.SeedSequence(spec.seed).spawn(2)
    tmp = make_temp_dir(dest)
    try:
        manifest: dict = {
            "format": MANIFEST_FORMAT,
            "name": spec.name,
            "params": spec.params(),
            "source_sha256": {},
            "sha256": {},
            "rows": {},
        }
        for split, n, seq in (("TRAIN", spec.n_train, seeds[0]), ("TEST", spec.n_test, seeds[1])):
            src = source_folder / f"{spec.source}_{split}.ts"
            if not src.is_file():
                raise MissingDataFileError(
                    f"cannot build {spec.name}: {src} is missing. Run `chorustic download {spec.source}` first.",
                    dataset=spec.name,
                    path=src,
                )
            header, labels = _scan(src, spec.name)
            if n > len(labels):
                raise SubsetSizeError(
                    f"{spec.name}: {n} {split} series requested but {src} has only {len(labels)}; choose a "
                    f"smaller size (--subset-{split.lower()}).",
                    dataset=spec.name,
                )
            keep = stratified_indices(labels, n, np.random.default_rng(seq))
            src_sha = sha256_file(src)
            out = tmp / f"{spec.name}_{split}.ts"
            _write(src, out, header, keep, spec, split, src_sha)
            manifest["source_sha256"][src.name] = src_sha
            manifest["sha256"][out.name] = sha256_file(out)
            manifest["rows"][split] = [int(i) for i in keep]
        (tmp / MANIFEST_NAME).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
        if dest.exists() and read_manifest(dest) is None and any(dest.iterdir()):
            raise DataFileError(
                f"cannot build {spec.name} into {dest}: the folder exists and was not written by chorustic "
                f"(no {MANIFEST_NAME}); it is never replaced. Move it away, or use it as it is by not "
                "overriding the subset parameters.",
                dataset=spec.name,
                path=dest,
            )
        replace_dir(tmp, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return dest
