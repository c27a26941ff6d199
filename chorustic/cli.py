"""The ``chorustic`` command line.

Subcommands live in ``chorustic/commands/<name>.py``; each module defines ``register(subparsers)``
which adds its parser(s) and sets ``func`` (called with the parsed namespace, returns an exit code).
A command module that fails to import is reported when its command is used, never fatal for the others.

Exit status: 0 success; 1 something failed (a data file, a method, a job, a full disk: the message
names it); 2 a user error (invalid configuration, unknown dataset or method name, bad arguments: one
line, no traceback, see :mod:`chorustic.errors`).
"""

from __future__ import annotations

import errno
import importlib
import pkgutil
import sys
import traceback

import chorustic
import chorustic.commands
from chorustic.commands._vocabulary import Parser


def build_parser() -> tuple[Parser, dict[str, str]]:
    parser = Parser(
        prog="chorustic",
        description="Benchmark and reproducibility harness for ChorusTIC (UCR-128 / UEA-30).",
    )
    parser.add_argument("--version", action="version", version=f"chorustic {chorustic.__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    broken: dict[str, str] = {}
    for info in sorted(pkgutil.iter_modules(chorustic.commands.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        try:
            module = importlib.import_module(f"chorustic.commands.{info.name}")
            module.register(sub)
        except Exception:  # a broken command module must not take the CLI down
            broken[info.name] = traceback.format_exc()
    return parser, broken


#: The errors of a path a command cannot use (no such folder, no permission, a read-only file system).
_PATH_ERRNOS = {errno.ENOENT, errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOTDIR, errno.EISDIR}


def main(argv: list[str] | None = None) -> int:
    parser, broken = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "func", None) is None:
        if args.command in broken:
            print(f"chorustic: command module '{args.command}' failed to load:\n{broken[args.command]}",
                  file=sys.stderr)
            return 2
        parser.print_help()
        if broken:
            print(f"\n(commands that failed to load: {', '.join(sorted(broken))})", file=sys.stderr)
        return 0 if args.command is None else 2
    from chorustic.data.errors import DataError
    from chorustic.errors import NoSpaceError, UserError

    try:
        return int(args.func(args) or 0)
    except UserError as exc:  # a mistake in the request: one line, no traceback
        print(f"chorustic {args.command}: {exc}", file=sys.stderr)
        return 2
    except (DataError, NoSpaceError) as exc:  # a data file's problem, a full disk: the message names the file
        print(f"chorustic {args.command}: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        if exc.errno not in _PATH_ERRNOS or not exc.filename:
            raise
        # a path the command cannot create, read or write (paths.results_dir on a read-only disk or under a
        # folder that does not exist): one line naming it, not a traceback
        print(f"chorustic {args.command}: {exc.strerror}: {exc.filename} (a file or folder this command reads "
              "or writes: check the path, e.g. paths.results_dir in the config, and its permissions)", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
