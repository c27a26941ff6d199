"""``chorustic report``: everything reviewers read, from ``results/accuracies.csv`` to ``reports/``.

Layout of the output folder::

    reports/README.md                 index: coverage, Tables 1-2 inline, links, reproduction verdict, problems
    reports/tables/<name>.{tex,md,csv}
        table1_uea_main, table2_ucr_main           Tables 1-2 (full protocol): group, method, target fit,
                                                   avg. accuracy, avg. rank, W/T/L
        table3_fixed_shot_<archive>                Table 3 (one column per k)
        table_scaling_<archive>                    the numbers of Figure 2 (one column per fraction)
        table4_ablation_<archive>                  Table 4
        tableD_<archive>_per_dataset               appendix per-dataset accuracies
        table_stats_<archive>                      appendix statistical comparison (Wilcoxon + Holm)
        table_cost_<archive>                       accuracy against cost (wall time, device, memory)
        table_intervals_<archive>_<family>         companion of Tables 1-3 and the scaling table: bootstrap
                                                   intervals, s.d. over seeds, ranks, W/T/L, difference from
                                                   the reference with its interval (chorustic.reports.intervals)
        table_<measure>_<archive>_full, table_metrics_<archive>   the measures of ``reports.metrics``
                                                   beyond accuracy, from results/metrics.csv
        summary_all.csv, stats_all.csv             every archive x protocol (machine-readable)
        intervals_all.csv, seed_spread.csv, metrics_all.csv
        (every table also as <name>.html: what `snakemake --report` shows)
    reports/figures/<name>.{png,pdf}
        scaling_<archive>, cd_<archive>, scatter_<archive>, violin_<archive>, mcm_<archive>, cost_<archive>,
        cd_<measure>_<archive>
    reports/reproduction/reproduction.{md,html} (+ CSVs)  the check against the paper
    reports/reproduction/reference_results.{md,html,csv}  with ``reference_results``: which runs differ
                                                   from a reference results folder, in how many test cases
    reports/overview/coverage.html                 coverage, missing runs, ineligible datasets, problems
    reports/missing_runs.csv, reports/ineligible_datasets.csv
    reports/aeon/<protocol>/classification/<measure>/<EST>_<measure>.csv   for aeon's results loaders

Every file is written atomically. A failing table or figure is reported (reports/README.md, "Problems";
stderr) and never stops the others. Files of a previous build that this build did not write again are
removed (only files listed in the previous build's manifest, ``reports/.report-manifest.json``).
"""

from __future__ import annotations

import dataclasses
import json
import sys
import traceback
import warnings
from pathlib import Path
from typing import Callable

import pandas as pd

from chorustic.errors import NoSpaceError
from chorustic.evaluation.metrics import DEFAULT_METRICS, METRICS, metric_values, read_metrics
from chorustic.evaluation.results import accuracies_file, metrics_file
from chorustic.io import atomic_write_json, atomic_write_text, sha256_file
from chorustic.protocols.base import FAMILIES, protocol_label
from chorustic.reports import figures as figs
from chorustic.reports.accuracies import (
    ARCHIVES,
    AccuracyMatrix,
    ResultsError,
    build_matrices,
    load_accuracies,
    method_metadata,
)
from chorustic.reports.layout import (
    DEFAULT_ABLATIONS,
    DEFAULT_REFERENCE,
    archive_title,
    leakage_note,
    method_label,
    ordered_methods,
)
from chorustic.reports.catalog import FOLDERS
from chorustic.reports.intervals import (
    interval_frame,
    interval_table,
    metrics_overview_table,
    seed_spread_frame,
)
from chorustic.reports.interop import AEON_SUBDIR, aeon_estimator_names, write_aeon_results
from chorustic.reports.paper import default_reference_dir, load_paper_reference
from chorustic.reports.published import PUBLISHED_PREFIX
from chorustic.reports.render import Table, html_page, to_markdown, write_table
from chorustic.reports.reproduction import compare_with_paper, differences_from_reference, paper_self_check
from chorustic.reports.tables import (
    ablation_table,
    budget_table,
    comparison_frame,
    cost_frame,
    cost_table,
    main_table,
    per_dataset_table,
    stats_table,
    summary_frame,
)
from chorustic.stats import significance_note, smallest_attainable_p
from chorustic.reports.writeup import write_reference_comparison, write_reproduction

__all__ = ["ReportConfig", "ReportResult", "build_report", "resolve_method", "MANIFEST_NAME"]

MANIFEST_NAME = ".report-manifest.json"


@dataclasses.dataclass
class ReportConfig:
    reference: str = DEFAULT_REFERENCE
    """reference method: run name or display name"""
    alpha: float = 0.05
    ablations: dict[str, tuple[str, str]] = dataclasses.field(default_factory=lambda: dict(DEFAULT_ABLATIONS))
    """ablation run name -> (factor, variant label) (Table 4); these runs stay out of the other tables"""
    methods: list[str] | None = None
    """restrict the report to these run names (default: every method in the results)"""
    paper_dir: Path | None = None
    """the paper's numbers; default ``<results>/reference``, else the repository's ``results/reference``"""
    off_threshold_pp: float = 2.0
    figure_formats: tuple[str, ...] = figs.FORMATS
    reference_results: Path | None = None
    """another results folder (or its ``accuracies.csv``), e.g. ``examples/demo/results``: list the runs
    whose predictions differ from it, and in how many test cases"""
    metrics: tuple[str, ...] = DEFAULT_METRICS
    """the measures (:data:`chorustic.evaluation.metrics.METRICS`) that get tables, ranks and CD diagrams;
    accuracy (the paper's) always gets the paper's tables"""


@dataclasses.dataclass
class ReportResult:
    out_dir: Path
    written: list[Path]
    problems: list[str]
    reference: str | None
    paper_check_passed: bool | None

    @property
    def ok(self) -> bool:
        return not self.problems


def resolve_method(name: str, meta: pd.DataFrame) -> str | None:
    """Run name for ``name`` given as a run name or a display name (case-insensitive); None if absent."""
    if name in meta.index:
        return name
    low = name.strip().lower()
    for m in meta.index:
        if m.lower() == low or str(meta.loc[m, "display_name"]).lower() == low:
            return m
    return None


class _Builder:
    def __init__(self, out_dir: Path, formats):
        self.out = out_dir
        self.formats = formats
        self.written: list[Path] = []
        self.problems: list[str] = []
        self.notes: list[str] = []  # artifacts skipped on purpose (too few methods or datasets)
        self.tables: list[tuple[str, Table]] = []
        self.figures: list[tuple[str, str, str]] = []  # (section, title, stem relative to out)

    def attempt(self, what: str, fn: Callable[[], object]):
        try:
            return fn()
        except NoSpaceError:  # a full disk fails every artifact alike: stop at the first, one line naming it
            raise
        except Exception as exc:  # one failing artifact never stops the others
            msg = f"{what}: {type(exc).__name__}: {exc}"
            self.problems.append(msg)
            print(f"chorustic report: {msg}\n{traceback.format_exc()}", file=sys.stderr)
            return None

    def table(self, section: str, t: Table) -> None:
        self.written += write_table(t, self.out / "tables")
        self.tables.append((section, t))

    def figure(self, section: str, title: str, name: str, fig) -> None:
        self.written += figs.save_figure(fig, self.out / "figures" / name, self.formats)
        self.figures.append((section, title, f"figures/{name}"))

    def text(self, rel: str, text: str) -> None:
        atomic_write_text(self.out / rel, text)
        self.written.append(self.out / rel)

    def csv(self, rel: str, df: pd.DataFrame) -> None:
        self.text(rel, df.to_csv(index=False, float_format="%.10g", lineterminator="\n"))


def _concat(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """Concatenate non-empty frames (all-NA columns keep their dtype without pandas' FutureWarning)."""
    frames = [f for f in frames if len(f)]
    if not frames:
        return pd.DataFrame()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return pd.concat(frames, ignore_index=True)


def _labels(meta: pd.DataFrame) -> dict[str, str]:
    return {
        m: method_label(m, meta) + (" (reported)" if meta.loc[m, "reported"] else "")
        for m in meta.index
    }


def build_report(
    results_dir: str | Path, out_dir: str | Path, config: ReportConfig | None = None
) -> ReportResult:
    """Write every table, figure and the reproduction check for ``<results_dir>/accuracies.csv``.

    Raises :class:`~chorustic.reports.accuracies.ResultsError` when the results cannot be read at all;
    any later failure is collected in ``ReportResult.problems``.
    """
    config = config or ReportConfig()
    results_dir, out_dir = Path(results_dir), Path(out_dir)
    acc_path = results_dir / "accuracies.csv"
    df = load_accuracies(acc_path)
    meta = method_metadata(df, str(acc_path))
    if config.methods:
        unknown = [m for m in config.methods if resolve_method(m, meta) is None]
        if unknown:
            raise ResultsError(f"--methods {unknown} not in {acc_path}; present: {sorted(meta.index)}")
        keep = {resolve_method(m, meta) for m in config.methods}
        ref_run = resolve_method(config.reference, meta)
        if ref_run:
            keep.add(ref_run)
        df = df[df["method"].isin(keep)]
        meta = meta.loc[sorted(keep)]
    reference = resolve_method(config.reference, meta)
    b = _Builder(out_dir, config.figure_formats)
    for folder in FOLDERS:  # the report rule's outputs exist even when every artifact of one failed
        (out_dir / folder).mkdir(parents=True, exist_ok=True)
    if reference is None:
        b.problems.append(
            f"reference method {config.reference!r} is not in the results (methods: "
            f"{', '.join(meta.index)}): no W/T/L, tests or ablation deltas"
        )
    ablations = {m: v for m, v in config.ablations.items()}
    matrices = build_matrices(df)
    ablation_runs = [m for m in ablations if m in meta.index]
    # published classical results (chorustic.reports.published) cover some datasets only: beside the paper's
    # tables, never in them, so that they never shrink the datasets the paper's tables compare on
    published_runs = [m for m in meta.index if m.startswith(PUBLISHED_PREFIX) and bool(meta.loc[m, "reported"])]
    main_exclude = ablation_runs + published_runs

    # ---- summaries of every archive x protocol (main methods; ranks among them)
    summaries = []
    for (archive, protocol), mx in matrices.items():
        methods = [m for m in mx.methods if m not in main_exclude]
        if methods:
            summaries.append(summary_frame(mx, meta, reference, methods))
    summary_all = _concat(summaries)
    b.attempt("summary_all.csv", lambda: b.csv("tables/summary_all.csv", summary_all))

    # ---- Tables 1-2, per-dataset, statistics (full protocol)
    table_number = {"UEA": 1, "UCR": 2}
    stats_frames = []
    for (archive, protocol), mx in matrices.items():
        layout = f"main_{archive}"
        comp = b.attempt(
            f"statistics {archive} {protocol}",
            lambda: comparison_frame(mx, meta, reference, config.alpha, layout, main_exclude)
            if reference
            else pd.DataFrame(),
        )
        if comp is not None and len(comp):
            stats_frames.append(comp)
        if protocol != "full":
            continue
        a = archive.lower()
        b.attempt(
            f"Table {table_number[archive]} ({archive})",
            lambda: b.table(
                "Main results",
                main_table(
                    mx, meta, reference, f"table{table_number[archive]}_{a}_main", layout, main_exclude
                ),
            ),
        )
        b.attempt(
            f"per-dataset table ({archive})",
            lambda: b.table(
                "Per-dataset results (appendix)",
                per_dataset_table(mx, meta, f"tableD_{a}_per_dataset", layout, main_exclude),
            ),
        )
        if comp is not None and len(comp):
            b.attempt(
                f"statistical comparison table ({archive})",
                lambda: b.table(
                    "Statistical comparison (appendix)",
                    stats_table(comp, mx, meta, reference, config.alpha, f"table_stats_{a}"),
                ),
            )
    stats_all = _concat(stats_frames)
    b.attempt("stats_all.csv", lambda: b.csv("tables/stats_all.csv", stats_all))
    measures = _read_measures(results_dir)  # results/metrics.csv, once: the measure tables and the aeon export
    accuracy_frames = b.attempt("intervals and spread", lambda: _intervals(b, matrices, meta, reference, main_exclude))
    b.attempt("harness re-run vs published", lambda: _published(b, df, meta, matrices, reference, ablation_runs))
    b.attempt("measures", lambda: _measures(b, results_dir, measures, df, matrices, accuracy_frames or {}, meta,
                                            reference, main_exclude, config))
    quick = b.attempt("quick look", lambda: _quick_look(b, matrices, meta, main_exclude))

    # ---- Table 3 (fixed-shot), scaling table + Figure 2 (proportional), Table 4 (ablations)
    for archive in ARCHIVES:
        a = archive.lower()
        fixed = [mx for (ar, _), mx in matrices.items() if ar == archive and mx.family == "fixed_shot"]
        prop = [mx for (ar, _), mx in matrices.items() if ar == archive and mx.family == "proportional"]
        if fixed:
            b.attempt(
                f"Table 3 ({archive})",
                lambda: b.table(
                    "Low-label results",
                    budget_table(fixed, meta, f"table3_fixed_shot_{a}", main_exclude, reference),
                ),
            )
        if prop:
            b.attempt(
                f"scaling table ({archive})",
                lambda: b.table(
                    "Low-label results",
                    budget_table(prop, meta, f"table_scaling_{a}", main_exclude, reference),
                ),
            )
            b.attempt(
                f"Figure 2 scaling curve ({archive})",
                lambda: _scaling(b, prop, meta, reference, main_exclude, archive),
            )
        full = matrices.get((archive, "full"))
        if full is not None and not any(m in full.methods for m in ablations):
            b.notes.append(
                f"Table 4 (ablations, {archive}) not made: the results hold none of its variant runs "
                f"({', '.join(ablations)}); the paper profile (`snakemake --cores all`, config/config.yaml) "
                "evaluates them, or add them to `evaluate_extra:` in a config file of your own"
            )
        if full is not None and reference in full.methods and any(m in full.methods for m in ablations):
            b.attempt(
                f"Table 4 ablations ({archive})",
                lambda: b.table(
                    "Ablations", ablation_table(full, meta, reference, ablations, f"table4_ablation_{a}")
                ),
            )
        if full is not None:
            b.attempt(
                f"figures ({archive})",
                lambda: _archive_figures(b, full, meta, reference, main_exclude, config),
            )
            b.attempt(
                f"accuracy and cost ({archive})",
                lambda: _cost(b, df, full, meta, reference, main_exclude),
            )

    # ---- missing runs / ineligible datasets
    miss = [mx.missing.assign(archive=mx.archive, protocol=mx.protocol) for mx in matrices.values()]
    miss_df = pd.concat(miss, ignore_index=True) if miss else pd.DataFrame()
    cols = ["archive", "protocol", "method", "display_name", "dataset", "seed", "status", "error"]
    if len(miss_df):
        miss_df["display_name"] = miss_df["method"].map(meta["display_name"])
        miss_df = miss_df[cols]
    else:
        miss_df = pd.DataFrame(columns=cols)
    b.attempt("missing_runs.csv", lambda: b.csv("missing_runs.csv", miss_df))
    inel = [
        mx.ineligible.assign(archive=mx.archive, protocol=mx.protocol)
        for mx in matrices.values()
        if len(mx.ineligible)
    ]
    inel_df = (
        pd.concat(inel, ignore_index=True)[["archive", "protocol", "dataset", "methods", "reason"]]
        if inel
        else pd.DataFrame(columns=["archive", "protocol", "dataset", "methods", "reason"])
    )
    b.attempt("ineligible_datasets.csv", lambda: b.csv("ineligible_datasets.csv", inel_df))

    # ---- the same accuracies for aeon's results loaders
    b.attempt("aeon result files", lambda: b.written.extend(
        write_aeon_results(df, meta, out_dir / AEON_SUBDIR, measures)))

    # ---- reproduction check against the paper
    paper_passed = b.attempt(
        "reproduction check",
        lambda: _reproduction(b, results_dir, config, matrices, meta, summary_all, reference),
    )

    # ---- against reference results (another machine's run, the committed demo)
    against = None
    if config.reference_results is not None:
        against = b.attempt(
            "comparison with reference results", lambda: _reference_results(b, results_dir, df, config)
        )

    # ---- index, and the overview page of `snakemake --report`
    b.attempt(
        "README.md",
        lambda: _readme(
            b, acc_path, df, meta, matrices, reference, main_exclude, paper_passed, miss_df, config, against, quick
        ),
    )
    b.attempt(
        "overview/coverage.html",
        lambda: _overview(b, acc_path, df, meta, matrices, reference, main_exclude, paper_passed, miss_df, inel_df),
    )
    _prune_stale(out_dir, b.written)
    return ReportResult(out_dir, b.written, b.problems, reference, paper_passed)


#: The columns of ``tables/quick_look.csv``.
QUICK_LOOK_COLUMNS = ["archive", "method", "display_name", "n_datasets", "n_selection", "measured_mean",
                      "predicted_archive_mean", "error", "text"]


def _quick_look(b: _Builder, matrices, meta, exclude) -> pd.DataFrame:
    """``tables/quick_look.csv``: for each method run here (not reported) on part of an archive that includes
    datasets of the quick-look selection (config/quick_look.yaml), its measured full-context mean on them and
    the archive mean it predicts (:func:`chorustic.reports.quick_look.predict_archive_mean`, a prediction with
    its error). Nothing when every dataset of the archive ran: its mean is then measured."""
    from chorustic.reports import quick_look as ql

    rows = []
    selections = ql.read_selection()
    for archive in ARCHIVES:
        mx = matrices.get((archive, "full"))
        if mx is None or len(mx.values) >= len(ql.archive_means(archive)):
            continue
        selection = set(selections[archive])
        for m in mx.methods_with_results:
            if m in exclude or bool(meta.loc[m, "reported"]):
                continue
            acc = {d: float(v) for d, v in mx.values[m].dropna().items() if d in selection}
            if not acc:
                continue
            p = ql.predict_archive_mean(acc, archive)
            rows.append({"archive": archive, "method": m, "display_name": str(meta.loc[m, "display_name"]),
                         "n_datasets": p.n_datasets, "n_selection": p.n_selection,
                         "measured_mean": p.subset_mean, "predicted_archive_mean": p.mean, "error": p.error,
                         "text": p.text})
    out = pd.DataFrame(rows, columns=QUICK_LOOK_COLUMNS)
    if len(out):
        b.csv("tables/quick_look.csv", out)
    return out


def _intervals(b: _Builder, matrices, meta, reference, exclude) -> dict[tuple[str, str], pd.DataFrame]:
    """Companion tables of accuracy: bootstrap intervals and spread over seeds, one per (archive, family);
    ``intervals_all.csv`` (every archive x protocol) and ``seed_spread.csv`` (every dataset). Returns the
    frames by (archive, protocol)."""
    frames, spread = [], []
    by_key: dict[tuple[str, str], pd.DataFrame] = {}
    for archive in ARCHIVES:
        for family in FAMILIES:
            mxs = [mx for (ar, _), mx in matrices.items() if ar == archive and mx.family == family]
            if not mxs:
                continue
            layout = f"main_{archive}" if family == "full" else "low_label"
            methods = ordered_methods(sorted({m for mx in mxs for m in mx.methods if m not in exclude}), meta, layout)
            fam = [interval_frame(mx, meta, reference, [m for m in methods if m in mx.methods]) for mx in mxs]
            frames += fam
            by_key.update({(mx.archive, mx.protocol): fr for mx, fr in zip(mxs, fam)})
            spread += [seed_spread_frame(mx, meta) for mx in mxs]
            b.attempt(
                f"intervals ({archive}, {family})",
                lambda: b.table("Spread and intervals", interval_table(
                    fam, mxs, meta, reference, f"table_intervals_{archive.lower()}_{family}", layout)),
            )
    b.csv("tables/intervals_all.csv", _concat(frames))
    b.csv("tables/seed_spread.csv", _concat(spread))
    return by_key


def _measures(b: _Builder, results_dir: Path, measures: pd.DataFrame | None, df: pd.DataFrame, matrices,
              accuracy_frames: dict[tuple[str, str], pd.DataFrame], meta, reference, exclude,
              config: ReportConfig) -> None:
    """The measures of ``config.metrics`` beyond accuracy (full protocol): a table with intervals and a CD
    diagram each, and one table of every measure side by side, from ``metrics.csv`` (``measures``); the
    accuracy column is the companion tables' (``accuracy_frames``, :func:`_intervals`)."""
    extra = [m for m in config.metrics if m != "accuracy"]
    if not extra:
        return
    if measures is None:
        path = metrics_file(results_dir / "accuracies.csv")
        b.problems.append(
            f"reports.metrics asks for {', '.join(extra)}, but {path} does not exist: it is written with accuracies.csv "
            "by the aggregate step; run `chorustic aggregate` (or `snakemake`) again"
        )
        return
    frames: dict[str, dict[str, pd.DataFrame]] = {}
    sizes: dict[str, int] = {}
    for archive in ARCHIVES:
        if (archive, "full") in accuracy_frames:
            frames.setdefault(archive, {})["accuracy"] = accuracy_frames[(archive, "full")]
            sizes[archive] = len(matrices[(archive, "full")].values)
    for name in extra:
        metric = METRICS[name]
        mats = build_matrices(metric_values(df, measures, name))
        for archive in ARCHIVES:
            mx = mats.get((archive, "full"))
            if mx is None:
                continue
            layout = f"main_{archive}"
            methods = ordered_methods([m for m in mx.methods if m not in exclude], meta, layout)
            fr = interval_frame(mx, meta, reference, methods, metric)
            frames.setdefault(archive, {})[name] = fr
            sizes.setdefault(archive, len(mx.values))
            a = archive.lower()
            b.attempt(f"{metric.label} table ({archive})", lambda: b.table(
                "Other measures", interval_table([fr], [mx], meta, reference, f"table_{name}_{a}_full", layout, metric)))
            b.attempt(f"{metric.label} critical-difference diagram ({archive})",
                      lambda: _cd(b, mx, meta, exclude, config, metric))
    for archive, by in frames.items():
        b.attempt(f"every measure ({archive})", lambda: b.table("Other measures", metrics_overview_table(
            by, meta, archive, sizes[archive], f"table_metrics_{archive.lower()}", f"main_{archive}")))
    b.csv("tables/metrics_all.csv", _concat([f for by in frames.values() for f in by.values()]))


def _published(b: _Builder, df: pd.DataFrame, meta, matrices, reference, ablation_runs) -> None:
    """Published classical results (chorustic.reports.published): every method beside them on the datasets
    they cover (a Table 1/2 of its own), and each re-run against its published numbers."""
    from chorustic.reports.published import published_differences, published_pairs, published_table

    for archive in ARCHIVES:
        mx = matrices.get((archive, "full"))
        if mx is None or not any(m.startswith(PUBLISHED_PREFIX) for m in mx.methods_with_results):
            continue
        b.table("Published results", main_table(mx, meta, reference, f"table_{archive.lower()}_with_published",
                                                f"main_{archive}", ablation_runs))
    if not published_pairs(meta):
        return
    diffs = published_differences(df, meta)
    b.csv("tables/published_vs_rerun.csv", diffs)
    for archive in ARCHIVES:
        if (diffs["archive"] == archive).any():
            n = len(matrices[(archive, "full")].values) if (archive, "full") in matrices else 0
            b.table("Published results", published_table(diffs, meta, archive, n, f"table_published_{archive.lower()}"))


def _read_measures(results_dir: Path) -> pd.DataFrame | None:
    path = metrics_file(results_dir / "accuracies.csv")
    return read_metrics(path) if path.is_file() else None


def _cd(b: _Builder, mx: AccuracyMatrix, meta, exclude, config: ReportConfig, metric=METRICS["accuracy"]) -> None:
    """The critical-difference diagram of one archive's full protocol in one measure, or a note why not."""
    labels = _labels(meta)
    methods = ordered_methods([m for m in mx.methods_with_results if m not in exclude], meta, f"main_{mx.archive}")
    comp = mx.complete(methods)
    n = len(comp)
    what = "" if metric.name == "accuracy" else f" ({metric.label})"
    stem = f"cd_{mx.archive.lower()}" if metric.name == "accuracy" else f"cd_{metric.name}_{mx.archive.lower()}"
    if len(methods) < 3 or n < 2:
        b.notes.append(
            f"critical-difference diagram{what} ({mx.archive}) not drawn: it needs >= 3 methods (Friedman test) "
            f"and >= 2 common datasets, have {len(methods)} methods and {n} datasets"
        )
        return
    where = archive_title(mx.archive, len(mx.values))
    if n != len(mx.values):
        where = f"{where}: the {n} datasets where all methods have results"
    family = len(methods) * (len(methods) - 1) // 2
    title = f"Average rank{what} on {where} (Wilcoxon-Holm cliques, \u03b1={config.alpha:g}, n = {n} datasets)"
    note = significance_note(n, family, config.alpha)
    if note:
        title += f"\n{n} datasets, {family} pairs: no pair can reach significance (smallest attainable Holm p " \
                 f"{smallest_attainable_p(n, family):.2g})"
        b.notes.append(f"critical-difference diagram{what} ({mx.archive}): {note}")
    b.figure("Figures", f"Critical-difference diagram{what} ({mx.archive})", stem,
             figs.cd_figure(comp, [labels[m] for m in comp.columns], config.alpha, title,
                            lower_better=not metric.higher_is_better))


def _scaling(b: _Builder, prop: list[AccuracyMatrix], meta, reference, exclude, archive) -> None:
    pts = []
    labels = _labels(meta)
    for mx in prop:
        methods = [m for m in mx.methods_with_results if m not in exclude]
        s = summary_frame(mx, meta, reference, methods)
        s = s[s["avg_acc"].notna()]
        pts.append(
            pd.DataFrame(
                {
                    "label": s["method"].map(labels),
                    "budget": mx.budget,
                    "avg_acc": s["avg_acc"],
                    "n_common": s["n_common"],
                    "method": s["method"],
                }
            )
        )
    points = pd.concat(pts, ignore_index=True)
    order = ordered_methods(list(dict.fromkeys(points["method"])), meta, "low_label")
    points["_o"] = points["method"].map({m: i for i, m in enumerate(order)})
    points = points.sort_values(["_o", "budget"])
    n = int(points["n_common"].max()) if len(points) else 0
    title = f"Scaling with labeled data on {archive_title(archive, max(len(mx.values) for mx in prop))}"
    if points["n_common"].nunique() == 1 and n != max(len(mx.values) for mx in prop):
        title += f" (averages over the {n} datasets where all methods have results)"
    fig = figs.scaling_figure(points, labels.get(reference), title)
    b.figure("Figures", f"Figure 2: context scaling ({archive})", f"scaling_{archive.lower()}", fig)


def _archive_figures(b: _Builder, mx: AccuracyMatrix, meta, reference, exclude, config: ReportConfig) -> None:
    a = mx.archive.lower()
    labels = _labels(meta)
    layout = f"main_{mx.archive}"
    methods = ordered_methods([m for m in mx.methods_with_results if m not in exclude], meta, layout)
    comp = mx.complete(methods)
    n = len(comp)
    where = archive_title(mx.archive, len(mx.values))
    if n != len(mx.values):
        where = f"{where}: the {n} datasets where all methods have results"
    b.attempt(f"critical-difference diagram ({mx.archive})", lambda: _cd(b, mx, meta, exclude, config))
    if reference not in comp.columns or len(methods) < 2 or n < 1:
        b.notes.append(
            f"scatter plots ({mx.archive}) not drawn: they need the reference method and another method "
            "with common datasets"
        )
    else:
        b.attempt(
            f"scatter plots ({mx.archive})",
            lambda: b.figure(
                "Figures",
                f"{labels[reference]} against each method ({mx.archive})",
                f"scatter_{a}",
                figs.scatter_figure(
                    comp,
                    reference,
                    labels,
                    f"{labels[reference]} vs each method, per dataset, on {where}\n(above the diagonal: "
                    f"{labels[reference]} more accurate)",
                ),
            ),
        )
    if len(methods) >= 2 and n >= 2:
        b.attempt(
            f"multi-comparison matrix ({mx.archive})",
            lambda: b.figure(
                "Figures",
                f"Multi-comparison matrix ({mx.archive})",
                f"mcm_{a}",
                figs.mcm_figure(comp, labels, config.alpha),
            ),
        )
    else:
        b.notes.append(
            f"multi-comparison matrix ({mx.archive}) not drawn: it needs >= 2 methods and >= 2 common datasets, "
            f"have {len(methods)} methods and {n} datasets"
        )
    if n >= 1 and methods:
        b.attempt(
            f"violin plot ({mx.archive})",
            lambda: b.figure(
                "Figures",
                f"Accuracy distribution per method ({mx.archive})",
                f"violin_{a}",
                figs.distribution_figure(comp, labels, reference, f"Per-dataset accuracy on {where}"),
            ),
        )


def _cost(b: _Builder, df: pd.DataFrame, mx: AccuracyMatrix, meta, reference, exclude) -> None:
    a = mx.archive.lower()
    layout = f"main_{mx.archive}"
    methods = ordered_methods([m for m in mx.methods if m not in exclude], meta, layout)
    cost = cost_frame(df, mx, meta, methods)
    if cost.empty or cost["total_time_s"].isna().all():
        b.notes.append(f"accuracy and cost ({mx.archive}) not shown: no method has results with timings")
        return
    b.table("Accuracy and cost", cost_table(cost, mx, meta, f"table_cost_{a}", layout))
    labels = _labels(meta)
    n = int(cost["n_datasets"].max())
    b.figure(
        "Figures",
        f"Accuracy against cost ({mx.archive})",
        f"cost_{a}",
        figs.cost_figure(
            cost,
            labels,
            reference,
            f"Accuracy and wall time on {archive_title(mx.archive, len(mx.values))}"
            + ("" if n == len(mx.values) else f" ({n} datasets where all methods have results)"),
        ),
    )


def _reproduction(
    b: _Builder, results_dir: Path, config: ReportConfig, matrices, meta, summary_all, reference
) -> bool | None:
    candidates = (
        [config.paper_dir] if config.paper_dir else [results_dir / "reference", default_reference_dir()]
    )
    ref_dir = next((Path(c) for c in candidates if c and Path(c).is_dir()), None)
    if ref_dir is None:
        b.problems.append(
            f"reproduction check skipped: no folder with the paper's numbers ({', '.join(map(str, candidates))})"
        )
        return None
    ref = load_paper_reference(ref_dir)
    check = paper_self_check(ref, alpha=config.alpha)
    abl = []
    for (archive, protocol), mx in matrices.items():
        variants = [m for m in config.ablations if m in mx.methods]
        if variants and reference in mx.methods:
            abl.append(summary_frame(mx, meta, reference, [reference] + variants))
    comparison = compare_with_paper(
        matrices, meta, ref, summary_all, config.off_threshold_pp, _concat(abl) if abl else None
    )
    b.written += write_reproduction(b.out / "reproduction", check, comparison, ref, config.off_threshold_pp)
    md = b.out / "reproduction" / "reproduction.md"
    if md.is_file():
        b.text("reproduction/reproduction.html", html_page("Reproduction check against the paper", md.read_text()))
    return bool(check["verdict"]["passed"].all()) if len(check["verdict"]) else None


def _reference_results(b: _Builder, results_dir: Path, df: pd.DataFrame, config: ReportConfig) -> pd.DataFrame:
    ref_acc = accuracies_file(config.reference_results)
    diff = differences_from_reference(df, results_dir, load_accuracies(ref_acc), ref_acc.parent)
    b.written += write_reference_comparison(b.out / "reproduction", diff, str(ref_acc))
    md = b.out / "reproduction" / "reference_results.md"
    b.text("reproduction/reference_results.html", html_page("These results against reference results", md.read_text()))
    return diff


def _coverage(matrices, meta, exclude) -> pd.DataFrame:
    rows = []
    for (archive, protocol), mx in matrices.items():
        methods = [m for m in mx.methods if m not in exclude]
        have = [m for m in methods if m in mx.methods_with_results]
        rows.append(
            {
                "Archive": archive,
                "Protocol": protocol_label(mx.family, mx.budget),
                "Methods": len(methods),
                "Eligible datasets": len(mx.values),
                "Common datasets": len(mx.common(have)),
                "Context sets": len(mx.seeds),
                "Ineligible": len(mx.ineligible),
                "Missing runs": int(mx.missing["method"].isin(methods).sum()),
            }
        )
    return pd.DataFrame(rows)


def _md_table(df: pd.DataFrame) -> str:
    head = "| " + " | ".join(map(str, df.columns)) + " |\n|" + "---|" * len(df.columns) + "\n"
    return head + "".join("| " + " | ".join(map(str, r)) + " |\n" for r in df.itertuples(index=False))


def _overview(
    b: _Builder, acc_path: Path, df, meta, matrices, reference, exclude, paper_passed, miss_df, inel_df
) -> None:
    """``overview/coverage.html``: what ran and what is missing, for the Snakemake report."""
    limit = 200
    lines = [
        "# Coverage, missing runs and problems",
        "",
        f"From `{acc_path}` ({len(df)} runs of {len(meta)} methods; reference method: "
        f"{meta.loc[reference, 'display_name'] if reference else 'none'}). Averages, ranks and tests of one "
        "archive and protocol use the *common* datasets, on which every method has a result; missing runs "
        "are never imputed.",
        "",
        "## Coverage",
        "",
    ]
    cov = _coverage(matrices, meta, exclude)
    lines.append(_md_table(cov) if len(cov) else "No results.")
    lines += ["", f"## Missing runs ({len(miss_df)})", ""]
    if len(miss_df):
        shown = miss_df.head(limit).astype(object)
        shown = shown.where(shown.notna(), "")
        lines.append(_md_table(shown[["archive", "protocol", "display_name", "dataset", "seed", "status", "error"]]))
        if len(miss_df) > limit:
            lines.append(f"\n... and {len(miss_df) - limit} more: see `missing_runs.csv`.")
    else:
        lines.append("None: every method has a result for every eligible dataset and context set.")
    lines += ["", f"## Ineligible datasets ({len(inel_df)})", ""]
    lines.append(
        _md_table(inel_df)
        if len(inel_df)
        else "None (a dataset is ineligible at k shots when a class has fewer than k training examples)."
    )
    lines += ["", "## Reproduction check", ""]
    lines.append(
        "Not run (see Problems)."
        if paper_passed is None
        else "The paper's own per-dataset tables run through this code reproduce what the paper prints: "
        f"**{'yes' if paper_passed else 'NO'}** (details: the reproduction check page)."
    )
    if b.notes:
        lines += ["", "## Notes", ""] + [f"- {n}" for n in b.notes]
    lines += ["", "## Problems", ""]
    lines += [f"- {p}" for p in b.problems] if b.problems else ["None: every table and figure was written."]
    b.text("overview/coverage.html", html_page("Coverage, missing runs and problems", "\n".join(lines) + "\n"))


def _readme(
    b: _Builder, acc_path: Path, df, meta, matrices, reference, exclude, paper_passed, miss_df, config,
    against: pd.DataFrame | None = None, quick: pd.DataFrame | None = None,
) -> None:
    lines = [
        "# Benchmark report",
        "",
        f"Generated by `chorustic report` from `{acc_path}` (sha256 `{sha256_file(acc_path)[:16]}`, {len(df)} runs, "
        f"{len(meta)} methods). Statistics follow the paper (Sec. 4.1, App. C.5): unweighted mean accuracy, "
        "average rank (ties averaged), W/T/L, two-sided exact Wilcoxon signed-rank tests with Holm correction "
        f"within each archive (alpha = {config.alpha:g}).",
        "",
    ]
    if reference:
        lines.append(f"Reference method: **{meta.loc[reference, 'display_name']}** (`{reference}`).")
    else:
        lines.append(f"Reference method `{config.reference}` has no results: no W/T/L or tests.")
    rep = [str(meta.loc[m, "display_name"]) for m in meta.index if meta.loc[m, "reported"]]
    if rep:
        lines.append(
            f'Reported, not reproduced (marked \u2020 in tables, "(reported)" in figures): {", ".join(rep)}.'
        )
    lines += [
        "",
        "## Coverage",
        "",
        "Averages, ranks and tests of one archive and protocol use the *common* datasets, on which every "
        "method has a result; missing runs are never imputed (see `missing_runs.csv`).",
        "",
    ]
    cov = _coverage(matrices, meta, exclude)
    if len(cov):
        lines.append(_md_table(cov))
    if len(miss_df):
        lines += [
            f"**{len(miss_df)} missing runs** (failed or absent): [missing_runs.csv](missing_runs.csv).",
            "",
        ]
    for section, t in b.tables:
        if t.name in ("table1_uea_main", "table2_ucr_main"):
            lines += [to_markdown(t), ""]
    if quick is not None and len(quick):
        lines += [
            "## Quick look: predicted archive means",
            "",
            "A **prediction**, not a measurement: each method's full-context mean on the datasets of the quick-look "
            "selection it ran (`config/quick_look.yaml`), mapped to the archive mean it predicts by the paper's "
            "methods; ± is the error of that prediction validated leave-one-method-out on the paper's methods "
            "(benchmarks/results/quick_look.md). [quick_look.csv](tables/quick_look.csv).",
            "",
            "| Archive | Method | Measured mean on the selection (%) | Prediction |",
            "|---|---|---:|---|",
        ]
        for r in quick.itertuples(index=False):
            of = "" if r.n_datasets == r.n_selection else f" of {r.n_selection}"
            lines.append(f"| {r.archive} | {r.display_name} | {100 * r.measured_mean:.2f} ({r.n_datasets}{of} "
                         f"datasets) | {r.text} |")
        lines.append("")
    lines += ["## Tables", "", "Each as LaTeX (booktabs), Markdown and CSV (full-precision numbers).", ""]
    for section, t in b.tables:
        lines.append(
            f"- {t.caption}: [{t.name}.md](tables/{t.name}.md), [.tex](tables/{t.name}.tex), "
            f"[.csv](tables/{t.name}.csv)"
        )
    lines += [
        "- All archives and protocols: [summary_all.csv](tables/summary_all.csv) (averages, ranks, W/T/L), "
        "[stats_all.csv](tables/stats_all.csv) (Wilcoxon + Holm per archive x protocol family)",
        "",
        "## Figures",
        "",
    ]
    for section, title, stem in b.figures:
        lines += [
            f"### {title}",
            "",
            f"![{title}]({stem}.png)",
            "",
            f"[{stem}.png]({stem}.png) \u00b7 [{stem}.pdf]({stem}.pdf)",
            "",
        ]
    aeon_dir = b.out / AEON_SUBDIR
    aeon_files = sorted(p for p in b.written if aeon_dir in p.parents)
    if aeon_files:
        names = aeon_estimator_names(meta)
        known = sorted({n for m, n in names.items() if n != m})
        lines += [
            "## Results for aeon and tsml-eval",
            "",
            f"[{AEON_SUBDIR}/]({AEON_SUBDIR}/) holds the accuracies in the layout of aeon's results loaders, one tree per "
            f"protocol: `{AEON_SUBDIR}/<protocol>/classification/accuracy/<EST>_accuracy.csv` (datasets x context "
            "sets as resamples; a dataset appears when every context set has a result). For example "
            f"`aeon.benchmarking.results_loaders.get_estimator_results({known[:2] or ['MiniROCKET']}, "
            f"num_resamples=None, path='<this folder>/{AEON_SUBDIR}/full')`. aeon knows "
            f"{', '.join(known) if known else 'none of these methods'} by name and rejects the others "
            "(ChorusTIC, the TSFM baselines): read their files with `pandas.read_csv(file, index_col=0)`. "
            "tsml-eval reads the prediction files in `results/<protocol>/<method>/Predictions/` directly.",
            "",
        ]
    lines += _audit_lines(acc_path.parent, df, meta)
    lines += ["## Reproduction check against the paper", ""]
    if paper_passed is None:
        lines.append("Not run (see Problems).")
    else:
        lines.append(
            f"The paper's own per-dataset tables run through this code reproduce what the paper prints: "
            f"**{'yes' if paper_passed else 'NO'}**. Details and the comparison of these results with the "
            "paper: [reproduction/reproduction.md](reproduction/reproduction.md)."
        )
    lines.append("")
    lines += _numerics_lines(df, config, against)
    if b.notes:
        lines += ["## Notes", ""] + [f"- {n}" for n in b.notes] + [""]
    if b.problems:
        lines += ["## Problems", ""] + [f"- {p}" for p in b.problems] + [""]
    b.text("README.md", "\n".join(lines))


def _audit_lines(results_dir: Path, df: pd.DataFrame, meta: pd.DataFrame) -> list[str]:
    """The leakage audit: methods pretrained on the archives (marked in every table and legend) and the
    datasets whose test split repeats training series (``results/audit/duplicates.csv``)."""
    from chorustic.data.duplicates import duplicates_file

    lines = ["## Leakage audit", ""]
    seen = leakage_note(list(meta.index), meta)
    lines.append(seen or "No method of these results was pretrained on UCR/UEA series.")
    lines.append("")
    path = duplicates_file(results_dir)
    if not path.is_file():
        lines += ["Train/test duplicates: not audited (no `audit/duplicates.csv` in the results folder; the "
                  "workflow's `audit` rule writes it, or run `chorustic audit`).", ""]
        return lines
    dup = pd.read_csv(path)
    dup = dup[dup["dataset"].isin(set(df["dataset"]))]
    hit = dup[dup["n_test_duplicated"] > 0].sort_values(["archive", "dataset"])
    lines.append(f"Train/test duplicates (after preprocessing, bit for bit): **{len(hit)} of {len(dup)} datasets** "
                 f"have test series identical to a training series (`{path}`).")
    if len(hit):
        lines += ["", "| Archive | Dataset | Test series duplicated | of | Same label | Other label |",
                  "|---|---|---:|---:|---:|---:|"]
        lines += [f"| {r.archive} | {r.dataset} | {r.n_test_duplicated} | {r.n_test} | {r.n_same_label} | "
                  f"{r.n_other_label} |" for r in hit.itertuples(index=False)]
    lines.append("")
    return lines


def _numerics_lines(df: pd.DataFrame, config: ReportConfig, against: pd.DataFrame | None) -> list[str]:
    """Which runs are not covered by portable numerics, and the comparison with reference results."""
    lines = []
    flag = df["portable_numerics"] if "portable_numerics" in df.columns else pd.Series(dtype=object)
    loose = df[flag.astype(str).str.lower().isin(["false", "0"])]
    if len(loose):
        lines += [
            "## Same numbers on another machine",
            "",
            f"{len(loose)} runs are not covered by portable numerics, so another machine may predict differently "
            f"(GPU, pins off or overridden; the reason is in each run manifest's `numerics`): "
            + ", ".join(f"{m} ({n})" for m, n in loose["display_name"].value_counts().sort_index().items()) + ".",
            "",
        ]
    if config.reference_results is not None:
        if not lines:
            lines += ["## Same numbers on another machine", ""]
        if against is None:
            lines.append("The comparison with the reference results failed (see Problems).")
        else:
            differ = against[against["status"] == "differs"]
            lines.append(
                f"Against `{config.reference_results}`: {len(against)} runs in both, **{len(differ)} differ** "
                f"({int(differ['n_cases_differ'].sum())} test cases): "
                "[reproduction/reference_results.md](reproduction/reference_results.md)."
            )
        lines.append("")
    return lines


def _prune_stale(out_dir: Path, written: list[Path]) -> None:
    manifest = out_dir / MANIFEST_NAME
    now = sorted({str(p.resolve().relative_to(out_dir.resolve())) for p in written})
    if manifest.is_file():
        try:
            before = json.loads(manifest.read_text()).get("files", [])
        except (OSError, ValueError):
            before = []
        for rel in set(before) - set(now):
            p = out_dir / rel
            if p.is_file() and ".." not in Path(rel).parts:
                p.unlink()
    atomic_write_json(manifest, {"generator": "chorustic report", "files": now})
