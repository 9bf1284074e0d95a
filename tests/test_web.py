"""The web workload (workloads/web): a pre-forking server and a closed loop
of clients, at small scale, natively on the host (real TCP on 127.0.0.1)
and in the guest; and `colorsim run --workload web`.

Every response is checked byte for byte by the program itself; here we
check that it says so, that the region of interest holds the requests it
should, and that a wrong file set makes it fail.
"""

import json
import re
import subprocess

import pytest

from colorsim.cli import main as cli_main
from tests.test_userproc import BIN, BUILD, assert_passed, boot, built  # noqa: F401

WWW = BUILD / "disk-images"


def host(args, port):
    return subprocess.run([str(BIN / "web"), "--root", str(WWW), "--port", str(port)] + args,
                          capture_output=True, text=True, timeout=60)


def roi_requests(out):
    m = re.search(r"web: roi (\d+) requests \(completed (\d+)\.\.(\d+)\)", out)
    assert m, out[-2000:]
    return int(m.group(1)), int(m.group(2)), int(m.group(3))


@pytest.mark.parametrize("args", [[], ["--accept", "pipe"], ["--accept", "sysvsem"],
                                  ["--accept", "fcntl"], ["--accept", "flock"],
                                  ["--keepalive", "4"], ["--work", "minimal"]])
def test_web_runs_natively(built, args, tmp_path):
    port = 20000 + (abs(hash(tuple(args))) % 20000)
    p = host(["--httpd", "12", "--clients", "10", "--requests", "12"] + args, port)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "web: ok (120 requests" in p.stdout
    n, lo, hi = roi_requests(p.stdout)
    # at least --measure (60) requests, or, when a loaded host batches the
    # completions so that the region starts late, up to the last of the 120
    assert lo >= 30 and hi == lo + n and (n >= 60 or hi == 120), (n, lo, hi)


def test_web_fails_loudly_on_a_wrong_file(built, tmp_path):
    # the same names, one byte changed: the clients must notice
    www = tmp_path / "www"
    www.mkdir()
    for f in (WWW / "www").iterdir():
        (www / f.name).write_bytes(f.read_bytes())
    data = bytearray((www / "class1_3").read_bytes())
    data[1000] ^= 1
    (www / "class1_3").write_bytes(bytes(data))
    p = subprocess.run([str(BIN / "web"), "--root", str(tmp_path), "--port", "19999",
                        "--httpd", "4", "--clients", "4", "--requests", "40"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode != 0 and "web: FAIL client" in p.stdout and "bad body byte" in p.stdout


def test_web_refuses_a_region_larger_than_the_run(built):
    p = host(["--clients", "2", "--requests", "2", "--warmup", "3", "--measure", "3"], 19998)
    assert p.returncode == 1 and "web: FAIL" in p.stdout


@pytest.mark.parametrize("kernel,cpus,accept", [("vanilla-l32", 2, "none"),
                                                ("c32-b17-l32", 4, "pipe"),
                                                ("vanilla-l32", 4, "sysvsem")])
def test_web_in_the_guest(built, kernel, cpus, accept):
    rc, out = boot(BUILD / "kernels" / kernel / "kernel.mb.elf", "/bin/web", cpus=cpus,
                   extra=f"initargs=--httpd,24,--clients,12,--requests,8,--accept,{accept}",
                   timeout=120)
    assert "web: ok (96 requests" in out, out[-3000:]
    assert "init: exited with status 0" in out and rc == 1
    n, lo, hi = roi_requests(out)
    assert n >= 48
    assert re.search(r"roi: end at jiffies \d+: schedules \d+", out)
    # servers really queued on the semaphore (and only in that mode)
    sem = re.search(r"sem: sleeps (\d+) wakeups (\d+)", out)
    assert bool(sem) == (accept == "sysvsem"), out[-2000:]
    if sem:
        assert int(sem.group(1)) > 0 and int(sem.group(2)) > 0


@pytest.mark.parametrize("kernel,accept", [("vanilla-l32", "fcntl"),
                                           ("c32-b17-l32", "flock")])
def test_file_lock_accept_wakes_every_waiter_as_2_4_does(built, kernel, accept):
    """fcntl and flock: every unlock makes every blocked httpd runnable
    (2.4's locks_wake_up_blocks), so with 24 httpd queued on the lock a
    release wakes many, not one; they wait in the kernel's "lock" channel.
    sysvsem on the same load wakes one per release (test above)."""
    rc, out = boot(BUILD / "kernels" / kernel / "kernel.mb.elf", "/bin/web", cpus=4,
                   extra=f"initargs=--httpd,24,--clients,12,--requests,8,--accept,{accept}",
                   timeout=120)
    assert "web: ok (96 requests" in out and rc == 1, out[-3000:]
    m = re.search(r"locks: blocked (\d+) releases (\d+) woken (\d+)", out)
    assert m, out[-2000:]
    blocked, releases, woken = map(int, m.groups())
    assert releases >= 96 and blocked > 0
    assert woken > 5 * releases, m.group(0)          # a herd, not wake-one
    waits = re.search(r"wait: samples \d+ .* lock (\d+)", out)
    assert waits and int(waits.group(1)) > 0, out[-2000:]
    assert not re.search(r"^sem: ", out, re.M)


def test_apache_work_counts_every_request_in_the_shared_scoreboard(built):
    """--work apache (the default): each child counts its requests and
    bytes in its slot of the scoreboard the parent mapped shared before
    forking (kernels' shm.c), so the slots add up to exactly what the
    clients received; and each request's Common Log Format line went to
    the in-memory access log (logfile.c) with one write."""
    rc, out = boot(BUILD / "kernels" / "c32-b17-l32" / "kernel.mb.elf", "/bin/web", cpus=4,
                   extra="initargs=--httpd,24,--clients,12,--requests,8", timeout=120)
    ok = re.search(r"web: ok \((\d+) requests, (\d+) bytes", out)
    sb = re.search(r"web: scoreboard (\d+) requests (\d+) bytes; access log (\d+) bytes", out)
    assert ok and sb and rc == 1, out[-3000:]
    assert sb.group(1, 2) == ok.group(1, 2)
    # '10.0.0.1 - - [29/Nov/2026:04:13:05 +0000] "GET /www/class1_3 HTTP/1.0" 200 5120'
    n, logged = int(ok.group(1)), int(sb.group(3))
    assert 60 * n <= logged <= 120 * n, (n, logged)
    assert ", work apache," in out
    rc, out = boot(BUILD / "kernels" / "c32-b17-l32" / "kernel.mb.elf", "/bin/web", cpus=4,
                   extra="initargs=--httpd,24,--clients,12,--requests,8,--work,minimal",
                   timeout=120)
    assert "web: ok (96 requests" in out and "web: scoreboard" not in out, out[-3000:]


def test_web_refuses_an_unknown_accept_mode(built):
    p = host(["--accept", "posixsem"], 19997)
    assert p.returncode == 1
    assert "web: FAIL --accept must be none, pipe, sysvsem, fcntl or flock" in p.stdout
    p = host(["--work", "nginx"], 19996)
    assert p.returncode == 1 and "web: FAIL --work must be apache or minimal" in p.stdout


def test_web_with_more_results_than_a_pipe_holds(built):
    # 200 clients' results (24 bytes each) exceed the kernel's one-page
    # pipe: the controller must read them while requests still complete
    rc, out = boot(BUILD / "kernels" / "vanilla-l32" / "kernel.mb.elf", "/bin/web", cpus=2,
                   extra="initargs=--httpd,8,--clients,200,--requests,2", timeout=120)
    assert "web: ok (400 requests" in out, out[-3000:]


def test_colorsim_run_web(built, tmp_path):
    rc = cli_main(["run", "--machine", "ppro4", "--kernel", "c32", "--cpus", "2",
                   "--workload", "web", "--httpd", "16", "--clients", "8",
                   "--requests", "6", "--out", str(tmp_path), "--name", "w"])
    assert rc in (0, None)
    run = tmp_path / "w"
    cfg = json.loads((run / "config.json").read_text())
    assert cfg["complete"] and cfg["workload"]["program"] == "/bin/web"
    assert cfg["workload"]["args"] == "--httpd,16,--clients,8,--requests,6"
    console = (run / "console.log").read_text()
    assert "web: ok (48 requests" in console
    rows = [l.split(",") for l in (run / "counters.csv").read_text().splitlines()[1:]]
    assert [int(r[4]) for r in rows if r[3] == "schedule_calls"][0] > 0
    # the catalog names the per-request work (the default: Apache's)
    from colorsim.results.runrows import timing_columns
    cols = timing_columns(cfg, None, run / "console.log", None)
    assert cols["work"] == "apache" and cols["accept"] == "none"
