"""``python3 -m colorsim sweep EXPERIMENT|all``: run an experiment's grid.

The sweep expands the grid (configs/experiments.toml), builds every kernel
it needs, names each runnable point by its content hash (colorsim/identity)
and runs what is missing into ``RUNS/by-id/<id>``: a complete, verified run
of that id is skipped, so an interrupted or changed sweep only runs what is
missing or changed.  Points that need instruments the suite lacks are
listed as such, never silently dropped.

Every run is its own process (``python3 -m colorsim.orchestrate.sweepworker``), started
so that the kernel kills it with the sweep (PR_SET_PDEATHSIG), which in turn
runs one emulator through :func:`colorsim.run.runner.run`: the run directory
rules (one owner, no orphans, one atomic verified rename) hold for every
point.  Executors run those processes: ``local`` (a pool of ``--jobs``
slots, every core by default), ``dask`` (dask.distributed) and ``slurm``
(array jobs, at most ``--jobs`` points at once).  Crashed runs are retried
a bounded number of times; a failed run never stops the others; the final
summary counts done, failed, missing and lacking points, and the catalog
is rebuilt.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from colorsim.errors import ConfigError
from colorsim.describe.experiments import cost_key
from colorsim.orchestrate.costs import (RECORDED, Estimates, point_mem_mib,
                                       recorded_costs, wall_s)
from colorsim.orchestrate.detach import check_detach
from colorsim.orchestrate.detach import submit as detach_submit
from colorsim.orchestrate.progress import Progress, _hms
from colorsim.orchestrate.executors import EXECUTORS, make_executor
from colorsim.orchestrate.process import stop_all
from colorsim.run.rundir import runs_root
from colorsim.argtypes import directory

BY_ID = "by-id"
SWEEPS = "sweeps"
RETRY_KINDS = ("crash",)       # failures worth another attempt
WATCHDOG_GRACE_S = 120.0       # beyond a run's own --timeout


# -- planning -------------------------------------------------------------

@dataclass
class Task:
    """One runnable point with its identity."""

    run_id: str                 # full SHA-256
    params: dict                # Point.params() + timeout
    experiments: list = field(default_factory=list)

    @property
    def name(self) -> str:
        from colorsim.run.identity import short_id
        return short_id(self.run_id)


def _built(spec) -> bool:
    """Whether the builds a run's identity hashes are all there."""
    from colorsim.run.build import PLUGIN
    from colorsim.run.kernels import kind_of
    files = [spec.kernel_elf64]
    if spec.engine == "qemu":
        files.append(PLUGIN)
    if spec.workload.program:
        files.append(spec.rootfs_image)
    files += kind_of(spec.variant).built_files(spec)
    return all(Path(f).is_file() for f in files)


def _build_all(specs, progress) -> None:
    """The kernels, plugin and images the points need, once, here, each
    kind of kernel its own way (the testbed's through scons, Linux 2.4's
    from the user's tree); the plugin if any point runs on QEMU."""
    from colorsim.run.build import ensure_built
    from colorsim.run.kernels import KINDS
    plugin = any(s.engine == "qemu" for s in specs)
    for kind in KINDS:
        mine = [s for s in specs if kind.owns(s.variant)]
        if mine:                    # the plugin with the first kind's build
            kind.prepare_all(mine, progress, plugin=plugin)
            plugin = False
    if plugin:
        ensure_built([], plugin=True, progress=progress)


# --only AXIS=V[,V...]: the grid's axes by their names in experiments.toml
# (plural or singular), each the point parameter it selects on
ONLY_AXES = {"machine": "machine", "l2": "l2", "cpus": "cpus",
             "kernels": "kernel", "kernel": "kernel", "workload": "workload",
             "tasks": "tasks", "seeds": "seed", "seed": "seed",
             "burst": "burst"}


def parse_only(texts) -> dict:
    """``--only`` options as {point parameter: {values as text}}: a point
    is run when each named parameter has one of its values."""
    only = {}
    for t in texts or ():
        axis, eq, vals = t.partition("=")
        key = ONLY_AXES.get(axis.strip())
        values = {v.strip() for v in vals.split(",") if v.strip()}
        if not eq or key is None or not values:
            raise ConfigError(f"--only {t!r}: give AXIS=VALUE[,VALUE...] with "
                              f"AXIS one of {', '.join(sorted(ONLY_AXES))}")
        only.setdefault(key, set()).update(values)
    return only


def selected(params: dict, only: dict) -> bool:
    return all(str(params.get(k)) in vs for k, vs in only.items())


def check_only(exps, quick: bool, only: dict) -> None:
    """Every value ``--only`` names is one some point of ``exps`` has (a
    typo would otherwise select nothing and look like a finished sweep)."""
    params = [p.params() for e in exps for p in e.points(quick)]
    for k, vs in only.items():
        have = {str(x[k]) for x in params}
        if vs - have:
            raise ConfigError(
                f"--only: no point of {', '.join(e.name for e in exps)} has "
                f"{k} {', '.join(sorted(vs - have))}; its values: "
                f"{', '.join(sorted(have, key=lambda v: (len(v), v)))}")


def plan(exps, quick: bool, root: Path, progress=print, build: bool = True,
         only: dict = None):
    """(tasks by id, {experiment: point records}) for ``exps``.

    Builds every kernel variant the runnable points ``only`` selects need
    (once, here, not in parallel workers) and computes each point's run id.
    A point whose builds are missing and that is not built here (``build``
    False: a dry run; or left out by ``only``) gets no id (``unbuilt`` in
    its record).
    """
    from colorsim.run.identity import run_id, short_id
    from colorsim.run.runner import identity
    points = [p for e in exps for p in e.points(quick)]
    runnable = [p for p in points if p.runnable]
    specs, refused = {}, {}
    for p in runnable:       # the runner's refusals are missing points
        try:
            specs[p] = p.spec()
        except ConfigError as e:
            refused[p] = str(e)
    only = only or {}
    wanted = {p: s for p, s in specs.items() if build and selected(p.params(), only)}
    if wanted:
        _build_all(list(wanted.values()), progress)
    idents = {}
    for p, s in specs.items():   # gem5's needs $GEM5: without it, refused
        if p not in wanted and not _built(s):
            continue             # not built here: no id without the builds
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
        elif p.runnable and p not in wanted and not _built(specs[p]):
            rec["unbuilt"] = True
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
    """A complete run of this id that passes its manifest check (a run
    without a manifest is not done: it is run again)."""
    from colorsim.errors import ResultsError
    from colorsim.run.rundir import read_config, verify_run
    final = root / BY_ID / task.name
    try:
        cfg = read_config(final)
        if not cfg.get("complete") or verify_run(final, cfg):
            return False            # incomplete, or unverified (no manifest)
    except ResultsError:
        return False
    from colorsim.run.identity import run_id
    return run_id(cfg) == task.run_id


# -- one point's worker ------------------------------------------------------

def worker_command(task: Task, root: Path, force: bool = False) -> list:
    job = {"params": task.params, "name": task.name,
           "out": str(root / BY_ID)}
    if force:               # replace a damaged run at this id (--force)
        job["force"] = True
    return [sys.executable, "-m", "colorsim.orchestrate.sweepworker", json.dumps(job)]


# -- the sweep ----------------------------------------------------------------

def run_sweep(names: str, quick: bool = False, jobs: int = None,
              executor: str = "local", retries: int = 2, root=None,
              timeout_s: float = None, catalog: bool = True,
              progress_stream=None, log=print, dask=None,
              force: bool = False, only: dict = None, detach: bool = False,
              slurm: dict = None, only_texts=()) -> dict:
    """Run every missing point of ``names``; return the summary counts.

    ``dask``: for the dask executor, a scheduler address or a cluster
    object (e.g. dask-jobqueue's, :func:`colorsim.orchestrate.executors.slurm_dask_cluster`).
    ``force``: replace a point's damaged run directory.  ``only``
    (:func:`parse_only`): run just the points it selects.  ``detach``
    (Slurm only): submit the points and a collection job, and return
    (orchestrate/detach.py).  ``slurm``: the Slurm executor's options."""
    from colorsim.describe.experiments import load_experiments, select
    root = runs_root(root)
    from colorsim.run.rundir import check_out_dir
    check_out_dir(root, option="--runs", create=False)
    if executor not in EXECUTORS:
        raise ConfigError(f"unknown executor {executor!r}; choose one of "
                          f"{', '.join(EXECUTORS)}")
    if detach:
        check_detach(executor)
    exps = select(load_experiments(), names)
    only = only or {}
    check_only(exps, quick, only)
    check_out_dir(root, option="--runs")     # made now, before any build
    jobs = jobs or os.cpu_count() or 1
    tasks, records = plan(exps, quick, root,
                          progress=lambda m: print(m, file=sys.stderr), only=only)
    if timeout_s is not None:
        for t in tasks.values():
            t.params["timeout"] = timeout_s
    write_sweep_files(exps, records, quick, root)
    chosen = [t for rid, t in sorted(tasks.items()) if selected(t.params, only)]
    finished = [t for t in chosen if is_done(root, t)]
    finished_ids = {t.run_id for t in finished}
    todo = [t for t in chosen if t.run_id not in finished_ids]
    skipped = len(finished)
    results = {}
    if detach:
        ex = make_executor(executor, jobs, root, slurm=slurm)
        return detach_submit(todo, ex, names, quick, root,
                             lambda t: submit_point(ex, t, root, force),
                             only_texts, log)
    if todo:
        results = _execute_all(todo, make_executor(executor, jobs, root, dask, slurm),
                               root, retries, progress_stream, force,
                               measured=_measured(root, finished))
    if catalog:
        from colorsim.results.catalog import rebuild
        rebuild(root)
    return summarize(exps, records, tasks, results, skipped, quick, root, log,
                     only)


def submit_point(ex, t: Task, root: Path, force: bool = False):
    """Hand one point's worker to executor ``ex``, with its timeout (and the
    watchdog's grace) and the memory it needs: an attached and a detached
    sweep submit alike."""
    return ex.submit(worker_command(t, root, force),
                     float(t.params["timeout"]) + WATCHDOG_GRACE_S, t.name,
                     mem_mib=point_mem_mib(t.params))


def _execute_all(todo, ex, root, retries, progress_stream, force=False,
                 measured=None) -> dict:
    (root / BY_ID).mkdir(parents=True, exist_ok=True)
    weights = dict(zip((t.run_id for t in todo), Estimates(
        measured or {}).weights([t.params for t in todo])))
    bar = Progress(list(weights.values()), progress_stream)
    bar.update()
    attempts = {t.run_id: 0 for t in todo}
    results = {}
    pending = {}
    retry_reasons = {}

    def submit(t):
        attempts[t.run_id] += 1
        pending[submit_point(ex, t, root, force)] = t

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
                bar.update(res["status"] == "done", weights[t.run_id])
    except BaseException:
        stop_all()
        raise
    finally:
        ex.close()
        bar.close()
    return results


def summarize(exps, records, tasks, results, skipped, quick, root, log,
              only: dict = None) -> dict:
    """Print what every experiment has: done, failed, missing, lacking
    (and, with ``only``, left out by it)."""
    from colorsim.run.identity import short_id
    counts = {"points": 0, "done": 0, "failed": 0, "missing": 0, "lacks": 0,
              "left_out": 0, "runs": len(tasks), "ran": len(results), "skipped": skipped,
              "failures": []}
    for e in exps:
        c = {"done": 0, "failed": 0, "missing": 0, "lacks": 0, "left_out": 0}
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
            elif not selected(t.params, only or {}):
                c["left_out"] += 1
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
            + (f", {c['left_out']} left out by --only" if c["left_out"] else "")
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


def _measured(root: Path, finished) -> dict:
    """{cost class: [wall seconds, ...]} of ``finished`` (tasks whose runs
    in ``root`` are done)."""
    out = {}
    for t in finished:
        w = wall_s(root / BY_ID / t.name)
        if w is not None:
            out.setdefault(cost_key(t.params), []).append(w)
    return out


def dry_run(names: str, quick: bool = False, jobs: int = None, root=None,
            log=print, only: dict = None, recorded=None) -> dict:
    """What ``sweep`` would do, building and running nothing: per
    experiment its points done, to run, missing and not runnable, and an
    estimate of the wall time from the runs of the same cost class already
    in ``root``, else from the recorded paper-scale runs (``recorded``: a
    recorded catalog's folder, default recorded/paper; costs.py); classes
    neither has are counted, not guessed."""
    from colorsim.describe.experiments import load_experiments, select
    root = runs_root(root)
    exps = select(load_experiments(), names)
    only = only or {}
    check_only(exps, quick, only)
    jobs = jobs or os.cpu_count() or 1
    tasks, records = plan(exps, quick, root, progress=lambda m: None,
                          build=False)
    done = {rid for rid, t in tasks.items() if is_done(root, t)}
    est = Estimates(_measured(root, [tasks[rid] for rid in done]),
                    recorded_costs(recorded))
    scale = "quick" if quick else "paper"
    totals = {"done": 0, "run": 0, "unbuilt": 0, "missing": 0, "lacks": 0,
              "left_out": 0}
    unbuilt_runs = set()        # a run not built yet has no id: its settings
    for e in exps:
        c = {k: 0 for k in totals}
        for r in records[e.name]:
            if r.get("refused"):
                c["missing"] += 1
            elif r["run_id"] is None and not r.get("unbuilt"):
                c["lacks"] += 1
            elif r["run_id"] in done:
                c["done"] += 1
            elif not selected(r, only):
                c["left_out"] += 1
            elif r.get("unbuilt"):
                c["unbuilt"] += 1
                unbuilt_runs.add(json.dumps({**r, "experiment": None}, sort_keys=True))
            else:
                c["run"] += 1
        log(f"{e.name} ({scale}): {len(records[e.name])} points: {c['done']} done, "
            f"{c['run'] + c['unbuilt']} would run"
            + (f" ({c['unbuilt']} after building their kernels)" if c["unbuilt"] else "")
            + f", {c['missing']} missing (refused by the runner), "
              f"{c['lacks']} not runnable"
            + (f", {c['left_out']} left out by --only" if c["left_out"] else ""))
        for k in totals:
            totals[k] += c[k]
    todo = [t for rid, t in tasks.items()
            if rid not in done and selected(t.params, only)]
    distinct = len(todo) + len(unbuilt_runs)
    points = totals["run"] + totals["unbuilt"]
    got = [est.of(t.params) for t in todo]
    measured = [s for s, src in got if src is not None]
    from_recorded = sum(1 for _, src in got if src == RECORDED)
    unknown = distinct - len(measured)
    total_s = sum(measured) / jobs
    shared = (f" ({points} points: experiments share runs)"
              if points != distinct else "")
    log(f"would run {distinct} distinct run{'s' * (distinct != 1)}{shared} with "
        f"{jobs} job{'s' * (jobs != 1)}: about "
        f"{_hms(total_s)} for the {len(measured)} of a known cost class ("
        f"{len(measured) - from_recorded} from the runs in {root}, "
        f"{from_recorded} from the recorded paper-scale runs' host time on "
        f"another machine)" + (f"; {unknown} of classes never run (cost unknown)"
                               if unknown else ""))
    return {**totals, "distinct": distinct, "points_to_run": points,
            "estimate_s": total_s, "unknown": unknown,
            "from_recorded": from_recorded}


def list_experiments(log=print) -> None:
    """Every experiment: its points at both scales and its outputs."""
    from colorsim.describe.experiments import load_experiments
    for name, e in sorted(load_experiments().items()):
        n_paper, n_quick = len(e.points(False)), len(e.points(True))
        outs = ", ".join(sorted(e.outputs))
        log(f"{name:8s} {n_paper:4d} points ({n_quick} quick)  {e.title} "
            f"[{outs}]")


def cmd_sweep(a):
    if a.list:
        list_experiments()
        return
    if not a.experiment:
        raise ConfigError("an experiment is required (a name, or 'all'), or pass --list")
    if a.dry_run:
        dry_run(a.experiment, quick=a.quick, jobs=a.jobs, root=a.runs,
                only=parse_only(a.only))
        return
    if a.collect:
        c = collect(a.experiment, quick=a.quick, root=a.runs, only=parse_only(a.only))
    else:
        slurm = {"minutes": a.slurm_time, "extra": a.slurm_args,
                 "signal_s": a.slurm_signal_s}
        c = run_sweep(a.experiment, quick=a.quick, jobs=a.jobs,
                      executor=a.executor, retries=a.retries, root=a.runs,
                      timeout_s=a.timeout, force=a.force, only=parse_only(a.only),
                      detach=a.detach, slurm=slurm, only_texts=a.only or ())
    if c.get("failed") or c.get("missing"):
        raise SystemExit(1)


def collect(names: str, quick: bool = False, root=None, only: dict = None,
            log=print) -> dict:
    """What a detached sweep's collection job does, and anyone may do at
    any time: rebuild the runs folder's catalog and print what every
    experiment has (done, failed, missing), running and building nothing."""
    from colorsim.describe.experiments import load_experiments, select
    from colorsim.results.catalog import rebuild
    root = runs_root(root)
    exps = select(load_experiments(), names)
    only = only or {}
    check_only(exps, quick, only)
    tasks, records = plan(exps, quick, root, progress=lambda m: None, build=False)
    rebuild(root)
    done = sum(1 for t in tasks.values() if is_done(root, t))
    return summarize(exps, records, tasks, {}, done, quick, root, log, only)


def _jobs(text):
    from colorsim.argtypes import positive_int as _positive_int
    return _positive_int(text)


def add_parser(subparsers):
    """Register ``sweep`` on the command line's subparsers."""
    from colorsim.argtypes import nonnegative_int
    from colorsim.argtypes import positive_seconds as _positive_seconds
    p = subparsers.add_parser(
        "sweep", help="run an experiment's missing points "
                      "(configs/experiments.toml)")
    p.add_argument("experiment", nargs="?",
                   help="an experiment name, or 'all'")
    p.add_argument("--list", action="store_true",
                   help="list the experiments and stop")
    p.add_argument("--dry-run", action="store_true",
                   help="say what would be done and what it would cost; "
                        "build and run nothing")
    p.add_argument("--quick", action="store_true",
                   help="the experiment's small grid of the same shape")
    p.add_argument("--jobs", type=_jobs, default=None,
                   help="runs at a time (default: every core)")
    p.add_argument("--executor", choices=EXECUTORS, default="local",
                   help="where the points run: local (this machine's cores, the "
                        "default), dask or slurm (docs/sweeps-and-catalog.md)")
    p.add_argument("--retries", type=nonnegative_int, default=2,
                   help="extra attempts for a run whose process crashed "
                        "(default 2)")
    p.add_argument("--timeout", type=_positive_seconds, default=None,
                   help="seconds per run (default: the experiment's)")
    p.add_argument("--runs", type=directory, default=None,
                   help="runs folder (default runs/)")
    p.add_argument("--only", action="append", metavar="AXIS=V[,V...]",
                   help="run only the points with these values of a grid "
                        "axis (repeatable: every one must hold), e.g. "
                        "--only kernels=vanilla,c32 --only seeds=1; the "
                        "sweep's other points stay in its records, to run later")
    p.add_argument("--detach", action="store_true",
                   help="with --executor slurm: submit the points and a job that "
                        "collects them after they end, then return at once")
    p.add_argument("--collect", action="store_true",
                   help="run nothing: rebuild the catalog of --runs and say what "
                        "each experiment has (a detached sweep's last step)")
    p.add_argument("--slurm-time", type=_jobs, metavar="MINUTES", default=None,
                   help="with --executor slurm: each point's wall-time limit "
                        "(default: its timeout; or COLORSIM_SLURM_TIME)")
    p.add_argument("--slurm-args", metavar="ARGS", default=None,
                   help="with --executor slurm: extra sbatch options, e.g. "
                        "'--partition=long --account=me' (or COLORSIM_SLURM_ARGS)")
    p.add_argument("--slurm-signal-s", type=_jobs, metavar="S", default=None,
                   help="with --executor slurm: seconds before the limit at which "
                        "Slurm warns a point (default 60; or COLORSIM_SLURM_SIGNAL_S)")
    p.add_argument("--force", action="store_true",
                   help="replace a point's run directory that is damaged "
                        "(kept until the new run completes); complete, "
                        "verified runs are still skipped")
    p.set_defaults(func=cmd_sweep)
    return p
