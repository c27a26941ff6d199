"""One command-line language: every subcommand spells the same thing the same way, every mistake gets one
line with the closest spelling, and docs/README.md's command table is the parser's."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from chorustic.cli import build_parser, main
from chorustic.commands._vocabulary import LIST_OPTIONS, PATH_OPTIONS

ROOT = Path(__file__).resolve().parents[1]

#: Spellings the vocabulary replaced: accepted for a release (hidden), never shown in a command's help.
OLD_SPELLINGS = {"--results", "--dataset", "--method", "--reference", "--target-device"}
#: The positional arguments that remain (a file a command reads); names are given as options.
POSITIONALS = {("checkpoint-info", "checkpoint"), ("checkpoint-convert", "checkpoint")}


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    parser, broken = build_parser()
    assert not broken, broken
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def _visible(p: argparse.ArgumentParser):
    return [a for a in p._actions if a.help != argparse.SUPPRESS and not isinstance(a, argparse._HelpAction)]


def test_every_subcommand_speaks_the_vocabulary():
    problems = []
    for name, p in _subparsers().items():
        for a in _visible(p):
            opts = set(a.option_strings)
            where = f"{name} {'/'.join(a.option_strings) or a.dest}"
            if not opts and (name, a.dest) not in POSITIONALS:
                problems.append(f"{where}: a positional argument (names and paths are options)")
            if opts & OLD_SPELLINGS:
                problems.append(f"{where}: an old spelling shown in the help")
            for opt in opts & set(PATH_OPTIONS):
                if a.metavar != "DIR" or a.default is not None or a.type is not Path:
                    problems.append(f"{where}: not the vocabulary's location option (add_path)")
            for opt in opts & set(LIST_OPTIONS):
                if a.nargs != "+" or a.metavar != LIST_OPTIONS[opt][0]:
                    problems.append(f"{where}: not a space-separated list (add_list)")
            if "--out" in opts and a.metavar != "FILE":
                problems.append(f"{where}: --out is one file (a folder is --out-dir)")
            if "--out-dir" in opts and a.metavar != "DIR":
                problems.append(f"{where}: --out-dir is a folder")
            if "--json" in opts and a.nargs != 0:
                problems.append(f"{where}: --json is a switch (a file is --out)")
            if "--config" in opts and not (a.metavar == "YAML" and isinstance(a, argparse._AppendAction)):
                problems.append(f"{where}: --config YAML is repeatable")
            if re.search(r"comma-separated", a.help or ""):
                problems.append(f"{where}: a comma-separated list (lists are space-separated)")
            if a.dest in {k for k, _ in PATH_OPTIONS.values()} and not opts & set(PATH_OPTIONS):
                problems.append(f"{where}: a location under another name")
    assert not problems, "\n".join(problems)


def test_the_locations_default_to_the_configuration():
    import yaml

    paths = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())["paths"]
    seen = 0
    for name, p in _subparsers().items():
        for a in _visible(p):
            for opt in set(a.option_strings) & set(PATH_OPTIONS):
                key = PATH_OPTIONS[opt][0]
                if name != "standin":  # stand-ins get their own folder, never the data folder
                    assert f"paths.{key}, {paths[key]})" in a.help, (name, opt, a.help)
                    seen += 1
    assert seen >= 9


@pytest.mark.parametrize("argv, expected", [
    (["plan-run", "--cors", "16"], "unknown option --cors (did you mean --cores?)"),
    (["plan-run", "--core", "4"], "unknown option --core (did you mean --cores?)"),  # no abbreviations
    (["evaluate", "--methd", "minirocket", "--datasets", "GunPoint"], "unknown option --methd (did you mean --methods?)"),
    (["datasets", "--format", "tabel"], "invalid choice 'tabel' (did you mean 'table'?)"),
    (["plan-rn"], "invalid choice 'plan-rn' (did you mean 'plan-run'?)"),
    (["plan-run", "--gpu", "1"], "'1' is a number: the number of GPUs is --gpus 1"),
    (["plan-run", "--gpu", "h10"], "unknown GPU kind 'h10' (did you mean 'h100'?)"),
    (["pretrain", "--plan", "--gpu", "a1000"], "invalid choice 'a1000' (did you mean 'a100'?)"),
    (["report", "--reference-metod", "x"], "did you mean --reference-method?"),
])
def test_a_mistake_is_one_line_with_the_closest_spelling(argv, expected, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert expected in err, err
    assert len(err.splitlines()) == 1, err
    assert "--help` lists the options" in err


@pytest.mark.parametrize("argv, name", [
    (["fetch-weights", "--methods", "minirockett"], "'minirocket'"),
    (["prior-gallery", "--rules", "polarty"], "'polarity'"),
])
def test_a_misspelled_name_gets_the_closest_one(argv, name, capsys, tmp_path):
    assert main([*argv, *(["--out-dir", str(tmp_path)] if argv[0] == "prior-gallery" else [])]) == 2
    err = capsys.readouterr().err
    assert f"Did you mean {name}" in err, err


def test_old_spellings_still_work_with_one_note(capsys):
    parser, _ = build_parser()
    args = parser.parse_args(["report", "--results", "r", "--out", "o", "--reference", "m", "--formats", "png,svg"])
    assert (args.results_dir, args.reports_dir, args.reference_method) == (Path("r"), Path("o"), "m")
    err = capsys.readouterr().err
    assert "--results is deprecated: write --results-dir" in err and "--reference is deprecated" in err
    args = parser.parse_args(["evaluate", "--method", "minirocket", "--dataset", "GunPoint", "--dataset", "Coffee",
                              "--protocols", "full,fixed5"])
    assert args.methods == ["minirocket"] and args.datasets == ["GunPoint", "Coffee"]
    assert args.protocols == ["full", "fixed5"]
    err = capsys.readouterr().err
    assert "--method is deprecated: write --methods minirocket" in err
    assert "comma-separated --protocols is deprecated" in err
    args = parser.parse_args(["download", "GunPoint", "Coffee"])
    assert args.datasets == ["GunPoint", "Coffee"]
    assert "write --datasets GunPoint Coffee" in capsys.readouterr().err


def test_lists_are_space_separated():
    parser, _ = build_parser()
    args = parser.parse_args(["evaluate", "--methods", "a", "b", "--datasets", "GunPoint", "Coffee",
                              "--protocols", "full", "fixed5"])
    assert (args.methods, args.datasets, args.protocols) == (["a", "b"], ["GunPoint", "Coffee"], ["full", "fixed5"])
    assert parser.parse_args(["report", "--formats", "png", "svg"]).formats == ["png", "svg"]


def test_help_is_plain_text_and_every_command_is_described():
    for name, p in _subparsers().items():
        assert p.description, f"{name} has no description"
        text = p.format_help()
        for rest in ("``", ":mod:", ":class:", ":func:", ":data:"):
            assert rest not in text, f"`chorustic {name} --help` shows reST {rest!r}"


def test_docs_command_table_is_the_parser():
    """docs/README.md's table lists every subcommand, with the parser's one-line help."""
    parser, _ = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = {a.dest: a.help for a in sub._choices_actions}
    page = (ROOT / "docs" / "README.md").read_text(encoding="utf-8")
    block = re.search(r"\| command \| does \|\n\|---\|---\|\n((?:\|.*\|\n)+)", page)
    assert block, "docs/README.md has no '| command | does |' table"
    rows = dict(re.findall(r"^\| `([a-z-]+)` \| (.+?) \|$", block.group(1), flags=re.M))
    assert sorted(rows) == sorted(helps), "docs/README.md's command table: run `python tools/command_table.py`"
    for name, text in helps.items():
        assert rows[name] == text, f"docs/README.md: `{name}` reads {rows[name]!r}, --help: {text!r}"
