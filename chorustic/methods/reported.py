"""Reported methods: "reported, not reproduced" accuracies read from a CSV column (the paper's TiCT
column, or any method a user cannot run)."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from chorustic.methods.base import MethodInfo, MethodNotReady, ReportedMethod
from chorustic.paths import repo_path

__all__ = ["CSVReportedMethod", "reported_method", "PublishedMethod", "published_method", "RunReportedMethod",
           "run_reported_method"]


def _datasets_of(reported: ReportedMethod, /, **params: Any) -> set[str] | None:
    """The datasets of ``reported``'s table, or None when it cannot be read now (every job then says
    why): the ``covered_datasets`` of the reported methods whose table is a local file."""
    try:
        return set(reported.reported_accuracies(**params)["dataset"])
    except (MethodNotReady, OSError, ValueError, KeyError):
        return None


class CSVReportedMethod(ReportedMethod):
    """A "reported, not reproduced" method: per-dataset accuracies read from CSV column(s).

    Parameters (config ``params``): ``csv`` (a path or a list of paths, relative to the repository
    root unless absolute; a file with a ``dataset`` column and one column per method), ``column``
    (the column to read; default: the method's display name), ``protocol`` (default ``"full"``)
    and ``seed`` (default 0). Accuracies must lie in [0, 1]; empty cells mean "not reported" and are
    skipped. The result has the columns ``dataset, protocol, seed, accuracy``.

    Subclass and set ``info`` (with ``reported=True``) and ``default_params``, or use
    :func:`reported_method`.
    """

    default_params: ClassVar[dict[str, Any]] = {"csv": [], "column": None, "protocol": "full", "seed": 0}

    def _paths(self, csv: Any) -> list[Path]:
        items = [csv] if isinstance(csv, (str, os.PathLike)) else list(csv or [])
        if not items:
            raise MethodNotReady(
                f"{self.info.display_name} ({self.info.name}): no `csv` parameter; set "
                f"`params: {{csv: <file with columns dataset,{self.info.display_name}>}}`"
            )
        return [repo_path(item) for item in items]

    def check_ready(self, **params: Any) -> None:
        self.reported_accuracies(**params)

    def covered_datasets(self, **params: Any) -> set[str] | None:
        return _datasets_of(self, **params)

    def reported_accuracies(self, **params: Any):
        import pandas as pd

        p = self.params(params)
        column = p.get("column") or self.info.display_name
        frames = []
        for path in self._paths(p.get("csv")):
            if not path.is_file():
                raise MethodNotReady(
                    f"{self.info.display_name} ({self.info.name}): reported-accuracy file {path} does not "
                    f"exist. Put the CSV (columns: dataset,{column},...) there or set `csv` in the config."
                )
            table = pd.read_csv(path)
            if "dataset" not in table.columns:
                raise MethodNotReady(f"{path}: no `dataset` column (columns: {list(table.columns)})")
            if column not in table.columns:
                continue  # e.g. TiCT appears in the UCR table only
            acc = pd.to_numeric(table[column], errors="coerce")
            bad = table.loc[acc.notna() & ((acc < 0) | (acc > 1)), "dataset"].tolist()
            if bad:
                raise ValueError(
                    f"{path}: column {column!r} has accuracies outside [0, 1] for {bad[:5]} "
                    f"(give accuracies as fractions, not percentages)"
                )
            frames.append(
                pd.DataFrame({"dataset": table["dataset"].astype(str), "accuracy": acc}).dropna(
                    subset=["accuracy"]
                )
            )
        if not frames:
            raise MethodNotReady(
                f"{self.info.display_name} ({self.info.name}): none of the CSV files "
                f"{[str(x) for x in self._paths(p.get('csv'))]} has a column {column!r}"
            )
        out = pd.concat(frames, ignore_index=True)
        dup = out["dataset"][out["dataset"].duplicated()].tolist()
        if dup:
            raise ValueError(f"{self.info.name}: datasets reported twice across the CSV files: {dup[:5]}")
        out.insert(1, "protocol", str(p.get("protocol", "full")))
        out.insert(2, "seed", int(p.get("seed", 0)))
        return out[["dataset", "protocol", "seed", "accuracy"]].reset_index(drop=True)


def reported_method(
    *,
    name: str,
    display_name: str,
    group: str,
    csv: str | Sequence[str],
    column: str | None = None,
    fits_on_target: bool = False,
    description: str = "",
    reference: str = "",
    pretraining_data: str = "",
    benchmark_in_pretraining: str = "unknown",
) -> type[CSVReportedMethod]:
    """Make a reported-method plugin class; a user's whole plugin file is then::

    from chorustic.methods import register
    from chorustic.methods.reported import reported_method

    register(reported_method(name="mymethod", display_name="MyMethod", group="Frozen TSFM",
                             csv="results/reference/mymethod.csv"))
    """
    info = MethodInfo(
        name=name,
        display_name=display_name,
        group=group,
        fits_on_target=fits_on_target,
        reported=True,
        description=description or f"reported accuracies of {display_name}",
        reference=reference,
        pretraining_data=pretraining_data,
        benchmark_in_pretraining=benchmark_in_pretraining,
    )
    params = {
        "csv": list(csv) if not isinstance(csv, str) else csv,
        "column": column,
        "protocol": "full",
        "seed": 0,
    }
    cls = type(
        f"Reported_{name}",
        (CSVReportedMethod,),
        {
            "info": info,
            "default_params": params,
            "__module__": sys._getframe(1).f_globals.get("__name__", __name__),
        },
    )
    return cls


class PublishedMethod(ReportedMethod):
    """A "reported, not reproduced" method read from the published reference results of aeon's results
    loaders (:mod:`chorustic.data.published`): resample 0 (the archive's train/test split) of each dataset.

    Parameters: ``estimator`` (aeon's name: ``HC2``, ``MR-Hydra``, ``QUANT``, ``MiniROCKET``, ``1NN-DTW``),
    ``cache`` (the folder of the local copies; default ``data/raw/published``, under the default data
    folder; relative to the repository root), ``base_url`` (default aeon's, timeseriesclassification.com),
    ``offline`` (never download; default false). Its jobs cover the datasets of the local copy once it is
    there; before, every dataset gets a job and one the file does not have is a failed run saying so.
    """

    default_params: ClassVar[dict[str, Any]] = {"estimator": None, "cache": "data/raw/published", "base_url": None,
                                                "offline": False}

    def _table(self, p: dict[str, Any]):
        from chorustic.data.published import PUBLISHED_URL, PublishedResultsError, published_accuracies

        try:
            table = published_accuracies(p["estimator"], repo_path(p["cache"]), base_url=p["base_url"] or PUBLISHED_URL,
                                         offline=bool(p["offline"]))
        except PublishedResultsError as exc:
            raise MethodNotReady(f"{self.info.display_name} ({self.info.name}): {exc}") from None
        table.insert(1, "protocol", "full")
        table.insert(2, "seed", 0)
        return table

    def check_ready(self, **params: Any) -> None:
        """Ready when the local copy is there and reads; never downloads (``chorustic methods`` stays offline):
        the first job downloads it."""
        from chorustic.data.published import published_file, published_url

        p = self.params(params)
        f = published_file(repo_path(p["cache"]), p["estimator"])
        if not f.is_file():
            raise MethodNotReady(f"{self.info.display_name} ({self.info.name}): not downloaded yet; its first job "
                                 f"downloads {published_url(p['estimator'], p['base_url'])} to {f} (or put a copy "
                                 "there)")
        self._table(p)

    def reported_accuracies(self, **params: Any):
        return self._table(self.params(params))

    def covered_datasets(self, **params: Any) -> set[str] | None:
        from chorustic.data.published import published_file

        p = self.params(params)
        if not published_file(repo_path(p["cache"]), p["estimator"]).is_file():
            return None  # not downloaded yet: never at plan time
        return _datasets_of(self, **params)


def published_method(*, name: str, display_name: str, estimator: str, description: str = "",
                     reference: str = "") -> type[PublishedMethod]:
    """Make a plugin class of one published estimator (``baselines/published.py``)."""
    info = MethodInfo(name=name, display_name=display_name, group="Classical", fits_on_target=True, reported=True,
                      description=description or f"published accuracies of {estimator} (aeon's reference results)",
                      reference=reference, pretraining_data="none: fitted on the target training split only",
                      benchmark_in_pretraining="no")
    return type(f"Published_{name}", (PublishedMethod,), {
        "info": info, "default_params": {**PublishedMethod.default_params, "estimator": estimator},
        "__module__": sys._getframe(1).f_globals.get("__name__", __name__)})


class RunReportedMethod(ReportedMethod):
    """A "reported, not reproduced" method read from another results folder's run table: every ``ok`` run of
    one method run in its ``accuracies.csv`` (the committed demo's, ``examples/demo/results``), whatever
    protocols it has; the aggregate step keeps those the configuration selects.

    Parameters: ``results`` (a results folder or its ``accuracies.csv``, relative to the repository root
    unless absolute) and ``method`` (the run name in it). Its jobs are the datasets that table has.
    """

    default_params: ClassVar[dict[str, Any]] = {"results": None, "method": None}

    def reported_accuracies(self, **params: Any):
        import pandas as pd

        p = self.params(params)
        path = repo_path(p["results"]) if p.get("results") else None
        if path is not None and path.suffix != ".csv":
            path = path / "accuracies.csv"
        if path is None or not path.is_file():
            raise MethodNotReady(f"{self.info.display_name} ({self.info.name}): no run table at {path}; set "
                                 "`results` to a results folder holding accuracies.csv")
        table = pd.read_csv(path, dtype={"seed": str})
        rows = table[(table["method"] == p["method"]) & (table["status"] == "ok")]
        if rows.empty:
            raise MethodNotReady(f"{self.info.display_name} ({self.info.name}): {path} has no `ok` run of "
                                 f"{p['method']!r} (its methods: {sorted(set(table['method']))})")
        return pd.DataFrame({"dataset": rows["dataset"].astype(str), "protocol": rows["protocol"].astype(str),
                             "seed": rows["seed"].astype(int), "accuracy": rows["accuracy"].astype(float)}
                            ).reset_index(drop=True)

    def check_ready(self, **params: Any) -> None:
        self.reported_accuracies(**params)

    def covered_datasets(self, **params: Any) -> set[str] | None:
        return _datasets_of(self, **params)


def run_reported_method(*, name: str, display_name: str, group: str, fits_on_target: bool, results: str,
                        method: str, pretraining_data: str = "", benchmark_in_pretraining: str = "unknown",
                        description: str = "", reference: str = "") -> type[RunReportedMethod]:
    """Make a plugin class of one method run of another results folder (``baselines/demo_results.py``)."""
    info = MethodInfo(name=name, display_name=display_name, group=group, fits_on_target=fits_on_target,
                      reported=True, description=description or f"the runs of {method} in {results}",
                      reference=reference, pretraining_data=pretraining_data,
                      benchmark_in_pretraining=benchmark_in_pretraining)
    return type(f"RunReported_{name}", (RunReportedMethod,), {
        "info": info, "default_params": {"results": results, "method": method},
        "__module__": sys._getframe(1).f_globals.get("__name__", __name__)})
