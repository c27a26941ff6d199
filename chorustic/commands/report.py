"""``chorustic report``: statistics, the paper's tables and figures, and the reproduction check.

chorustic report --results-dir results/ --reports-dir reports/ [--reference-method chorustic]
chorustic report --reference-results examples/demo/results   # which runs differ from the committed demo
chorustic report --paper-check            # only: the paper's own tables through the statistics code
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from chorustic.commands._vocabulary import add_deprecated, add_list, add_path, path_of, suggest

__all__ = ["register", "run"]


def _ablation(text: str) -> tuple[str, tuple[str, str]]:
    try:
        run, rest = text.split("=", 1)
        factor, label = rest.split(":", 1)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--ablation expects RUN=FACTOR:LABEL, got {text!r}") from None
    return run.strip(), (factor.strip(), label.strip())


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "report",
        help="write the paper's tables and figures and the reproduction check to reports/",
        description="Read <results-dir>/accuracies.csv (and the paper's numbers in <results-dir>/reference) and write "
        "every table (LaTeX, Markdown, CSV), figure (PNG, PDF) and the reproduction check, with an "
        "index in <reports-dir>/README.md.",
    )
    add_path(p, "--results-dir")
    add_path(p, "--reports-dir")
    p.add_argument(
        "--reference-method",
        default="chorustic",
        metavar="NAME",
        help="reference method for W/T/L, tests and ablation deltas: run name or display name (default: chorustic)",
    )
    add_deprecated(p, "--results", "--results-dir", type=Path)
    add_deprecated(p, "--out", "--reports-dir", type=Path)
    add_deprecated(p, "--reference", "--reference-method")
    p.add_argument(
        "--alpha", type=float, default=0.05, help="significance level after Holm correction (default: 0.05)"
    )
    add_list(p, "--methods", help="only these methods (run or display names; default: every method of the results)")
    add_list(p, "--metrics")
    p.add_argument(
        "--ablation",
        type=_ablation,
        action="append",
        metavar="RUN=FACTOR:LABEL",
        help="an ablation variant of Table 4 (repeatable; replaces the default mapping of the four "
        "chorustic_no_* variants)",
    )
    p.add_argument(
        "--paper-dir",
        type=Path,
        default=None,
        help="the paper's numbers (default: <results-dir>/reference, else the repository's results/reference)",
    )
    p.add_argument(
        "--off-threshold",
        type=float,
        default=2.0,
        help="flag datasets more than this many accuracy points from the paper (default: 2)",
    )
    p.add_argument(
        "--reference-results",
        type=Path,
        default=None,
        metavar="DIR",
        help="another results folder (or its accuracies.csv), e.g. examples/demo/results: list the runs that "
        "differ from it and in how many test cases (reproduction/reference_results.md)",
    )
    p.add_argument("--formats", nargs="+", default=["png", "pdf"], metavar="FORMAT",
                   help="figure formats, e.g. png pdf svg (default: png pdf)")
    p.add_argument("--strict", action="store_true", help="exit with status 1 if any table or figure failed")
    p.add_argument(
        "--paper-check",
        action="store_true",
        help="only run the paper's per-dataset tables through the statistics and compare with what the "
        "paper prints (writes <reports-dir>/reproduction/; needs no results)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from chorustic.reports.accuracies import ResultsError
    from chorustic.reports.build import ReportConfig, build_report

    args.results_dir, args.reports_dir = path_of(args, "results_dir"), path_of(args, "reports_dir")
    formats = [f.strip() for v in args.formats for f in v.split(",") if f.strip()]
    if any("," in v for v in args.formats):
        print(f"chorustic report: note: comma-separated --formats is deprecated: write --formats {' '.join(formats)}",
              file=sys.stderr)

    if not 0 < args.alpha < 1:
        print(f"chorustic report: --alpha must lie in (0, 1), got {args.alpha}", file=sys.stderr)
        return 2
    if args.paper_check:
        return _paper_check(args)
    from chorustic.evaluation.metrics import DEFAULT_METRICS, METRICS, unknown_metrics

    for name in unknown_metrics(args.metrics or []):
        print(f"chorustic report: --metrics: unknown measure {name!r}{suggest(name, METRICS, quote=chr(39))}; "
              f"choose from {' '.join(METRICS)}", file=sys.stderr)
        return 2
    if args.metrics == []:
        print(f"chorustic report: --metrics needs at least one of {' '.join(METRICS)}", file=sys.stderr)
        return 2
    config = ReportConfig(
        reference=args.reference_method,
        alpha=args.alpha,
        methods=args.methods,
        paper_dir=args.paper_dir,
        off_threshold_pp=args.off_threshold,
        figure_formats=tuple(formats),
        reference_results=args.reference_results,
        metrics=tuple(dict.fromkeys(args.metrics or DEFAULT_METRICS)),
    )
    if args.ablation:
        config.ablations = dict(args.ablation)
    try:
        result = build_report(args.results_dir, args.reports_dir, config)
    except ResultsError as exc:
        print(f"chorustic report: {exc}", file=sys.stderr)
        return 2
    print(
        f"chorustic report: wrote {len(result.written)} files to {result.out_dir} (index: {result.out_dir / 'README.md'})"
    )
    if result.paper_check_passed is not None:
        print(
            f"paper-table reproduction check: {'passed' if result.paper_check_passed else 'FAILED'} "
            f"(see {result.out_dir / 'reproduction' / 'reproduction.md'})"
        )
    for p in result.problems:
        print(f"problem: {p}", file=sys.stderr)
    return 1 if (args.strict and result.problems) else 0


def _paper_check(args: argparse.Namespace) -> int:
    from chorustic.reports.paper import default_reference_dir, load_paper_reference
    from chorustic.reports.reproduction import paper_self_check
    from chorustic.reports.writeup import write_reproduction

    ref_dir = args.paper_dir or (
        args.results_dir / "reference" if (args.results_dir / "reference").is_dir() else default_reference_dir()
    )
    ref = load_paper_reference(ref_dir)
    if not ref.per_dataset:
        print(f"chorustic report: no per-dataset tables of the paper in {ref_dir}", file=sys.stderr)
        return 2
    check = paper_self_check(ref, alpha=args.alpha)
    write_reproduction(args.reports_dir / "reproduction", check, {}, ref, args.off_threshold)
    for r in check["verdict"].itertuples():
        print(f"[{'ok' if r.passed else 'FAILED'}] {r.check} ({r.detail})")
    print(f"details: {args.reports_dir / 'reproduction' / 'reproduction.md'}")
    return 0 if bool(check["verdict"]["passed"].all()) else 1
