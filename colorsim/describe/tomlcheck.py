"""Checks shared by the suite's TOML files (machines, experiments): every key
and table is one the reader knows, a misspelling names what was meant, and a
table or key given twice is reported as given twice.

A schema is a dict: key -> None (a value) or key -> dict (a sub-table with
its own schema).  A table written inline (``l2 = { size = ..., assoc = 4 }``)
is checked like one written as ``[x.caches.l2]``.
"""

from __future__ import annotations

import difflib
import re
import tomllib

from colorsim.errors import ConfigError


def did_you_mean(word: str, known) -> str:
    """'; did you mean 'x'?' for the closest known word, or ''."""
    close = difflib.get_close_matches(word, list(known), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def check_keys(table: dict, schema: dict, where: str) -> None:
    """ConfigError naming the table and key of the first unknown key or
    table in ``table`` (``where`` is its TOML name, e.g. 'ppro4.caches')."""
    for key, value in table.items():
        if key not in schema:
            kind = "table" if isinstance(value, dict) else "key"
            raise ConfigError(f"[{where}]: unknown {kind} {key!r}"
                              f"{did_you_mean(key, schema)} (known: "
                              f"{', '.join(schema)})")
        sub = schema[key]
        if isinstance(sub, dict) and isinstance(value, dict):
            check_keys(value, sub, f"{where}.{key}")


_DUPLICATE = re.compile(r"Cannot (?:declare \(([^)]*)\) twice|overwrite a value)"
                        r" \(at line (\d+), column \d+\)")


def duplicate(e: tomllib.TOMLDecodeError):
    """(dotted table name or None, line) when tomllib refused a table or a
    key given twice; None for any other error."""
    m = _DUPLICATE.search(str(e))
    if not m:
        return None
    names = re.findall(r"'([^']*)'", m.group(1) or "")
    return (".".join(names) or None), int(m.group(2))


def duplicate_message(e: tomllib.TOMLDecodeError, first_line: int = 1):
    """'line L: [x.y] is given twice' (or 'a key is given twice'), or None."""
    d = duplicate(e)
    if d is None:
        return None
    name, line = d
    line += first_line - 1
    what = f"[{name}] is declared twice" if name else "a key is given twice"
    return f"line {line}: {what} (each table and key may appear once)"
