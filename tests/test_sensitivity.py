"""The sensitivity table (which timing cost moves which result) lives in a
generated block of engine/qemu-plugin/README.md: it has a row for every
switch of the model that is on for its machine, and it is written from
runs, so a hand-edited number or a missing run is caught."""

import json
import re
import subprocess
import sys

import pytest

from colorsim import ROOT
from colorsim.describe.machine import TIMING_SWITCHES
from colorsim.orchestrate.sensitivity import POINTS, all_costs, row_labels
from tests.test_cache_model import needs_qemu

DOC = ROOT / "engine" / "qemu-plugin" / "README.md"
BLOCK = re.compile(r"<!-- sensitivity:begin -->(.*?)<!-- sensitivity:end -->",
                   re.S)


def _doc_rows(text: str) -> list:
    """(point, change) of each data row of the block."""
    block = BLOCK.search(text).group(1)
    cells = [[c.strip() for c in line.strip().strip("|").split("|")]
             for line in block.splitlines() if line.startswith("| ")]
    return [(c[0], c[1]) for c in cells[1:]]        # past the header


def test_the_doc_has_a_row_for_every_switch_on_for_its_machine():
    assert _doc_rows(DOC.read_text()) == row_labels(POINTS, all_costs())
    # every switch has a row at a point where it is on
    changes = {c for _, c in row_labels(POINTS, all_costs())}
    for cost in TIMING_SWITCHES:
        assert f"`{cost}` off" in changes, cost


def test_a_new_switch_without_its_row_is_caught(monkeypatch):
    """A cost made switchable (here the L2 hit's) asks for a row on both
    machines, which the doc's table lacks until it is regenerated."""
    monkeypatch.setitem(TIMING_SWITCHES, "l2_hit", "an L2 hit is free")
    want = row_labels(POINTS, all_costs())
    assert sum(c == "`l2_hit` off" for _, c in want) == 2
    assert _doc_rows(DOC.read_text()) != want


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "colorsim", *map(str, args)],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)


def _docs(*args):
    """The maintainer's command line (it writes and checks the docs' tables)."""
    return subprocess.run([sys.executable, "-m", "colorsim.maintain", *map(str, args)],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)


@pytest.mark.slow
@needs_qemu
def test_the_table_is_written_from_runs(tmp_path):
    """A small table (ppro4, the ITLB's row, 64 tasks, a 2-tick region)
    written into a file, checked against its runs, caught when a number is
    edited, and refused (the file untouched) when its runs are missing."""
    doc = tmp_path / "doc.md"
    doc.write_text("Before.\n<!-- sensitivity:begin -->\n"
                   "<!-- sensitivity:end -->\nAfter.\n")
    small = ["--machine", "ppro4", "--costs", "itlb", "--tasks", "64",
             "--burst", "2000", "--roi", "2", "--out", tmp_path / "runs"]
    p = _docs("timing-sensitivity", "--run", *small, "--write", doc)
    assert p.returncode == 0, p.stderr
    got = _doc_rows(doc.read_text())
    assert [c for _, c in got] == ["all on", "all on, the next seed (chance)",
                                   "`itlb` off"]
    assert doc.read_text().startswith("Before.\n") and "After." in doc.read_text()
    assert _docs("timing-sensitivity", *small, "--check", doc).returncode == 0
    # the rows are the runs': the itlb-off runs had no ITLB
    runs = sorted((tmp_path / "runs").glob("*-timing-*"))
    assert len(runs) == 6
    itlbs = sorted(json.loads((r / "busmon.json").read_text())["tlb"]["itlb"]
                   for r in runs)
    assert itlbs == [0, 0, 32, 32, 32, 32]
    text = doc.read_text()
    row = next(l for l in text.splitlines() if "`itlb` off" in l)
    cells = row.split("|")
    cells[3] = " 1 "                       # vanilla's work per second
    doc.write_text(text.replace(row, "|".join(cells)))
    p = _docs("timing-sensitivity", *small, "--check", doc)
    assert p.returncode == 2 and "not what the catalog gives" in p.stderr
    doc.write_text(text)
    (tmp_path / "empty").mkdir()
    missing = small[:-1] + [tmp_path / "empty"]
    p = _docs("timing-sensitivity", *missing, "--write", doc)
    assert p.returncode == 2 and "runs of the table are missing" in p.stderr
    assert doc.read_text() == text
