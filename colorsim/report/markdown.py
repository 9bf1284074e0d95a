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
                           f"gives: run 'python3 -m colorsim {how} --write "
                           f"{path}'")
