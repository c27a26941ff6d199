"""Write docs/README.md's command table from the parser: one row per `chorustic` subcommand, its `--help` line.

    python tools/command_table.py           # rewrite the table in place
    python tools/command_table.py --check   # exit 1 if the table differs (tests/test_cli_vocabulary.py checks it too)
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

PAGE = Path(__file__).resolve().parents[1] / "docs" / "README.md"
TABLE = re.compile(r"(\| command \| does \|\n\|---\|---\|\n)((?:\|.*\|\n)+)")


def table() -> str:
    from chorustic.cli import build_parser

    parser, _ = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return "".join(f"| `{a.dest}` | {a.help} |\n" for a in sub._choices_actions)


def main(argv: list[str] | None = None) -> int:
    check = "--check" in (argv if argv is not None else sys.argv[1:])
    text = PAGE.read_text(encoding="utf-8")
    m = TABLE.search(text)
    if m is None:
        print(f"{PAGE}: no '| command | does |' table", file=sys.stderr)
        return 1
    new = text[: m.start(2)] + table() + text[m.end(2):]
    if check:
        if new != text:
            print(f"{PAGE}: the command table differs from the parser; run `python tools/command_table.py`")
            return 1
        return 0
    PAGE.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
