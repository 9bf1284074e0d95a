"""Runs that never lie: killed runners, reused names, damaged results.

Each test here fails without the mechanism it names (colorsim/rundir.py):
the emulator dying with its runner, the per-name lock, the manifest that
completion writes and loading checks, the atomic publish.
"""

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from colorsim.results.rundata import load_run
from colorsim import ROOT
from colorsim.run import runner
from colorsim.cli import main as cli_main
from colorsim.errors import ConfigError, ResultsError, RunError
from colorsim.run.rundir import RunLock

QUIET = dict(progress=lambda *_: None)
RESULT_FILES = ("stats.txt", "bus_offsets.csv", "counters.csv", "console.log")
# Long enough (about 5 s here) that an emulator which outlived its runner is
# still running when the test looks, small enough to run three times.
LONG = ["--kernel", "vanilla", "--tasks", "64", "--warmup", "2", "--roi", "600"]


def colorsim(*args, **kw):
    return subprocess.Popen([sys.executable, "-m", "colorsim", *args],
                            cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kw)


def emulators_using(path: Path) -> list:
    """Live processes whose command line mentions ``path``."""
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        try:
            cmd = (d / "cmdline").read_bytes()
            state = (d / "stat").read_text().split()[2]
        except OSError:
            continue
        if str(path).encode() in cmd and b"qemu" in cmd and state != "Z":
            found.append(int(d.name))
    return found


def wait_for(cond, timeout=60.0, what="condition"):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def results_bytes(run_dir: Path) -> dict:
    return {f: (run_dir / f).read_bytes() for f in RESULT_FILES}


@pytest.fixture(scope="module")
def undisturbed(tmp_path_factory):
    out = tmp_path_factory.mktemp("undisturbed")
    p = colorsim("run", *LONG, "--name", "u", "--out", str(out))
    _, err = p.communicate(timeout=300)
    assert p.returncode == 0, err
    return out / "u"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_killed_runner_leaves_no_emulator_and_rerun_is_exact(sig, tmp_path,
                                                             undisturbed):
    p = colorsim("run", *LONG, "--name", "k", "--out", str(tmp_path))
    partial = tmp_path / ".k.partial"
    log = partial / "console.log"
    wait_for(lambda: log.is_file() and "roi: begin" in log.read_text(),
             what="the region of interest to begin")
    assert emulators_using(tmp_path), "the emulator should be running"
    p.send_signal(sig)
    _, err = p.communicate(timeout=60)
    assert p.returncode == (143 if sig == signal.SIGTERM else -9)
    # The emulator dies with its runner, whatever killed the runner.
    wait_for(lambda: not emulators_using(tmp_path), timeout=1.5,
             what="the orphaned emulator to die")
    assert not (tmp_path / "k").exists()
    if sig == signal.SIGTERM:
        assert err.strip().splitlines()[-1].startswith("colorsim: interrupted by SIGTERM")
        assert "interrupted by SIGTERM" in (tmp_path / "k.failed" / "failure.txt").read_text()
    # The same command at once: a clean run, identical to an undisturbed one.
    again = colorsim("run", *LONG, "--name", "k", "--out", str(tmp_path))
    _, err = again.communicate(timeout=300)
    assert again.returncode == 0, err
    run = load_run(tmp_path / "k")
    assert (tmp_path / "k" / "stats.txt").read_text().count("Begin Simulation") == 1
    assert results_bytes(tmp_path / "k") == results_bytes(undisturbed)
    assert run.config["complete"] and not partial.exists()


def test_ctrl_c_is_one_line_and_kills_the_emulator(tmp_path):
    p = colorsim("run", *LONG, "--name", "c", "--out", str(tmp_path))
    log = tmp_path / ".c.partial" / "console.log"
    wait_for(lambda: log.is_file() and "roi: begin" in log.read_text(),
             what="the region of interest to begin")
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1].startswith("colorsim: interrupted by SIGINT")
    wait_for(lambda: not emulators_using(tmp_path), timeout=1.5, what="no emulator")
    assert not (tmp_path / "c").exists() and (tmp_path / "c.failed").is_dir()


def _small(tasks=16, **kw):
    from test_runs import spec
    work = dict(tasks=tasks, roi_ticks=2, warmup_ticks=2)
    work.update(kw)
    return spec("vanilla", **work)


def test_same_name_other_settings_is_refused_and_kept(tmp_path):
    first = runner.run(_small(16), name="s", out=tmp_path, **QUIET)
    before = results_bytes(first)
    cfg = (first / "config.json").read_bytes()
    with pytest.raises(ConfigError) as e:
        runner.run(_small(32), name="s", out=tmp_path, **QUIET)
    msg = str(e.value)
    assert "workload.tasks 16 -> 32" in msg and "--force" in msg and "--name" in msg
    assert results_bytes(first) == before and (first / "config.json").read_bytes() == cfg
    load_run(first)                                   # still complete, verified
    # --force with a run that fails: the complete run survives it.
    import dataclasses
    hung = dataclasses.replace(_small(32, roi_ticks=10**6), timeout_s=1)
    with pytest.raises(RunError, match="is unchanged"):
        runner.run(hung, name="s", out=tmp_path, force=True, **QUIET)
    assert results_bytes(first) == before and (tmp_path / "s.failed").is_dir()
    # --force with a run that completes replaces it.
    runner.run(_small(32), name="s", out=tmp_path, force=True, **QUIET)
    assert load_run(first).config["workload"]["tasks"] == 32
    assert not list(tmp_path.glob(".s.*partial")) and not list(tmp_path.glob(".s.replaced"))


def test_same_name_is_locked_while_running(tmp_path, capsys):
    with RunLock(tmp_path, "busy"):
        rc = cli_main(["run", "--kernel", "vanilla", "--tasks", "16", "--roi", "2",
                       "--name", "busy", "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert rc == 2 and "already being made by process" in err
    assert not (tmp_path / "busy").exists()


# -- damaged results ------------------------------------------------------

def _truncate(p: Path):
    b = p.read_bytes()
    p.write_bytes(b[: len(b) // 2])


def _edit_first_row(p: Path, column: str, edit):
    lines = p.read_text().splitlines()
    header, cols = lines[0].split(","), lines[1].split(",")
    i = header.index(column)
    cols[i] = edit(cols[i])
    lines[1] = ",".join(cols)
    p.write_text("\n".join(lines) + "\n")


def _bump_count(p: Path):
    column = "count" if p.name == "bus_offsets.csv" else "value"
    _edit_first_row(p, column, lambda v: str(int(float(v)) + 1))


def _out_of_page(p: Path):
    _edit_first_row(p, "offset", lambda v: "70000")


DAMAGE = [
    ("bus_offsets.csv", "truncated", _truncate),
    ("bus_offsets.csv", "count edited", _bump_count),
    ("bus_offsets.csv", "offset outside the page", _out_of_page),
    ("bus_offsets.csv", "empty", lambda p: p.write_text("")),
    ("bus_offsets.csv", "deleted", lambda p: p.unlink()),
    ("counters.csv", "truncated", _truncate),
    ("counters.csv", "value edited", _bump_count),
    ("counters.csv", "garbled", lambda p: p.write_bytes(b"\x00\xff,,\n\"")),
    ("stats.txt", "truncated", _truncate),
    ("stats.txt", "empty", lambda p: p.write_text("")),
    ("console.log", "edited", lambda p: p.write_text(p.read_text() + "x")),
    ("layout.json", "edited", lambda p: p.write_text("{}")),
    ("config.json", "not JSON", lambda p: p.write_text("{not json")),
    ("config.json", "a list", lambda p: p.write_text("[]")),
]


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    out = tmp_path_factory.mktemp("pristine")
    return runner.run(_small(16), name="good", out=out, **QUIET)


def _copy(src: Path, dst: Path) -> Path:
    import shutil
    shutil.copytree(src, dst)
    return dst


@pytest.mark.parametrize("fname,how,damage", DAMAGE,
                         ids=[f"{f}-{h}" for f, h, _ in DAMAGE])
def test_every_command_refuses_a_damaged_run(fname, how, damage, pristine,
                                             tmp_path, capsys):
    run = _copy(pristine, tmp_path / "good")
    damage(run / fname)
    with pytest.raises(ResultsError, match=fname.replace(".", r"\.")):
        load_run(run)
    cmds = [["summary", str(run)], ["verify", str(run)],
            ["table", str(run)], ["table", str(tmp_path)],
            ["plot", "offsets", str(run), "-o", str(tmp_path / "p.png")],
            ["run", "--kernel", "vanilla", "--tasks", "16", "--roi", "2",
             "--warmup", "2", "--name", "good", "--out", str(tmp_path)]]
    for argv in cmds:
        assert cli_main(argv) == 2, argv
        out = capsys.readouterr()
        lines = out.err.strip().splitlines()
        assert len(lines) == 1 and fname in lines[0], (argv, out.err)
        assert "Traceback" not in out.err and "internal error" not in out.err
    assert not (tmp_path / "p.png").exists()


@pytest.mark.parametrize("fname,damage", [
    ("bus_offsets.csv", _out_of_page), ("bus_offsets.csv", _truncate),
    ("counters.csv", lambda p: p.write_text("")),
    ("stats.txt", _truncate)])
def test_runs_without_a_manifest_are_still_schema_checked(fname, damage,
                                                         pristine, tmp_path):
    run = _copy(pristine, tmp_path / "old")
    cfg = json.loads((run / "config.json").read_text())
    del cfg["results"], cfg["config_sha256"]   # as made before manifests existed
    (run / "config.json").write_text(json.dumps(cfg))
    assert not load_run(run).verified          # used only as unverified
    damage(run / fname)
    if fname == "stats.txt":                 # not read by load_run: counted
        from colorsim.run.rundir import count_dumps
        with pytest.raises(ResultsError, match="stats.txt is damaged"):
            count_dumps(run / fname)
        return
    with pytest.raises(ResultsError, match=fname.replace(".", r"\.")):
        load_run(run)


def test_force_replaces_a_damaged_run(pristine, tmp_path):
    run = _copy(pristine, tmp_path / "good")
    (run / "config.json").write_text("{not json")
    assert cli_main(["run", "--kernel", "vanilla", "--tasks", "16", "--roi", "2",
                     "--warmup", "2", "--name", "good", "--out", str(tmp_path),
                     "--force"]) == 0
    assert load_run(run).config["complete"]


# ---- a user program's run is complete only when init exited with 0 ---------

@pytest.mark.parametrize("console, expect", [
    ("init: pid 1 runs /bin/web\nroi: end at jiffies 10: schedules 0\n",
     "did not finish: the machine stopped before init exited"),
    ("", "console.log ends: empty"),
    ("web: FAIL requests lost\ninit: exited with status 1\n",
     "failed: init exited with status 1 (web: FAIL requests lost)"),
])
def test_a_user_program_that_did_not_finish_is_a_failure(tmp_path, console, expect):
    from colorsim.run.runner import _check_program_finished
    (tmp_path / "console.log").write_text(console)
    with pytest.raises(RuntimeError, match=re.escape(expect)):
        _check_program_finished(tmp_path / "console.log", "/bin/web")
    (tmp_path / "console.log").write_text(console + "init: exited with status 0\n")
    _check_program_finished(tmp_path / "console.log", "/bin/web")
    (tmp_path / "console.log").write_text(console + "roi: exit requested by pid 1\n")
    _check_program_finished(tmp_path / "console.log", "/bin/web")


@pytest.mark.parametrize("timing", [False, True])
def test_a_run_of_the_same_settings_has_no_differences(timing):
    # A --timing run's config carries the timing table: running the same
    # command again must find it the same run (it was refused as "other
    # settings: timing.mem None -> 110"), and a counting run is not it.
    from colorsim.describe.machine import get_machine
    from colorsim.run.runner import differences
    from colorsim.describe.runspec import RunSpec, Workload
    from colorsim.describe.variants import parse_variant
    m = get_machine("ppro4")
    spec = RunSpec(m, parse_variant("c32", m), Workload(tasks=64), timing=timing)
    old = json.loads(json.dumps(spec.to_dict()))
    assert differences(old, spec, {}) == []
    other = RunSpec(m, parse_variant("c32", m), Workload(tasks=64), timing=not timing)
    assert any(d.startswith("timing.mem") for d in differences(old, other, {}))


def test_a_build_changed_during_the_run_fails_it(tmp_path, monkeypatch):
    """The identity hashes the builds before the emulator reads them; a
    rebuild in between (here: the plugin's hash differs when the run ends)
    must fail the run, not publish it under the earlier build's name."""
    real, calls = runner.identity, []

    def rebuilt_meanwhile(spec):
        ident = dict(real(spec))
        calls.append(1)
        if len(calls) > 1:                 # after the emulator started
            ident["plugin_sha256"] = "0" * 64
        return ident
    monkeypatch.setattr(runner, "identity", rebuilt_meanwhile)
    with pytest.raises(RunError, match=r"the plugin build changed while the run "
                       r"was in progress"):
        runner.run(_small(16), name="r", out=tmp_path, **QUIET)
    assert not (tmp_path / "r").exists() and (tmp_path / "r.failed").is_dir()
    assert len(calls) == 2


def test_qemu_runs_without_transparent_huge_pages(tmp_path, monkeypatch):
    """The runner starts QEMU with transparent huge pages off: its guest
    RAM is then zeroed by the host 4 KiB at a time, as the guest touches
    it, rather than 2 MiB at a time.  Other children keep the default."""
    from colorsim.run import rundir
    parent = Path("/proc/self/status").read_text()
    if "THP_enabled:" not in parent:
        pytest.skip("this kernel does not report THP_enabled in /proc/PID/status")

    def thp_of(**kw):
        p = rundir.spawn(["cat", "/proc/self/status"], stdout=subprocess.PIPE,
                         text=True, **kw)
        out, _ = p.communicate(timeout=30)
        assert p.returncode == 0
        return re.search(r"^THP_enabled:\s+(\d)$", out, re.M).group(1)

    assert thp_of(huge_pages=False) == "0"
    assert thp_of() == re.search(r"^THP_enabled:\s+(\d)$", parent, re.M).group(1)
    # and the runner asks for that when it starts QEMU
    asked = []
    real = rundir.spawn
    monkeypatch.setattr(runner, "spawn",
                        lambda cmd, **kw: asked.append(kw) or real(["true"], **kw))
    try:
        runner._run_qemu(None, None, ["true"], tmp_path, _NoLock(), None)
    except Exception:
        pass                  # "true" is no QEMU; only how it was started matters
    assert asked and asked[0].get("huge_pages") is False


class _NoLock:
    def record_child(self, *a):
        pass
