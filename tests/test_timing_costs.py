"""The timing model's switchable costs: the store buffer and the DTLB reach
the plugin from machines.toml, each cost can be switched off by name
without editing it (run --timing-off, timing-sensitivity), and a timed
run's DTLB walks the guest's page tables."""
import csv
import json

import pytest

from colorsim.describe.machine import TIMING_SWITCHES, get_machine
from tests.test_cache_model import needs_qemu
from tests.test_cli_errors import RUN, check_refused


@pytest.mark.parametrize("name", ["ppro4", "piii8"])
def test_each_switch_turns_its_cost_off(name):
    m = get_machine(name)
    cpus = m.processor.cpus
    for cost in TIMING_SWITCHES:
        if cost == "two_buses" and name == "ppro4":
            assert not m.timing.is_on(cost, cpus)     # one bus of 4 already
            continue
        assert m.timing.is_on(cost, cpus), cost
        off = m.without_costs([cost]).timing
        assert not off.is_on(cost, cpus), cost
        if cost != "fetch":     # fetch is the engine's l1i= (test_timing)
            assert off.plugin_args() != m.timing.plugin_args(), cost
    assert "storebuf=0" in m.without_costs(["store_buffer"]).timing.plugin_args()
    assert "dtlb=0" in m.without_costs(["dtlb"]).timing.plugin_args()
    # overlap: off by default (an upper bound), a what-if row switches it on
    assert "overlap=0" in m.timing.plugin_args()
    assert "overlap=4" in m.timing.adding("overlap").plugin_args()


@pytest.mark.parametrize("args, expect", [
    (["--timing", "--timing-off", "bogus"], "unknown timing cost 'bogus'"),
    (["--timing-off", "fetch"], "--timing-off needs --timing"),
])
def test_timing_off_refusals(args, expect, capsys, tmp_path):
    check_refused(RUN + ["--kernel", "c32", "--dry-run", *args,
                         "--out", str(tmp_path)], expect, capsys, tmp_path)


def test_sensitivity_refuses_unknown_costs(capsys, tmp_path):
    check_refused(["timing-sensitivity", "--costs", "fetch,nope", "--out",
                   str(tmp_path)], "unknown timing cost 'nope'", capsys, tmp_path)


def _run(tmp_path, *extra):
    from colorsim.cli import main
    out = tmp_path / "runs"
    out.mkdir(exist_ok=True)
    assert main(RUN + ["--kernel", "c32", "--timing", "--out", str(out),
                       *extra]) in (0, None)
    run = max(out.iterdir(), key=lambda p: p.stat().st_mtime)
    with open(run / "counters.csv", newline="") as f:
        stats = {r["stat"] for r in csv.DictReader(f)}
    return json.loads((run / "busmon.json").read_text()), stats, run


@needs_qemu
def test_dtlb_walks_the_guest_tables(tmp_path):
    """The kernel's accesses miss the DTLB (its tasks lie far apart in the
    2 MiB identity map) and every walk reads the guest's tables; switched
    off, there are no walks and no counter."""
    js, stats, run = _run(tmp_path)
    assert js["tlb"]["dtlb"] == 64 and js["tlb"]["walk_errors"] == 0
    with open(run / "counters.csv", newline="") as f:
        misses = sum(int(r["value"]) for r in csv.DictReader(f)
                     if r["stat"] == "dtlb_misses")
    assert misses > 0
    assert "store_stall_cycles" in stats
    js, stats, _ = _run(tmp_path, "--timing-off", "dtlb",
                        "--timing-off", "store_buffer")
    assert js["tlb"]["dtlb"] == 0 and js["store_buffer"]["entries"] == 0
    assert "dtlb_misses" not in stats and "store_stall_cycles" not in stats
