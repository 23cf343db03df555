"""`probcep` builds only the parsers up to the command it runs: each command's help is
the one the full parser gives."""

from __future__ import annotations

from probcep.cli import build_parser


def _commands(parser):
    return next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")


def test_every_command_resolves_alone_with_the_same_help():
    full = _commands(build_parser()).choices
    assert "group" in full and "approx" in full and "live" in full
    for name, parser in full.items():
        alone = _commands(build_parser(name)).choices
        assert alone[name].format_help() == parser.format_help()
