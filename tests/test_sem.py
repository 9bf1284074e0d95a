"""System V semaphores in the testbed kernel (kernels/kernel/sem.c).

The user program semtest (workloads/tests/semtest.c) checks the calls'
results and errors, SEM_UNDO at exit and after a fault, and that each
release lets one of six sleepers through; it also runs on the host
(tests/test_userproc.py runs it both ways).  Here the kernel's own count
shows that a release woke only the one sleeper that could go on: with a
wake-all release the other sleepers would wake, find the value taken and
sleep again (``resleeps``).
"""

import re

import pytest

from tests.test_userproc import COLORED, BUILD, assert_passed, boot, built  # noqa: F401

SEM = re.compile(r"sem: sleeps (\d+) wakeups (\d+) resleeps (\d+)")


@pytest.mark.parametrize("kernel,cpus", [("vanilla-l32", 1), ("vanilla-l32", 4),
                                         (COLORED, 2)])
def test_each_release_wakes_one_sleeper(built, kernel, cpus):
    rc, out = boot(BUILD / "kernels" / kernel / "kernel.mb.elf", "/bin/semtest", cpus=cpus)
    assert_passed(rc, out, "semtest")
    m = SEM.search(out)
    assert m, out[-2000:]
    sleeps, wakeups, resleeps = map(int, m.groups())
    # 6 wake-one sleepers, the undo and zero waits, the removed set: at least 9
    assert sleeps >= 9
    assert resleeps == 0 and wakeups == sleeps


def test_no_sem_line_without_semaphores(built):
    rc, out = boot(BUILD / "kernels" / "vanilla-l32" / "kernel.mb.elf", "/bin/hello")
    assert "init: exited with status 1792" in out   # exit(7)
    assert "sem:" not in out
