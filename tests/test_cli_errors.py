"""Every command-line mistake: exit status 2, one line on stderr, no
traceback, nothing written.

Cases go through the real command line (``colorsim.cli.main`` with argv,
argparse included).  A case that ends in a traceback makes main() return
70 ("internal error"), so a new unhandled class fails here.
"""

import json
import os
import shutil
from pathlib import Path

import pytest

from colorsim import ROOT
from colorsim.run import runner
from colorsim.cli import main as cli_main
from colorsim.maintain import main as docs_main
from colorsim.describe.machine import MACHINES_ENV
from colorsim.errors import ConfigError

RUN = ["run", "--tasks", "16", "--roi", "2", "--warmup", "2"]
MACHINES = (ROOT / "configs" / "machines.toml").read_text()
PIII8_L2_LINE = MACHINES.splitlines().index('l2 = { size = "1MiB", assoc = 4 }') + 1


def check_refused(argv, expect, capsys, watch: Path, main=cli_main):
    before = sorted(p.name for p in watch.rglob("*"))
    try:
        rc = main(argv)
    except SystemExit as e:              # argparse
        rc = e.code
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert rc == 2, (argv, rc, err)
    assert len(lines) == 1, (argv, err)
    assert "Traceback" not in err and "internal error" not in err
    assert expect in lines[0], (argv, lines[0])
    assert sorted(p.name for p in watch.rglob("*")) == before, "wrote something"


# (argv, what the one line must say); OUT is the test's output folder.
BAD_RUNS = [
    (["--kernel", "c7"], "power of two"),
    (["--kernel", "c128"], "colors do not fit"),
    (["--kernel", "c2048"], "past the end of its 8192 B block"),
    (["--kernel", "c1"], "at least 2 colors"),
    (["--kernel", "c0"], "at least 2 colors"),
    (["--kernel", "cfoo"], "unknown kernel"),
    (["--kernel", "c32", "--cpus", "9"], "cannot run with 9"),
    (["--kernel", "c32", "--cpus", "0"], "must be at least 1"),
    (["--kernel", "c32", "--machine", "vax"], "unknown machine"),
    (["--kernel", "c32", "--l2", "384KiB"], "power of two"),
    (["--kernel", "c32", "--l2", "12XB"], "unknown size unit"),
    (["--kernel", "c32", "--l2", "4KiB"], "smaller than the 8 KiB task block"),
    (["--kernel", "c32", "--l2", ""], "cannot read size ''"),
    (["--kernel", "c32", "--timeout", "0"], "positive"),
    (["--kernel", "c32", "--timeout", "-3"], "positive"),
    (["--kernel", "c32", "--timeout", "nan"], "positive"),
    (["--kernel", "c32", "--timeout", "inf"], "positive"),
    (["--kernel", "c32", "--timeout", "soon"], "not a number"),
    (["--kernel", "c32", "--tasks", "5000"], "between 1 and 4096"),
    (["--kernel", "c32", "--tasks", "x"], "not an integer"),
    (["--kernel", "c32", "--roi", "0"], "at least 1"),
    (["--kernel", "c32", "--engine", "bochs"], "unknown engine"),
    (["--kernel", "c32", "--name", "a/b"], "may hold only"),
    (["--kernel", "c32", "--name", ".hidden"], "may hold only"),
    (["--kernel", "c32", "--name", "x" * 300], "characters long"),
    (["--kernel", "c32", "--name", ""], "empty"),
    (["--kernel", "c32", "--out", ""], "empty folder name"),
    (["--kernel", "c32", "--name", "r.failed"], "suffix"),
    (["--machine", "ppro4"], "--kernel"),
    (["--kernel", "c32", "--bogus"], "unrecognized arguments"),
    (["--kernel", "c32", "--workload", "web", "--accept", "posixsem"],
     "invalid choice: 'posixsem' (choose from 'none', 'pipe', 'sysvsem', 'fcntl', 'flock')"),
]


@pytest.mark.parametrize("args,expect", BAD_RUNS,
                         ids=[" ".join(a)[:40] for a, _ in BAD_RUNS])
def test_run_refuses(args, expect, capsys, tmp_path):
    check_refused(RUN + args + ["--out", str(tmp_path)], expect, capsys, tmp_path)


@pytest.fixture
def no_build(monkeypatch):
    """Building anything fails the test: a refusal comes first."""
    def built(*a, **k):
        raise AssertionError("built something before refusing")
    from colorsim.run import build
    monkeypatch.setattr(build, "ensure_built", built)   # the kernel kinds build through it


# Web and chat options the guest program would refuse after booting, a
# program the image lacks, options the chosen workload would ignore.
BAD_PROGRAMS = [
    (["--workload", "web", "--httpd", "abc"], "--httpd must be a whole number"),
    (["--workload", "web", "--httpd", "0"], "between 1 and 4096"),
    (["--workload", "web", "--httpd", "-5"], "must be a whole number"),
    (["--workload", "web", "--httpd", "100000"], "between 1 and 4096"),
    (["--workload", "web", "--httpd", "4000", "--clients", "200"], "more than the 4096"),
    (["--workload", "web", "--accept", "bogus"], "--accept: invalid choice: 'bogus'"),
    (["--workload", "web", "--keepalive", "0"], "--keepalive must be between 1"),
    (["--workload", "web", "--clients", "1", "--requests", "1"], "region of interest"),
    (["--workload", "web", "--args=--port,70000"], "--port must be between 1 and 65535"),
    (["--workload", "web", "--args=--colour,red"], "unknown option '--colour'"),
    (["--workload", "web", "--args=--seed"], "--seed needs a value"),
    (["--workload", "web", "--httpd", "8", "--args=--httpd,9"], "--httpd is given twice"),
    (["--workload", "chat", "--rooms", "0"], "--rooms must be between 1 and 120"),
    (["--workload", "chat", "--users", "1"], "--users must be between 2"),
    (["--workload", "chat", "--rooms", "100", "--users", "20"], "2000 connections"),
    (["--workload", "chat", "--messages", "3000000000"], "between 1 and 1000000"),
    (["--workload", "web", "--requests", "1000001"], "between 1 and 1000000"),
    (["--workload", "chat", "--messages", "999999"],
     "this run would take about 3,333 hours of host time"),
    (["--workload", "web", "--requests", "999999"],
     "hours of host time (255,999,744 requests at 50 ms each, measured)"),
    (["--workload", "nosuch"], "image has no program /bin/nosuch"),
    (["--workload", "init:/etc/motd"], "image has no program /etc/motd"),
    (["--workload", "roitest", "--httpd", "10"], "does not apply to /bin/roitest"),
    (["--workload", "chat", "--accept", "pipe"], "does not apply to /bin/chat"),
    (["--workload", "web", "--rooms", "3"], "does not apply to /bin/web"),
    (["--httpd", "10"], "does not apply to the built-in tasks workload"),
    (["--workload", "web", "--tasks", "64"], "does not apply to /bin/web"),
    (["--workload", "chat", "--burst", "64"], "does not apply to /bin/chat"),
    (["--workload", "hello", "--args", ",".join("abcdefghijklmnop")],
     "at most 15"),
    (["--workload", "web", "--client-cpus", "9"], "--client-cpus must be between 0 and 8"),
    (["--workload", "web", "--client-cpus", "-1"], "--client-cpus"),
    (["--client-cpus", "2"], "the built-in tasks have none"),
]


@pytest.mark.parametrize("args,expect", BAD_PROGRAMS,
                         ids=[" ".join(a)[:50] for a, _ in BAD_PROGRAMS])
def test_run_refuses_bad_program_options(args, expect, capsys, tmp_path, no_build):
    check_refused(["run", "--kernel", "c32"] + args + ["--out", str(tmp_path)],
                  expect, capsys, tmp_path)


def test_dry_run_builds_nothing(capsys, tmp_path, no_build):
    """--dry-run prints the command of a kernel not built yet with its
    layout's ranges as a placeholder, and builds nothing."""
    argv = ["run", "--kernel", "c4", "--machine", "piii8", "--l2", "256KiB",
            "--out", str(tmp_path), "--dry-run"]
    assert cli_main(argv) == 0
    out = capsys.readouterr().out
    assert "not built yet" in out and "from layout.json of the built kernel" in out
    assert cli_main(argv + ["--workload", "web", "--httpd", "8"]) == 0
    assert "initargs=--httpd,8" in capsys.readouterr().out
    assert not any(tmp_path.iterdir())


def test_run_out_is_a_file(capsys, tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    check_refused(RUN + ["--kernel", "c32", "--out", str(f)], "is a file",
                  capsys, tmp_path)
    check_refused(RUN + ["--kernel", "c32", "--out", str(f / "sub")], "is a file",
                  capsys, tmp_path)


@pytest.fixture(scope="module")
def one_run(tmp_path_factory):
    from test_integrity import _small
    out = tmp_path_factory.mktemp("one")
    return runner.run(_small(16), name="r", out=out,
                      progress=lambda *_: None)


def _damaged_dirs(base: Path, good: Path) -> dict:
    """Folders that look like runs and are not."""
    d = {}
    d["empty"] = base / "empty"
    d["empty"].mkdir(parents=True)
    d["nojson"] = base / "nojson"
    shutil.copytree(good, d["nojson"])
    (d["nojson"] / "config.json").write_text("{oops")
    d["nocsv"] = base / "nocsv"
    shutil.copytree(good, d["nocsv"])
    (d["nocsv"] / "counters.csv").unlink()
    d["failed"] = base / "only" / "x.failed"
    d["failed"].mkdir(parents=True)
    (d["failed"] / "config.json").write_text(json.dumps({"complete": False}))
    return d


def test_analysis_commands_refuse(one_run, capsys, tmp_path):
    bad = _damaged_dirs(tmp_path / "bad", one_run)
    png = tmp_path / "o.png"
    cases = [
        (["summary", str(tmp_path / "nope")], "does not exist"),
        (["summary", str(bad["empty"])], "holds no run directories"),
        (["summary", str(bad["nojson"])], "config.json is damaged: not JSON"),
        (["summary", str(bad["nocsv"])], "counters.csv is missing"),
        (["summary", str(bad["failed"].parent)], "no complete runs"),
        (["summary", str(bad["failed"])], "failed run"),
        (["plot", "offsets", str(one_run), "-o", str(tmp_path)], "is a directory"),
        (["plot", "offsets", str(one_run), "-o", str(tmp_path / "no" / "o.png")],
         "does not exist"),
        (["plot", "offsets", str(one_run), "-o", str(tmp_path / "o.bmpx")],
         "unknown suffix"),
        (["plot", "offsets", str(one_run), "-o", str(tmp_path / "o")],
         "unknown suffix"),
        (["plot", "offsets", str(one_run), "--view", "pixel", "-o", str(png)],
         "invalid choice"),
        (["table", str(one_run), "-o", str(tmp_path)], "is a directory"),
        (["table", str(one_run), "-o", str(tmp_path / "no" / "t.csv")],
         "does not exist"),
        (["table", str(one_run), "-o", str(tmp_path / "t.txt")], "unknown suffix"),
        (["table", str(one_run), "--what", "everything"], "invalid choice"),
        (["verify", str(bad["nojson"])], "config.json is damaged"),
        (["plot"], "required"),
        (["frobnicate"], "invalid choice"),
    ]
    for argv, expect in cases:
        check_refused(argv, expect, capsys, tmp_path)


def test_many_run_commands_find_runs_below_a_folder(one_run, capsys, tmp_path):
    base = tmp_path / "runs"
    shutil.copytree(one_run, base / "fig" / "r")
    (base / "fig" / "r2.failed").mkdir()
    (base / "fig" / "r2.failed" / "config.json").write_text('{"complete": false}')
    (base / ".r3.partial").mkdir()
    (base / ".r3.partial" / "config.json").write_text('{"complete": false}')
    out = tmp_path / "t.csv"
    assert cli_main(["table", str(base), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "skipped 1 failed and 1 unfinished run(s); using 1" in err
    assert out.is_file()


@pytest.mark.parametrize("edit,broken,expect", [
    (lambda t: t.replace('l2 = { size = "1MiB", assoc = 4 }',
                         'l2 = { size = "1MiB" assoc = 4 }'),
     "piii8", f"TOML syntax error in machine piii8, line {PIII8_L2_LINE}"),
    (lambda t: t.replace('l2 = { size = "512KiB", assoc = 4 }',
                         'l2 = { size = "384KiB", assoc = 4 }'),
     "ppro4", "machine ppro4, cache l2: cache size must be a power of two"),
    (lambda t: t.replace('cpus = 8', 'cpus = "eight"'),
     "piii8", "machine piii8: processor.cpus must be an integer"),
    (lambda t: t.replace('[ppro4.memory]\nsize = "640MiB"', '[ppro4.memory]\nsize = "lots"'),
     "ppro4", "machine ppro4: cannot read size"),
])
def test_a_broken_machine_does_not_break_the_others(edit, broken, expect,
                                                    monkeypatch, capsys, tmp_path):
    f = tmp_path / "machines.toml"
    f.write_text(edit(MACHINES))
    assert f.read_text() != MACHINES
    monkeypatch.setenv(MACHINES_ENV, str(f))
    other = {"ppro4": "piii8", "piii8": "ppro4"}[broken]
    check_refused(RUN + ["--machine", broken, "--kernel", "c32",
                         "--out", str(tmp_path / "o")], expect, capsys, tmp_path)
    # the other machine still works
    assert cli_main(["run", "--machine", other, "--kernel", "c32", "--dry-run",
                     "--out", str(tmp_path / "o")]) == 0
    out = capsys.readouterr()
    assert "\ncommand: " in out.out and "qemu-system-x86_64" in out.out
    check_refused(["machines"], expect, capsys, tmp_path)


def test_dry_run_prints_the_real_command(tmp_path, capsys):
    argv = RUN + ["--kernel", "c8", "--name", "d", "--out", str(tmp_path)]
    assert cli_main(["build", "--kernel", "c8"]) == 0  # --dry-run builds nothing
    assert cli_main(argv + ["--dry-run"]) == 0
    printed = next(line for line in capsys.readouterr().out.splitlines()
                   if line.startswith("command: "))
    assert not (tmp_path / "d").exists()
    assert cli_main(argv) == 0
    cfg = json.loads((tmp_path / "d" / "config.json").read_text())
    import shlex
    assert shlex.split(printed[len("command: "):]) == cfg["command"]
    assert "rqloop=0x0-0x0" not in printed and "user=0x" in printed


def test_small_timeouts_are_enforced(tmp_path, capsys):
    argv = ["run", "--kernel", "vanilla", "--tasks", "64", "--roi", "600",
            "--timeout", "0.5", "--name", "t", "--out", str(tmp_path)]
    assert cli_main(argv) == 2
    err = capsys.readouterr().err
    assert "no result after 0.5 s" in err
    assert not (tmp_path / "t").exists() and (tmp_path / "t.failed").is_dir()


# -- sweeps, the catalog, figures ------------------------------------------

GOOD_EXP = """
[defaults]
seeds = [1, 2]
[tiny]
title = "t"
needs = ["counting"]
outputs.fig1 = { needs = ["counting"], what = "x" }
[tiny.grid]
machine = "ppro4"
l2 = ["512KiB"]
cpus = [2]
kernels = ["vanilla"]
workload = "synthetic"
tasks = [16]
roi = 2
warmup = 2
"""

# (replace this text of GOOD_EXP, with this, what the one line must say)
BAD_EXPERIMENTS = [
    ('title = "t"', 'title = "t', "TOML syntax error"),
    ('title = "t"', 'title = "t"\ncolour = 1', "unknown key 'colour'"),
    ('title = "t"', 'titel = "t"', "unknown key 'titel'; did you mean 'title'?"),
    ('roi = 2', 'rio = 2', "tiny.grid: unknown key 'rio'; did you mean 'roi'?"),
    ('[tiny.grid]', '[tiny.gird]', "unknown key 'gird'; did you mean 'grid'?"),
    ('[tiny.grid]', '[tiny.grid]\nseeds = [1]\n[tiny.grid]',
     "[tiny.grid] is declared twice"),
    ('[tiny]', '[tiny]\ntitle = "t"\n[tiny]', "[tiny] is declared twice"),
    ('needs = ["counting"]', 'needs = ["xray"]', "unknown need 'xray'"),
    ('kernels = ["vanilla"]', 'kernels = ["c7"]', "power of two"),
    ('kernels = ["vanilla"]', 'kernels = ["c128"]', "colors do not fit"),
    ('cpus = [2]', 'cpus = [9]', "cannot run with 9"),
    ('cpus = [2]', 'cpus = [0]', "must be at least 1"),
    ('cpus = [2]', 'cpus = []', "empty list"),
    ('tasks = [16]', 'tasks = [16, 16]', "lists a value twice"),
    ('tasks = [16]', 'tasks = [5000]', "between 1 and 4096"),
    ('workload = "synthetic"', 'workload = "ftp"', "unknown workload"),
    ('l2 = ["512KiB"]', 'l2 = ["384KiB"]', "power of two"),
    ('machine = "ppro4"', 'machine = "vax"', "unknown machine"),
    ('machine = "ppro4"\n', '', "missing machine"),
    ('roi = 2', 'roi = 0', "must be positive"),
    ('roi = 2', 'roi = "soon"', "wrong type"),
    ('[tiny]', '[Tiny]', "an experiment name is lower-case"),
    ('outputs.fig1 = { needs = ["counting"], what = "x" }', '', "missing 'outputs'"),
]


@pytest.mark.parametrize("old,new,expect", BAD_EXPERIMENTS,
                         ids=[e for _, _, e in BAD_EXPERIMENTS])
def test_sweep_refuses_a_bad_experiments_file(old, new, expect, capsys,
                                              tmp_path, monkeypatch):
    f = tmp_path / "exp.toml"
    assert old in GOOD_EXP
    f.write_text(GOOD_EXP.replace(old, new, 1))
    monkeypatch.setenv("COLORSIM_EXPERIMENTS", str(f))
    check_refused(["sweep", "tiny", "--runs", str(tmp_path / "runs")], expect,
                  capsys, tmp_path)
    assert not (tmp_path / "runs").exists()


def test_sweep_catalog_and_figure_commands_refuse(capsys, tmp_path, monkeypatch):
    f = tmp_path / "exp.toml"
    f.write_text(GOOD_EXP)
    monkeypatch.setenv("COLORSIM_EXPERIMENTS", str(f))
    runs = tmp_path / "runs"
    runs.mkdir()
    afile = tmp_path / "afile"
    afile.write_text("x")
    cases = [
        (["sweep", "nosuch", "--runs", str(runs)], "unknown experiment 'nosuch'"),
        (["sweep", "tiny", "--jobs", "0"], "must be at least 1"),
        (["sweep", "tiny", "--jobs", "many"], "not an integer"),
        (["sweep", "tiny", "--retries", "-1"], "must be 0 or more"),
        (["sweep", "tiny", "--timeout", "0"], "positive"),
        (["sweep", "tiny", "--executor", "mpi"], "invalid choice"),
        (["sweep", "tiny", "--runs", str(afile)], "is a file"),
        (["sweep"], "required"),
        (["runs", "--runs", str(runs)], "no catalog"),
        (["show", "abc", "--runs", str(runs)], "no catalog"),
        (["figures", "all", "--runs", str(runs)], "no catalog"),
        (["figures", "nosuch", "--runs", str(runs)], "unknown experiment"),
        (["catalog", "rebuild", "--runs", str(tmp_path / "nope")], "does not exist"),
        (["catalog"], "required"),
        (["sweep", "tiny", "--runs", ""], "empty folder name"),
        (["figures", "all", "--out", " "], "empty folder name"),
        (["timing-table", "--kernels", ""], "an empty name in the list"),
        (["timing-table", "--l2", "256KiB,,512KiB"], "an empty name in the list"),
        (["crosscheck", "--out", ""], "empty folder name"),
        (["timing-sensitivity", "--out", ""], "empty folder name"),
    ]
    for argv, expect in cases:
        check_refused(argv, expect, capsys, tmp_path)
    check_refused(["linux24-table", "--runs", ""], "empty folder name", capsys,
                  tmp_path, main=docs_main)


def test_runs_and_show_refuse_bad_queries(one_run, capsys, tmp_path):
    runs = tmp_path / "runs"
    shutil.copytree(one_run, runs / "r")
    from colorsim.results.catalog import rebuild
    rebuild(runs)
    afile = tmp_path / "afile"
    afile.write_text("x")
    cases = [
        (["runs", "--runs", str(runs), "--where", "colour=red"], "no such column"),
        (["runs", "--runs", str(runs), "--where", "kernel"], "use key=value"),
        (["runs", "--runs", str(runs), "--where", "=x"], "use key=value"),
        (["runs", "--runs", str(runs), "--where", "l2_size=12XB"], "unknown size unit"),
        (["runs", "--runs", str(runs), "--columns", "nosuch"], "no column 'nosuch'"),
        (["runs", "--runs", str(runs), "--where", "tasks=abc"], "tasks holds numbers"),
        (["runs", "--runs", ""], "empty folder name"),
        (["show", "0000ffff", "--runs", str(runs)], "no run '0000ffff'"),
        (["figures", "all", "--runs", str(runs), "--out", str(afile)], "is a file"),
    ]
    for argv, expect in cases:
        check_refused(argv, expect, capsys, tmp_path)
    assert cli_main(["runs", "--runs", str(runs), "--where", "kernel=vanilla"]) == 0
    assert "vanilla" in capsys.readouterr().out
    assert cli_main(["show", "r", "--runs", str(runs)]) == 0
    out = capsys.readouterr().out
    assert "rqloop_l2_miss_ratio" in out and "dump 0" in out


# -- environment faults and damaged inputs: one line, not "internal error" --

def test_non_utf8_machines_and_experiments_files(capsys, tmp_path, monkeypatch):
    m = tmp_path / "machines.toml"
    m.write_bytes(MACHINES.replace("Pentium Pro", "Pentium\xa0Pro").encode("latin-1"))
    assert b"\xa0" in m.read_bytes()
    monkeypatch.setenv(MACHINES_ENV, str(m))
    check_refused(["machines"], "is not UTF-8 text: byte 0xa0 on line", capsys, tmp_path)
    check_refused(RUN + ["--kernel", "c32", "--out", str(tmp_path / "o")],
                  "is not UTF-8 text", capsys, tmp_path)
    monkeypatch.delenv(MACHINES_ENV)
    e = tmp_path / "exp.toml"
    e.write_bytes(GOOD_EXP.replace('title = "t"', 'title = "caf\xe9"').encode("latin-1"))
    monkeypatch.setenv("COLORSIM_EXPERIMENTS", str(e))
    check_refused(["sweep", "tiny", "--runs", str(tmp_path / "runs")],
                  "exp.toml is not UTF-8 text: byte 0xe9 on line 5", capsys, tmp_path)


def test_folders_that_cannot_be_made_or_written(capsys, tmp_path, monkeypatch, no_build):
    """/proc refuses new files even to root, so this holds for any user."""
    check_refused(RUN + ["--kernel", "c32", "--out", "/proc/x/sub"],
                  "--out /proc/x/sub: cannot make the directory", capsys, tmp_path)
    f = tmp_path / "exp.toml"
    f.write_text(GOOD_EXP)
    monkeypatch.setenv("COLORSIM_EXPERIMENTS", str(f))
    # refused before any kernel is built (no_build)
    check_refused(["sweep", "tiny", "--runs", "/proc/x"],
                  "--runs /proc/x: cannot make the directory", capsys, tmp_path)
    check_refused(["catalog", "rebuild", "--runs", "/proc"],
                  "cannot write the catalog in /proc", capsys, tmp_path)


def test_table_into_a_folder_that_cannot_be_written(one_run, capsys, tmp_path):
    check_refused(["table", str(one_run), "-o", "/proc/t.csv"],
                  "cannot write /proc/t.csv", capsys, tmp_path)


@pytest.mark.parametrize("edit,expect", [
    (lambda d: d.pop("scale"), "no str 'scale'"),
    (lambda d: d["points"][0].pop("kernel"), "point 0 has no kernel"),
    (lambda d: d.update(outputs=[]), "no dict 'outputs'"),
])
def test_catalog_names_a_damaged_sweep_file(edit, expect, one_run, capsys, tmp_path):
    runs = tmp_path / "runs"
    shutil.copytree(one_run, runs / "r")
    (runs / "sweeps").mkdir()
    cfg = json.loads((one_run / "config.json").read_text())
    point = {"machine": "ppro4", "l2": "512KiB", "cpus": 2, "kernel": "vanilla",
             "workload": "synthetic", "workload_run": "synthetic", "tasks": 16,
             "seed": 1, "warmup": 2, "roi": 2, "burst": 2000, "engine": "qemu",
             "run_id": None, "lacks": []}
    data = {"experiment": "tiny", "scale": "quick", "outputs": {},
            "points": [point]}
    from colorsim.results.catalog import rebuild
    (runs / "sweeps" / "tiny-quick.json").write_text(json.dumps(data))
    rebuild(runs)                       # the undamaged file is read
    edit(data)
    (runs / "sweeps" / "tiny-quick.json").write_text(json.dumps(data))
    check_refused(["catalog", "rebuild", "--runs", str(runs)], expect, capsys,
                  tmp_path)
    assert cfg["complete"]


def test_a_file_the_system_refuses_is_not_an_internal_error(one_run, capsys):
    """Any file the system refuses (here a plot into /proc) is one line and
    EX_IOERR, never "internal error" (a bug of colorsim, 70)."""
    rc = cli_main(["plot", "offsets", str(one_run), "-o", "/proc/o.png"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 74 and len(err) == 1, err
    assert err[0].startswith("colorsim: error: cannot use /proc/") and "internal" not in err[0]


# -- verify, sweep --force, figure1 --name: what the messages promise exists --

def test_verify_reports_every_damaged_run_with_a_count(one_run, capsys, tmp_path):
    base = tmp_path / "runs"
    for n in "abcd":
        shutil.copytree(one_run, base / n)
    with open(base / "a" / "counters.csv", "a") as f:
        f.write("0,0,user,insts,1\n")
    (base / "c" / "config.json").write_text("{")
    assert cli_main(["verify", str(base)]) == 2
    out, err = capsys.readouterr()
    assert [l.split(":")[0] for l in out.splitlines()] == ["damaged", "ok", "damaged", "ok"]
    assert "a/counters.csv is damaged" in out and "c/config.json is damaged" in out
    assert err.strip().splitlines() == [
        err.strip()] and "2 of 4 runs are damaged" in err


def test_sweep_force_replaces_a_damaged_run(capsys, tmp_path, monkeypatch):
    """The refusal of a damaged run says --force; the sweep has it."""
    from colorsim.orchestrate.sweep import BY_ID, run_sweep
    f = tmp_path / "exp.toml"
    f.write_text(GOOD_EXP.replace("seeds = [1, 2]", "seeds = [1]"))
    monkeypatch.setenv("COLORSIM_EXPERIMENTS", str(f))
    root = tmp_path / "runs"
    quiet = dict(jobs=1, root=root, catalog=False, log=lambda *_: None,
                 progress_stream=open(os.devnull, "w"))
    assert run_sweep("tiny", **quiet)["done"] == 1
    (run,) = [d for d in (root / BY_ID).iterdir() if not d.name.startswith(".")]
    cnt = run / "counters.csv"
    cnt.write_text(cnt.read_text().replace(",insts,", ",insts,1", 1))
    c = run_sweep("tiny", **quiet)
    assert c["done"] == 0 and "pass --force" in c["failures"][0][2]
    assert cli_main(["sweep", "tiny", "--runs", str(root), "--force"]) == 0
    assert "1 done" in capsys.readouterr().out
    assert cli_main(["verify", str(run)]) == 0


def test_figure1_takes_the_name_its_refusal_asks_for(capsys, tmp_path):
    small = ["figure1", "--tasks", "16", "--roi", "2", "--warmup", "2",
             "--cpus", "2", "--colored", "c8", "--out", str(tmp_path)]
    assert cli_main(small) == 0                       # default names: seeds apart
    assert cli_main(small + ["--seed", "2"]) == 0
    assert cli_main(small + ["--name", "s1"]) == 0
    assert cli_main(small + ["--seed", "2", "--name", "s1"]) == 2   # same names, other seed
    assert "choose another --name" in capsys.readouterr().err
    assert cli_main(small + ["--seed", "2", "--name", "s2"]) == 0
    assert (tmp_path / "s2-vanilla").is_dir() and (tmp_path / "s2-c8").is_dir()
    assert (tmp_path / "figure1-s2.png").is_file()
    cfg = json.loads((tmp_path / "s2-c8" / "config.json").read_text())
    assert cfg["workload"]["seed"] == 2


@pytest.mark.parametrize("key", ["/", "", "//"])
def test_show_refuses_an_empty_run_name(key):
    from colorsim.results.catalog import Catalog
    with pytest.raises(ConfigError, match="no run named"):
        Catalog(ROOT / "recorded" / "paper").find(key)
