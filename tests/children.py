"""Child processes of tests that die with the test run, as the runner's do.

A QEMU started by a test is started through colorsim.run.rundir.spawn
(PR_SET_PDEATHSIG): if pytest is interrupted or killed, even by SIGKILL,
the kernel kills the emulator too, so no emulator outlives the test run.
"""

import subprocess

from colorsim.run.rundir import spawn, stop


def run_child(cmd, timeout, **kwargs) -> subprocess.CompletedProcess:
    """subprocess.run(cmd, timeout=...), the child dying with this process
    and stopped on any error (a timeout, Ctrl-C)."""
    p = spawn(cmd, **kwargs)
    try:
        out, err = p.communicate(timeout=timeout)
    finally:
        stop(p, grace_s=0)
    return subprocess.CompletedProcess(cmd, p.returncode, out, err)
