"""The convergence table: Figure 9's 8-CPU point with every modelled clock
held within Q of the slowest (busmon's quantum for the servers, the client
model's skew for the clients), four Q from coarse to fine, three seeds."""

import re

import pytest

from colorsim import ROOT
from colorsim.orchestrate.interleaving import POINT
from colorsim.orchestrate.convergence import (CHAT_CPUS, FIG6, QS_US, SEEDS, agrees,
                                              chat_spec, configured_q, fig6_spec,
                                              at_point, machine_for,
                                              render, spec_for, table_rows)
from tests.test_cache_model import needs_qemu
from tests.test_interleaving import _cli, _docs, refuses_missing_runs

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
             for k in ("vanilla", "c32") for q in QS_US for s in SEEDS}
    assert len(names) == 2 * len(QS_US) * len(SEEDS)


def test_the_configured_row_is_marked_not_repeated():
    """The machine as configured holds its clocks within one of the
    table's Q (configs/machines.toml): that row is marked, and no row of
    its own repeats its runs."""
    q = configured_q(machine_for(None))
    assert q in QS_US
    assert spec_for("vanilla", None, 1) == spec_for("vanilla", q, 1)
    assert table_rows(machine_for(None)) == QS_US
    text = render([(x, _row([100] * 3, [150] * 3)) for x in QS_US], "A point",
                  configured=q)
    labels = [l.split("|")[1].strip() for l in text.splitlines() if l.startswith("| ")][1:]
    assert labels == [f"{x} µs" + (" (as configured)" if x == q else "") for x in QS_US]


def _row(vanilla, c32):
    mk = lambda xs: [{"rate": x, "contention": 0.5, "host_s": 10, "mips": 5.0}
                     for x in xs]
    return {"vanilla": mk(vanilla), "c32": mk(c32)}


def test_agreement_is_within_the_seed_spread():
    a = _row([100, 100, 100], [150, 160, 155])      # gains 50, 60, 55 %
    near = _row([100, 100, 100], [158, 162, 160])   # 58..62: mean 5 away, a's range 10
    far = _row([100, 100, 100], [200, 201, 202])    # 100..102 %
    assert agrees(a, near) and agrees(near, a)
    assert not agrees(a, far)
    text = render([(None, a), (100, a), (20, far)], "A point")
    lines = [l for l in text.splitlines() if l.startswith("| ")][1:]
    assert lines[0].startswith("| as configured |") and "| — |" in lines[0]
    assert "| no |" in lines[1] and "| — |" in lines[2]
    assert "+55.0 [+50.0..+60.0] %" in lines[0]


@pytest.mark.parametrize("block,at", [("convergence", "fig9"),
                                      ("convergence-chat", "chat")])
def test_the_doc_has_a_row_for_every_q(block, at):
    text = re.search(f"<!-- {block}:begin -->(.*?)<!-- {block}:end -->",
                     DOC.read_text(), re.S).group(1)
    rows = [l.split("|")[1].strip() for l in text.splitlines() if l.startswith("| ")][1:]
    q = configured_q(at_point(at, dict(POINT, seed=1)).machine)
    assert rows == [f"{x} µs" + (" (as configured)" if x == q else "") for x in QS_US]


def test_figure_6s_point_is_its_grid_point_bounded():
    """--at fig6: each row's runs are fig6's paper-scale sweep points at
    512 KiB and 1024 httpd (as configured: the same run names), with only
    the clocks' bound changed."""
    from colorsim.describe.experiments import expand, load_experiments
    fig6 = [p for p in expand(load_experiments()["fig6"])
            if p.l2 == FIG6["l2"] and p.tasks == FIG6["tasks"]]
    for kernel in ("vanilla", "c32"):
        for seed in SEEDS:
            sweep = [p for p in fig6 if p.kernel == kernel and p.seed == seed]
            assert len(sweep) == 1
            base = sweep[0].spec()
            assert fig6_spec(kernel, None, seed).default_name() == base.default_name()
            for q in QS_US:
                sp = fig6_spec(kernel, q, seed)
                m = sp.machine
                assert m.timing.quantum == m.processor.clock_hz * q // 10**6
                assert m.clients.skew_us == q
                assert sp.workload == base.workload and sp.variant == base.variant
                assert m.caches == base.machine.caches
    assert configured_q(fig6_spec("vanilla", None, 1).machine) in QS_US


def test_chats_point_is_the_chat_regime_tables_at_2_cpus():
    """--at chat: as configured, each seed's run is the chat-regime
    table's 2-CPU run (seed 1: the same run name); bounded, only the
    clocks' bound changes."""
    from colorsim.orchestrate import chatregime
    base = chatregime.spec_for("vanilla", CHAT_CPUS)
    assert chat_spec("vanilla", None, 1).default_name() == base.default_name()
    for q in QS_US:
        sp = chat_spec("c32", q, 2)
        assert sp.machine.timing.quantum == sp.machine.processor.clock_hz * q // 10**6
        assert sp.workload.args == base.workload.args and sp.workload.seed == 2
        assert sp.machine.processor.cpus == CHAT_CPUS
    assert configured_q(chat_spec("vanilla", None, 1).machine) in QS_US


def test_figure_6s_point_takes_no_shape_options(tmp_path):
    p = _cli("convergence", "--at", "fig6", "--cpus", "2", "--out", tmp_path)
    assert p.returncode == 2 and "--at fig6 is its own point" in p.stderr
    assert not any(tmp_path.iterdir())


def test_missing_runs_are_refused_and_the_file_kept(tmp_path):
    refuses_missing_runs(tmp_path, "convergence", "convergence")


@needs_qemu
def test_the_table_is_written_from_runs(tmp_path):
    """A small point (2 CPUs, 16 httpd, 8 clients of 6 requests, 3 client
    CPUs): every row is written with three seeds, --check agrees, an edited
    number is caught."""
    doc = tmp_path / "doc.md"
    doc.write_text("<!-- convergence:begin -->\n<!-- convergence:end -->\n")
    small = ["--cpus", "2", "--httpd", "16", "--clients", "8", "--requests", "6",
             "--client-cpus", "3", "--out", tmp_path / "runs"]
    p = _docs("convergence", "--run", *small, "--write", doc)
    assert p.returncode == 0, p.stderr[-2000:]
    rows = [l.split("|")[1:-1] for l in BLOCK.search(doc.read_text()).group(1).splitlines()
            if l.startswith("| ")][1:]
    labels = [r[0].strip() for r in rows]
    q = configured_q(machine_for(None, 2))
    assert labels == [f"{x} µs" + (" (as configured)" if x == q else "") for x in QS_US]
    assert all(r[4].strip() in ("yes", "no", "—") for r in rows)
    assert _docs("convergence", *small, "--check", doc).returncode == 0
    doc.write_text(doc.read_text().replace(rows[1][1], " 1 [1..1] ", 1))
    p = _docs("convergence", *small, "--check", doc)
    assert p.returncode == 2 and "not what the catalog gives" in p.stderr
    # a run that other builds made is no run of the table: as if a kernel
    # had been rebuilt since it ran
    import json
    run = sorted((tmp_path / "runs").glob("piii8-*"))[0]
    conf = json.loads((run / "config.json").read_text())
    conf["kernel_sha256"] = "0" * 64
    (run / "config.json").write_text(json.dumps(conf))
    p = _docs("convergence", *small, "--check", doc)
    assert p.returncode == 2 and "runs of the table are missing" in p.stderr
    assert f"{run} (made by other builds: the kernel image changed" in p.stderr
