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


def test_every_figure_says_what_it_is_normalised_to():
    """Each report figure passes ``norm`` to save(), and the title line
    carries it beside the scale, seeds and accept mode."""
    import ast
    import types

    import pandas as pd

    from colorsim.report.common import context
    missing = []
    for f in sorted((ROOT / "colorsim" / "report").glob("*.py")):
        for n in ast.walk(ast.parse(f.read_text())):
            if (isinstance(n, ast.Call) and getattr(n.func, "id", None) == "save"
                    and len(n.args) >= 4
                    and not any(k.arg == "norm" for k in n.keywords)):
                missing.append(f"{f.name}:{n.lineno}")
    assert not missing, f"save() without norm=: {missing}"
    d = types.SimpleNamespace(scale="quick", runs=pd.DataFrame({
        "seed": [1, 2], "workload_run": ["web", "web"], "accept": ["pipe", "pipe"],
        "timing": [False, False]}))
    line = context(d, "per schedule() call")
    assert line == ("quick scale | seeds 1, 2 | web: herd accept lock | counting | "
                    "per schedule() call")
    assert context(d).endswith("| not normalised")
