"""One point's worker process: start it, wait for it, read its result.

Every executor runs the same thing on some machine: :func:`execute` starts
``python3 -m colorsim.orchestrate.sweepworker JOB`` (the sweep's
``worker_command``), which makes one run and prints its result record as
the last JSON line; :func:`parse_result` reads it, or makes a crash record
of a process that ended without one.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time

from colorsim import ROOT

_live = set()
_live_lock = threading.Lock()


def _env() -> dict:
    env = dict(os.environ)
    pp = env.get("PYTHONPATH", "")
    env["COLORSIM_PREBUILT"] = "1"          # plan() built every kernel
    if str(ROOT) not in pp.split(os.pathsep):
        env["PYTHONPATH"] = os.pathsep.join(x for x in (str(ROOT), pp) if x)
    return env


def parse_result(rc: int, out: str, err: str) -> dict:
    """The worker's last JSON line, or a crash record."""
    for line in reversed(out.strip().splitlines()):
        try:
            res = json.loads(line)
        except ValueError:
            continue
        if isinstance(res, dict) and "status" in res:
            return res
    tail = "\n".join(err.strip().splitlines()[-20:])
    how = (f"killed by signal {-rc}" if rc < 0 else f"exit status {rc}")
    return {"status": "failed", "kind": "crash",
            "reason": f"the run's process ended without a result ({how})",
            "tail": tail}


def execute(cmd: list, timeout_s: float, cwd: str = None) -> dict:
    """Run one point's worker process and return its result record.

    The process dies with the calling thread's process (PR_SET_PDEATHSIG),
    and is stopped when it outlives ``timeout_s``.
    """
    from colorsim.run.rundir import spawn, stop
    t0 = time.monotonic()
    proc = spawn(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                 stdin=subprocess.DEVNULL, text=True, cwd=cwd or str(ROOT),
                 env=_env())
    with _live_lock:
        _live.add(proc)
    try:
        out, err = proc.communicate(timeout=timeout_s)
        res = parse_result(proc.returncode, out, err)
    except subprocess.TimeoutExpired:
        stop(proc)
        out, err = proc.communicate()
        res = {"status": "failed", "kind": "timeout",
               "reason": f"the run's process did not end within "
                         f"{timeout_s:g} s (sweep watchdog)",
               "tail": "\n".join(err.strip().splitlines()[-20:])}
    finally:
        with _live_lock:
            _live.discard(proc)
    res["seconds"] = round(time.monotonic() - t0, 2)
    res["executor_pid"] = os.getpid()
    return res


def stop_all() -> None:
    """Stop every worker process this process started (SIGTERM: each
    records its run as failed by interruption)."""
    from colorsim.run.rundir import stop
    with _live_lock:
        procs = list(_live)
    for p in procs:
        try:
            p.terminate()
        except OSError:
            pass
    for p in procs:
        stop(p, grace_s=10)
