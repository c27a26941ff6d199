"""Published results of the classical state of the art: the bake-off redux reference results (Middlehurst,
Schäfer and Bagnall 2024: HIVE-COTE 2, MultiRocket-Hydra, QUANT, MiniRocket, 1NN-DTW, ... on the UCR
archive, 30 resamples each) as aeon's results loaders read them.

aeon's ``get_estimator_results(estimators, datasets, num_resamples, path=P)`` reads
``P/classification/accuracy/<EST>_accuracy.csv`` (a header ``Resamples:,0,1,...``, one row per dataset);
``P`` is ``https://timeseriesclassification.com/results/ReferenceResults`` by default. This module keeps a
local copy of each file under ``<cache>/classification/accuracy/`` (:func:`published_file`), downloaded
once with the harness's own transfer code (retries, resume, atomic) and recorded beside it with its source
URL, the date and its SHA-256 (``<EST>_accuracy.csv.source.json``), then reads that copy with aeon's loader.
A copy put there by hand (a machine without internet) is read the same way.

Resample 0 is the archive's own train/test split, the split the harness's full-context protocol
evaluates: :func:`published_accuracies` returns it.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
from pathlib import Path

import pandas as pd

__all__ = ["PUBLISHED_URL", "PUBLISHED_ESTIMATORS", "published_file", "published_url", "fetch_published",
           "published_accuracies",
           "PublishedResultsError"]

#: aeon's default path of the reference results.
PUBLISHED_URL = "https://timeseriesclassification.com/results/ReferenceResults"

#: aeon's name -> (display name in tables, the plugin of this harness that re-runs it, or None).
PUBLISHED_ESTIMATORS: dict[str, tuple[str, str | None]] = {
    "HC2": ("HIVE-COTE 2", None),
    "MR-Hydra": ("MultiRocket-Hydra", "multirocket_hydra"),
    "QUANT": ("QUANT", "quant"),
    "MiniROCKET": ("MiniRocket", "minirocket"),
    "1NN-DTW": ("1NN-DTW", "dtw_1nn"),
}


class PublishedResultsError(RuntimeError):
    """A published results file cannot be had; the message names the URL, the file and what to do."""


def published_file(cache: str | os.PathLike, estimator: str) -> Path:
    return Path(cache) / "classification" / "accuracy" / f"{estimator}_accuracy.csv"


def published_url(estimator: str, base_url: str | None = None) -> str:
    """Where ``estimator``'s published accuracies are downloaded from (aeon's layout under ``base_url``)."""
    return f"{(base_url or PUBLISHED_URL).rstrip('/')}/classification/accuracy/{estimator}_accuracy.csv"


def fetch_published(estimator: str, cache: str | os.PathLike, *, base_url: str = PUBLISHED_URL,
                    offline: bool = False) -> Path:
    """The local copy of ``estimator``'s published accuracies, downloaded from ``base_url`` when missing
    (never with ``offline``); its source record is written beside it."""
    from chorustic.data import _http
    from chorustic.data.errors import DataError
    from chorustic.io import atomic_write_json, sha256_file

    dest = published_file(cache, estimator)
    if dest.is_file():
        return dest
    url = published_url(estimator, base_url)
    if offline:
        raise PublishedResultsError(
            f"the published results of {estimator} are not in {dest} and downloads are off: put a copy of {url} "
            "there (any machine with internet: `curl -o <that file> <url>`), or run once online")
    try:
        got = _http.fetch(url, dest, policy=_http.TransferPolicy(progress=False, retries=2))
    except DataError as exc:
        raise PublishedResultsError(
            f"cannot download the published results of {estimator} from {url} ({exc}); put a copy at {dest} "
            "and run again") from None
    atomic_write_json(dest.with_name(dest.name + ".source.json"), {
        "estimator": estimator, "url": url, "sha256": sha256_file(got.path),
        "retrieved": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")})
    return dest


def published_accuracies(estimator: str, cache: str | os.PathLike, *, base_url: str = PUBLISHED_URL,
                         offline: bool = False) -> pd.DataFrame:
    """``dataset, accuracy`` of resample 0 (the archive's train/test split) of every dataset the file has,
    read with aeon's results loader."""
    from aeon.benchmarking.results_loaders import get_estimator_results

    path = fetch_published(estimator, cache, base_url=base_url, offline=offline)
    try:
        got = get_estimator_results([estimator], datasets=None, num_resamples=1, path=str(Path(cache)),
                                    measure="accuracy")[estimator]
    except (ValueError, KeyError, pd.errors.ParserError) as exc:
        raise PublishedResultsError(
            f"{path} is not a results file in aeon's format (a header 'Resamples:,0,1,...', one row per dataset): "
            f"{exc}; delete it and run again to download it anew") from None
    table = pd.DataFrame({"dataset": list(got), "accuracy": [float(v) for v in got.values()]})
    if table.empty:
        raise PublishedResultsError(f"{path} holds no dataset (a header 'Resamples:,0,1,...', then one row per "
                                    "dataset); delete it and run again to download it anew")
    bad = table[(table["accuracy"] < 0) | (table["accuracy"] > 1)]
    if len(bad):
        raise PublishedResultsError(f"{path}: accuracies outside [0, 1] for {list(bad['dataset'])[:5]}")
    return table


def source_record(cache: str | os.PathLike, estimator: str) -> dict | None:
    f = published_file(cache, estimator)
    f = f.with_name(f.name + ".source.json")
    try:
        return json.loads(f.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
