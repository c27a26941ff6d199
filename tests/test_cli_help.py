"""Every subcommand and every option of the `chorustic` command line says what it does (`--help`)."""

from __future__ import annotations

import argparse

from chorustic.cli import build_parser


def test_every_subcommand_and_option_has_help_text():
    parser, broken = build_parser()
    assert not broken, broken
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    described = {a.dest: a.help for a in sub._choices_actions}
    missing = [f"{name} (the subcommand)" for name in sub.choices if not described.get(name)]
    for name, p in sub.choices.items():
        for action in p._actions:
            if not isinstance(action, argparse._HelpAction) and not action.help:
                missing.append(f"{name} {'/'.join(action.option_strings) or action.dest}")
    assert not missing, f"without help text: {missing}"
