"""The interleaving table (what QEMU's round-robin slicing and the
clients' speed move in the web results) lives in a generated block of
engine/qemu-plugin/README.md: one row per setting, three seeds each, each
run with exactly that setting changed, written from runs and checked
against them."""

import re
import subprocess
import sys

from colorsim import ROOT
from colorsim.orchestrate.interleaving import (CHANGES, POINT, SEED_COUNT, machine_for,
                                               render, spec_for)
from tests.test_cache_model import needs_qemu

DOC = ROOT / "engine" / "qemu-plugin" / "README.md"
BLOCK = re.compile(r"<!-- interleaving:begin -->(.*?)<!-- interleaving:end -->", re.S)


def _doc_rows(text: str) -> list:
    """The cells of each data row of the block."""
    block = BLOCK.search(text).group(1)
    cells = [[c.strip() for c in line.strip().strip("|").split("|")]
             for line in block.splitlines() if line.startswith("| ")]
    return cells[1:]                                # past the header


def test_the_doc_has_a_row_for_every_setting():
    assert [r[0] for r in _doc_rows(DOC.read_text())] == [
        label for label, _, _ in CHANGES.values()]


def test_each_row_changes_only_what_it_names():
    base = machine_for(None)
    assert base.emulation.rr_slice_min == base.emulation.rr_slice_max == 0
    assert base.timing.hold_for_clients is False
    assert base.clients is not None          # the client model is the default
    for change, (_, emu, tim) in CHANGES.items():
        m = machine_for(change)
        for f in ("icount_shift", "rr_slice_min", "rr_slice_max"):
            assert getattr(m.emulation, f) == emu.get(f, getattr(base.emulation, f))
        tim = dict(tim)
        assert (m.clients is None) == (tim.pop("clients", True) is False)
        assert m.timing == base.timing.__class__(
            **{**base.timing.__dict__, **tim})
        assert m.processor == base.processor and m.caches == base.caches
    # every row and seed is its own pair of runs
    names = {spec_for(k, c, dict(POINT, seed=s)).default_name()
             for c in CHANGES for s in range(1, SEED_COUNT + 1) for k in ("vanilla", "c32")}
    assert len(names) == 2 * len(CHANGES) * SEED_COUNT
    assert spec_for("c32", None, dict(POINT, seed=2)).workload.seed == 2
    assert spec_for("c32", "max250").machine.emulation.accel.endswith("rr-slice-max=250")


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "colorsim", *map(str, args)],
                          cwd=ROOT, capture_output=True, text=True, timeout=1800)


def _docs(*args):
    """The maintainer's command line (it writes and checks the docs' tables)."""
    return subprocess.run([sys.executable, "-m", "colorsim.maintain", *map(str, args)],
                          cwd=ROOT, capture_output=True, text=True, timeout=1800)


def refuses_missing_runs(tmp_path, command, *blocks):
    """``command --write`` into a file with these blocks, from a run
    directory with no runs: exit 2, the runs named missing, and the file as
    it was.  Returns the file and its text."""
    doc = tmp_path / "doc.md"
    text = ("A.\n" + "".join(f"<!-- {b}:begin -->\nold\n<!-- {b}:end -->\n"
                             for b in blocks) + "B.\n")
    doc.write_text(text)
    (tmp_path / "empty").mkdir()
    p = _docs(command, "--out", tmp_path / "empty", "--write", doc)
    assert p.returncode == 2 and "runs of the table are missing" in p.stderr, p.stderr
    assert doc.read_text() == text
    return doc, text


def test_missing_runs_are_refused_and_the_file_kept(tmp_path):
    doc, text = refuses_missing_runs(tmp_path, "interleaving-sensitivity", "interleaving")
    p = _docs("interleaving-sensitivity", "--client-cpus", "1", "--write", doc)
    assert p.returncode == 2 and "one of them drives the wire" in p.stderr
    p = _docs("interleaving-sensitivity", "--seeds", "1", "--write", doc)
    assert p.returncode == 2 and "at least 2 seeds" in p.stderr
    assert doc.read_text() == text


def _fake(rate, contention=0.5):
    return {"rate": rate, "contention": contention, "accept": 0.0,
            "sched_per_req": 1.0, "clients": 0.2, "host_s": 10.0}


def test_a_row_moves_beyond_chance_only_past_the_wider_seed_range():
    """The rule, on made-up rows: the configured row's gains are +10 and
    +20 %; a row at +14..+16 % lies within them, one at +40..+42 % beyond."""
    def row(gains):
        return {"vanilla": [_fake(1000) for _ in gains],
                "c32": [_fake(1000 * (1 + g)) for g in gains]}
    got = [(None, row([0.10, 0.20])), ("max250", row([0.14, 0.16])),
           ("min1000", row([0.40, 0.42]))]
    text = render(got, POINT, 2)
    cells = {r[0]: r for r in _doc_rows(f"<!-- interleaving:begin -->{text}"
                                        "<!-- interleaving:end -->")}
    assert cells["as configured"][3] == "+15.0 [+10.0..+20.0] %"
    assert cells["as configured"][4] == "—"
    assert cells[CHANGES["max250"][0]][4] == "no"
    assert cells[CHANGES["min1000"][0]][4] == "yes"
    assert "seeds 1, 2:" in text
    assert "1 of 2 settings move c32's gain beyond chance: " + CHANGES["min1000"][0] in text
    assert ("Pairs of settings apart beyond chance: " + CHANGES["max250"][0] + " / "
            + CHANGES["min1000"][0] + ".") in text


@needs_qemu
def test_the_table_is_written_from_runs(tmp_path):
    """A small point (2 CPUs, 16 httpd, 8 clients of 6 requests, 3 client
    CPUs, two seeds, about a minute): every row is written, --check agrees,
    and an edited number is caught."""
    doc = tmp_path / "doc.md"
    doc.write_text("<!-- interleaving:begin -->\n<!-- interleaving:end -->\n")
    small = ["--cpus", "2", "--httpd", "16", "--clients", "8", "--requests", "6",
             "--client-cpus", "3", "--seeds", "2", "--out", tmp_path / "runs"]
    p = _docs("interleaving-sensitivity", "--run", *small, "--write", doc)
    assert p.returncode == 0, p.stderr
    rows = _doc_rows(doc.read_text())
    assert [r[0] for r in rows] == [label for label, _, _ in CHANGES.values()]
    held = [r for r in rows if "servers wait" in r[0]]
    free = next(r for r in rows if r[0].startswith("no client model:"))
    # the held clients are busy for less of the region than the free ones
    assert held
    for r in held:
        assert float(r[8].split("/")[1]) < float(free[8].split("/")[1]), (r, free)
    assert all(r[4] in ("yes", "no") for r in rows[1:]) and rows[0][4] == "—"
    assert _docs("interleaving-sensitivity", *small, "--check", doc).returncode == 0
    text = doc.read_text()
    doc.write_text(text.replace(f"| {free[1]} |", "| 1 [1..1] |", 1))
    p = _docs("interleaving-sensitivity", *small, "--check", doc)
    assert p.returncode == 2 and "not what the catalog gives" in p.stderr


def test_the_default_row_is_figure_9s_recorded_point():
    """The "as configured" row's runs are Figure 9's paper-scale sweep
    points at 8 CPUs, every seed (the same settings, so the same run
    names): the table measures the point the README's Table 4 and 6 rows
    report, and a change to fig9's grid that the table does not follow is
    caught here."""
    from colorsim.describe.experiments import expand, load_experiments
    fig9 = load_experiments()["fig9"]
    for kernel in ("vanilla", "c32"):
        for seed in range(1, SEED_COUNT + 1):
            sweep = [p for p in expand(fig9) if p.cpus == 8 and p.kernel == kernel
                     and p.seed == seed]
            assert len(sweep) == 1, sweep
            assert spec_for(kernel, None, dict(POINT, seed=seed)).default_name() == \
                sweep[0].spec().default_name()
