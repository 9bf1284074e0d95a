"""Numbers that remain in Markdown are generated or checked by a test.

Measured results typed by hand drift from the code; they belong in the
report (figures all), the generated README headline (tests/test_headline.py
checks it) or a command that prints them.  This test keeps them out: no
dated measurement stamps, no table of percentages outside the generated
block, and the one table of counts the docs keep (the quick points per
experiment) checked against the experiments file."""

import re
import subprocess

from colorsim import ROOT

STAMP = re.compile(r"\bcommit [0-9a-f]{7,40}\b|\bre-measured\b|"
                   r"\b(measured|recorded) (at|on) (commit|20\d\d)|"
                   r"\b20\d\d-[01]\d-[0-3]\d\b")
# dates that are facts, not when something was measured
FACT_DATES = ("2002-06-10",)          # the guest clock's base (kernels/README.md)
PERCENT_CELL = re.compile(r"\|\s*[-+−]?\d[\d.,]*\s*%")
GENERATED = re.compile(r"<!-- ([\w-]+):begin -->.*?<!-- \1:end -->", re.S)


def _markdown():
    out = subprocess.run(["git", "ls-files", "*.md"], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout.split()
    return [ROOT / f for f in out if (ROOT / f).is_file()]


def test_no_dated_measurements_in_markdown():
    bad = []
    for f in _markdown():
        for n, line in enumerate(f.read_text().splitlines(), 1):
            for m in STAMP.finditer(line):
                if m.group(0) not in FACT_DATES:
                    bad.append(f"{f.relative_to(ROOT)}:{n}: {m.group(0)}")
    assert not bad, "\n".join(bad)


def test_no_table_of_percentages_outside_generated_blocks():
    bad = []
    for f in _markdown():
        text = GENERATED.sub("", f.read_text())
        for n, line in enumerate(text.splitlines(), 1):
            if line.lstrip().startswith("|") and PERCENT_CELL.search(line):
                bad.append(f"{f.relative_to(ROOT)}: {line.strip()[:80]}")
    assert not bad, "\n".join(bad)


def test_the_docs_quick_point_counts_are_the_experiments_file():
    from colorsim.describe.experiments import load_experiments
    exps = load_experiments()
    text = (ROOT / "docs" / "sweeps-and-catalog.md").read_text()
    rows = re.findall(r"^\s*\| (\w+)(?:, \w+)? \|.*\| ([\d +()]+) \|$", text, re.M)
    assert len(rows) >= 9, rows
    for name, cell in rows:
        want = len(list(exps[name].points(True)))
        first = int(cell.split()[0])
        assert first == want, f"{name}: the docs say {first} quick points, " \
                              f"configs/experiments.toml makes {want}"
