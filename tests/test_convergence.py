"""The convergence table: Figure 9's 8-CPU point with every modelled clock
held within Q of the slowest (busmon's quantum for the servers, the client
model's skew for the clients), four Q from coarse to fine, three seeds."""

import re

from colorsim import ROOT
from colorsim.orchestrate.convergence import (QS_US, ROWS, SEEDS, agrees,
                                              machine_for, render, spec_for)
from tests.test_cache_model import needs_qemu
from tests.test_interleaving import _cli

DOC = ROOT / "engine" / "qemu-plugin" / "README.md"
BLOCK = re.compile(r"<!-- convergence:begin -->(.*?)<!-- convergence:end -->", re.S)


def test_each_row_holds_every_clock_within_its_q():
    base = machine_for(None)
    assert list(QS_US) == sorted(QS_US, reverse=True) and len(QS_US) == 4
    for q in QS_US:
        m = machine_for(q)
        hz = m.processor.clock_hz
        assert m.timing.quantum == hz * q // 10**6
        assert m.clients.skew_us == q
        # nothing else moves
        assert m.caches == base.caches and m.emulation == base.emulation
        assert m.timing.mem == base.timing.mem
        assert m.clients.pcs == base.clients.pcs
    names = {spec_for(k, q, s).default_name()
             for k in ("vanilla", "c32") for q in ROWS for s in SEEDS}
    assert len(names) == 2 * len(ROWS) * len(SEEDS)


def _row(vanilla, c32):
    mk = lambda xs: [{"req_s": x, "contention": 0.5, "host_s": 10, "mips": 5.0}
                     for x in xs]
    return {"vanilla": mk(vanilla), "c32": mk(c32)}


def test_agreement_is_within_the_seed_spread():
    a = _row([100, 100, 100], [150, 160, 155])      # gains 50, 60, 55 %
    near = _row([100, 100, 100], [158, 162, 160])   # 58..62: mean 5 away, a's range 10
    far = _row([100, 100, 100], [200, 201, 202])    # 100..102 %
    assert agrees(a, near) and agrees(near, a)
    assert not agrees(a, far)
    text = render([(None, a), (100, a), (20, far)], {"cpus": 1, "httpd": 1,
                  "clients": 1, "requests": 1, "client_cpus": 2, "seed": 1})
    lines = [l for l in text.splitlines() if l.startswith("| ")][1:]
    assert lines[0].startswith("| as configured |") and "| — |" in lines[0]
    assert "| no |" in lines[1] and "| — |" in lines[2]
    assert "+55.0 [+50.0..+60.0] %" in lines[0]


def test_the_doc_has_a_row_for_every_q():
    rows = [l.split("|")[1].strip() for l in BLOCK.search(DOC.read_text()).group(1).splitlines()
            if l.startswith("| ")][1:]
    assert rows == ["as configured"] + [f"{q} µs" for q in QS_US]


def test_missing_runs_are_refused_and_the_file_kept(tmp_path):
    doc = tmp_path / "doc.md"
    text = "A.\n<!-- convergence:begin -->\nold\n<!-- convergence:end -->\n"
    doc.write_text(text)
    (tmp_path / "empty").mkdir()
    p = _cli("convergence", "--out", tmp_path / "empty", "--write", doc)
    assert p.returncode == 2 and "runs of the table are missing" in p.stderr, p.stderr
    assert doc.read_text() == text


@needs_qemu
def test_the_table_is_written_from_runs(tmp_path):
    """A small point (2 CPUs, 16 httpd, 8 clients of 6 requests, 3 client
    CPUs): every row is written with three seeds, --check agrees, an edited
    number is caught."""
    doc = tmp_path / "doc.md"
    doc.write_text("<!-- convergence:begin -->\n<!-- convergence:end -->\n")
    small = ["--cpus", "2", "--httpd", "16", "--clients", "8", "--requests", "6",
             "--client-cpus", "3", "--out", tmp_path / "runs"]
    p = _cli("convergence", "--run", *small, "--write", doc)
    assert p.returncode == 0, p.stderr[-2000:]
    rows = [l.split("|")[1:-1] for l in BLOCK.search(doc.read_text()).group(1).splitlines()
            if l.startswith("| ")][1:]
    assert [r[0].strip() for r in rows] == ["as configured"] + [f"{q} µs" for q in QS_US]
    assert all(r[4].strip() in ("yes", "no", "—") for r in rows)
    assert _cli("convergence", *small, "--check", doc).returncode == 0
    doc.write_text(doc.read_text().replace(rows[1][1], " 1 [1..1] ", 1))
    p = _cli("convergence", *small, "--check", doc)
    assert p.returncode == 2 and "not what the catalog gives" in p.stderr
