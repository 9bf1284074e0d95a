"""Where tasks wait: the kernel samples, at every CPU's tick in the region,
how many tasks run, wait on the run queue, or sleep and in what
(kernels/kernel/waitstat.c); the collect step turns the ``wait:`` line
into ``wait_*`` counters (colorsim/console.py)."""

import re

import pytest

from colorsim.cli import main as cli_main
from colorsim.run.console import parse_roi
from tests.test_rqstat import counters
from tests.test_userproc import BUILD, boot, built  # noqa: F401

LINE = ("roi: end at jiffies 74: schedules 734 switches 731 recalcs 5 nr_running 10\n"
        "wait: samples 4 tasks 40 running 8 runnable 6 other 0 accept 20 sem 2 exited 4\n")


def test_the_wait_line_becomes_means():
    roi = parse_roi(LINE)
    assert roi["wait_samples"] == 4
    assert roi["wait_tasks_mean"] == 10 and roi["wait_running_mean"] == 2
    assert roi["wait_runnable_mean"] == 1.5 and roi["wait_accept_mean"] == 5
    assert roi["wait_sem_mean"] == 0.5 and roi["wait_exited_mean"] == 1
    # a wait line before the region's end is not the region's
    assert "wait_samples" not in parse_roi(LINE.split("\n")[1] + "\n" + LINE.split("\n")[0])


def parts(c):
    return sum(v for k, v in c.items() if k.startswith("wait_") and k.endswith("_mean")
               and k != "wait_tasks_mean")


def test_web_run_accounts_for_every_task(built, tmp_path):
    # the clients on the server's CPUs, so that every task is the
    # server's to account for (tests/test_clients.py: the clients outside)
    rc = cli_main(["run", "--machine", "ppro4", "--kernel", "vanilla", "--cpus", "2",
                   "--workload", "web", "--httpd", "32", "--clients", "8",
                   "--requests", "6", "--client-cpus", "0",
                   "--out", str(tmp_path), "--name", "w"])
    assert rc in (0, None)
    c = counters(tmp_path / "w")
    assert c["wait_samples"] > 0
    # every task is running, runnable, asleep somewhere or exited
    assert parts(c) == pytest.approx(c["wait_tasks_mean"], abs=SAMPLE_RACE)
    assert c["wait_running_mean"] <= 2
    # wake-one accept: the idle servers sleep in accept; the controller
    # polls its pipes; two launchers wait for their children
    assert 8 < c["wait_accept_mean"] <= 32
    assert c["wait_poll_mean"] <= 1 and c["wait_wait4_mean"] <= 2
    assert c["wait_sem_mean"] == 0 and c["wait_other_mean"] == 0
    # the clients start together and the region ends before most finish:
    # a closed loop of 8 requests, each client on a CPU, waiting for one,
    # connecting, or waiting for its answer while its server works on it,
    # so every client not yet exited puts at least one task in those
    # states.  (Clients that started one by one had mostly finished or not
    # yet begun: 6 on a CPU or the run queue, 2.4 exited.)
    assert c["wait_exited_mean"] < 4, c          # most of the 8 clients still at work
    in_loop = sum(c[f"wait_{w}_mean"] for w in ("running", "runnable", "connect",
                                                "recv_accepted", "recv_connected"))
    assert in_loop >= 8 - c["wait_exited_mean"], c
    assert c["wait_running_mean"] + c["wait_runnable_mean"] >= 4, c


# A CPU's sample reads the other CPUs' counts without their run-queue lock
# (as 2.4's /proc readers do), so a task in the middle of a wake-up can be
# counted twice in one sample: a few such samples in a region of ~60 move
# the means apart by up to about 0.1.
SAMPLE_RACE = 0.1


def wait_line(out):
    m = re.search(r"roi: end at.*\n(?:.*\n)*?(wait: .*)", out)
    assert m, out[-2000:]
    return parse_roi(out)


@pytest.mark.parametrize("accept", ["sysvsem", "pipe"])
def test_servers_behind_an_accept_lock_sleep_in_it(built, accept):
    rc, out = boot(BUILD / "kernels" / "vanilla-l32" / "kernel.mb.elf", "/bin/web", cpus=2,
                   extra=f"initargs=--httpd,32,--clients,8,--requests,6,--accept,{accept}",
                   timeout=120)
    assert "web: ok (48 requests" in out, out[-2000:]
    c = wait_line(out)
    # one server at a time holds the lock and sleeps in accept; the idle
    # rest sleep on the semaphore, or read the lock's pipe -- or, woken
    # all at once by its release, wait on the run queue (the herd)
    assert c["wait_accept_mean"] <= 1.0
    if accept == "sysvsem":
        # a release wakes one sleeper, but a woken one that waits for a CPU
        # is skipped by the next release (2.4's update_queue), so under a
        # saturated CPU the woken pile up on the run queue
        assert c["wait_sem_mean"] > 4 and c["wait_pipe_read_mean"] == 0, c
        assert c["wait_sem_mean"] + c["wait_runnable_mean"] > 16, c
    else:
        assert c["wait_sem_mean"] == 0, c
        assert c["wait_pipe_read_mean"] + c["wait_runnable_mean"] > 16, c
        assert c["wait_runnable_mean"] > 8, c
    assert parts(c) == pytest.approx(c["wait_tasks_mean"], abs=SAMPLE_RACE)


def test_the_rqlock_line_becomes_the_kernels_lock_counters():
    """runqueue_lock as the kernel counted it (kernels/kernel/lockstat.c);
    a kernel that counted nothing (the multi-queue scheduler) gives none."""
    line = "rqlock: acquisitions 40 contended 6 hold_tsc 12000 region_tsc 900000\n"
    roi = parse_roi(LINE + line)
    assert (roi["kernel_lock_acquisitions"], roi["kernel_lock_contended"],
            roi["kernel_lock_hold_tsc"], roi["kernel_region_tsc"]) == (40, 6, 12000, 900000)
    assert "kernel_lock_acquisitions" not in parse_roi(LINE + line.replace("40", "0", 1))
    assert "kernel_lock_acquisitions" not in parse_roi(line + LINE)
