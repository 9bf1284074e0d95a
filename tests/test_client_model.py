"""The client model: the web clients' instructions cost the modelled time
of the client PCs they stand for (describe/clients.py, busmon clients=),
so the offered load no longer depends on how QEMU slices the turns."""

import json
import re

import pytest

from colorsim.cli import main as cli_main
from colorsim.describe.clients import Clients
from colorsim.errors import ConfigError
from tests.test_cache_model import needs_qemu
from tests.test_userproc import built  # noqa: F401


def test_cost_per_instruction_follows_the_pcs():
    c = Clients(pcs=28, clock_hz=500_000_000, cpi=1.0)
    # piii8 (550 MHz), 5 client CPUs: each stands for 5.6 PCs
    assert c.inst_cost_milli(550_000_000, 5) == round(1000 * 550 / 500 * 5 / 28)
    # twice the PCs do the same work in half the time
    assert Clients(56, 500_000_000, 1.0).inst_cost_milli(550_000_000, 5) == \
        round(c.inst_cost_milli(550_000_000, 5) / 2)
    # slower PCs (twice the CPI) take twice as long
    assert Clients(28, 500_000_000, 2.0).inst_cost_milli(550_000_000, 5) == \
        round(2 * 1000 * 550 / 500 * 5 / 28)
    assert c.skew_cycles(550_000_000) == 550 * c.skew_us
    assert c.plugin_arg(550_000_000, 5) == f"clients=196:{550 * c.skew_us}"


@pytest.mark.parametrize("kw, message", [
    ({"pcs": 0}, "clients.pcs"), ({"pcs": True}, "clients.pcs"),
    ({"clock_hz": 10}, "clients.clock"), ({"cpi": 0}, "clients.cpi"),
    ({"cpi": "1"}, "clients.cpi"), ({"skew_us": 0}, "clients.skew_us"),
])
def test_bad_client_models_are_refused(kw, message):
    args = {"pcs": 28, "clock_hz": 500_000_000, "cpi": 1.0, **kw}
    with pytest.raises(ConfigError, match=message):
        Clients(**args)


def _web_spec(timing=True, client_cpus=3, clients_on=True, hold=False):
    import dataclasses
    from colorsim.describe.experiments import PROGRAMS, workload_args
    from colorsim.describe.machine import get_machine
    from colorsim.describe.runspec import RunSpec, Workload
    from colorsim.describe.variants import parse_variant
    m = get_machine("ppro4").with_cpus(2).with_clients(clients_on)
    if hold:
        m = dataclasses.replace(m, timing=dataclasses.replace(
            m.timing, hold_for_clients=True))
    w = Workload(tasks=16, program=PROGRAMS["web"],
                 args=workload_args("web", 16, {"clients": 8, "requests": 6}),
                 client_cpus=client_cpus)
    return RunSpec(m, parse_variant("vanilla", m), w, timing=timing)


def test_the_model_is_part_of_a_timed_web_runs_identity():
    on = _web_spec()
    assert on.client_model is not None
    assert on.to_dict()["clients"]["pcs"] == 28
    # without it (or counted, or no wire, or the hold) a run is as before
    for other in (_web_spec(clients_on=False), _web_spec(timing=False),
                  _web_spec(client_cpus=0), _web_spec(hold=True)):
        assert other.client_model is None
        assert "clients" not in other.to_dict()
    assert _web_spec(clients_on=False).default_name() != on.default_name()


WEB = ["run", "--machine", "ppro4", "--kernel", "vanilla", "--cpus", "2",
       "--workload", "web", "--httpd", "16", "--clients", "16", "--requests", "6",
       "--client-cpus", "3", "--timing"]


def _stats(run):
    out = {}
    for line in (run / "stats.txt").read_text().splitlines():
        f = line.split()
        if len(f) > 1 and f[0].startswith(("system.clients.", "system.wire.")):
            out[f[0]] = float(f[1])
    return out


@pytest.fixture(scope="module")
def web_runs(built, tmp_path_factory):  # noqa: F811
    out = tmp_path_factory.mktemp("clientmodel")
    for name, extra in (("model", []), ("off", ["--client-model", "off"])):
        assert cli_main(WEB + extra + ["--out", str(out), "--name", name]) in (0, None)
    return out


@needs_qemu
def test_client_clocks_advance_and_hold_the_servers(web_runs):
    run = web_runs / "model"
    assert "web: ok (96 requests" in (run / "console.log").read_text()
    bm = json.loads((run / "busmon.json").read_text())
    c = bm["clients"]
    assert c["inst_cost_milli"] == 2 * 200 * 1000 // (500 * 28) + 1   # 28.57 -> 29
    # both client CPUs (the wire's is the last and keeps no clock) ran
    assert len(c["clocks"]) == 3 and c["clocks"][2] == 0
    assert all(clk > 0 for clk in c["clocks"][:2]), c
    st = _stats(run)
    # servers were held for lagging clients: a turn cut to a TB when the
    # hold began, the rest sat out in QEMU's round robin (skipheld=1)
    assert st["system.clients.lagServerTurns"] > 0, st
    assert bm["skip_held_turns"] is True
    assert st["system.clients.lagServerSkips"] > st["system.clients.lagServerTurns"], st
    # a client's packet reaches the wire at most the skew (plus a TB) late
    late = st["system.wire.lateCycles"] / max(1, st["system.wire.lateDeliveries"])
    assert late <= 2 * c["skew_cycles"], (late, c)
    assert "clients" not in json.loads((web_runs / "off" / "busmon.json").read_text())
    # the catalog row names the model (and none for the run without it)
    from colorsim.results.rundata import load_run
    from colorsim.results.runrows import run_rows
    rows = {n: run_rows(load_run(web_runs / n), web_runs)["runs"] for n in ("model", "off")}
    assert rows["model"]["client_model"] == (
        f"28 PCs at 500 MHz, CPI 1, skew {c['skew_cycles'] // 200} µs")
    assert rows["off"]["client_model"] == ""
    assert "system.clients.lagServerTurns" not in _stats(web_runs / "off")


@needs_qemu
def test_slower_client_pcs_offer_less_load(built, tmp_path, monkeypatch):  # noqa: F811
    """One client PC at 30 clocks per instruction instead of 28 at one:
    every client instruction costs 840 times the modelled time, more than
    the server's per-request work, so the closed loop sends fewer requests
    per modelled second (the same guest instructions run either way)."""
    from colorsim.describe.machine import MACHINES_ENV, MACHINES_FILE
    text = MACHINES_FILE.read_text()
    slow = re.sub(r"(\[ppro4\.clients\]\npcs = )28", r"\g<1>1", text)
    slow = re.sub(r"(\[ppro4\.clients\](?:\n.*){3}\ncpi = )1\.0", r"\g<1>30.0", slow)
    assert slow != text
    f = tmp_path / "machines.toml"
    f.write_text(slow)
    rate = {}
    for name in ("fast", "slow"):
        if name == "slow":
            monkeypatch.setenv(MACHINES_ENV, str(f))
        assert cli_main(WEB + ["--out", str(tmp_path), "--name", name]) in (0, None)
        con = (tmp_path / name / "console.log").read_text()
        assert "web: ok (96 requests" in con
        bm = json.loads((tmp_path / name / "busmon.json").read_text())
        rate[name] = bm["clients"]["inst_cost_milli"]
        rate[name + "_rps"] = _req_per_modelled_s(tmp_path / name)
    assert abs(rate["slow"] - 840 * 2 * 200 * 1000 / (500 * 28)) < 1, rate
    assert rate["slow_rps"] < 0.8 * rate["fast_rps"], rate


def _req_per_modelled_s(run):
    from colorsim.results.rundata import load_run
    from colorsim.results.runrows import run_rows
    return run_rows(load_run(run), run.parent)["runs"]["requests_per_modeled_second"]


def test_the_catalogs_client_model_label():
    """A testbed run's client model reads as its parameters; a Linux 2.4
    run records where its clients ran, in words, and keeps them."""
    from colorsim.results.runrows import client_model_label
    from colorsim.run import linux24web
    c = {"pcs": 28, "clock_hz": 500_000_000, "cpi": 1.0, "skew_us": 5}
    assert client_model_label(c) == "28 PCs at 500 MHz, CPI 1, skew 5 µs"
    assert client_model_label(linux24web.CLIENTS) == linux24web.CLIENTS
    assert client_model_label(None) == ""
