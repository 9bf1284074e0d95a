"""Sizes in KiB and MiB, times in µs, in everything a reader sees: figure
titles and labels, the report, the commands' tables, the experiments'
titles (sweep --list, the report's headings)."""

import io
import re
import tokenize

from colorsim import ROOT

# "512 KB", "1MB", "8 KB)", "hold us", "(usec)": the units this suite does
# not write
WRONG = re.compile(r"\d\s?[KMG]B\b|\b[KMG]B\)|\bus\b|\busec\b")
SOURCES = ("colorsim/report", "colorsim/orchestrate", "colorsim/results")


def _strings(path):
    """Every string literal of a Python file (docstrings and comments are
    not user-facing text here; a string that is only a docstring is
    skipped by its place: first in its block)."""
    toks = list(tokenize.generate_tokens(io.StringIO(path.read_text()).readline))
    for i, t in enumerate(toks):
        if t.type != tokenize.STRING:
            continue
        prev = next((p for p in reversed(toks[:i]) if p.type not in (
            tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
            tokenize.COMMENT)), None)
        if prev is None or prev.string == ":":
            continue                                    # a docstring
        yield t.start[0], t.string


def test_no_kb_mb_or_us_in_what_readers_see():
    bad = []
    for d in SOURCES:
        for f in sorted((ROOT / d).glob("*.py")):
            for line, s in _strings(f):
                if WRONG.search(s):
                    bad.append(f"{f.relative_to(ROOT)}:{line}: {s.strip()[:70]}")
    toml = ROOT / "configs" / "experiments.toml"
    for n, line in enumerate(toml.read_text().splitlines(), 1):
        if WRONG.search(line):
            bad.append(f"configs/experiments.toml:{n}: {line.strip()[:70]}")
    assert not bad, "\n".join(bad)
