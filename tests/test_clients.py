"""The web clients outside the measured machine: client CPUs with a
partition of their own (kernels/kernel/partition.c), which the bus
monitor does not measure (busmon measured=), reaching the server through
its four network cards (kernels/kernel/loopback.c)."""

import json
import re

import pytest

from colorsim.cli import main as cli_main
from tests.test_rqstat import counters
from tests.test_userproc import BUILD, boot, built  # noqa: F401

WEB = ["run", "--machine", "ppro4", "--kernel", "vanilla", "--cpus", "2",
       "--workload", "web", "--httpd", "16", "--clients", "8", "--requests", "6"]
SERVER_TASKS = 16 + 2       # the httpd, their launcher, init (the program's parent)


def roi_requests(console):
    return int(re.search(r"web: roi (\d+) requests", console).group(1))


def per_cpu(run, mode, stat):
    rows = [l.split(",") for l in (run / "counters.csv").read_text().splitlines()[1:]]
    return {int(r[1]): int(r[4]) for r in rows
            if r[0] == "0" and r[2] == mode and r[3] == stat}


@pytest.fixture(scope="module")
def runs(built, tmp_path_factory):  # noqa: F811
    out = tmp_path_factory.mktemp("clients")
    for name, cc in (("outside", "2"), ("inside", "0")):
        # the minimal per-request work: the server's user code is then a
        # small fraction of the clients' byte checks (the test below)
        assert cli_main(WEB + ["--work", "minimal", "--client-cpus", cc,
                               "--out", str(out), "--name", name]) in (0, None)
    return out


def test_client_cpus_are_not_measured(runs):
    run = runs / "outside"
    console = (run / "console.log").read_text()
    assert "partition: server cpus 0-1, client cpus 2-3" in console
    assert "web: ok (48 requests" in console
    assert json.loads((run / "busmon.json").read_text())["measured"] == 2
    cfg = json.loads((run / "config.json").read_text())
    assert cfg["workload"]["client_cpus"] == 2
    # only the server's CPUs have counters
    assert sorted(per_cpu(run, "user", "insts")) == [0, 1]


def dma_rows(run):
    """The cards' DMA in a run: its bus_offsets rows (cpu -1, mode dma) as
    {kind: {offset: count}}, and its counters."""
    rows = [l.split(",") for l in (run / "bus_offsets.csv").read_text().splitlines()[1:]]
    hist = {}
    for r in rows:
        if r[0] == "0" and r[2] == "dma":
            assert r[1] == "-1", r             # no CPU's
            hist.setdefault(r[3], {})[int(r[4])] = int(r[5])
    ctr = {r[3]: int(r[4]) for r in
           (l.split(",") for l in (run / "counters.csv").read_text().splitlines()[1:])
           if r[0] == "0" and r[2] == "dma"}
    return hist, ctr


def test_the_server_cards_dma_crosses_its_bus(runs):
    """Over the wire (machines.toml [network] dma = true), the server's
    cards read every frame it sends and write every frame it receives,
    one line transaction per line, under a mode of their own: responses
    are read (dirty from the copy: HITM), requests written (invalidating
    the copies the CPUs held of the recycled buffers).  With the clients on
    the server's CPUs there is no card and no DMA."""
    hist, ctr = dma_rows(runs / "outside")
    assert set(hist) == {"read", "write"}, hist
    assert sum(hist["read"].values()) == ctr["dma_read_lines"]
    assert sum(hist["write"].values()) == ctr["dma_write_lines"]
    # 48 requests of a few dozen bytes in, their files out
    assert ctr["dma_read_lines"] > ctr["dma_write_lines"] > 0
    assert 0 < ctr["dma_hitm"] <= ctr["dma_read_lines"]
    assert ctr["dma_invalidated"] <= ctr["dma_write_lines"]
    assert "dma_wait_cycles" not in ctr          # counting only: no time
    console = (runs / "outside" / "console.log").read_text()
    assert "card DMA" in console
    assert dma_rows(runs / "inside") == ({}, {})


def test_nic_dma_off_books_nothing(built, tmp_path):  # noqa: F811
    assert cli_main(WEB + ["--out", str(tmp_path), "--name", "off",
                           "--nic-dma", "off"]) in (0, None)
    assert dma_rows(tmp_path / "off") == ({}, {})
    assert "card DMA" not in (tmp_path / "off" / "console.log").read_text()


def test_client_work_is_not_charged_to_the_server(runs):
    """The clients check every byte of every response in user mode (tens of
    thousands of instructions a request); the servers' user code only
    parses the request and formats the header.  With the clients on client
    CPUs, the measured user instructions per request are the server's
    alone; with them on the server's CPUs (--client-cpus 0, the old
    layout) they include the clients'."""
    per_req = {}
    for name in ("outside", "inside"):
        run = runs / name
        n = roi_requests((run / "console.log").read_text())
        per_req[name] = sum(per_cpu(run, "user", "insts").values()) / n
    assert per_req["outside"] < 20000, per_req
    assert per_req["inside"] > 3 * per_req["outside"], per_req


def test_client_tasks_are_never_on_the_server_run_queue(runs):
    c = counters(runs / "outside")
    # the server's task list and run queue hold the server's tasks only
    assert c["wait_tasks_mean"] == SERVER_TASKS, c
    assert c["rq_len_max"] <= SERVER_TASKS, c
    inside = counters(runs / "inside")
    assert inside["wait_tasks_mean"] > SERVER_TASKS + 8, inside


def nic_lines(out):
    """{card: (side, {cpu: (irqs, packets)})} from the last report."""
    got = {}
    for card, side, rest in re.findall(r"^nic: card (\d+) (server|client) irq [^;]*;(.*)$",
                                       out, re.M):
        got[int(card)] = (side, {int(c): (int(i), int(p)) for c, i, p in
                                 re.findall(r"cpu(\d+) (\d+) irqs (\d+) packets;", rest)})
    return got


def web_boot(extra, cpus=4, args="--httpd,16,--clients,8,--requests,6"):
    rc, out = boot(BUILD / "kernels" / "vanilla-l32" / "kernel.mb.elf", "/bin/web",
                   cpus=cpus, extra=f"clientcpus=2 {extra} initargs={args}", timeout=120)
    assert "web: ok (48 requests" in out and "init: exited with status 0" in out, out[-3000:]
    return out


@pytest.mark.parametrize("route", ["", "nicirq=card", "nicirq=1"])
def test_four_cards_and_where_their_interrupts_go(built, route):  # noqa: F811
    out = web_boot(route)
    cards = nic_lines(out)
    assert sorted(cards) == [1, 2, 3, 4, 5, 6, 7, 8], out[-3000:]
    for card, (side, per) in cards.items():
        took = {cpu for cpu, (irqs, _) in per.items() if irqs}
        assert sum(p for _, p in per.values()) > 0
        if side == "client":           # the clients' cards: client CPUs only
            assert card > 4 and took <= {2, 3}, (card, per)
        elif route == "":              # lowest priority, rotating: every server CPU
            assert took == {0, 1}, (card, per)
        elif route == "nicirq=card":   # card i: CPU (i - 1) mod 2
            assert took == {(card - 1) % 2}, (card, per)
        else:
            assert took == {1}, (card, per)
    # nothing between the partitions goes through the loopback card
    assert not re.search(r"^net: ", out, re.M)


def test_a_web_run_with_client_cpus_repeats_exactly(built):  # noqa: F811
    assert web_boot("") == web_boot("")


WIRE = "wire_bps=100000000"           # ppro4's Fast Ethernet


def test_a_web_run_over_the_wire_repeats_exactly(built):  # noqa: F811
    one = web_boot(f"{WIRE} wire_ns=1000", cpus=5)
    assert "wire: packets" in one
    assert one == web_boot(f"{WIRE} wire_ns=1000", cpus=5)


def wire_line(out):
    m = re.findall(r"^wire: packets (\d+) bytes (\d+) serial_ns (\d+) delay_ns min (\d+) "
                   r"max (\d+) late_ns max (\d+) sum (\d+)$", out, re.M)
    assert m, out[-2000:]
    return dict(zip(("packets", "bytes", "serial", "min", "max", "late", "late_sum"),
                    map(int, m[0])))


def roi_jiffies(out):
    b = int(re.search(r"^roi: begin at jiffies (\d+)", out, re.M).group(1))
    e = int(re.search(r"^roi: end at jiffies (\d+)", out, re.M).group(1))
    return e - b


def one_client(lat_ns):
    """One client, one server: requests one after another, so every
    one-way trip of a request is on its round trip."""
    rc, out = boot(BUILD / "kernels" / "vanilla-l32" / "kernel.mb.elf", "/bin/web", cpus=5,
                   extra=f"clientcpus=3 {WIRE} wire_ns={lat_ns} "
                         f"initargs=--httpd,1,--clients,1,--requests,40", timeout=120)
    assert "web: ok (40 requests" in out, out[-3000:]
    return out


def test_the_wire_delays_each_packet_by_its_bytes_and_the_latency(built):  # noqa: F811
    lat = 2_000_000                            # 2 ms, to stand out of 10 ms jiffies
    fast, slow = one_client(0), one_client(lat)
    w = wire_line(slow)
    # every frame takes (bytes + headers, at least 64, + 20 of preamble and
    # gap) x 8 / 100 Mb/s = 80 ns a byte on the wire, then the latency
    assert w["serial"] == w["bytes"] * 80
    assert w["min"] == 84 * 80 + lat           # a bare SYN/ACK/FIN on an idle wire
    assert w["max"] >= (1460 + 58 + 20) * 80 + lat
    assert wire_line(fast)["min"] == 84 * 80
    # a request's round trip has four one-way trips (connection request,
    # its answer, the request, the response): 20 requests in the region
    n = int(re.search(r"web: roi (\d+) requests", slow).group(1))
    grown_ms = 10 * (roi_jiffies(slow) - roi_jiffies(fast))
    expect_ms = 4 * n * lat / 1e6
    assert abs(grown_ms - expect_ms) <= 0.15 * expect_ms + 20, (grown_ms, expect_ms)


def test_client_cpus_with_modelled_time(built, tmp_path):  # noqa: F811
    """--timing, web's default client CPUs (two for clients, one for the
    wire): client CPUs take their ticks from the servers' modelled floor;
    the run completes (a pipe's two ends closed at once on a server
    and a client CPU once freed the pipe under a wake-up)."""
    assert cli_main(WEB + ["--timing", "--out", str(tmp_path), "--name", "t"]) in (0, None)
    console = (tmp_path / "t" / "console.log").read_text()
    assert "web: ok (48 requests" in console
    assert sorted(per_cpu(tmp_path / "t", "user", "insts")) == [0, 1]
    assert "wire: cpu 4, 100000000 bit/s per network, latency 1000 ns" in console
    # the client CPUs' load (the wire's CPU is not one): both ran, busy at most the region
    g = machine_counters(tmp_path / "t")
    assert g["client_cpus"] == 2 and g["client_insts"] > 0, g
    assert 0 < g["client_busy_cycles"] <= 2 * g["elapsed_cycles"], g
    # the cards' DMA in modelled time: a frame's lines cross the bus at the
    # wire's rate (one 32-byte line per 512 clocks at 100 Mbit/s, 200 MHz),
    # served in time order with the CPUs' misses, so on this lightly loaded
    # bus a line waits less than one data phase (12 clocks) on average
    _, dma = dma_rows(tmp_path / "t")
    lines = dma["dma_read_lines"] + dma["dma_write_lines"]
    assert lines > 0 and dma["dma_wait_cycles"] < 12 * lines, dma


def machine_counters(run):
    """busmon's machine-wide rows of the region (cpu -1)."""
    return {l.split(",")[3]: float(l.split(",")[4])
            for l in (run / "counters.csv").read_text().splitlines()[1:]
            if l.split(",")[1] == "-1" and l.split(",")[0] == "0"}


def timed_one_client(out, lat_ns, requests=40, hold=False, model=False):
    """One client, one httpd on one server CPU, under --timing, over a wire
    of ppro4's bandwidth and ``lat_ns`` of latency: the server idles while
    each packet crosses the wire.  ``hold``: [x.timing] hold_for_clients;
    ``model``: the machine's client model (off: clients as fast as the
    round robin runs them)."""
    import dataclasses
    from colorsim.describe.machine import get_machine
    from colorsim.describe.runspec import RunSpec, Workload
    from colorsim.describe.variants import parse_variant
    from colorsim.run import runner
    m = get_machine("ppro4").with_cpus(1)
    m = dataclasses.replace(m, network=dataclasses.replace(m.network, latency_ns=lat_ns),
                            timing=dataclasses.replace(m.timing, hold_for_clients=hold))
    m = m.with_clients(model)
    w = Workload(program="/bin/web", client_cpus=3,
                 args=f"--httpd,1,--clients,1,--requests,{requests}")
    spec = RunSpec(m, parse_variant("vanilla", m), w, timing=True, timeout_s=300)
    run = runner.run(spec, name=f"lat{lat_ns}" + ("-hold" if hold else "")
                     + ("-model" if model else ""), out=out,
                     progress=lambda *_: None)
    return run, machine_counters(run)


def test_the_wire_delays_packets_in_modelled_time_on_an_idle_server(built, tmp_path):  # noqa: F811
    """--timing: every packet arrives after its bytes at the card's
    bandwidth and the latency, in modelled time, also while every server
    CPU is idle (nothing else moves modelled time then: the monitor moves
    the idle machine up to the next arrival).  A request's round trip has
    four one-way trips (connection request, its answer, the request, the
    response), so adding latency L to the wire lengthens the region by
    4 x L per request in modelled time, within 5 %.  Before, the wire kept
    the emulator's clock: an idle server's modelled time stood still
    while packets crossed, and the region hardly grew."""
    hz = 200_000_000                            # ppro4's clock, cycles per second
    lat = 500_000                               # 0.5 ms a trip
    fast_run, fast = timed_one_client(tmp_path, 0)
    slow_run, slow = timed_one_client(tmp_path, lat)
    console = (slow_run / "console.log").read_text()
    assert "web: ok (40 requests" in console
    assert "latency 500000 ns, modelled time" in console
    n = roi_requests(console)
    assert n == roi_requests((fast_run / "console.log").read_text()) == 20
    grown_ns = (slow["elapsed_cycles"] - fast["elapsed_cycles"]) * 1e9 / hz
    expect_ns = 4 * n * lat
    assert abs(grown_ns - expect_ns) <= 0.05 * expect_ns, (grown_ns, expect_ns)
    # the idle machine was moved to arrivals, and deliveries were on time
    # but for the wire CPU's look coming round: under 20 us late on average
    for g in (fast, slow):
        assert g["wire_deliveries"] > 4 * n and g["wire_idle_advances"] > n, g
        late = g["wire_late_cycles"] / max(g["wire_late_deliveries"], 1)
        assert late * 1e9 / hz < 20_000, g
        # and the server CPU, idle until then, took each one on time too
        assert g["wire_received"] > 2 * n, g
        late = g["wire_rx_late_cycles"] / max(g["wire_rx_late"], 1)
        assert late * 1e9 / hz < 20_000, g
    # the lone client waits for each answer: with half a millisecond a trip
    # its CPUs idle most of the region, and the longer trips add only idle
    # time, not client work
    busy = {k: g["client_busy_cycles"] / g["client_cpus"] / g["elapsed_cycles"]
            for k, g in (("fast", fast), ("slow", slow))}
    assert 0 < busy["slow"] < 0.5 and busy["slow"] < busy["fast"], busy
    assert slow["client_busy_cycles"] < 1.5 * fast["client_busy_cycles"], (slow, fast)
    # and the run repeats byte for byte
    again, _ = timed_one_client(tmp_path / "again", 0)
    for f in ("console.log", "stats.txt", "counters.csv"):
        assert (again / f).read_bytes() == (fast_run / f).read_bytes(), f


def test_servers_wait_for_busy_clients(built, tmp_path):  # noqa: F811
    """[x.timing] hold_for_clients: while a client CPU (not the wire's) has
    work, each server CPU ends its round-robin turn after one TB, so a
    client's work takes almost no modelled time.  A lone client over a
    wire with no latency, one request at a time: without the hold its CPUs
    are busy some per cent of the region (while the server CPU, still
    sending the response's tail, runs its clock on; how many depends on
    how the round robin slices, which is the point), with it hardly at all,
    and the server CPU's turns were ended for it.  The client does the same
    work either way, and the run repeats exactly.  (The region hardly
    shortens: the server idles while the client answers, and an idle
    machine's time does not move while a client runs.)"""
    free_run, free = timed_one_client(tmp_path, 0)
    held_run, held = timed_one_client(tmp_path, 0, hold=True)
    n = roi_requests((held_run / "console.log").read_text())
    assert n == roi_requests((free_run / "console.log").read_text()) == 20
    busy = {k: g["client_busy_cycles"] / g["client_cpus"] / g["elapsed_cycles"]
            for k, g in (("free", free), ("held", held))}
    assert busy["free"] > 0.05 and busy["held"] < busy["free"] / 20, busy
    assert free["client_held_server_turns"] == 0 < held["client_held_server_turns"]
    # the client model (28 PCs) answers nearly as fast, from modelled time:
    # its clock, not the round robin, sets when the reply leaves (its busy
    # share is the model's; the free one is the slicing's, which PAUSE's
    # turn ends used to raise)
    model_run, model = timed_one_client(tmp_path, 0, model=True)
    assert roi_requests((model_run / "console.log").read_text()) == n
    busy["model"] = (model["client_busy_cycles"] / model["client_cpus"]
                     / model["elapsed_cycles"])
    assert busy["model"] < busy["free"] / 2, busy
    assert model["client_lag_server_turns"] > 0 == model["client_held_server_turns"]
    assert abs(held["client_insts"] - free["client_insts"]) < 0.05 * free["client_insts"]
    cfg = json.loads((held_run / "config.json").read_text())
    assert cfg["timing"]["hold_for_clients"] is True
    assert "hold_for_clients" not in json.loads((free_run / "config.json").read_text())["timing"]
    again, _ = timed_one_client(tmp_path / "again", 0, hold=True)
    for f in ("console.log", "stats.txt", "counters.csv"):
        assert (again / f).read_bytes() == (held_run / f).read_bytes(), f
