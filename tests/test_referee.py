"""The referee table: the timed web and Chat points on gem5 beside QEMU's
timing mode as configured and with every clock held within 1 µs."""

import re

from colorsim import ROOT
from colorsim.orchestrate.convergence import SEEDS
from colorsim.orchestrate.referee import (CHAT, ENGINES, POINTS, WEB, format_row,
                                          render, spec_for)
from tests.test_interleaving import refuses_missing_runs

DOC = ROOT / "docs" / "engines.md"


def test_each_engine_row_runs_the_same_work():
    """gem5 without --timing (it keeps modelled time itself), QEMU with it,
    the last row's clocks held within 1 µs; the workload, its client CPUs
    and the seed are the same on every engine, and every run has a name of
    its own."""
    names = set()
    for point in POINTS:
        specs = [spec_for(point, e, q, "c32", 1) for _, e, q in ENGINES]
        gem5, conf, fine = specs
        assert gem5.engine == "gem5" and not gem5.timing
        assert conf.engine == fine.engine == "qemu" and conf.timing and fine.timing
        hz = fine.machine.processor.clock_hz
        assert fine.machine.timing.quantum == hz // 10**6
        assert len({(s.workload, s.cpus) for s in specs}) == 1
        p = WEB if point == "web" else CHAT
        assert gem5.cpus == p["cpus"]
        assert gem5.workload.client_cpus == p.get("client_cpus", 0)
        names |= {spec_for(point, e, q, k, s).default_name()
                  for _, e, q in ENGINES for k in ("vanilla", "c32") for s in SEEDS}
    assert len(names) == 2 * len(ENGINES) * 2 * len(SEEDS)


def _runs(rates, kc=0.2, mc=float("nan"), hold=3.0, miss=float("nan")):
    return [{"rate": r, "kernel_contention": kc, "meter_contention": mc, "hold": hold,
             "walks": 2.0, "walk_miss": miss, "host_s": 60} for r in rates]


def test_a_row_pairs_the_gains_by_seed_and_leaves_what_an_engine_lacks():
    got = {"vanilla": _runs([100, 200, 100]), "c32": _runs([150, 220, 130])}
    row = format_row("web", "gem5 TimingSimple", got)
    assert "| +30.0 [+10.0..+50.0] % |" in row      # 50, 10, 30 %
    assert "| 0.20 / 0.20 | - |" in row             # no lockmeter on gem5
    text = render([("web", "gem5 TimingSimple", got)])
    assert text.count("\n| web |") == 1 and "seeds 1, 2, 3" in text


def test_missing_runs_are_refused_and_the_file_kept(tmp_path):
    refuses_missing_runs(tmp_path, "referee", "referee")


def test_the_docs_have_the_block():
    text = DOC.read_text()
    assert re.search(r"<!-- referee:begin -->.*<!-- referee:end -->", text, re.S)


def test_the_gem5_rows_are_the_recorded_runs():
    """The table's gem5 rows in docs/engines.md are what the gem5 runs
    recorded in recorded/gem5/referee.csv (their builds and numbers) give,
    three seeds per kernel, each run made by the one gem5 build."""
    import csv

    from colorsim.orchestrate.referee import RECORDED, recorded_rows
    block = re.search(r"<!-- referee:begin -->(.*?)<!-- referee:end -->",
                      DOC.read_text(), re.S).group(1)
    with open(RECORDED, newline="") as f:
        runs = list(csv.DictReader(f))
    assert len(runs) == len(POINTS) * 2 * len(SEEDS)
    assert len({r["engine_sha256"] for r in runs}) == 1
    assert {r["run"] for r in runs} == {
        spec_for(p, "gem5", None, k, s).default_name()
        for p in POINTS for k in ("vanilla", "c32") for s in SEEDS}
    rows = list(recorded_rows(RECORDED))
    assert [r[0] for r in rows] == list(POINTS)
    for r in rows:
        line = format_row(*r)
        assert line in block, line
