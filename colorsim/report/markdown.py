"""Generated blocks in Markdown files.

A command that writes numbers into a Markdown file (the README's headline,
the real Linux 2.4 table, the paper-beside-ours summary) puts them between
``<!-- NAME:begin -->`` and ``<!-- NAME:end -->`` markers and nowhere else,
so every number there is regenerated, never typed.  ``check_in`` is the
test side: it fails when the file's block is not what the catalog gives.
"""

from __future__ import annotations

import os
from pathlib import Path

from colorsim.errors import ConfigError, ResultsError


def markers(name: str) -> tuple:
    return f"<!-- {name}:begin -->", f"<!-- {name}:end -->"


def _block(text: str, path: Path, begin: str, end: str) -> tuple:
    try:
        a = text.index(begin) + len(begin)
        b = text.index(end, a)
    except ValueError:
        raise ConfigError(f"{path} has no {begin} ... {end} markers") from None
    return a, b


def write_into(path: Path, table: str, begin: str, end: str) -> None:
    """Replace the block between the markers, atomically (a reader never
    sees half a file)."""
    text = path.read_text()
    a, b = _block(text, path, begin, end)
    new = text[:a] + "\n" + table + text[b:]
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_text(new)
    tmp.replace(path)


def check_in(path: Path, table: str, begin: str, end: str, how: str) -> None:
    text = path.read_text()
    a, b = _block(text, path, begin, end)
    if text[a:b].strip() != table.strip():
        raise ResultsError(f"{path}'s {how} table is not what the catalog "
                           f"gives: run 'python3 -m colorsim.maintain {how} --write "
                           f"{path}'")


def add_block_options(parser, block: str) -> None:
    """--write FILE / --check FILE for a command whose table lives in a
    ``block`` of generated Markdown: on the maintainer's command line
    (``python3 -m colorsim.maintain``, whose parsers say ``writes_docs``)
    only.  The user's ``colorsim`` prints the table; rewriting the suite's
    own documents is not a user's task."""
    parser.set_defaults(write=None, check=None)
    if not getattr(parser, "writes_docs", False):
        return
    g = parser.add_mutually_exclusive_group()
    g.add_argument("--write", type=Path, metavar="FILE",
                   help=f"put the table between FILE's {block} markers")
    g.add_argument("--check", type=Path, metavar="FILE",
                   help="exit 2 if FILE's table differs from the catalog's")


def check_block_files(a, block: str = None) -> None:
    """Refuse a --write or --check file that is not there, or (given
    ``block``) has no such block, before any run."""
    for f in (a.write, a.check):
        if f is not None and not Path(f).is_file():
            raise ConfigError(f"{f}: no such file")
        if f is not None and block:
            _block(Path(f).read_text(), Path(f), *markers(block))


def emit(table: str, a, block: str, how: str) -> None:
    """Write the table into --write's block, compare it with --check's, or
    print it."""
    begin, end = markers(block)
    if a.write:
        write_into(Path(a.write), table, begin, end)
        print(f"{how}: wrote the table into {a.write}")
    elif a.check:
        check_in(Path(a.check), table, begin, end, how=how)
        print(f"{how}: {a.check} matches the catalog")
    else:
        print(table, end="")
