"""The command line describes itself: every command listed once with a short
help line, and no help text that speaks of the project's history."""

import re
import subprocess
import sys
import tomllib

from colorsim import ROOT
from colorsim.cli import build_parser


def _subparsers(parser):
    for action in parser._actions:
        if action.__class__.__name__ == "_SubParsersAction":
            return action
    return None


def _all_help_texts(parser, path=()):
    """(command path, help text) of the parser and every subcommand's."""
    yield path, parser.format_help()
    sub = _subparsers(parser)
    if sub:
        for name, child in sub.choices.items():
            yield from _all_help_texts(child, path + (name,))


def test_top_help_lists_every_command_once_in_its_group():
    from colorsim.cli import GROUPS
    parser = build_parser()
    commands = list(_subparsers(parser).choices)
    text = subprocess.run([sys.executable, "-m", "colorsim", "--help"],
                          cwd=ROOT, capture_output=True, text=True,
                          timeout=60).stdout
    listed = [m.group(1) for m in re.finditer(r"^    (\S+)", text, re.M)]
    assert listed == [c for _, cmds in GROUPS for c in cmds]
    assert sorted(listed) == sorted(commands)
    for title, cmds in GROUPS:            # each group's title, then its commands
        at = text.index(f"\n{title}:\n")
        assert all(text.index(f"\n    {c}", at) > at for c in cmds)
    for name in commands:                 # "    name    its help line"
        line = re.search(rf"^    {re.escape(name)}\s+(.*)$", text, re.M).group(1)
        if not line:                      # a long name: the help on the next line
            line = text.split(f"    {name}\n", 1)[1].splitlines()[0].strip()
        assert line, f"{name} has no help line"
        assert len(line) <= 76, f"{name}: help longer than a line"


def test_the_user_command_line_never_rewrites_a_document():
    """--write and --check (which rewrite or check the suite's own Markdown)
    are the maintainer's: no user command has them, and the commands that
    only make a document's table are not user commands."""
    import argparse

    def options(p):
        for a in p._actions:
            if isinstance(a, argparse._SubParsersAction):
                for sp in a.choices.values():
                    yield from options(sp)
            else:
                yield from a.option_strings
    assert not {"--write", "--check"} & set(options(build_parser()))
    assert not {"headline", "linux24-table"} & set(_subparsers(build_parser()).choices)


def test_every_generated_block_has_its_maintainer_command():
    """Every block between generated-block markers in the suite's Markdown
    is written by a maintainer command that parses, with --write."""
    from colorsim import maintain
    found = maintain.found_blocks()
    assert {"headline", "convergence", "oppoint", "wset"} <= {b for _, _, b in found}
    ap = maintain.build_parser()
    for f, line, block in found:
        assert block in maintain.BLOCKS, f"{f}:{line}: {block} has no command"
        a = ap.parse_args(maintain.BLOCKS[block].split() + ["--write", f])
        assert a.write is not None and callable(a.func)
    p = subprocess.run([sys.executable, "-m", "colorsim.maintain", "blocks"],
                       cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and len(p.stdout.splitlines()) == len(found)


def test_no_help_text_names_issues_or_sessions():
    for path, text in _all_help_texts(build_parser()):
        assert not re.search(r"\b(issue|session|helper branch)s?\b", text, re.I), \
            (" ".join(path) or "colorsim", text)


def test_console_script_points_at_main():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    target = meta["project"]["scripts"]["colorsim"]
    module, func = target.split(":")
    mod = __import__(module, fromlist=[func])
    assert getattr(mod, func)(["machines"]) == 0


def test_every_command_has_a_description_and_every_option_help():
    import argparse

    from colorsim.cli import build_parser

    def walk(parser, path):
        for a in parser._actions:
            if isinstance(a, argparse._HelpAction):
                continue
            assert a.help, f"{path}: {a.option_strings or a.dest} has no help"
            if isinstance(a, argparse._SubParsersAction):
                for name, sp in a.choices.items():
                    assert sp.description, f"{path} {name}: no description"
                    walk(sp, f"{path} {name}")
    from colorsim import maintain
    walk(build_parser(), "colorsim")
    walk(maintain.build_parser(), "colorsim.maintain")      # --write, --check too
