"""The maintainer's command line: ``python3 -m colorsim.maintain``.

The suite's own Markdown holds tables generated from runs, each between
``<!-- NAME:begin -->`` and ``<!-- NAME:end -->`` markers.  The commands
here are the user's study commands with ``--write FILE`` (rewrite the
block) and ``--check FILE`` (exit 2 when the block is not what the runs
give), plus the two tables only the documents need (the README's headline
and the Linux 2.4 table), and ``blocks``, which lists every generated block
and the command that writes it.  The user's ``colorsim`` prints the same
tables and never rewrites a document.
"""

from __future__ import annotations

import argparse
import re
import sys

from colorsim import ROOT
from colorsim import cli

# Every generated block, by name: the command line (after
# ``python3 -m colorsim.maintain``) that makes its table.  A test checks
# that each block in the suite's Markdown is here and that each command
# parses.
BLOCKS = {
    "headline": "headline --run",
    "linux24": "linux24-table --run",
    "linux24-engines": "linux24-engines --run",
    "linux24-timed": "linux24-timed --run",
    "linux24-fig6": "linux24-fig6 --run",
    "linux24-waits": "linux24-waits --run",
    "shapes": "shapes --quick",
    "shapes-paper": "shapes --runs recorded/paper",
    "crosscheck": "crosscheck",
    "sensitivity": "timing-sensitivity --run",
    "interleaving": "interleaving-sensitivity --run",
    "convergence": "convergence --run",
    "convergence-fig6": "convergence --at fig6 --run",
    "convergence-chat": "convergence --at chat --run",
    "whatif": "cost-whatif --run",
    "oppoint": "operating-point --run",
    "oppoint-l2": "operating-point --run",
    "chat-regime": "chat-regime --run",
    "wset": "working-set --run",
    "referee": "referee --run",
    "gem5-bus": "gem5-bus",
}

MARKER = re.compile(r"^<!-- ([a-z0-9-]+):begin -->$")

DESCRIPTION = ("The maintainer's commands: regenerate (--write FILE) or check "
               "(--check FILE) the tables the suite's Markdown holds between "
               "generated-block markers.  'blocks' lists them all.")


class _DocsParser(cli._Parser):
    """A parser whose commands get --write and --check
    (report.markdown.add_block_options)."""
    writes_docs = True


def found_blocks() -> list:
    """(file relative to the checkout, line, block name) of every
    generated block in the suite's Markdown."""
    out = []
    for path in sorted(ROOT.rglob("*.md")):
        rel = path.relative_to(ROOT)
        if rel.parts[0] in ("runs", "build", "recorded") or rel.parts[0].startswith("."):
            continue
        for i, line in enumerate(path.read_text().splitlines(), 1):
            m = MARKER.match(line.strip())
            if m:                   # not one quoted in the prose
                out.append((str(rel), i, m.group(1)))
    return out


def cmd_blocks(a) -> int:
    rows = found_blocks()
    unknown = [f"{f}:{n} {b}" for f, n, b in rows if b not in BLOCKS]
    for f, n, b in rows:
        how = BLOCKS.get(b, "(no command: add it to colorsim/maintain.py)")
        print(f"{f + ':' + str(n):38} {b:18} python3 -m colorsim.maintain "
              f"{how} --write {f}")
    return 2 if unknown else 0


def build_parser():
    from colorsim.orchestrate import (gem5bus, headline, linux24fig6, linux24table,
                                      linux24timed, linux24waits)
    from colorsim.report import command as figures
    ap = _DocsParser(prog="python3 -m colorsim.maintain", description=DESCRIPTION,
                     formatter_class=lambda prog: argparse.RawDescriptionHelpFormatter(
                         prog, max_help_position=24, width=100))
    sub = ap.add_subparsers(dest="command", required=True,
                            parser_class=_DocsParser, title="commands",
                            metavar="COMMAND")
    sub.add_parser("blocks", help="every generated block in the suite's "
                   "Markdown and the command that writes it"
                   ).set_defaults(func=cmd_blocks)
    headline.add_parser(sub)
    linux24table.add_parser(sub)
    linux24table.add_engines_parser(sub)
    linux24timed.add_parser(sub)
    linux24fig6.add_parser(sub)
    linux24waits.add_parser(sub)
    gem5bus.add_parser(sub)
    figures.add_shapes_parser(sub)
    cli.add_studies(sub)
    sub.help = "the command (each has --help)"
    cli._describe(sub)
    return ap


def main(argv=None) -> int:
    return cli.main(argv, build=build_parser)


if __name__ == "__main__":
    sys.exit(main())
