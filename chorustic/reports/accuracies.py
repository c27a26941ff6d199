"""Reading ``results/accuracies.csv`` (one row per run) into per-(archive, protocol) accuracy matrices.

Semantics (paper Sec. 4.1 "Evaluation protocol"):

* A *cell* is one method on one dataset under one protocol: the mean accuracy over the protocol's context
  sets (seeds). Fixed-shot uses five context sets shared across methods; the expected seeds of an
  (archive, protocol) are all seeds any run method has there. A cell is complete only when every
  expected seed has an ``ok`` row; otherwise it is *missing* and every missing seed is listed (status
  ``failed`` with its error, or ``absent`` when there is no row at all). Nothing is imputed and nothing
  is averaged over fewer context sets. Reported methods (``reported=True``, status ``reported``) contribute
  the mean of the values they report.
* A dataset with an ``ineligible`` row (at shot level k some class has fewer than k training examples) is
  excluded for every method of that protocol, and listed.
* Averages, ranks and tests compare all methods on the same datasets: the *common set*, the datasets on
  which every method that has at least one result has a value. A method without a single result is shown
  as such and does not empty the common set.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import numpy as np
import pandas as pd

# The table's vocabulary has one home: the aggregate step that writes it.
from chorustic.evaluation.aggregate import OPTIONAL_COLUMNS, REQUIRED_COLUMNS
from chorustic.evaluation.integrity import checksum_path
from chorustic.evaluation.job import RUN_STATUSES as STATUSES
from chorustic.protocols.base import FAMILIES, protocol_sort_key

__all__ = [
    "REQUIRED_COLUMNS",
    "STATUSES",
    "FAMILIES",
    "ARCHIVES",
    "ResultsError",
    "load_accuracies",
    "validate_accuracies",
    "method_metadata",
    "AccuracyMatrix",
    "build_matrices",
]

#: Archive order of every report (the paper's Table 1 is UEA, Table 2 UCR).
ARCHIVES = ("UEA", "UCR")


class ResultsError(ValueError):
    """``accuracies.csv`` is malformed; the message names the file, the rows and the fix."""


def _parse_bool(series: pd.Series, column: str, source: str) -> pd.Series:
    mapping = {"true": True, "false": False, "1": True, "0": False, "yes": True, "no": False}
    text = series.astype(str).str.strip().str.lower()
    bad = ~text.isin(mapping)
    if bad.any():
        rows = (np.flatnonzero(bad.to_numpy()) + 2).tolist()[:5]
        raise ResultsError(f"{source}: column {column!r} must be True/False; bad values on line(s) {rows}")
    return text.map(mapping).astype(bool)


def validate_accuracies(df: pd.DataFrame, source: str = "accuracies.csv") -> pd.DataFrame:
    """Check columns and values; return a normalised copy (bools parsed, ``seed`` int, ``accuracy`` and
    ``budget`` float, ``error`` str). Raises :class:`ResultsError` naming the file and lines."""
    missing = [c for c in REQUIRED_COLUMNS if c not in df.columns]
    if missing:
        raise ResultsError(
            f"{source}: missing column(s) {missing}; expected the columns written by the aggregate step "
            f"({', '.join(REQUIRED_COLUMNS)}). Re-run `snakemake` (or the aggregate rule) to regenerate it."
        )
    df = df.copy()
    for col in OPTIONAL_COLUMNS:
        if col not in df.columns:
            df[col] = np.nan
    for col in ("method", "display_name", "group", "archive", "dataset", "protocol", "family", "status"):
        df[col] = df[col].astype(str).str.strip()
        empty = df[col].isin(["", "nan", "None"])
        if empty.any():
            raise ResultsError(
                f"{source}: empty {col!r} on line(s) {(np.flatnonzero(empty) + 2).tolist()[:5]}"
            )
    df["fits_on_target"] = _parse_bool(df["fits_on_target"], "fits_on_target", source)
    df["reported"] = _parse_bool(df["reported"], "reported", source)
    df["error"] = df["error"].fillna("").astype(str)
    bad = ~df["status"].isin(STATUSES)
    if bad.any():
        raise ResultsError(
            f"{source}: unknown status {sorted(set(df.loc[bad, 'status']))} (expected one of {STATUSES}) "
            f"on line(s) {(np.flatnonzero(bad) + 2).tolist()[:5]}"
        )
    bad = ~df["family"].isin(FAMILIES)
    if bad.any():
        raise ResultsError(
            f"{source}: unknown family {sorted(set(df.loc[bad, 'family']))} (expected one of {FAMILIES})"
        )
    bad = ~df["archive"].isin(ARCHIVES)
    if bad.any():
        raise ResultsError(
            f"{source}: unknown archive {sorted(set(df.loc[bad, 'archive']))} (expected one of {ARCHIVES})"
        )
    df["accuracy"] = pd.to_numeric(df["accuracy"], errors="coerce")
    has_acc = df["status"].isin(["ok", "reported"])
    bad = has_acc & df["accuracy"].isna()
    if bad.any():
        raise ResultsError(
            f"{source}: status ok/reported without an accuracy on line(s) {(np.flatnonzero(bad) + 2).tolist()[:5]}"
        )
    bad = has_acc & ((df["accuracy"] < 0) | (df["accuracy"] > 1))
    if bad.any():
        raise ResultsError(
            f"{source}: accuracy outside [0, 1] on line(s) {(np.flatnonzero(bad) + 2).tolist()[:5]}; "
            "accuracies are fractions, not percentages"
        )
    df.loc[~has_acc, "accuracy"] = np.nan
    seeds = pd.to_numeric(df["seed"], errors="coerce")
    bad = seeds.isna() & (df["status"] != "ineligible")
    if bad.any():
        raise ResultsError(f"{source}: non-integer seed on line(s) {(np.flatnonzero(bad) + 2).tolist()[:5]}")
    df["seed"] = seeds.fillna(-1).astype(int)
    budget = pd.to_numeric(
        df["budget"].astype(object).where(df["budget"].notna(), None), errors="coerce"
    ).astype(float)
    needs = df["family"] != "full"
    from_name = df["protocol"].map(
        lambda p: float(m.group(1)) if (m := re.search(r"(\d+(?:\.\d+)?)$", p)) else np.nan
    )
    budget = budget.where(budget.notna() | ~needs, from_name)
    bad = needs & budget.isna()
    if bad.any():
        raise ResultsError(
            f"{source}: fixed-shot/proportional row without a budget on line(s) {(np.flatnonzero(bad) + 2).tolist()[:5]}"
        )
    df["budget"] = budget.where(needs, np.nan)
    # one protocol name <-> one (family, budget)
    proto = df.groupby("protocol")[["family", "budget"]].nunique(dropna=False)
    bad = proto[(proto > 1).any(axis=1)]
    if len(bad):
        raise ResultsError(f"{source}: protocol(s) {list(bad.index)} appear with several families or budgets")
    key = ["method", "archive", "dataset", "protocol", "seed"]
    dup = df.duplicated(key, keep=False) & (df["status"] != "ineligible")
    if dup.any():
        first = df.loc[dup, key].iloc[0].to_dict()
        raise ResultsError(
            f"{source}: {int(dup.sum())} duplicated runs (same {', '.join(key)}), e.g. {first}; "
            "the aggregate step must write one row per run"
        )
    method_metadata(df, source)  # consistency check
    return df


def load_accuracies(path: str | Path) -> pd.DataFrame:
    """Read and validate ``accuracies.csv``."""
    path = Path(path)
    if not path.is_file():
        raise ResultsError(
            f"{path} not found: run the benchmark first (`snakemake --cores all`, or the demo profile), "
            "whose aggregate step writes results/accuracies.csv"
        )
    _check_checksum(path)
    try:
        df = pd.read_csv(path, dtype={"seed": str, "budget": str, "error": str}, keep_default_na=True)
    except Exception as exc:  # pandas' parser errors are informative; name the file
        raise ResultsError(f"{path}: cannot be read as CSV ({exc})") from exc
    return validate_accuracies(df, source=str(path))


def _check_checksum(path: Path) -> None:
    """The aggregate step writes ``accuracies.csv.sha256`` with the table; a table that no longer matches it
    was truncated or edited afterwards and is refused (a table without one, e.g. hand-made, is read as is)."""
    from chorustic.io import sha256_file

    sums = checksum_path(path)
    if not sums.is_file():
        return
    expected = sums.read_text(encoding="utf-8").split()[0] if sums.read_text(encoding="utf-8").split() else ""
    if sha256_file(path) != expected:
        raise ResultsError(
            f"{path} does not match the checksum the aggregate step wrote with it ({sums.name}): it was truncated or "
            f"edited afterwards, so its rows cannot be trusted. Re-make it: delete {path} and run `snakemake` again "
            f"(or `chorustic aggregate`). If you edited it on purpose, delete {sums} too."
        )


def method_metadata(df: pd.DataFrame, source: str = "accuracies.csv") -> pd.DataFrame:
    """One row per method (index = run name): display_name, group, fits_on_target, reported, and
    benchmark_in_pretraining (``yes`` / ``no`` / ``unknown``; empty for a table made before it was
    recorded, which no table then marks)."""
    cols = ["display_name", "group", "fits_on_target", "reported"]
    meta = df.groupby("method")[cols].nunique()
    bad = meta[(meta > 1).any(axis=1)]
    if len(bad):
        raise ResultsError(f"{source}: method(s) {list(bad.index)} have inconsistent {cols} across rows")
    out = df.groupby("method")[cols].first()
    seen = (df.groupby("method")["benchmark_in_pretraining"].first() if "benchmark_in_pretraining" in df.columns
            else pd.Series(dtype=object))
    out["benchmark_in_pretraining"] = [
        v if isinstance(v, str) and v in ("yes", "no", "unknown") else "" for v in seen.reindex(out.index)]
    dup = out["display_name"].duplicated(keep=False)
    if dup.any():
        raise ResultsError(
            f"{source}: display name(s) {sorted(set(out.loc[dup, 'display_name']))} used by several methods"
        )
    return out


@dataclasses.dataclass
class AccuracyMatrix:
    """Seed-averaged accuracies of one (archive, protocol), with everything that is missing."""

    archive: str
    protocol: str
    family: str
    budget: float | None
    values: pd.DataFrame
    """eligible datasets (rows, sorted) x methods (columns); NaN = missing cell"""
    missing: pd.DataFrame
    """one row per missing run: method, dataset, seed, status ('failed' | 'absent'), error"""
    ineligible: pd.DataFrame
    """one row per excluded dataset: dataset, reason"""
    seeds: list[int]
    """expected context sets (seeds) of run methods"""
    by_seed: pd.DataFrame = dataclasses.field(
        default_factory=lambda: pd.DataFrame(columns=["method", "dataset", "seed", "accuracy"]))
    """the values of every complete cell of a run method, one row per context set (seed): method, dataset,
    seed, accuracy (the column holds whatever measure the matrix holds)"""

    @property
    def methods(self) -> list[str]:
        return list(self.values.columns)

    @property
    def methods_with_results(self) -> list[str]:
        return [m for m in self.values.columns if self.values[m].notna().any()]

    @property
    def methods_without_results(self) -> list[str]:
        return [m for m in self.values.columns if not self.values[m].notna().any()]

    def common(self, methods: list[str] | None = None) -> list[str]:
        """Datasets where every one of ``methods`` (default: every method with a result) has a value."""
        methods = (
            self.methods_with_results if methods is None else [m for m in methods if m in self.values.columns]
        )
        if not methods:
            return []
        return list(self.values.index[self.values[methods].notna().all(axis=1)])

    def complete(self, methods: list[str] | None = None) -> pd.DataFrame:
        """The values restricted to the common datasets of ``methods`` (default: methods with results)."""
        methods = (
            self.methods_with_results if methods is None else [m for m in methods if m in self.values.columns]
        )
        return self.values.loc[self.common(methods), methods]

    def n_missing(self, method: str | None = None) -> int:
        if method is None:
            return len(self.missing)
        return int((self.missing["method"] == method).sum())

    def label(self) -> str:
        return f"{self.archive} {self.protocol}"


def _matrix(df: pd.DataFrame, archive: str, protocol: str) -> AccuracyMatrix:
    sub = df[(df["archive"] == archive) & (df["protocol"] == protocol)]
    family = sub["family"].iloc[0]
    budget = None if family == "full" else float(sub["budget"].iloc[0])
    inel_rows = sub[sub["status"] == "ineligible"]
    inel = (
        inel_rows.groupby("dataset")
        .agg(
            methods=("method", lambda s: ", ".join(sorted(set(s)))),
            reason=("error", lambda s: next((e for e in s if e), "")),
        )
        .reset_index()
    )
    eligible = sorted(set(sub["dataset"]) - set(inel["dataset"]))
    methods = sorted(set(sub["method"]))
    runs = sub[(sub["status"] != "ineligible") & sub["dataset"].isin(eligible)]
    run_rows = runs[~runs["reported"]]
    seeds = sorted(set(run_rows["seed"]))
    values = pd.DataFrame(
        np.nan, index=pd.Index(eligible, name="dataset"), columns=pd.Index(methods, name="method")
    )
    missing = []
    by_cell = {k: g for k, g in runs.groupby(["method", "dataset"])}
    reported = set(sub.loc[sub["reported"], "method"])
    for m in methods:
        for d in eligible:
            g = by_cell.get((m, d))
            if m in reported:
                ok = g[g["status"].isin(["ok", "reported"])] if g is not None else None
                if ok is None or ok.empty:
                    missing.append(
                        {
                            "method": m,
                            "dataset": d,
                            "seed": "",
                            "status": "absent",
                            "error": "no reported value",
                        }
                    )
                else:
                    values.loc[d, m] = float(ok["accuracy"].mean())
                continue
            status = {} if g is None else dict(zip(g["seed"], zip(g["status"], g["error"])))
            accs = {} if g is None else dict(zip(g["seed"], g["accuracy"]))
            complete = True
            for s in seeds:
                st, err = status.get(s, ("absent", ""))
                if st not in ("ok", "reported"):
                    complete = False
                    missing.append(
                        {
                            "method": m,
                            "dataset": d,
                            "seed": s,
                            "status": st,
                            "error": err or ("no result row" if st == "absent" else ""),
                        }
                    )
            if complete and seeds:
                values.loc[d, m] = float(np.mean([accs[s] for s in seeds]))
    miss = pd.DataFrame(missing, columns=["method", "dataset", "seed", "status", "error"])
    per_seed = run_rows[run_rows["status"] == "ok"][["method", "dataset", "seed", "accuracy"]]
    complete = values.stack().dropna().index  # (dataset, method) of the complete cells
    per_seed = per_seed[pd.MultiIndex.from_frame(per_seed[["dataset", "method"]]).isin(complete)]
    return AccuracyMatrix(
        archive=archive,
        protocol=protocol,
        family=family,
        budget=budget,
        values=values,
        missing=miss,
        ineligible=inel[["dataset", "methods", "reason"]]
        if len(inel)
        else pd.DataFrame(columns=["dataset", "methods", "reason"]),
        seeds=seeds,
        by_seed=per_seed.reset_index(drop=True),
    )


def build_matrices(
    df: pd.DataFrame, methods: list[str] | None = None
) -> dict[tuple[str, str], AccuracyMatrix]:
    """All (archive, protocol) matrices present in ``df`` (optionally only some methods), in report order
    (UEA before UCR; full, fixed-shot by k, proportional by fraction)."""
    if methods is not None:
        unknown = sorted(set(methods) - set(df["method"]))
        if unknown:
            raise ResultsError(
                f"method(s) {unknown} are not in the results; present: {sorted(set(df['method']))}"
            )
        df = df[df["method"].isin(methods)]
    keys = df[["archive", "protocol", "family", "budget"]].drop_duplicates()
    keys = sorted(
        keys.itertuples(index=False),
        key=lambda k: (ARCHIVES.index(k.archive), protocol_sort_key(k.protocol, k.family, k.budget)),
    )
    return {(k.archive, k.protocol): _matrix(df, k.archive, k.protocol) for k in keys}
