"""``chorustic datasets``, ``chorustic download`` and ``chorustic preprocess``.

* ``chorustic datasets [--archive UCR|UEA] [--format table|csv]``: the registry.
* ``chorustic download [--datasets NAME ...] [--archive UCR|UEA|all] [--data-dir DIR] [--offline]``:
  provide datasets (local copy -> aeon wheel -> download), verified against the lock file.
* ``chorustic preprocess --datasets NAME ... [--data-dir DIR] [--cache-dir DIR]``: load, preprocess
  (App. C.2) and cache; ``--out FILE`` writes a summary (the DAG's preprocess rule output).

One failing dataset never stops the others; the exit status is 1 if any failed.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from pathlib import Path

from chorustic.commands._vocabulary import add_deprecated, add_list, add_out, add_path, path_of

__all__ = ["register"]


def _add_provider_options(p: argparse.ArgumentParser) -> None:
    add_path(p, "--data-dir")
    p.add_argument(
        "--offline", action="store_true", help="never download; use local copies and the aeon wheel"
    )
    p.add_argument(
        "--mirror",
        action="append",
        default=None,
        metavar="URL",
        help="download base URL, repeatable, tried in order (timeseriesclassification.com layout; "
        "'zenodo+URL' for a Zenodo mirror). Default: $CHORUSTIC_DATA_URL or "
        "timeseriesclassification.com, then Zenodo",
    )
    p.add_argument(
        "--update-lock",
        action="store_true",
        help="accept the current files and record their checksums in the lock file",
    )
    p.add_argument("--no-lock", action="store_true", help="neither verify nor record checksums")
    p.add_argument(
        "--lock-file",
        type=Path,
        default=None,
        help="lock file to use instead of <data-dir>/chorustic-data.lock.json (e.g. for a read-only data dir)",
    )
    p.add_argument("--retries", type=int, default=3, help="extra attempts per URL (default 3)")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds per connect/read (default 60)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.add_argument(
        "--subset-train",
        type=int,
        default=None,
        metavar="N",
        help="InsectWingbeatSubset: training series (default 1000)",
    )
    p.add_argument(
        "--subset-test",
        type=int,
        default=None,
        metavar="N",
        help="InsectWingbeatSubset: test series (default 1000)",
    )
    p.add_argument(
        "--subset-seed",
        type=int,
        default=None,
        metavar="S",
        help="InsectWingbeatSubset: sampling seed (default 0)",
    )


def _provider_kwargs(args: argparse.Namespace) -> dict:
    import dataclasses

    from chorustic.data.registry import INSECTWINGBEAT_SUBSET

    subset = None
    if any(v is not None for v in (args.subset_train, args.subset_test, args.subset_seed)):
        d = INSECTWINGBEAT_SUBSET
        subset = dataclasses.replace(
            d,
            n_train=args.subset_train if args.subset_train is not None else d.n_train,
            n_test=args.subset_test if args.subset_test is not None else d.n_test,
            seed=args.subset_seed if args.subset_seed is not None else d.seed,
        )
    return dict(
        offline=args.offline,
        mirrors=args.mirror,
        lock=False if args.no_lock else (args.lock_file or True),
        update_lock=args.update_lock,
        retries=args.retries,
        timeout=args.timeout,
        progress=not args.no_progress,
        subset=subset,
    )


def _logging() -> None:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)


# ----------------------------------------------------------------------------------- stand-ins
def _cmd_standin(args: argparse.Namespace) -> int:
    from chorustic.data.standin import standin_spec, write_standin

    for name in args.datasets:
        spec = standin_spec(name, series_fraction=args.series_fraction, n_channels=args.channels,
                            length=args.length, seed=args.seed)
        try:
            folder = write_standin(spec, args.data_dir)
        except FileExistsError as exc:
            print(f"chorustic standin: {exc}", file=sys.stderr)
            return 1
        print(f"{spec.name}: stand-in {spec.n_train} train / {spec.n_test} test, {spec.n_channels} channel(s), "
              f"length {spec.length}{'' if spec.equal_length else ' (max)'}, {spec.n_classes} classes -> {folder}")
    return 0


# ----------------------------------------------------------------------------------- datasets
def _cmd_datasets(args: argparse.Namespace) -> int:
    from chorustic.data.registry import registry_frame

    df = registry_frame(args.archive)
    try:
        if args.format == "csv":
            sys.stdout.write(df.to_csv(index=False))
            return 0
        _print_table(df, args.flags_width)
    except BrokenPipeError:  # `chorustic datasets | head`
        sys.stdout = open(os.devnull, "w")
    return 0


def _print_table(df, width: int) -> None:
    cols = [
        "name",
        "archive",
        "n_train",
        "n_test",
        "length",
        "n_channels",
        "n_classes",
        "equal_length",
        "missing_values",
        "flags",
    ]
    view = df[cols].copy()
    view["equal_length"] = view["equal_length"].map({True: "yes", False: "no"})
    view["missing_values"] = view["missing_values"].map({True: "yes", False: "no"})
    view["flags"] = view["flags"].map(lambda s: s if len(s) <= width else s[: width - 3] + "...")
    view = view.rename(
        columns={
            "n_train": "train",
            "n_test": "test",
            "n_channels": "channels",
            "n_classes": "classes",
            "equal_length": "equal_len",
            "missing_values": "missing",
        }
    )
    print(view.to_string(index=False))
    counts = df["archive"].value_counts()
    print(f"\n{len(df)} datasets ({', '.join(f'{counts[a]} {a}' for a in ('UCR', 'UEA') if a in counts)})")


# ----------------------------------------------------------------------------------- download
def _cmd_download(args: argparse.Namespace) -> int:
    from chorustic.data.download import default_data_dir, download_archive, ensure_dataset
    from chorustic.data.errors import DataError, PartialDownloadError

    _logging()
    names = args.datasets or []
    if not names and not args.archive:
        print("chorustic download: give --datasets NAME [NAME ...] and/or --archive UCR|UEA|all", file=sys.stderr)
        return 2
    kw = _provider_kwargs(args)
    data_dir = default_data_dir(args.data_dir)
    ok: dict[str, Path] = {}
    failed: dict[str, str] = {}
    archives = {"all": ["UCR", "UEA"], None: []}.get(args.archive, [args.archive])
    for archive in archives:
        try:
            for p in download_archive(archive, data_dir, **kw):
                ok[p.name] = p
        except PartialDownloadError as exc:
            ok.update(exc.succeeded)
            failed.update({n: str(e) for n, e in exc.failures.items()})
        except DataError as exc:
            failed[archive] = str(exc)
    _check_names(names, data_dir)
    if args.record and len(names) != 1:
        print("chorustic download: --record needs exactly one dataset name", file=sys.stderr)
        return 2
    for name in names:
        if name in ok:
            continue
        t = time.perf_counter()
        try:
            ok[name] = ensure_dataset(name, data_dir, **kw)
            if args.record:
                _write_record(args.record, name, ok[name])
            print(f"{name}: {ok[name]} ({time.perf_counter() - t:.1f} s)")
        except DataError as exc:
            failed[name] = str(exc)
            print(f"{name}: FAILED: {exc}", file=sys.stderr)
    if args.archive:
        print(f"{len(ok)} datasets ready in {data_dir}")
    if failed:
        for n, msg in failed.items():
            if n not in names:  # per-name failures were printed as they happened
                print(f"{n}: FAILED: {msg}", file=sys.stderr)
        print(f"\n{len(failed)} failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


def _check_names(names, data_dir) -> None:
    """Unknown dataset names are a user error (exit 2) before anything runs, unless a local copy exists."""
    from chorustic.data.download import find_local
    from chorustic.data.registry import get_info, is_known

    for name in names:
        if not is_known(name) and find_local(name, data_dir) is None:
            get_info(name)  # UnknownDatasetError with the closest names


def _write_record(path: Path, name: str, folder: Path) -> None:
    """What the workflow's download rule produces: where the dataset's files are and their checksums
    (a file of the harness; the dataset's own files are never a rule's output, so never deleted)."""
    from chorustic.data.download import split_paths
    from chorustic.evaluation.integrity import source_record
    from chorustic.io import atomic_write_json

    atomic_write_json(path, source_record(name, list(split_paths(folder, name))))


# --------------------------------------------------------------------------------- preprocess
def _cmd_preprocess(args: argparse.Namespace) -> int:
    from chorustic.data.download import default_data_dir
    from chorustic.data.errors import DataError
    from chorustic.data.loading import load_dataset
    from chorustic.io import atomic_write_json

    _logging()
    kw = _provider_kwargs(args)
    data_dir = default_data_dir(args.data_dir)
    cache_dir = path_of(args, "cache_dir")
    report: dict[str, dict] = {}
    failed: dict[str, str] = {}
    _check_names(args.datasets, data_dir)
    for name in args.datasets:
        t = time.perf_counter()
        try:
            ds = load_dataset(
                name,
                data_dir,
                cache_dir=cache_dir,
                length=args.length,
                label_order=args.label_order,
                allow_modified=args.allow_modified_data,
                **kw,
            )
        except DataError as exc:
            failed[name] = str(exc)
            print(f"{name}: FAILED: {exc}", file=sys.stderr)
            continue
        secs = time.perf_counter() - t
        print(f"{ds.summary()} [{secs:.1f} s]{' -> ' + str(ds.cache_path) if ds.cache_path else ''}")
        report[name] = {
            "archive": ds.archive,
            "n_train": ds.n_train,
            "n_test": ds.n_test,
            "n_channels": ds.n_channels,
            "n_classes": ds.n_classes,
            "length": ds.length,
            "equal_length": ds.equal_length,
            "classes": ds.classes.tolist(),
            "cache_path": str(ds.cache_path) if ds.cache_path else None,
            "source_sha256": ds.source_sha256,
            "settings": ds.settings,
            "modifications": ds.modifications,
        }
        for m in ds.modifications:
            print(f"{name}: modified data (allowed, recorded): {m}", file=sys.stderr)
    if args.out and not failed:
        atomic_write_json(args.out, {"datasets": report})
    if failed:
        print(f"\n{len(failed)} failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "datasets",
        help="list the UCR-128 / UEA-30 registry",
        description="Print the archive registry (128 UCR + 30 UEA datasets).",
    )
    p.add_argument("--archive", choices=["UCR", "UEA"], type=str.upper, default=None, help="only this archive")
    p.add_argument("--format", choices=["table", "csv"], default="table", help="output format (default: table)")
    p.add_argument("--flags-width", type=int, default=48, help="truncate the flags column in the table view")
    p.set_defaults(func=_cmd_datasets)

    p = subparsers.add_parser(
        "download",
        help="download / verify datasets",
        description="Provide datasets in the official layout: local copy -> aeon wheel "
        "-> download; every file pinned by SHA-256 in the data lock file.",
    )
    add_list(p, "--datasets", positional="NAME")
    p.add_argument(
        "--archive",
        choices=["UCR", "UEA", "all"],
        default=None,
        type=lambda s: s if s == "all" else s.upper(),
        help="every dataset of an archive",
    )
    p.add_argument(
        "--record",
        type=Path,
        default=None,
        metavar="JSON",
        help="write where the dataset's files are and their SHA-256 here (one dataset; the workflow's rule output)",
    )
    _add_provider_options(p)
    p.set_defaults(func=_cmd_download)

    p = subparsers.add_parser(
        "preprocess",
        help="load, preprocess (App. C.2) and cache datasets",
        description="Read the .ts files, replace NaN by 0, resample to length 512 "
        "(linear, align_corners=False), encode labels; cache as .npz.",
    )
    add_list(p, "--datasets", required=True, positional="NAME")
    add_path(p, "--cache-dir")
    p.add_argument("--length", type=int, default=512, help="model length L0 (default 512)")
    p.add_argument(
        "--label-order",
        choices=["sorted", "header"],
        default="sorted",
        help="class order: numeric/sorted (default) or the @classLabel header order",
    )
    add_out(p, "write a JSON summary of the datasets to this file (only if all succeeded)")
    add_deprecated(p, "--json", "--out")
    p.add_argument(
        "--allow-modified-data",
        action="store_true",
        help="accept files that differ from the archive's published sizes or contradict their header "
        "(your own variant); the differences are recorded",
    )
    _add_provider_options(p)
    p.set_defaults(func=_cmd_preprocess)

    p = subparsers.add_parser(
        "standin",
        help="write random data with an archive dataset's exact shape (for measuring cost; never a result)",
        description="Write <data-dir>/<Name>/<Name>_{TRAIN,TEST}.ts: random series with the registry's "
        "training and test sizes, channels, length and classes (balanced; variable lengths drawn up to the "
        "maximum), marked as a stand-in in every result made from them (`chorustic aggregate` never counts "
        "those). Point a configuration's paths.data_dir at the folder to run jobs on them.",
    )
    add_list(p, "--datasets", required=True, positional="NAME")
    p.add_argument("--data-dir", type=Path, required=True, metavar="DIR",
                   help="the stand-ins' own folder (never a folder with real data: refused; no default)")
    p.add_argument("--series-fraction", type=float, default=1.0,
                   help="scale the training and test sizes (each class keeps a series; default 1: the real shape)")
    p.add_argument("--channels", type=int, default=None, help="replace the number of channels")
    p.add_argument("--length", type=int, default=None, help="replace the (maximum) series length")
    p.add_argument("--seed", type=int, default=0, help="random seed of the values (default 0)")
    p.set_defaults(func=_cmd_standin)
