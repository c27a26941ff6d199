"""Harness re-run against published: each classical method this harness runs beside its published results
(``published_<plugin>`` runs, :mod:`chorustic.data.published`), per dataset, on the archive's own
train/test split (the full-context protocol, seed 0, against the published resample 0).

A re-run that matches its published numbers within noise says the harness runs the method as its authors
did; a systematic difference says it does not (another window, fewer kernels, other preprocessing).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from chorustic.reports.intervals import interval_caption
from chorustic.reports.layout import archive_title
from chorustic.reports.render import Cell, Table, fmt
from chorustic.stats import bootstrap_mean_ci

__all__ = ["PUBLISHED_PREFIX", "OFF_PP", "published_pairs", "published_differences", "published_table"]

PUBLISHED_PREFIX = "published_"
#: A dataset whose re-run differs from the published accuracy by more than this many points is counted.
OFF_PP = 2.0


def published_pairs(meta: pd.DataFrame) -> dict[str, str]:
    """Re-run method -> its published run, for every pair present in the results."""
    return {m.removeprefix(PUBLISHED_PREFIX): m for m in meta.index
            if m.startswith(PUBLISHED_PREFIX) and bool(meta.loc[m, "reported"])
            and m.removeprefix(PUBLISHED_PREFIX) in meta.index
            and not bool(meta.loc[m.removeprefix(PUBLISHED_PREFIX), "reported"])}


def published_differences(df: pd.DataFrame, meta: pd.DataFrame) -> pd.DataFrame:
    """One row per (re-run method, dataset) that both have: archive, dataset, method, published, rerun and
    published accuracies, difference in points (re-run minus published)."""
    cols = ["archive", "dataset", "method", "published", "rerun_acc", "published_acc", "diff_pp"]
    full = df[(df["protocol"] == "full") & (df["seed"] == 0)]
    rows = []
    for method, pub in published_pairs(meta).items():
        a = full[(full["method"] == method) & (full["status"] == "ok")][["archive", "dataset", "accuracy"]]
        b = full[(full["method"] == pub) & (full["status"] == "reported")][["archive", "dataset", "accuracy"]]
        both = a.merge(b, on=["archive", "dataset"], suffixes=("_rerun", "_pub"))
        for r in both.itertuples(index=False):
            rows.append({"archive": r.archive, "dataset": r.dataset, "method": method, "published": pub,
                         "rerun_acc": r.accuracy_rerun, "published_acc": r.accuracy_pub,
                         "diff_pp": 100 * (r.accuracy_rerun - r.accuracy_pub)})
    return pd.DataFrame(rows, columns=cols).sort_values(["archive", "method", "dataset"], ignore_index=True)


def published_table(diffs: pd.DataFrame, meta: pd.DataFrame, archive: str, n_eligible: int, name: str) -> Table:
    d = diffs[diffs["archive"] == archive]
    header = ["Method", "Datasets", "Re-run (%)", "Published (%)", "\u0394 (pp)", "95% CI of \u0394",
              f"|\u0394| > {OFF_PP:g} pp", "Largest |\u0394|"]
    body, data = [], []
    for method, g in d.groupby("method", sort=False):
        lo, hi = bootstrap_mean_ci(g["diff_pp"].to_numpy())
        worst = g.loc[g["diff_pp"].abs().idxmax()]
        row = {"method": method, "n_datasets": len(g), "rerun_mean": g["rerun_acc"].mean(),
               "published_mean": g["published_acc"].mean(), "diff_pp": g["diff_pp"].mean(),
               "diff_ci_low": lo[0], "diff_ci_high": hi[0], "n_off": int((g["diff_pp"].abs() > OFF_PP).sum()),
               "worst_dataset": worst["dataset"], "worst_diff_pp": worst["diff_pp"]}
        data.append(row)
        body.append([Cell(str(meta.loc[method, "display_name"])), Cell(str(len(g))),
                     Cell(fmt(row["rerun_mean"], 2, 100)), Cell(fmt(row["published_mean"], 2, 100)),
                     Cell(fmt(row["diff_pp"], 2, signed=True)),
                     Cell("-" if np.isnan(lo[0]) else f"[{lo[0]:+.2f}, {hi[0]:+.2f}]"),
                     Cell(str(row["n_off"])), Cell(f"{worst['dataset']} ({worst['diff_pp']:+.2f})")])
    notes = [
        "The harness's full-context run (the archive's train/test split, seed 0) against the published accuracy "
        "of the same split (resample 0 of the bake-off redux reference results, read with aeon's results "
        "loaders); \u0394 = re-run minus published, in accuracy points, on the datasets both have.",
        interval_caption().replace("the common datasets", "these datasets"),
        "A method run with other parameters than the published one differs by design: the 1NN-DTW reference "
        "uses a full warping window, and a MiniRocket or MultiRocket-Hydra run with fewer kernels (the demo's) "
        "is not the published configuration.",
    ]
    return Table(name=name, caption=f"Harness re-run against published results on {archive_title(archive, n_eligible)}",
                 header=header, align="lrrrrrrl", body=body, data=pd.DataFrame(data), notes=notes)
