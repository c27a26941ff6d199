"""The command line's one vocabulary: every subcommand builds its options from here, so an option means the
same thing, with the same default, in every command (``tests/test_cli_vocabulary.py`` walks every parser).

* **Locations**: ``--data-dir``, ``--cache-dir``, ``--results-dir``, ``--reports-dir`` (default: the
  configuration's ``paths.*``, i.e. ``config/config.yaml``'s, or the ``--config`` files' where a command
  reads them); ``--out FILE`` is always one file a command writes, ``--out-dir DIR`` always a folder.
* **Names**: ``--datasets NAME ...``, ``--methods NAME ...``, ``--protocols ID ...``: lists are
  space-separated, everywhere.
* **Configuration**: ``--config YAML`` (repeatable), merged over ``config/config.yaml``.
* ``--json`` is a switch (print JSON instead of text); a file is ``--out``.

:class:`Parser` is every parser of the CLI: no abbreviations, one line for every mistake with the closest
spelling ("did you mean"), plain-text help. Old spellings stay accepted for a release through
:func:`add_deprecated` (a one-line note on stderr).
"""

from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path
from typing import Any, Callable

from chorustic.paths import default_paths

__all__ = [
    "Parser", "PATH_OPTIONS", "LIST_OPTIONS", "add_path", "add_list", "add_config", "add_out", "add_out_dir",
    "add_deprecated", "add_training_run", "path_of", "default_paths", "suggest",
]

#: The location options: option -> (the configuration's ``paths`` key, what is there).
PATH_OPTIONS = {
    "--data-dir": ("data_dir", "the datasets, in the official <Name>/<Name>_{TRAIN,TEST}.ts layout"),
    "--cache-dir": ("cache_dir", "the preprocessed-array cache"),
    "--results-dir": ("results_dir", "the results (contexts/, runs/, predictions, accuracies.csv)"),
    "--reports-dir": ("reports_dir", "the reports (tables, figures, statistical tests)"),
}

#: The list options: option -> (metavar, what the names are).
LIST_OPTIONS = {
    "--datasets": ("NAME", "dataset names (see `chorustic datasets`)"),
    "--methods": ("NAME", "method run names of the configuration, or plugin names (see `chorustic methods`)"),
    "--protocols": ("ID", "protocol ids, e.g. full fixed5 prop20 (default: every one the configuration produces)"),
    "--metrics": ("NAME", "measures that get tables, ranks and CD diagrams: accuracy balacc f1 auroc logloss "
                          "(default: accuracy, the paper's)"),
}

CONFIG_HELP = "configuration file merged over config/config.yaml (repeatable), e.g. config/demo.yaml"


def suggest(word: str, candidates, *, quote: str = "") -> str:
    """`` (did you mean X?)`` for the closest of ``candidates``, or an empty string."""
    cands = [c for c in candidates if c]
    found = difflib.get_close_matches(word, cands, n=1, cutoff=0.6)
    if not found:  # an abbreviation
        found = [c for c in cands if c.startswith(word) and len(word) > 2][:1]
    if not found:
        return ""
    return f" (did you mean {' or '.join(f'{quote}{f}{quote}' for f in found[:2])}?)"


class _PlainText(argparse.RawDescriptionHelpFormatter):
    """Help as plain text: descriptions keep their line breaks, defaults are written in the help."""

    def __init__(self, prog, **kw):
        kw.setdefault("max_help_position", 32)
        super().__init__(prog, **kw)


class Parser(argparse.ArgumentParser):
    """An argparse parser that accepts only full option names and says every mistake in one line, with the
    closest spelling among the command's own options and values."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        kwargs.setdefault("formatter_class", _PlainText)
        super().__init__(*args, **kwargs)
        self._finishers: list[Callable[[Parser, argparse.Namespace], None]] = []
        self._argv: list[str] = []

    # ------------------------------------------------------------------------------------- parsing
    def parse_known_args(self, args=None, namespace=None):
        self._argv = list(sys.argv[1:] if args is None else args)
        ns, extras = super().parse_known_args(args, namespace)
        if extras:
            self.error(self._unknown(extras))
        for finish in self._finishers:
            finish(self, ns)
        return ns, extras

    def _option_names(self) -> list[str]:
        return [s for a in self._actions if a.help != argparse.SUPPRESS for s in a.option_strings]

    def _all_option_names(self) -> set[str]:
        return {s for a in self._actions for s in a.option_strings}

    def _subcommands(self) -> dict[str, Any]:
        for a in self._actions:
            if isinstance(a, argparse._SubParsersAction):
                return a.choices
        return {}

    def _unknown(self, extras: list[str]) -> str:
        first = extras[0]
        if first.startswith("-") and len(first) > 1:
            name = first.split("=", 1)[0]
            hint = suggest(name, self._option_names())
            if not hint and name.lstrip("-") in self._subcommands():
                hint = f" (a command is written without dashes: chorustic {name.lstrip('-')})"
            return f"unknown option {name}{hint}"
        return f"unexpected argument {first!r}" + suggest(first, self._subcommands())

    def _check_value(self, action, value):
        if action.choices is not None and value not in action.choices:
            choices = [str(c) for c in action.choices]
            raise argparse.ArgumentError(
                action, f"invalid choice {value!r}{suggest(str(value), choices, quote=chr(39))}; "
                f"choose from {', '.join(choices)}")

    def error(self, message: str):
        # a required option reported missing because its name was misspelled: say the misspelling
        if "the following arguments are required" in message:
            known = self._all_option_names()
            wrong = [w for w in self._argv if w.startswith("--") and w.split("=", 1)[0] not in known]
            if wrong:
                message = self._unknown(wrong)
        self.exit(2, f"{self.prog}: {message}. `{self.prog} --help` lists the options\n")

    def note(self, message: str) -> None:
        print(f"{self.prog}: note: {message}", file=sys.stderr)


# ------------------------------------------------------------------------------------------- options
def add_config(p: argparse.ArgumentParser, help: str = CONFIG_HELP) -> None:
    p.add_argument("--config", action="append", default=[], metavar="YAML", help=help)


def add_path(p: argparse.ArgumentParser, option: str, *, config: bool = False) -> None:
    """One location option, default ``None``: :func:`path_of` resolves it (the option, else the ``--config``
    files' ``paths`` where the command reads them, else ``config/config.yaml``'s)."""
    key, what = PATH_OPTIONS[option]
    where = "the --config files' paths." if config else "config/config.yaml's paths."
    p.add_argument(option, type=Path, default=None, metavar="DIR",
                   help=f"{what} (default: {where}{key}, {default_paths()[key]})")


def path_of(args: argparse.Namespace, key: str, cfg: dict | None = None) -> Path:
    """The location ``key`` (``data_dir``, ...) a command uses: the option, else the configuration's."""
    value = getattr(args, key, None)
    if value is not None:
        return Path(value)
    return Path((cfg or {"paths": default_paths()})["paths"][key])


def add_out(p: argparse.ArgumentParser, what: str) -> None:
    """``--out FILE``: the one file a command writes."""
    p.add_argument("--out", default=None, metavar="FILE", help=what)


def add_model_config(p: argparse.ArgumentParser) -> None:
    """``--model-config SPEC``: a model preset or a JSON file of its fields (what pretraining builds)."""
    p.add_argument("--model-config", default="small",
                   help="paper | base | small | tiny | a JSON file of ChorusTICConfig fields (default: small)")


def add_training_run(p: argparse.ArgumentParser) -> None:
    """The options of a training run that pretrain and its stages share: resuming it, where it runs, and
    stopping it in parts."""
    p.add_argument("--resume", action="store_true", help="continue the run in --out-dir from its newest state")
    p.add_argument("--device", default="auto", help="auto | cpu | cuda | cuda:N")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    p.add_argument("--max-minutes", type=float, default=None,
                   help="stop after this many minutes with a resumable state and the model so far (a long run in "
                        "parts: continue it with --resume)")
    p.add_argument("--no-progress", action="store_true", help="no tqdm progress bar")


def add_out_dir(p: argparse.ArgumentParser, what: str, default: str | None = None) -> None:
    """``--out-dir DIR``: the folder a command writes."""
    p.add_argument("--out-dir", type=Path, default=None if default is None else Path(default), metavar="DIR",
                   help=what + (f" (default: {default})" if default else ""))


def add_list(p: Parser, option: str, *, required: bool = False, help: str | None = None,
             positional: str | None = None, legacy: tuple[str, ...] = ()) -> None:
    """A space-separated list option (``--datasets A B``). ``positional``: the metavar of a positional form
    still accepted with a deprecation note; ``legacy``: old option spellings (each may be repeated)."""
    metavar, what = LIST_OPTIONS[option]
    dest = option.lstrip("-").replace("-", "_")
    p.add_argument(option, nargs="+", default=None, metavar=metavar, help=help or what)
    hidden = f"_legacy_{dest}"
    if positional:
        p.add_argument(hidden, nargs="*", default=[], metavar=positional, help=argparse.SUPPRESS)
    for old in legacy:
        p.add_argument(old, dest=hidden + "_opt", action="append", default=[], help=argparse.SUPPRESS)

    def finish(parser: Parser, ns: argparse.Namespace) -> None:
        given = getattr(ns, dest) is not None
        values = list(getattr(ns, dest) or [])
        by_position = getattr(ns, hidden, []) if positional else []
        by_old = getattr(ns, hidden + "_opt", []) if legacy else []
        if by_position:
            parser.note(f"giving {positional} without {option} is deprecated: write {option} {' '.join(by_position)}")
        if by_old:
            old = next(w for w in parser._argv if w.split("=", 1)[0] in legacy).split("=", 1)[0]
            parser.note(f"{old} is deprecated: write {option} {' '.join(by_old)}")
        values += list(by_position) + list(by_old)
        if any("," in v for v in values):
            parser.note(f"comma-separated {option} is deprecated: lists are space-separated "
                        f"({option} {' '.join(v for v in ','.join(values).split(',') if v)})")
            values = [w.strip() for v in values for w in v.split(",") if w.strip()]
        for h in (hidden, hidden + "_opt"):
            if hasattr(ns, h):
                delattr(ns, h)
        if required and not values:
            parser.error(f"give {option} {metavar} [{metavar} ...]")
        given = given or bool(by_position or by_old)
        setattr(ns, dest, values if given else None)  # given but empty (`--protocols ,`): the command says so

    p._finishers.append(finish)


class _Deprecated(argparse.Action):
    """An old spelling: stores into the new option's destination and says the new spelling once."""

    def __init__(self, option_strings, dest, new: str = "", **kwargs):
        self.new = new
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        parser.note(f"{option_string} is deprecated: write {self.new}")
        setattr(namespace, self.dest, self.const if self.nargs == 0 else values)


def add_deprecated(p: argparse.ArgumentParser, old: str, new: str, **kwargs) -> None:
    """Accept ``old`` for a release as a hidden spelling of ``new`` (same destination)."""
    dest = new.lstrip("-").replace("-", "_")
    if kwargs.get("nargs") == 0:
        kwargs.setdefault("const", True)
    p.add_argument(old, dest=dest, action=_Deprecated, new=new, help=argparse.SUPPRESS, default=argparse.SUPPRESS,
                   **kwargs)
