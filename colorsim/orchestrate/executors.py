"""Sweep executors: where each point's worker process runs.

Every executor runs the same thing: :func:`colorsim.orchestrate.process.execute`, which
starts one point's worker process (``python3 -m colorsim.orchestrate.sweepworker``) and
returns its result record.  They differ only in where that call runs.

* ``local``: ``--jobs`` worker processes at a time on this machine.
* ``dask``: dask.distributed.  Without ``COLORSIM_DASK_SCHEDULER`` a
  :class:`LocalCluster` of ``--jobs`` worker processes (one thread each) is
  started and closed with the sweep; with it (``tcp://host:8786``) the sweep
  uses that scheduler, e.g. one dask-jobqueue started on Slurm or PBS
  (:func:`slurm_dask_cluster` starts one on Slurm for a sweep).  The run
  directories must be on a file system every worker sees.
* ``slurm``: points go out as array jobs (``sbatch --array=0-N%K``), at
  most ``--jobs`` running at once; each point's worker is its task's batch
  shell, so Slurm's wall-time warning (``--signal=B:USR1@N``) reaches it
  and the run is recorded as killed for time.  Job files are named after
  the runs (``RUNS/slurm/<run>.sh``) and each run's config.json records its
  job (``slurm_job``).  The sweep polls ``squeue --me`` for its own jobs
  and reads ``scontrol`` for finished ones (no accounting daemon needed);
  a failing status query is retried with doubling waits.  Each point asks
  for its own memory (its guest's RAM and the emulator's, ``--mem``) and
  wall time (its timeout).  ``sweep --slurm-args`` (or
  ``COLORSIM_SLURM_ARGS``) adds sbatch options (a partition, an account);
  ``--slurm-time`` (minutes) and ``--slurm-signal-s`` (or
  ``COLORSIM_SLURM_TIME`` and ``_SIGNAL_S``) override the wall time and the
  warning's lead.  ``sweep --detach`` submits every point and a collection
  job that runs after them, and returns (:meth:`SlurmExecutor.submit_detached`).
  ``scripts/slurm-local.sh`` starts a cluster on this machine to try it.
"""

from __future__ import annotations

import math
import os
import secrets
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

from colorsim import ROOT
from colorsim.errors import ConfigError, RunError

EXECUTORS = ("local", "dask", "slurm")

DASK_SCHEDULER_ENV = "COLORSIM_DASK_SCHEDULER"


class DaskExecutor:
    name = "dask"

    def __init__(self, jobs: int, address=None):
        try:
            from dask.distributed import Client, LocalCluster
        except ImportError:
            raise ConfigError("the dask executor needs dask.distributed: run "
                              "scripts/setup.sh") from None
        pp = os.environ.get("PYTHONPATH", "")
        if str(ROOT) not in pp.split(os.pathsep):      # workers import colorsim
            os.environ["PYTHONPATH"] = os.pathsep.join(x for x in (str(ROOT), pp) if x)
        # an address, or a cluster object a caller started and will close
        # (dask-jobqueue's SLURMCluster: slurm_dask_cluster below)
        address = address or os.environ.get(DASK_SCHEDULER_ENV)
        self.cluster = None
        if address:
            self.client = Client(address)
        else:
            self.cluster = LocalCluster(n_workers=jobs, threads_per_worker=1,
                                        processes=True, dashboard_address=None,
                                        silence_logs=40)
            self.client = Client(self.cluster)

    def submit(self, cmd, timeout_s, name=None, mem_mib=None):
        from colorsim.orchestrate.process import execute
        # pure=False: a retry of the same command is a new task
        return self.client.submit(execute, cmd, timeout_s, str(ROOT), pure=False)

    def as_completed(self, futures):
        from dask.distributed import as_completed
        return as_completed(futures)

    def close(self):
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()


def slurm_dask_cluster(jobs: int, walltime: str = "04:00:00",
                       memory: str = "4GiB", runs=None, **options):
    """A dask-jobqueue ``SLURMCluster`` of ``jobs`` workers for a sweep
    (``run_sweep(..., executor="dask", dask=cluster)``; the caller closes it).

    Each worker is one Slurm job with one single-threaded process, as a
    point is one emulator; it starts in this checkout with colorsim
    importable.  ``walltime`` must cover the whole sweep (workers run until
    the cluster closes); the worker jobs' logs go to ``RUNS/slurm/dask``
    (``runs``: the sweep's runs folder).  ``options`` go to ``SLURMCluster``
    (``queue``, ``account``, ``interface``, ``job_extra_directives`` ...)."""
    try:
        from dask_jobqueue import SLURMCluster
    except ImportError:
        raise ConfigError("the dask-jobqueue recipe needs dask-jobqueue: "
                          "python3 -m pip install dask-jobqueue") from None
    _check_slurm()
    from colorsim.orchestrate.process import _env
    from colorsim.run.rundir import runs_root
    logs = Path(runs_root(runs)).resolve() / "slurm" / "dask"
    logs.mkdir(parents=True, exist_ok=True)
    prologue = [f"cd {shlex.quote(str(ROOT))}",
                f"export PYTHONPATH={shlex.quote(_env()['PYTHONPATH'])}",
                *options.pop("job_script_prologue", [])]
    cluster = SLURMCluster(cores=1, processes=1, memory=memory,
                           walltime=walltime, python=sys.executable,
                           job_name="colorsim-dask", log_directory=str(logs),
                           job_script_prologue=prologue, **options)
    cluster.scale(jobs=jobs)
    return cluster


class SlurmJob:
    """One point: its job files, and once submitted its Slurm job id (an
    array task, ``ARRAYID_TASK``)."""

    def __init__(self, name: str, script: Path, minutes: int, mem_mib: int = None):
        self.name, self.script, self.minutes = name, script, minutes
        self.mem_mib = mem_mib            # None: Slurm's default
        self.out = script.with_suffix(".out")
        self.err = script.with_suffix(".err")
        self.job_id = None               # set when its array is submitted
        self.t0 = time.monotonic()

    def result(self) -> dict:
        from colorsim.orchestrate.process import parse_result
        out = self.out.read_text(errors="replace") if self.out.is_file() else ""
        err = self.err.read_text(errors="replace") if self.err.is_file() else ""
        state, rc = _job_state(self.job_id)
        res = parse_result(rc, out, err)
        if res["status"] != "done" and state == "TIMEOUT" and res.get("kind") == "crash":
            res = {"status": "failed", "kind": "time-limit",
                   "reason": f"killed for time: Slurm job {self.job_id} reached "
                             f"its wall-time limit before the run ended",
                   "tail": res.get("tail", "")}
        res["seconds"] = round(time.monotonic() - self.t0, 2)
        res["slurm_job"] = self.job_id
        res["executor_pid"] = f"slurm:{self.job_id}"
        return res


class SlurmQueryError(RunError):
    """A Slurm command kept failing through every retry."""


def _slurm(*args) -> str:
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode != 0:
        raise SlurmQueryError(f"{' '.join(args[:2])} failed: "
                              + _last_line(p.stderr or p.stdout))
    return p.stdout


def _last_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[-1] if lines else "(no message)"


# What squeue and scontrol say of a job id slurmctld has forgotten (past
# MinJobAge): the job is over.
ANSWERS = "Invalid job id specified"


def _query(*args, tries: int = None, backoff_s: float = None) -> str:
    """A status query (squeue, scontrol), retried with doubling waits.

    A busy slurmctld answers "Socket timed out" now and then; one such
    answer must not end a sweep of hours (nor cancel its jobs)."""
    tries = tries or SlurmExecutor.QUERY_TRIES
    wait = SlurmExecutor.BACKOFF_S if backoff_s is None else backoff_s
    for attempt in range(1, tries + 1):
        try:
            return _slurm(*args)
        except SlurmQueryError as e:
            # an answer, or a client without a configuration: no retry
            if ANSWERS in str(e) or ": fatal: " in str(e):
                raise
            if attempt == tries:
                raise SlurmQueryError(f"{e} ({tries} attempts over about "
                                      f"{_waited(tries, wait):.0f} s)") from None
            pause = min(wait * 2 ** (attempt - 1), SlurmExecutor.BACKOFF_MAX_S)
            print(f"slurm: {e}; trying again in {pause:g} s", file=sys.stderr,
                  flush=True)
            time.sleep(pause)


def _waited(tries: int, wait: float) -> float:
    return sum(min(wait * 2 ** i, SlurmExecutor.BACKOFF_MAX_S)
               for i in range(tries - 1))


# sbatch errors after which the job may or may not have been submitted
LOST_ANSWER = ("timed out", "Unable to contact slurm controller",
               "Zero Bytes were transmitted")


def _sbatch(tag: str, *args) -> str:
    """Submit (``--job-name=tag``); return the job id.

    Retried like a status query where the controller did not answer; a
    submission that went through although its answer was lost is found by
    its job name, so nothing is submitted twice.  Other refusals (a bad
    partition, an account) are final."""
    tries, wait = SlurmExecutor.QUERY_TRIES, SlurmExecutor.BACKOFF_S
    for attempt in range(1, tries + 1):
        try:
            return _slurm("sbatch", *args).strip().split(";")[0]
        except SlurmQueryError as e:
            if attempt == tries or not any(t in str(e) for t in LOST_ANSWER):
                raise
            pause = min(wait * 2 ** (attempt - 1), SlurmExecutor.BACKOFF_MAX_S)
            print(f"slurm: {e}; looking for the job, then trying again in "
                  f"{pause:g} s", file=sys.stderr, flush=True)
            time.sleep(pause)
        found = _query("squeue", "--me", "--noheader", "--states=all",
                       "--format=%F", f"--name={tag}").split()
        if found:
            return found[0]


def _job_state(job_id: str) -> tuple:
    """(JobState, exit code) from slurmctld's record of a finished job."""
    try:
        text = _query("scontrol", "show", "job", job_id)
    except SlurmQueryError:      # purged already: the job's files still tell
        text = ""
    fields = dict(kv.split("=", 1) for kv in text.split() if "=" in kv)
    state = fields.get("JobState", "UNKNOWN")
    code = fields.get("ExitCode", "0:0").split(":")
    rc = -int(code[1]) if len(code) > 1 and code[1] != "0" else int(code[0] or 0)
    return state, rc


def _still_queued(array_ids) -> set:
    """Job ids (``ARRAY_TASK``) of ours that Slurm still holds (pending,
    running, completing): only our own arrays, one line per task."""
    try:
        text = _query("squeue", "--me", "--array", "--noheader",
                      "--format=%i", "--jobs=" + ",".join(sorted(array_ids)))
    except SlurmQueryError as e:
        # squeue asked for one job id it has already forgotten (past
        # MinJobAge) says so instead of listing nothing.
        if ANSWERS in str(e):
            return set()
        raise
    return set(text.split())


def _check_slurm() -> None:
    """Slurm's commands are there and a controller answers."""
    for tool in ("sbatch", "squeue", "scontrol", "scancel"):
        if not shutil.which(tool):
            raise ConfigError(f"Slurm needs {tool} (Debian's slurm-client) "
                              f"and a running Slurm cluster")
    try:
        _query("squeue", "--me", "--noheader", "--format=%i")
    except SlurmQueryError as e:
        raise ConfigError(f"no Slurm cluster answers: {e}") from None


class SlurmExecutor:
    """Points as Slurm array jobs; results read from each point's files.

    At most ``jobs`` points run at once: queued points go out as one array
    whose concurrency limit (``--array=0-N%K``) is what is left of ``jobs``
    after the points still in Slurm."""

    name = "slurm"
    POLL_S = 1.0
    QUERY_TRIES = 8          # a status query's attempts ...
    BACKOFF_S = 2.0          # ... waiting 2, 4, 8 ... s between them
    BACKOFF_MAX_S = 60.0     # (about 4 minutes in all)
    ARRAY_MAX = 1000         # points in one array job

    def __init__(self, jobs, root, minutes: int = None, extra: str = None,
                 signal_s: int = None):
        """``minutes``, ``extra`` (sbatch options) and ``signal_s`` (the
        wall-time warning's lead): the sweep's --slurm-* options, else
        COLORSIM_SLURM_TIME, _ARGS and _SIGNAL_S, else each point's own
        (its timeout) and 60 s."""
        _check_slurm()
        self.jobs = jobs
        self.dir = Path(root).resolve() / "slurm"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.extra = shlex.split(extra if extra is not None else
                                 os.environ.get("COLORSIM_SLURM_ARGS", ""))
        self.minutes = minutes or int(os.environ.get("COLORSIM_SLURM_TIME") or 0) or None
        self.signal_s = signal_s or int(os.environ.get("COLORSIM_SLURM_SIGNAL_S") or 60)
        self.queue = []              # SlurmJobs not yet submitted
        self.live = {}               # job id -> submitted, unfinished SlurmJob
        self.arrays = 0

    def submit(self, cmd, timeout_s, name: str = None, mem_mib: int = None) -> SlurmJob:
        """Write the point's job file (named after its run) and queue it;
        :meth:`as_completed` submits what is queued.  The point's wall time
        is its timeout (or --slurm-time), its memory ``mem_mib``."""
        from colorsim.orchestrate.process import _env
        minutes = self.minutes or max(1, math.ceil(timeout_s / 60))
        name = name or f"point-{os.getpid()}-{len(self.queue) + len(self.live)}"
        script = self.dir / f"{name}.sh"
        env = _env()
        script.write_text(
            "#!/bin/sh\n"
            f"# colorsim sweep point {name}.  The worker replaces this shell\n"
            "# (the array job's batch shell) so that Slurm's wall-time warning\n"
            "# (SIGUSR1) reaches it.\n"
            f"cd {shlex.quote(str(ROOT))}\n"
            f"export PYTHONPATH={shlex.quote(env['PYTHONPATH'])}\n"
            "export COLORSIM_PREBUILT=1\n"
            f"exec >{shlex.quote(str(script.with_suffix('.out')))} "
            f"2>{shlex.quote(str(script.with_suffix('.err')))}\n"
            f"exec {shlex.join(cmd)}\n")
        job = SlurmJob(name, script, minutes, mem_mib)
        for f in (job.out, job.err):         # a retry's files are its own
            f.unlink(missing_ok=True)
        self.queue.append(job)
        return job

    def _flush(self) -> None:
        """Submit queued points as one array, if ``jobs`` leaves room (the
        rest wait for the next call)."""
        room = self.jobs - len(self.live)
        if not self.queue or room <= 0:
            return
        # Slurm's default MaxArraySize (1001) caps an array's indexes
        todo, self.queue = self.queue[:self.ARRAY_MAX], self.queue[self.ARRAY_MAX:]
        self._submit_array(todo, min(room, len(todo)))

    def _submit_array(self, todo, limit: int, after: str = None) -> str:
        """One array job of ``todo``, at most ``limit`` running at once
        (after job ``after`` ended, if given); returns its id."""
        self.arrays += 1
        array = self.dir / f"array-{os.getpid()}-{self.arrays}.sh"
        cases = "".join(f"  {i}) exec /bin/sh {shlex.quote(str(j.script))} ;;\n"
                        for i, j in enumerate(todo))
        array.write_text(
            "#!/bin/sh\n"
            "# One array task per colorsim sweep point (job files by run id).\n"
            f'case "$SLURM_ARRAY_TASK_ID" in\n{cases}esac\n'
            'echo "no point for array task $SLURM_ARRAY_TASK_ID" >&2\n'
            "exit 2\n")
        log = self.dir / "array-%A_%a.log"      # Slurm's own messages
        # a name of its own, to find it if sbatch's answer gets lost
        tag = f"colorsim-{os.getpid()}-{self.arrays}-{secrets.token_hex(3)}"
        mems = [j.mem_mib for j in todo if j.mem_mib]
        array_id = _sbatch(tag, "--parsable", f"--job-name={tag}",
                           f"--array=0-{len(todo) - 1}%{limit}",
                           "--cpus-per-task=1",
                           f"--time={max(j.minutes for j in todo)}",
                           *([f"--mem={max(mems)}M"] if mems else []),
                           *([f"--dependency=afterany:{after}"] if after else []),
                           f"--signal=B:USR1@{self.signal_s}", f"--output={log}",
                           f"--error={log}", *self.extra, str(array))
        for i, j in enumerate(todo):
            j.job_id = f"{array_id}_{i}"
            self.live[j.job_id] = j
        return array_id

    def submit_detached(self, collect_cmd) -> tuple:
        """Every queued point out now (arrays of at most ``jobs`` running at
        once, each further array after the one before), then a collection
        job, ``collect_cmd``, that runs once they have all ended, however
        they ended.  Nothing here waits for them, and closing the executor
        cancels nothing.  Returns (array ids, the collection job's id, its
        log file)."""
        from colorsim.orchestrate.process import _env
        arrays = []
        while self.queue:
            todo, self.queue = self.queue[:self.ARRAY_MAX], self.queue[self.ARRAY_MAX:]
            arrays.append(self._submit_array(todo, min(self.jobs, len(todo)),
                                             after=arrays[-1] if arrays else None))
        script = self.dir / f"collect-{os.getpid()}.sh"
        log = self.dir / f"collect-{os.getpid()}.log"
        script.write_text(
            "#!/bin/sh\n# colorsim: gather a detached sweep's runs into its catalog\n"
            f"cd {shlex.quote(str(ROOT))}\n"
            f"export PYTHONPATH={shlex.quote(_env()['PYTHONPATH'])}\n"
            f"exec {shlex.join(collect_cmd)}\n")
        tag = f"colorsim-collect-{os.getpid()}-{secrets.token_hex(3)}"
        collect = _sbatch(tag, "--parsable", f"--job-name={tag}",
                          f"--dependency=afterany:{':'.join(arrays)}",
                          "--cpus-per-task=1", "--time=60", f"--output={log}",
                          f"--error={log}", *self.extra, str(script))
        self.live.clear()               # theirs now: nothing to cancel at close
        return arrays, collect, log

    def as_completed(self, futures):
        waiting = list(futures)
        while waiting:
            self._flush()
            arrays = {j.job_id.split("_")[0] for j in waiting if j.job_id}
            queued = _still_queued(arrays) if arrays else set()
            for job in [j for j in waiting if j.job_id and j.job_id not in queued]:
                waiting.remove(job)
                self.live.pop(job.job_id, None)
                yield job
            if waiting:
                time.sleep(self.POLL_S)

    def close(self):
        self.queue.clear()
        if self.live:                  # an interrupted sweep: cancel its jobs
            # pending tasks are cancelled; running ones get SIGTERM in their
            # batch shell (the worker), which records the run as interrupted
            ids = list(self.live)
            subprocess.run(["scancel", "--state=PENDING", *ids],
                           capture_output=True)
            subprocess.run(["scancel", "--batch", "--signal=TERM", *ids],
                           capture_output=True)
            self.live.clear()


class LocalExecutor:
    """``jobs`` worker processes at a time on this machine."""

    name = "local"

    def __init__(self, jobs: int):
        from concurrent.futures import ThreadPoolExecutor
        self.jobs = jobs
        self.pool = ThreadPoolExecutor(max_workers=jobs)

    def submit(self, cmd, timeout_s, name=None, mem_mib=None):
        from colorsim.orchestrate.process import execute
        return self.pool.submit(execute, cmd, timeout_s)

    def as_completed(self, futures):
        from concurrent.futures import as_completed
        return as_completed(futures)

    def close(self):
        self.pool.shutdown(wait=True, cancel_futures=True)


def make_executor(kind: str, jobs: int, root: Path, dask=None, slurm=None):
    """``slurm``: the SlurmExecutor's options (minutes, extra, signal_s)."""
    if kind == "local":
        return LocalExecutor(jobs)
    if kind == "dask":
        return DaskExecutor(jobs, dask)
    if kind == "slurm":
        return SlurmExecutor(jobs, root, **(slurm or {}))
    raise ConfigError(f"unknown executor {kind!r}; choose one of "
                      f"{', '.join(EXECUTORS)}")
