"""``python3 -m colorsim sweep EXPERIMENT|all``: run an experiment's grid.

The sweep expands the grid (configs/experiments.toml), builds every kernel
it needs, names each runnable point by its content hash (colorsim/identity)
and runs what is missing into ``RUNS/by-id/<id>``: a complete, verified run
of that id is skipped, so an interrupted or changed sweep only runs what is
missing or changed.  Points that need instruments the suite lacks are
listed as such, never silently dropped.

Every run is its own process (``python3 -m colorsim.sweepworker``), started
so that the kernel kills it with the sweep (PR_SET_PDEATHSIG), which in turn
runs one emulator through :func:`colorsim.runner.run`: the run directory
rules (one owner, no orphans, one atomic verified rename) hold for every
point.  Executors run those processes: ``local`` (a pool of ``--jobs``
slots, every core by default), ``dask`` (dask.distributed) and ``slurm``
(one batch job per point).  Crashed runs are retried a bounded number of
times; a failed run never stops the others; the final summary counts done,
failed, missing and lacking points, and the catalog is rebuilt.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import ROOT
from .errors import ConfigError, RunError

BY_ID = "by-id"
SWEEPS = "sweeps"
EXECUTORS = ("local", "dask", "slurm")
RETRY_KINDS = ("crash",)       # failures worth another attempt
WATCHDOG_GRACE_S = 120.0       # beyond a run's own --timeout


def runs_root(path=None) -> Path:
    from .runner import RUNS
    return Path(path) if path else RUNS


# -- planning -------------------------------------------------------------

@dataclass
class Task:
    """One runnable point with its identity."""

    run_id: str                 # full SHA-256
    params: dict                # Point.params() + timeout
    experiments: list = field(default_factory=list)

    @property
    def name(self) -> str:
        from .identity import short_id
        return short_id(self.run_id)


def plan(exps, quick: bool, root: Path, progress=print):
    """(tasks by id, {experiment: point records}) for ``exps``.

    Builds every kernel variant the runnable points need (once, here, not
    in parallel workers) and computes each point's run id.
    """
    from .build import ensure_built
    from .identity import run_id, short_id
    from .runner import identity
    points = [p for e in exps for p in e.points(quick)]
    runnable = [p for p in points if p.runnable]
    specs, refused = {}, {}
    for p in runnable:       # the runner's refusals are missing points
        try:
            specs[p] = p.spec()
        except ConfigError as e:
            refused[p] = str(e)
    if specs:
        ensure_built({s.variant.build_id for s in specs.values()},
                     plugin=any(s.engine == "qemu" for s in specs.values()),
                     image=any(s.workload.program for s in specs.values()),
                     progress=progress)
    idents = {}
    for p, s in specs.items():   # gem5's needs $GEM5: without it, refused
        try:
            idents[p] = identity(s)
        except ConfigError as e:
            refused[p] = str(e)
    tasks, records = {}, {e.name: [] for e in exps}
    for p in points:
        rec = {**p.params(), "lacks": list(p.lacks), "run_id": None,
               "stand_in": p.stand_in}
        if p in refused:
            rec["refused"] = refused[p]
        elif p.runnable:
            s = specs[p]
            rid = run_id({**s.to_dict(), **idents[p]})
            rec["run_id"] = rid
            t = tasks.setdefault(rid, Task(rid, {**p.params(),
                                                 "timeout": p.timeout}))
            if p.experiment not in t.experiments:
                t.experiments.append(p.experiment)
            rec["run"] = f"{BY_ID}/{short_id(rid)}"
        records[p.experiment].append(rec)
    return tasks, records


def write_sweep_files(exps, records, quick: bool, root: Path) -> None:
    """runs/sweeps/<experiment>-<scale>.json: the points of each experiment
    with their run ids (what the catalog and the figures select by)."""
    d = root / SWEEPS
    d.mkdir(parents=True, exist_ok=True)
    scale = "quick" if quick else "paper"
    for e in exps:
        data = {"experiment": e.name, "scale": scale, "title": e.title,
                "needs": list(e.needs), "stand_in": e.stand_in,
                "outputs": {o.id: {"what": o.what, "needs": list(o.needs),
                                   "lacks": list(e.output_lacks(o))}
                            for o in e.outputs.values()},
                "points": records[e.name]}
        path = d / f"{e.name}-{scale}.json"
        tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
        tmp.replace(path)


def is_done(root: Path, task: Task) -> bool:
    """A complete run of this id that passes its manifest check."""
    from .errors import ResultsError
    from .rundir import read_config, verify_run
    final = root / BY_ID / task.name
    try:
        cfg = read_config(final)
        if not cfg.get("complete"):
            return False
        verify_run(final, cfg)
    except ResultsError:
        return False
    from .identity import run_id
    return run_id(cfg) == task.run_id


# -- executing one point --------------------------------------------------

_live = set()
_live_lock = threading.Lock()


def worker_command(task: Task, root: Path, force: bool = False) -> list:
    job = {"params": task.params, "name": task.name,
           "out": str(root / BY_ID)}
    if force:               # replace a damaged run at this id (--force)
        job["force"] = True
    return [sys.executable, "-m", "colorsim.sweepworker", json.dumps(job)]


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
    from .rundir import spawn, stop
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
    from .rundir import stop
    with _live_lock:
        procs = list(_live)
    for p in procs:
        try:
            p.terminate()
        except OSError:
            pass
    for p in procs:
        stop(p, grace_s=10)


# -- executors --------------------------------------------------------------

class LocalExecutor:
    """``jobs`` worker processes at a time on this machine."""

    name = "local"

    def __init__(self, jobs: int):
        from concurrent.futures import ThreadPoolExecutor
        self.jobs = jobs
        self.pool = ThreadPoolExecutor(max_workers=jobs)

    def submit(self, cmd, timeout_s):
        return self.pool.submit(execute, cmd, timeout_s)

    def as_completed(self, futures):
        from concurrent.futures import as_completed
        return as_completed(futures)

    def close(self):
        self.pool.shutdown(wait=True, cancel_futures=True)


def make_executor(kind: str, jobs: int, root: Path):
    if kind == "local":
        return LocalExecutor(jobs)
    if kind == "dask":
        from .executors import DaskExecutor
        return DaskExecutor(jobs)
    if kind == "slurm":
        from .executors import SlurmExecutor
        return SlurmExecutor(jobs, root)
    raise ConfigError(f"unknown executor {kind!r}; choose one of "
                      f"{', '.join(EXECUTORS)}")


# -- progress ---------------------------------------------------------------

class Progress:
    """done / failed / remaining / ETA on stderr (one line, redrawn on a
    terminal; a line per change otherwise)."""

    def __init__(self, total: int, stream=None, width: int = 30):
        self.total, self.width = total, width
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.done = self.failed = 0
        self.t0 = time.monotonic()

    def line(self) -> str:
        finished = self.done + self.failed
        left = self.total - finished
        frac = finished / self.total if self.total else 1.0
        bar = "#" * int(frac * self.width)
        elapsed = time.monotonic() - self.t0
        if finished and left:
            eta = f"ETA {_hms(elapsed / finished * left)}"
        elif not left:
            eta = f"took {_hms(elapsed)}"
        else:
            eta = "ETA ?"
        return (f"sweep [{bar:<{self.width}}] {self.done} done, {self.failed} "
                f"failed, {left} remaining, {eta}")

    def update(self, ok: bool = None) -> None:
        if ok is True:
            self.done += 1
        elif ok is False:
            self.failed += 1
        if self.tty:
            print("\r" + self.line(), end="", file=self.stream, flush=True)
        else:
            print(self.line(), file=self.stream, flush=True)

    def close(self) -> None:
        if self.tty:
            print(file=self.stream, flush=True)


def _hms(s: float) -> str:
    s = int(round(s))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


# -- the sweep ----------------------------------------------------------------

def run_sweep(names: str, quick: bool = False, jobs: int = None,
              executor: str = "local", retries: int = 2, root=None,
              timeout_s: float = None, catalog: bool = True,
              progress_stream=None, log=print, force: bool = False) -> dict:
    """Run every missing point of ``names``; return the summary counts."""
    from .experiments import load_experiments, select
    root = runs_root(root)
    from .rundir import check_out_dir
    check_out_dir(root, option="--runs", create=False)
    if executor not in EXECUTORS:
        raise ConfigError(f"unknown executor {executor!r}; choose one of "
                          f"{', '.join(EXECUTORS)}")
    exps = select(load_experiments(), names)
    check_out_dir(root, option="--runs")     # made now, before any build
    jobs = jobs or os.cpu_count() or 1
    tasks, records = plan(exps, quick, root,
                          progress=lambda m: print(m, file=sys.stderr))
    if timeout_s is not None:
        for t in tasks.values():
            t.params["timeout"] = timeout_s
    write_sweep_files(exps, records, quick, root)
    todo = [t for rid, t in sorted(tasks.items()) if not is_done(root, t)]
    skipped = len(tasks) - len(todo)
    results = {}
    if todo:
        results = _execute_all(todo, make_executor(executor, jobs, root),
                               root, retries, progress_stream, force)
    if catalog:
        from .catalog import rebuild
        rebuild(root)
    return summarize(exps, records, tasks, results, skipped, quick, root, log)


def _execute_all(todo, ex, root, retries, progress_stream, force=False) -> dict:
    (root / BY_ID).mkdir(parents=True, exist_ok=True)
    bar = Progress(len(todo), progress_stream)
    bar.update()
    attempts = {t.run_id: 0 for t in todo}
    results = {}
    pending = {}
    retry_reasons = {}

    def submit(t):
        attempts[t.run_id] += 1
        timeout = float(t.params["timeout"]) + WATCHDOG_GRACE_S
        pending[ex.submit(worker_command(t, root, force), timeout)] = t

    try:
        for t in todo:
            submit(t)
        while pending:
            for fut in ex.as_completed(list(pending)):
                t = pending.pop(fut)
                try:
                    res = fut.result()
                except Exception as e:          # the executor itself failed
                    res = {"status": "failed", "kind": "crash",
                           "reason": f"executor error: {type(e).__name__}: {e}"}
                if (res["status"] != "done" and res.get("kind") in RETRY_KINDS
                        and attempts[t.run_id] <= retries):
                    retry_reasons.setdefault(t.run_id, []).append(
                        res.get("reason", ""))
                    submit(t)
                    break                       # re-enter as_completed
                res["attempts"] = attempts[t.run_id]
                res["retried_after"] = retry_reasons.get(t.run_id, [])
                results[t.run_id] = res
                bar.update(res["status"] == "done")
    except BaseException:
        stop_all()
        raise
    finally:
        ex.close()
        bar.close()
    return results


def summarize(exps, records, tasks, results, skipped, quick, root, log) -> dict:
    """Print what every experiment has: done, failed, missing, lacking."""
    from .identity import short_id
    counts = {"points": 0, "done": 0, "failed": 0, "missing": 0, "lacks": 0,
              "runs": len(tasks), "ran": len(results), "skipped": skipped,
              "failures": []}
    for e in exps:
        c = {"done": 0, "failed": 0, "missing": 0, "lacks": 0}
        lacking, refusals = {}, {}
        for r in records[e.name]:
            if r["lacks"]:
                c["lacks"] += 1
                key = ", ".join(r["lacks"])
                lacking[key] = lacking.get(key, 0) + 1
                continue
            if r.get("refused"):
                c["missing"] += 1
                refusals[r["refused"]] = refusals.get(r["refused"], 0) + 1
                continue
            t = tasks[r["run_id"]]
            if is_done(root, t):
                c["done"] += 1
            elif (root / BY_ID / f"{short_id(r['run_id'])}.failed").exists():
                c["failed"] += 1
            else:
                c["missing"] += 1
        n = len(records[e.name])
        for k in c:
            counts[k] += c[k]
        counts["points"] += n
        lack = "; ".join(f"{v} lack {k}" for k, v in sorted(lacking.items()))
        stand = any(r.get("stand_in") and not r["lacks"] for r in records[e.name])
        timed = any(r.get("timing") for r in records[e.name])
        log(f"{e.name}: {n} points: {c['done']} done, {c['failed']} failed, "
            f"{c['missing']} missing, {c['lacks']} not runnable"
            + (f" ({lack})" if lack else "")
            + (" [--timing]" if timed else "")
            + (" [stand-in workload: synthetic]" if stand else ""))
        for why, k in sorted(refusals.items()):
            log(f"  {k} missing: refused by the runner: {why}")
        counts.setdefault("refused", []).extend(
            (e.name, why, k) for why, k in sorted(refusals.items()))
    counts["executor_pids"] = sorted({r.get("executor_pid") for r in
                                      results.values()} - {None})
    counts["retried"] = sum(1 for r in results.values()
                            if r.get("attempts", 1) > 1)
    for rid, res in sorted(results.items()):
        for why in res.get("retried_after", []):
            log(f"retried: {short_id(rid)} after a crash: "
                f"{(why or '?').splitlines()[0]}")
        if res["status"] != "done":
            counts["failures"].append((short_id(rid), res.get("kind"),
                                       res.get("reason", "")))
            log(f"failed: {short_id(rid)} ({res.get('kind')}, "
                f"{res.get('attempts', 1)} attempt(s)): "
                f"{(res.get('reason') or '').splitlines()[0] if res.get('reason') else ''}")
    log(f"sweep: {counts['runs']} distinct runs: {counts['ran']} ran now, "
        f"{counts['skipped']} already complete, {counts['retried']} retried "
        f"after a crash; {counts['failed']} points "
        f"failed, {counts['missing']} missing, {counts['lacks']} not runnable "
        f"({'quick' if quick else 'paper'} scale); runs in {root / BY_ID}")
    return counts


def cmd_sweep(a):
    c = run_sweep(a.experiment, quick=a.quick, jobs=a.jobs,
                  executor=a.executor, retries=a.retries, root=a.runs,
                  timeout_s=a.timeout, force=a.force)
    if c["failed"] or c["missing"]:
        raise SystemExit(1)


def _jobs(text):
    from .cli import _positive_int
    return _positive_int(text)


def _retries(text):
    import argparse
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be 0 or more")
    return v


def add_parser(subparsers):
    """Register ``sweep`` on the command line's subparsers."""
    from .cli import _positive_seconds
    p = subparsers.add_parser(
        "sweep", help="run an experiment's grid (configs/experiments.toml): "
                      "what is missing, skipping complete runs")
    p.add_argument("experiment", help="an experiment name, or 'all'")
    p.add_argument("--quick", action="store_true",
                   help="the experiment's small grid of the same shape")
    p.add_argument("--jobs", type=_jobs, default=None,
                   help="runs at a time (default: every core)")
    p.add_argument("--executor", choices=EXECUTORS, default="local")
    p.add_argument("--retries", type=_retries, default=2,
                   help="extra attempts for a run whose process crashed "
                        "(default 2)")
    p.add_argument("--timeout", type=_positive_seconds, default=None,
                   help="seconds per run (default: the experiment's)")
    p.add_argument("--runs", type=Path, default=None,
                   help="runs folder (default runs/)")
    p.add_argument("--force", action="store_true",
                   help="replace a point's run directory that is damaged "
                        "(kept until the new run completes); complete, "
                        "verified runs are still skipped")
    p.set_defaults(func=cmd_sweep)
    return p
