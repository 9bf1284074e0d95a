"""The web workload on real Linux 2.4 (colorsim/run/linux24web.py,
workloads/linux24/l24web.c): the run's description, the runner's checks of
the program's output, and (requires_linux24, skipped by name without
LINUX24_SRC) a small run that boots, serves and verifies requests."""

import math
import re

import pytest

from colorsim import cli
from colorsim.describe import linux24 as described
from colorsim.describe.machine import get_machine
from colorsim.describe.programs import check_args
from colorsim.describe.runspec import RunSpec, Workload
from colorsim.describe.variants import parse_variant
from colorsim.errors import ConfigError
from colorsim.run import linux24web

SMALL = "--httpd,32,--clients,8,--requests,2"


def _spec(args=SMALL, kernel="linux24:vanilla", **kw):
    m = get_machine("ppro4")
    w = Workload(program="/bin/web", args=args, client_cpus=0)
    return RunSpec(m, parse_variant(kernel, m), w, **kw)


def test_web_on_linux24_is_a_run_with_its_own_image_and_command_line():
    s = _spec()
    line = s.kernel_cmdline(0)
    assert f"webargs={SMALL}" in line.split()
    assert f"ramdisk_size={described.WEB_IMAGE_KIB}" in line.split()
    assert "init=/init" in line.split() and "tasks=" not in line
    assert s.rootfs_image == described.web_image()
    assert s.rootfs_image != RunSpec(s.machine, s.variant).rootfs_image
    assert "init_bin_web" in s.default_name()


def test_linux24_refuses_other_programs_and_chats_client_cpus():
    m = get_machine("ppro4")
    v = parse_variant("linux24:vanilla", m)
    with pytest.raises(ConfigError, match="--workload web"):
        RunSpec(m, v, Workload(program="/bin/roitest"))
    with pytest.raises(ConfigError, match="for --workload web's clients"):
        RunSpec(m, v, Workload(program="/bin/chat", args="--rooms,2,--users,5",
                               client_cpus=1))


@pytest.mark.parametrize("kernel, patch, cards, counts, dma", [
    ("linux24:c32", described.CLIENT_PARTITION, described.CLIENT_CARDS,
     described.RUN_QUEUE_COUNTS, described.CARD_DMA),
    ("linux24-i386:vanilla", described.I386_CLIENT_PARTITION, described.I386_CLIENT_CARDS,
     described.I386_RUN_QUEUE_COUNTS, described.I386_CARD_DMA)])
def test_linux24_web_with_client_cpus_boots_the_client_partition(kernel, patch, cards,
                                                                 counts, dma):
    """Client CPUs on 2.4: the image with the client partition and the
    server's cards (its own build), the CPUs from the measured count on and
    the server's port named on the command line; without client CPUs the
    image and its identity stay what they were."""
    m = get_machine("ppro4")
    w = Workload(program="/bin/web", args=SMALL + ",--port,9090", client_cpus=2)
    spec = RunSpec(m, parse_variant(kernel, m), w)
    assert spec.vcpus == 6 and spec.variant.clients
    assert spec.variant.build_id.endswith("-clients")
    assert [p.name for p in spec.variant.patches][-5:] == [
        p.rsplit("/", 1)[-1] for p in (patch, cards, counts, dma, described.WAIT_SITES)]
    line = spec.kernel_cmdline(0)
    assert " servercpus=4 serverport=9090" in line and f"webargs={SMALL}" in line
    w = Workload(program="/bin/web", args=SMALL, client_cpus=2)
    assert " serverport=8080" in RunSpec(m, parse_variant(kernel, m), w).kernel_cmdline(0)
    # loopback, no modelled wire, but the server's cards: their DMA crosses
    # its bus as the machine says ([network] dma), or not (--nic-dma off)
    assert not spec.wire and spec.nic_dma and " nicdma=1" in line
    off = RunSpec(m.with_nic_dma(False), parse_variant(kernel, m), w)
    assert not off.nic_dma and "nicdma" not in off.kernel_cmdline(0)
    # a run with the DMA never takes the name of one made before it existed
    on = RunSpec(m, parse_variant(kernel, m), w)
    assert on.to_dict()["card_dma"] and "card_dma" not in off.to_dict()
    from colorsim.run.runner import differences
    assert differences(on.to_dict(), on, {}) == []        # a complete run is reused
    assert differences({**on.to_dict(), "card_dma": None}, on, {}) == [
        "card_dma None -> True"]
    plain = _spec(kernel=kernel)
    assert not plain.variant.clients and "servercpus" not in plain.kernel_cmdline(0)
    assert not plain.nic_dma and "nicdma" not in plain.kernel_cmdline(0)
    assert patch.rsplit("/", 1)[-1] not in [p.name for p in plain.variant.patches]
    assert spec.to_dict()["variant"]["build_id"] != plain.to_dict()["variant"]["build_id"]


def test_linux24_client_cpus_fit_the_ports_nr_cpus():
    """x86_64 2.4 is built for at most 8 CPUs, i386 here for 16: the
    partition's image has room for the client CPUs, and no more fit."""
    m = get_machine("piii8")
    w = Workload(program="/bin/web", args=SMALL, client_cpus=1)
    with pytest.raises(ConfigError, match="more than the 8 x86_64"):
        RunSpec(m, parse_variant("linux24:vanilla", m), w)
    spec = RunSpec(m, parse_variant("linux24-i386:vanilla", m), w)
    assert spec.vcpus == 9
    assert "CONFIG_NR_CPUS=16\n" in spec.variant.config_text()
    plain = _spec().variant
    assert plain.config_text() == plain.config_file.read_text()


def test_cli_puts_linux24_clients_on_the_servers_cpus_unless_asked():
    """web's default is three client CPUs; on linux24 the default is none
    (its runs keep what they were), and --client-cpus N gives the client
    partition."""
    a = cli.build_parser().parse_args(
        ["run", "--kernel", "linux24:c32", "--workload", "web", "--httpd", "32",
         "--clients", "8"])
    spec = cli.spec_from_args(a)
    assert spec.workload.client_cpus == 0
    assert spec.kernel_cmdline(0).endswith("webargs=--httpd,32,--clients,8")
    a = cli.build_parser().parse_args(
        ["run", "--kernel", "vanilla", "--workload", "web"])
    assert cli.spec_from_args(a).workload.client_cpus == 3
    a = cli.build_parser().parse_args(
        ["run", "--kernel", "linux24:vanilla", "--workload", "web",
         "--client-cpus", "2"])
    spec = cli.spec_from_args(a)
    assert spec.workload.client_cpus == 2 and spec.variant.clients


def test_sysvsem_accept_is_accepted_as_web_takes_it():
    check_args("/bin/web", "--accept,sysvsem")
    with pytest.raises(ConfigError, match="none, pipe, sysvsem, fcntl, flock"):
        check_args("/bin/web", "--accept,posixsem")


GOOD = ("web: 32 httpd, 8 clients x 2 requests\n"
        "web: roi 8 requests (completed 4..12) in 0.03 s\n"
        "web: ok (16 requests, 1000 bytes, every byte verified; 32 servers "
        "left to the machine's stop)\ninit: exited with status 0\n")


@pytest.mark.parametrize("text, why", [
    (GOOD.replace("web: ok", "web: FAIL requests lost (x)\nweb: ko"), "web: FAIL"),
    (GOOD.replace("web: ok", "web: ko"), "no 'web: ok'"),
    (GOOD.replace("in 0.03 s", "in 0.000000 s"), "no time"),
    (GOOD.replace("roi 8 requests", "roi 0 requests"), "holds no requests"),
    (GOOD.replace("web: roi", "web: rio"), "missing"),
])
def test_web_output_is_checked(tmp_path, text, why):
    c = tmp_path / "console.log"
    c.write_text(GOOD)
    linux24web.check_web_output(c)
    c.write_text(text)
    with pytest.raises(RuntimeError, match=why):
        linux24web.check_web_output(c)


def test_web_image_stamp_covers_its_sources():
    """Its stamp covers init, the program, the file set's script and the
    m5 header (a stale image would run an old program)."""
    names = {p.name for p in linux24web.sources()}
    assert {"l24web.c", "web.c", "httpd.c", "client.c", "mkfileset.py",
            "m5roi.h"} <= names


def _run(tmp_path, name, args=SMALL):
    from colorsim.run.runner import run
    return run(_spec(args, timeout_s=900), name=name, out=tmp_path,
               progress=lambda *_: None)


@pytest.mark.requires_linux24
def test_web_runs_on_linux24_tcp_ip(tmp_path):
    """32 servers and 8 clients on 2.4's TCP/IP over loopback: every
    response verified, the region counted, bus counts for the region."""
    import pandas as pd
    run = _run(tmp_path, "web")
    text = (run / "console.log").read_text()
    assert "Total of 4 processors activated" in text
    assert "web: ok (16 requests" in text and "init: exited with status 0" in text
    # Apache's per-request log write: init made the root writable
    assert re.search(r"access log [1-9]\d* bytes", text), text[-600:]
    m = linux24web.WEB_ROI.findall(text)
    assert int(m[-1][0]) >= 8 and float(m[-1][3]) > 0
    offsets = pd.read_csv(run / "bus_offsets.csv")
    assert len(offsets) and offsets.select_dtypes("number").to_numpy().sum() > 0
    counters = pd.read_csv(run / "counters.csv")
    assert (counters["value"] > 0).any()
    from colorsim.results.runrows import timing_columns
    import json
    cfg = json.loads((run / "config.json").read_text())
    assert cfg["kernel_cmdline"].endswith(f"webargs={SMALL}")
    assert cfg["clients"].startswith("on the measured CPUs")
    row = timing_columns(cfg, counters, run / "console.log", math.nan)
    assert row["roi_requests"] == int(m[-1][0])


def _measured(run, stat, mode):
    """A counter summed over the measured CPUs (counters.csv has no other)."""
    import pandas as pd
    c = pd.read_csv(run / "counters.csv")
    return int(c[(c["stat"] == stat) & (c["mode"] == mode)]["value"].sum())


@pytest.mark.requires_linux24
def test_web_clients_leave_the_measured_cpus_on_linux24(tmp_path):
    """With a client CPU the clients run outside the measured machine: the
    kernel brings the fifth CPU up, every response is still verified, and
    the measured CPUs run far less user code and walk far fewer tasks per
    request than with the clients beside the servers."""
    from colorsim.run.runner import run
    m = get_machine("ppro4")
    v = parse_variant("linux24:vanilla", m)
    runs = {}
    for cc in (0, 1):
        w = Workload(program="/bin/web", args=SMALL, client_cpus=cc)
        runs[cc] = run(RunSpec(m, v, w, timeout_s=900), name=f"cc{cc}",
                       out=tmp_path, progress=lambda *_: None)
    text = (runs[1] / "console.log").read_text()
    assert "Total of 5 processors activated" in text
    assert "clients on the CPUs from 4 on, through the server's cards (port 8080)" in text
    assert "web: ok (16 requests" in text and "init: exited with status 0" in text
    # the receive path runs where the cards' interrupts go: every server
    # CPU took some of the clients' packets, the client CPU the server's
    took = {int(c): (int(i), int(p)) for c, i, p in
            re.findall(r"(?m)^cards: cpu (\d+) irqs (\d+) packets (\d+)$", text)}
    assert sorted(took) == [0, 1, 2, 3, 4], took
    assert all(took[c][1] > 0 for c in range(5)), took
    assert all(p >= i for i, p in took.values()), took       # a burst, one interrupt
    assert "cards:" not in (runs[0] / "console.log").read_text()   # loopback as 2.4
    per = {}
    for cc, r in runs.items():
        req = int(linux24web.WEB_ROI.findall((r / "console.log").read_text())[-1][0])
        per[cc] = {s: _measured(r, s, mode) / req for s, mode in
                   (("insts", "user"), ("rqloop_l1d_read_accesses", "kernel"))}
    assert per[1]["insts"] < 0.5 * per[0]["insts"], per
    assert per[1]["rqloop_l1d_read_accesses"] < 0.5 * per[0]["rqloop_l1d_read_accesses"], per
    import json
    cfg = json.loads((runs[1] / "config.json").read_text())
    assert cfg["clients"].startswith("on client CPUs outside the measured machine")
    # the measured CPUs' scheduler counts (patch 0008, /proc/colorsim_rq):
    # every sample a queue of the server's tasks, none of the clients'
    kc = _kernel_counters(runs[1])
    hist = sum(v for k, v in kc.items() if re.fullmatch(r"rq_len_\d+(_\d+|_up)?", k))
    assert kc["schedule_calls"] == kc["rq_samples"] == hist > 0, kc
    assert 1 <= kc["rq_len_mean"] <= kc["rq_len_max"] <= 32 + 16, kc  # httpd, web, daemons
    assert 0 < kc["context_switches"] <= kc["schedule_calls"], kc
    assert kc["window_quarters"] == 4, kc            # web's marks, from the same counts
    assert "rq_samples" not in _kernel_counters(runs[0])   # no partition: no counts
    # where the other server tasks slept (patch 0010, /proc/colorsim_wait):
    # the states add up, httpd waited for connections or on their sockets,
    # and no client's own wait is counted (they run on the client CPU)
    asleep = {w: kc[f"wait_{w}_mean"] for w in WAIT_CHANNELS}
    assert kc["wait_samples"] > 0, kc
    assert kc["wait_tasks_mean"] == pytest.approx(
        kc["wait_running_mean"] + kc["wait_runnable_mean"] + sum(asleep.values()),
        abs=0.01), kc
    assert all(v >= 0 for v in asleep.values()), asleep
    assert asleep["accept"] + asleep["recv_accepted"] > 0, asleep
    assert asleep["connect"] == asleep["recv_connected"] == asleep["send_connected"] == 0, asleep
    assert kc["wait_tasks_mean"] <= 32 + 16, kc


# the channels 2.4's wait report has (kernel/colorsim_wait.c)
WAIT_CHANNELS = ("accept", "connect", "recv_accepted", "recv_connected", "send_accepted",
                 "send_connected", "poll", "sem", "lock", "wait4", "sleep")


def _kernel_counters(run):
    rows = [line.split(",") for line in (run / "counters.csv").read_text().splitlines()[1:]]
    return {r[3]: float(r[4]) for r in rows if r[1] == "-1"}


@pytest.mark.slow
@pytest.mark.requires_linux24
def test_web_on_linux24_repeats_byte_for_byte(tmp_path):
    runs = [_run(tmp_path, f"r{i}") for i in (1, 2)]
    for f in ("console.log", "stats.txt", "bus_offsets.csv", "counters.csv"):
        assert (runs[0] / f).read_bytes() == (runs[1] / f).read_bytes(), f


def test_timing_counts_no_units_in_the_web_image():
    """--timing on a web run: the lock is metered as for the task image,
    but the layout's compute() is the task image's init's, an address that
    means other code in /bin/web: no unit= then."""
    from pathlib import Path
    from colorsim.run.engines.qemu import QemuEngine
    from tests.test_linux24 import _fake_layout
    tasks = RunSpec(get_machine("ppro4"), _spec().variant, timing=True)
    web = _spec(timing=True)
    qemu = QemuEngine()
    a_tasks = qemu.plugin_args(tasks, Path("/r"), _fake_layout()).split(",")
    a_web = qemu.plugin_args(web, Path("/r"), _fake_layout()).split(",")
    assert "unit=0x4013a0" in a_tasks
    assert not any(a.startswith("unit=") for a in a_web)
    assert "lockbytes=1" in a_web


@pytest.mark.requires_linux24
def test_web_sysvsem_accept_on_linux24(tmp_path):
    """Apache 1.3's SysV-semaphore accept on 2.4's semop: the run verifies
    its requests, and the servers it leaves waiting on the semaphore are
    not woken to fail (the semaphore outlives the program in the guest)."""
    run = _run(tmp_path, "sem", SMALL + ",--accept,sysvsem")
    text = (run / "console.log").read_text()
    assert "accept sysvsem" in text and "web: ok (16 requests" in text
    assert "web: FAIL" not in text


@pytest.mark.requires_linux24
@pytest.mark.parametrize("accept", ["fcntl", "none"])
def test_linux24_wait_report_puts_httpd_where_the_accept_mode_parks_them(tmp_path, accept):
    """2.4's wait report (patch 0010) sees Apache's accept serialization:
    behind fcntl only the lock's holder waits in accept(), and the idle
    httpd sleep on the file lock or, woken all at once by its release,
    queue for a CPU; without one they wait in accept()."""
    from colorsim.run.runner import run
    m = get_machine("ppro4")
    w = Workload(program="/bin/web", args=f"--httpd,32,--clients,4,--requests,16,--accept,{accept}",
                 client_cpus=1)
    r = run(RunSpec(m, parse_variant("linux24:vanilla", m), w, timeout_s=900), name=accept,
            out=tmp_path, progress=lambda *_: None)
    kc = _kernel_counters(r)
    assert kc["wait_samples"] > 0, kc
    if accept == "fcntl":
        assert kc["wait_accept_mean"] <= 1.0, kc
        assert kc["wait_lock_mean"] > 0, kc
        # 32 httpd, at most 4 requests in flight
        assert kc["wait_lock_mean"] + kc["wait_runnable_mean"] > 16, kc
    else:
        assert kc["wait_lock_mean"] == 0, kc
        assert kc["wait_accept_mean"] > 16, kc


@pytest.mark.requires_linux24
@pytest.mark.parametrize("kernel", ["linux24:vanilla", "linux24-i386:vanilla"])
def test_linux24_ticks_once_per_modelled_tick_under_timing(tmp_path, kernel):
    """--timing with client CPUs (the wait report's run): the region's
    jiffies are its modelled time in ticks, and CPU 0 ran its tick work
    (update_process_times, where it samples the wait report) once per
    jiffy.  A bus monitor that wrote its machine time past the kernel's
    clock array once left x86_64 with no tick in the region and i386 on
    the emulator's timers, its time slices fifty times too short."""
    from colorsim.describe.runspec import HZ
    from colorsim.run.runner import run
    m = get_machine("ppro4")
    w = Workload(program="/bin/web", args="--httpd,32,--clients,8,--requests,48,--accept,fcntl",
                 client_cpus=1)
    r = run(RunSpec(m, parse_variant(kernel, m), w, timing=True, timeout_s=900), name="t",
            out=tmp_path, progress=lambda *_: None)
    kc = _kernel_counters(r)
    ticks = kc["elapsed_cycles"] / (m.processor.clock_hz // HZ)
    assert ticks > 3, kc
    assert abs(kc["roi_jiffies"] - ticks) <= 1 + 0.05 * ticks, (kc["roi_jiffies"], ticks)
    assert abs(kc["wait_samples"] - kc["roi_jiffies"]) <= 1, kc


def test_sweep_web_points_on_linux24_run_and_build_the_web_image(monkeypatch):
    """An experiment's web point on a linux24 kernel is runnable (its
    clients on the server's CPUs, as web's default of client CPUs is the
    testbed's), and the sweep builds the web image once, before workers."""
    from colorsim.describe.experiments import Point
    from colorsim.orchestrate import sweep
    from colorsim.run import build, linux24
    p = Point("x", "quick", "ppro4", "512KiB", 4, "linux24:c32", "web", "web",
              32, 1, 2, 2, 2000, "qemu", 600, args=SMALL)
    assert p.refusal() is None and p.spec().workload.client_cpus == 0
    testbed = Point("x", "quick", "ppro4", "512KiB", 2, "c32", "web", "web",
                    32, 1, 2, 2, 2000, "qemu", 600, args=SMALL)
    assert testbed.spec().workload.client_cpus == 3
    made = []
    monkeypatch.setattr(build, "ensure_built", lambda *a, **k: None)
    monkeypatch.setattr(linux24, "prepare", lambda v, progress: made.append(v.name))
    monkeypatch.setattr(linux24web, "web_initrd",
                        lambda progress, arch: made.append(f"web {arch}"))
    sweep._build_all([p.spec()], print)
    assert made == ["linux24-c32", "web x86_64"]
    made.clear()
    sweep._build_all([RunSpec(p.spec().machine, p.spec().variant)], print)
    assert made == ["linux24-c32"]


def test_chat_on_linux24_takes_the_same_image_and_its_own_arguments():
    """--workload chat on a linux24 kernel: the web image (it holds
    /bin/chat too), chatargs= for init, the clients on the server's CPUs."""
    a = cli.build_parser().parse_args(
        ["run", "--kernel", "linux24-i386:c32", "--workload", "chat", "--rooms", "2",
         "--users", "5", "--messages", "10"])
    spec = cli.spec_from_args(a)
    assert spec.workload.client_cpus == 0
    line = spec.kernel_cmdline(0).split()
    assert "chatargs=--rooms,2,--users,5,--messages,10" in line
    assert not any(w.startswith("webargs=") for w in line)
    assert spec.rootfs_image == described.web_image("i386")
    assert "chat" in {p.parent.name for p in linux24web.sources()}


def test_chats_linux24_threads_are_clone_tasks_that_serve_every_message(tmp_path):
    """chat as the Linux 2.4 images build it (CHAT_LINUX24: threads made
    with clone(2) as LinuxThreads made them, no TLS of their own), run on
    this host: every message reaches every other member of its room."""
    import random
    import subprocess
    exe = tmp_path / "chat"
    linux24web._cc(exe, sorted(linux24web.CHAT_DIR.glob("*.c")), "x86_64",
                   linux24web.CHAT_FLAGS)
    syms = subprocess.run(["nm", str(exe)], capture_output=True, text=True).stdout.split()
    assert "clone" in syms and "pthread_create" not in syms
    port = str(random.randrange(20000, 40000))
    r = subprocess.run([str(exe), "--rooms", "2", "--users", "5", "--messages", "10",
                        "--port", port], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout[-500:]
    assert "chat: ok (2 rooms x 5 users x 10 messages" in r.stdout
    m = re.search(r"chat: roi 500 messages .* in ([0-9.]+) s", r.stdout)
    assert m, r.stdout


def test_a_linux24_seed_is_webs_request_mix_and_nothing_else_takes_one():
    """2.4 has no placement seed: a web run's seed goes to web (its
    clients' request mix), so two seeds are two runs; the tasks workload
    and Chat take none, and a seed there would give the same run twice."""
    m = get_machine("ppro4")
    v = parse_variant("linux24-i386:c32", m)
    line = {s: RunSpec(m, v, Workload(program="/bin/web", args=SMALL, seed=s,
                                      client_cpus=0)).kernel_cmdline(0)
            for s in (1, 2)}
    assert f"webargs={SMALL} " in line[1] and f"webargs={SMALL},--seed,2 " in line[2]
    for w in (Workload(seed=2), Workload(program="/bin/chat", args="--rooms,2", seed=2,
                                         client_cpus=0)):
        with pytest.raises(ConfigError, match="take no seed"):
            RunSpec(m, v, w)
    with pytest.raises(ConfigError, match="both given"):
        RunSpec(m, v, Workload(program="/bin/web", args=SMALL + ",--seed,3", seed=2,
                               client_cpus=0))
