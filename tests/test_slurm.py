"""The Slurm executor on a real single-node Slurm cluster.

The fixture starts one with the user's script, ``scripts/slurm-local.sh``
(Debian's slurm-wlm, no accounting daemon, a configuration of its own in a
temporary folder; munged if none answers), and stops what it started.
"""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from colorsim import ROOT
from colorsim.orchestrate.sweep import run_sweep

from test_sweep import HUNG, QUIET, catalog_bytes, exps  # noqa: F401

SCRIPT = ROOT / "scripts" / "slurm-local.sh"


def slurm_local(*args, check=True):
    return subprocess.run(["bash", str(SCRIPT), *map(str, args)], check=check,
                          capture_output=True, text=True)


@pytest.fixture(scope="module")
def slurm_cluster(tmp_path_factory):
    for tool in ("slurmctld", "slurmd", "sbatch", "munged"):
        assert shutil.which(tool), f"{tool} missing: scripts/setup.sh installs slurm-wlm"
    d = tmp_path_factory.mktemp("slurm")
    mp = pytest.MonkeyPatch()
    try:
        p = slurm_local("start", d, check=False)
        assert p.returncode == 0, p.stdout + p.stderr
        assert f"export SLURM_CONF={d / 'slurm.conf'}" in p.stdout
        mp.setenv("SLURM_CONF", str(d / "slurm.conf"))
        yield d
    finally:
        slurm_local("stop", d, check=False)
        mp.undo()


def test_sweep_through_slurm_lands_in_the_catalog(slurm_cluster, exps, tmp_path):  # noqa: F811
    exps()
    root = tmp_path / "runs"
    c = run_sweep("tiny", quick=True, jobs=2, executor="slurm", root=root, **QUIET)
    assert c["done"] == 2 and c["failed"] == 0 and c["ran"] == 2, c
    # each run was a Slurm batch job, not a process of ours
    assert all(str(p).startswith("slurm:") for p in c["executor_pids"]), c
    ref = tmp_path / "ref"
    run_sweep("tiny", quick=True, jobs=2, root=ref, **QUIET)
    assert catalog_bytes(root) == catalog_bytes(ref)     # same runs, same catalog


def test_a_detached_sweep_finishes_after_its_submitter_exited(slurm_cluster, exps,  # noqa: F811
                                                              tmp_path):
    """sweep --detach submits the points and a collection job and exits at
    once; the jobs go on without it, the collection job rebuilds the
    catalog, and that catalog is the one an attached sweep makes.  Each
    point asks for its own memory."""
    import subprocess
    import sys
    import time
    from colorsim.orchestrate.costs import point_mem_mib
    exps()
    root = tmp_path / "runs"
    p = subprocess.run([sys.executable, "-m", "colorsim", "sweep", "tiny", "--quick",
                        "--executor", "slurm", "--detach", "--jobs", "2",
                        "--runs", str(root)], cwd=ROOT, capture_output=True,
                       text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "detached: 2 points submitted" in p.stdout, p.stdout
    # the submitter has exited; nothing of the runs is done yet, or little
    collect_job = p.stdout.split("collection job ")[1].split()[0]
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        q = subprocess.run(["squeue", "--me", "--noheader", "--format=%i"],
                           capture_output=True, text=True).stdout.split()
        if not any(j.split("_")[0] == collect_job for j in q) and \
                (root / "catalog" / "points.parquet").is_file():
            break
        time.sleep(2)
    log = next((root / "slurm").glob("collect-*.log")).read_text()
    assert "tiny: 2 points: 2 done, 0 failed, 0 missing" in log, log
    ref = tmp_path / "ref"
    run_sweep("tiny", quick=True, jobs=2, root=ref, **QUIET)
    assert catalog_bytes(root) == catalog_bytes(ref)
    cfg = _runs(root)[0]
    show = subprocess.run(["scontrol", "show", "job", cfg["slurm_job"]],
                          capture_output=True, text=True).stdout
    want = point_mem_mib({"machine": "ppro4"})
    assert f"mem={want}M" in show or f"MinMemoryNode={want}M" in show, show


def test_detach_needs_slurm_and_is_refused_before_anything(exps, tmp_path):  # noqa: F811
    from colorsim.errors import ConfigError
    exps()
    with pytest.raises(ConfigError, match="--detach needs --executor slurm"):
        run_sweep("tiny", quick=True, jobs=1, root=tmp_path / "r", detach=True, **QUIET)
    assert not (tmp_path / "r").exists()


def test_a_run_killed_for_time_is_recorded_as_such(slurm_cluster, exps, tmp_path,  # noqa: F811
                                                  monkeypatch):
    # One minute of wall time and the warning 45 s before it: the run (which
    # would take far longer) is stopped by the warning and recorded.
    exps(HUNG.format(timeout=900))
    monkeypatch.setenv("COLORSIM_SLURM_TIME", "1")
    monkeypatch.setenv("COLORSIM_SLURM_SIGNAL_S", "45")
    root = tmp_path / "runs"
    c = run_sweep("hung", quick=False, jobs=1, executor="slurm", root=root,
                  retries=0, **QUIET)
    assert c["failed"] == 1 and c["done"] == 0, c
    failed = list((root).rglob("*.failed"))
    assert len(failed) == 1
    text = (failed[0] / "failure.txt").read_text()
    assert text.startswith("killed for time") and "SIGUSR1" in text, text


def _runs(root: Path) -> list:
    return sorted((json.loads((d / "config.json").read_text()) for d in
                   (root / "by-id").iterdir() if (d / "config.json").is_file()
                   and not d.name.endswith(".failed")),
                  key=lambda c: c["started"])


def test_jobs_limits_points_running_at_once(slurm_cluster, exps, tmp_path):  # noqa: F811
    # --jobs 1: the two points run one after the other (one array, %1), not
    # both at once on the node's two CPUs.
    exps()
    root = tmp_path / "runs"
    c = run_sweep("tiny", quick=True, jobs=1, executor="slurm", root=root, **QUIET)
    assert c["done"] == 2 and c["ran"] == 2, c
    first, second = _runs(root)
    assert first["finished"] <= second["started"], (first, second)
    for cfg in (first, second):
        # the job file is named after the run; the run names its Slurm job
        assert (root / "slurm" / f"{cfg['name']}.sh").is_file()
        assert f"slurm:{cfg['slurm_job']}" in c["executor_pids"], (cfg, c)
    arrays = {cfg["slurm_job"].split("_")[0] for cfg in (first, second)}
    assert len(arrays) == 1, arrays                      # one array job
    show = subprocess.run(["scontrol", "show", "job", arrays.pop()],
                          capture_output=True, text=True).stdout
    assert "ArrayTaskThrottle=1" in show, show


def test_stop_stops_only_the_daemons_it_started(tmp_path):
    # Processes named like the daemons but not started by the script must
    # survive its stop; the ones it started must not.
    decoys = []
    for name in ("munged", "slurmctld", "slurmd"):
        exe = tmp_path / "decoys" / name
        exe.parent.mkdir(exist_ok=True)
        shutil.copy("/bin/sleep", exe)
        decoys.append(subprocess.Popen([str(exe), "300"]))
    d = tmp_path / "cluster"
    try:
        p = slurm_local("start", d, check=False)
        assert p.returncode == 0, p.stdout + p.stderr
        started = {f.stem: int(f.read_text()) for f in d.glob("*.pid")}
        assert {"slurmctld", "slurmd"} <= set(started), started
        assert slurm_local("status", d).returncode == 0
    finally:
        stop = slurm_local("stop", d, check=False)
    try:
        assert stop.returncode == 0, stop.stderr
        for name, pid in started.items():
            assert not Path(f"/proc/{pid}").exists(), f"{name} {pid} still runs"
        for p in decoys:
            assert p.poll() is None, f"{p.args[0]} was stopped"
        assert slurm_local("status", d, check=False).returncode == 1
    finally:
        for p in decoys:
            p.kill()
            p.wait()


FLAKY = """\
#!{python}
# {tool} that fails now and then as a busy slurmctld does: whether call N
# fails is fixed by the seed; calls 2 and 3 always fail (two in a row).
import os, random, sys
count = os.path.join({state!r}, "{tool}.calls")
n = int(open(count).read()) + 1 if os.path.exists(count) else 1
open(count, "w").write(str(n))
open(os.path.join({state!r}, "{tool}.args"), "a").write(" ".join(sys.argv[1:]) + "\\n")
if n in (2, 3) or random.Random("{seed}:{tool}:%d" % n).random() < {p}:
    open(os.path.join({state!r}, "{tool}.failed"), "a").write("%d\\n" % n)
    print("{tool}: error: slurm_load_jobs error: Socket timed out on "
          "send/recv operation", file=sys.stderr)
    sys.exit(1)
os.execv({real!r}, [{real!r}] + sys.argv[1:])
"""


def test_a_sweep_survives_status_queries_failing_at_random(slurm_cluster, exps,  # noqa: F811
                                                          tmp_path, monkeypatch):
    # Seed 4 fails at most 6 calls in a row in a tool's first 2000 calls:
    # fewer than the 8 attempts a query gets, however fast the polls come.
    from colorsim.orchestrate.executors import SlurmExecutor
    exps()
    bin_dir, state = tmp_path / "bin", tmp_path / "flaky"
    bin_dir.mkdir()
    state.mkdir()
    for tool in ("squeue", "scontrol"):
        f = bin_dir / tool
        f.write_text(FLAKY.format(python=shutil.which("python3"), tool=tool,
                                  state=str(state), seed=4, p=0.3,
                                  real=shutil.which(tool)))
        f.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(SlurmExecutor, "BACKOFF_S", 0.1)
    monkeypatch.setattr(SlurmExecutor, "POLL_S", 0.3)
    root = tmp_path / "runs"
    c = run_sweep("tiny", quick=True, jobs=2, executor="slurm", root=root, **QUIET)
    assert c["done"] == 2 and c["failed"] == 0 and c["retried"] == 0, c
    failed = (state / "squeue.failed").read_text().split()
    assert len(failed) >= 2, failed                       # it was disturbed
    for call in (state / "squeue.args").read_text().splitlines():
        assert "--me" in call.split(), call               # only our jobs
    assert any("--jobs=" in call for call in (state / "squeue.args").read_text().splitlines())
    ref = tmp_path / "ref"
    run_sweep("tiny", quick=True, jobs=2, root=ref, **QUIET)
    assert catalog_bytes(root) == catalog_bytes(ref)     # and it did not show


def test_an_interrupted_sweep_stops_its_running_jobs(slurm_cluster, exps, tmp_path):  # noqa: F811
    # SIGTERM to the sweep: its running job's worker gets SIGTERM too (in
    # the batch shell), records the run as interrupted, and the job ends.
    import signal
    import sys
    from test_integrity import wait_for
    exps(HUNG.format(timeout=900))
    root = tmp_path / "runs"
    p = subprocess.Popen([sys.executable, "-m", "colorsim", "sweep", "hung",
                          "--executor", "slurm", "--runs", str(root)], cwd=ROOT,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: list((root / "by-id").glob(".*.partial/console.log")),
                 120, "the run to start in its Slurm job")
        p.send_signal(signal.SIGTERM)
        assert p.wait(60) != 0
    finally:
        p.kill()
    jobs = list((root / "slurm").glob("*.sh"))
    assert len(jobs) == 2, jobs                          # one point, one array

    def gone():
        q = subprocess.run(["squeue", "--me", "-h", "-o", "%i"],
                           capture_output=True, text=True)
        return q.returncode == 0 and not q.stdout.split()
    wait_for(gone, 60, "the job to end")
    failed = list((root / "by-id").glob("*.failed/failure.txt"))
    assert len(failed) == 1 and "interrupted by SIGTERM" in failed[0].read_text()


def test_the_dask_jobqueue_recipe_sweeps_on_slurm(slurm_cluster, exps, tmp_path):  # noqa: F811
    # scripts/sweep-dask-jobqueue.py: dask-jobqueue's SLURMCluster goes
    # through the dask executor; every run ran inside a worker's Slurm job.
    pytest.importorskip("dask_jobqueue")
    import sys
    exps()
    root = tmp_path / "runs"
    p = subprocess.run([sys.executable, str(ROOT / "scripts" / "sweep-dask-jobqueue.py"),
                        "tiny", "--quick", "--jobs", "2", "--walltime", "00:10:00",
                        "--memory", "1GiB", "--loopback", "--runs", str(root)],
                       capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert p.returncode == 0, p.stdout + p.stderr[-3000:]
    runs = _runs(root)
    assert len(runs) == 2 and all(r.get("slurm_job") for r in runs), runs
    # the worker jobs' logs are with the runs, not in the working directory
    assert len(list((root / "slurm" / "dask").glob("*.out"))) == 2
    assert not list(ROOT.glob("slurm-*.out"))
    ref = tmp_path / "ref"
    run_sweep("tiny", quick=True, jobs=2, root=ref, **QUIET)
    assert catalog_bytes(root) == catalog_bytes(ref)


def test_the_dask_jobqueue_recipe_refuses_bad_input_before_submitting(tmp_path):
    import sys
    p = subprocess.run([sys.executable, str(ROOT / "scripts" / "sweep-dask-jobqueue.py"),
                        "nosuch", "--runs", str(tmp_path / "runs")],
                       capture_output=True, text=True, timeout=120,
                       env={k: v for k, v in os.environ.items() if k != "SLURM_CONF"})
    assert p.returncode == 2, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert "unknown experiment 'nosuch'" in p.stderr, p.stderr


def test_points_beyond_one_array_go_out_in_further_arrays(slurm_cluster, exps,  # noqa: F811
                                                         tmp_path, monkeypatch):
    # Slurm caps an array's size (MaxArraySize): with a cap of one point,
    # the two points go out as two arrays, and both run.
    from colorsim.orchestrate.executors import SlurmExecutor
    exps()
    monkeypatch.setattr(SlurmExecutor, "ARRAY_MAX", 1)
    root = tmp_path / "runs"
    c = run_sweep("tiny", quick=True, jobs=2, executor="slurm", root=root, **QUIET)
    assert c["done"] == 2 and c["ran"] == 2, c
    arrays = {r["slurm_job"].split("_")[0] for r in _runs(root)}
    assert len(arrays) == 2, arrays


def _fake_tool(bin_dir: Path, name: str, fails: int, out: str = "",
               error: str = "Socket timed out on send/recv operation"):
    """``name`` on PATH that fails ``fails`` times, then prints ``out``."""
    bin_dir.mkdir(exist_ok=True)
    f = bin_dir / name
    f.write_text(f"""#!/bin/sh
n=$(cat {bin_dir}/{name}.n 2>/dev/null || echo 0); n=$((n + 1)); echo $n >{bin_dir}/{name}.n
if [ $n -le {fails} ]; then echo "{name}: error: {error}" >&2; exit 1; fi
printf '%s' "{out}"
""")
    f.chmod(0o755)
    return lambda: int((bin_dir / f"{name}.n").read_text())


def test_a_status_query_is_retried_then_given_up_with_its_reason(tmp_path, monkeypatch):
    from colorsim.orchestrate import executors
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(executors.SlurmExecutor, "BACKOFF_S", 0.01)
    calls = _fake_tool(tmp_path / "bin", "squeue", 3, out="7_0\n7_1\n")
    assert executors._still_queued({"7"}) == {"7_0", "7_1"}
    assert calls() == 4                                  # three failures, then it
    calls = _fake_tool(tmp_path / "bin", "scontrol", 99)
    with pytest.raises(executors.SlurmQueryError) as e:
        executors._query("scontrol", "show", "job", "7_0", tries=5)
    assert calls() == 5 and "Socket timed out" in str(e.value)
    assert "5 attempts" in str(e.value)


def test_a_job_squeue_has_forgotten_counts_as_finished(tmp_path, monkeypatch):
    from colorsim.orchestrate import executors
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    calls = _fake_tool(tmp_path / "bin", "squeue", 99,
                       error="slurm_load_jobs error: Invalid job id specified")
    assert executors._still_queued({"7"}) == set()
    assert calls() == 1                                  # not retried


def test_a_submission_whose_answer_is_lost_is_found_not_repeated(slurm_cluster, exps,  # noqa: F811
                                                                tmp_path, monkeypatch):
    # sbatch submits, then reports "Socket timed out" (the controller's
    # answer was lost): the sweep finds the array by its name and runs
    # each point once; a second submission would run them twice.
    from colorsim.orchestrate.executors import SlurmExecutor
    exps()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "sbatch").write_text(f"""#!/bin/sh
echo "$@" >>{bin_dir}/sbatch.calls
if [ ! -e {bin_dir}/lost ]; then
  touch {bin_dir}/lost
  {shutil.which('sbatch')} "$@" >/dev/null || exit 1
  echo "sbatch: error: Batch job submission failed: Socket timed out on send/recv operation" >&2
  exit 1
fi
exec {shutil.which('sbatch')} "$@"
""")
    (bin_dir / "sbatch").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(SlurmExecutor, "BACKOFF_S", 0.5)
    root = tmp_path / "runs"
    c = run_sweep("tiny", quick=True, jobs=2, executor="slurm", root=root, **QUIET)
    assert c["done"] == 2 and c["ran"] == 2, c
    assert len((bin_dir / "sbatch.calls").read_text().splitlines()) == 1
    arrays = {r["slurm_job"].split("_")[0] for r in _runs(root)}
    assert len(arrays) == 1, arrays
