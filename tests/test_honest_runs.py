"""Runs that say what happened: relative output folders, the emulator's own
error, a full disk, config.json under the manifest, one status per point,
names that keep runs apart, and values the guest cannot honour.

Each test fails on a runner that lacks the check it names.
"""

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from colorsim.results.rundata import load_run
from colorsim.run import runner
from colorsim.cli import main as cli_main
from colorsim.errors import ResultsError, RunError

QUIET = dict(progress=lambda *_: None)
TINY = ["--kernel", "vanilla", "--tasks", "16", "--roi", "2", "--warmup", "2"]


def _small(**kw):
    from test_integrity import _small as small
    return small(**kw)


# -- paths and the emulator's own reasons ---------------------------------

def test_a_relative_out_folder_works(tmp_path, monkeypatch, capsys):
    # QEMU runs in the kernel's directory: a relative --out named a folder
    # it could not open, and every run failed.
    monkeypatch.chdir(tmp_path)
    assert cli_main(["run", *TINY, "--name", "r", "--out", "rel"]) == 0, \
        capsys.readouterr().err
    run = load_run(tmp_path / "rel" / "r")
    assert run.config["complete"]
    assert not (tmp_path / "rel" / "r.failed").exists()


def test_a_relative_sweep_folder_works(tmp_path, monkeypatch):
    from colorsim.orchestrate.sweep import run_sweep
    exp = tmp_path / "exp.toml"
    exp.write_text(TINY_EXP)
    monkeypatch.setenv("COLORSIM_EXPERIMENTS", str(exp))
    monkeypatch.chdir(tmp_path)
    c = run_sweep("tiny", jobs=1, root="rel", retries=0, log=lambda *_: None,
                  progress_stream=open("/dev/null", "w"))
    assert (c["done"], c["failed"], c["missing"]) == (1, 0, 0), c["failures"]
    assert len(list((tmp_path / "rel" / "by-id").iterdir())) == 1


TINY_EXP = """
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
seeds = [1]
roi = 2
warmup = 2
"""


def test_the_emulators_own_error_is_the_reason(tmp_path, monkeypatch):
    from colorsim.run.engines.qemu import QemuEngine
    real = QemuEngine.command

    def broken(self, *a, **kw):          # QEMU refuses this and exits 1
        return real(self, *a, **kw) + ["-device", "nosuchdevice"]
    monkeypatch.setattr(QemuEngine, "command", broken)
    with pytest.raises(RunError) as e:
        runner.run(_small(), name="q", out=tmp_path, **QUIET)
    first = str(e.value).splitlines()[0]
    assert "nosuchdevice" in first and "never ended" not in first
    assert "nosuchdevice" in (tmp_path / "q.failed" / "failure.txt").read_text()


@pytest.fixture
def tiny_disk(tmp_path):
    """A 40 KiB file system: room for the run's first files, not its results."""
    d = tmp_path / "full"
    d.mkdir()
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=40k", "tmpfs",
                        str(d)], capture_output=True, text=True)
    if p.returncode:
        pytest.skip(f"cannot mount a small tmpfs here: {p.stderr.strip()}")
    yield d
    subprocess.run(["umount", str(d)], check=True)


def test_a_full_disk_is_refused_before_boot(tiny_disk, capsys):
    rc = cli_main(["run", *TINY, "--name", "r", "--out", str(tiny_disk)])
    err = capsys.readouterr().err
    assert rc == 74, err
    assert len(err.strip().splitlines()) == 1, err
    assert "no space for the run" in err and "a run needs 64 MiB" in err
    assert list(tiny_disk.iterdir()) == []           # nothing booted or written
    rc = cli_main(["run", *TINY, "--name", "r", "--out", str(tiny_disk), "--dry-run"])
    assert rc == 74 and "no space for the run" in capsys.readouterr().err


def test_a_disk_that_fills_during_the_run_is_one_line_and_74(tiny_disk, capsys,
                                                              monkeypatch):
    monkeypatch.setattr(runner, "RUN_OUTPUT_BYTES", 0)   # past the first check
    rc = cli_main(["run", *TINY, "--name", "r", "--out", str(tiny_disk)])
    err = capsys.readouterr().err
    assert rc == 74 and "internal error" not in err
    assert len(err.strip().splitlines()) == 1, err
    assert "no space left on the disk" in err and "never ended" not in err
    assert not (tiny_disk / "r").exists()
    assert (tiny_disk / "r.failed").is_dir()


# -- config.json is part of what a run recorded ----------------------------

def _edit_config(run: Path, edit) -> None:
    cfg = json.loads((run / "config.json").read_text())
    edit(cfg)
    (run / "config.json").write_text(json.dumps(cfg, indent=2))


def _set(*path_value):
    *path, value = path_value

    def edit(cfg):
        d = cfg
        for k in path[:-1]:
            d = d[k]
        d[path[-1]] = value
    return edit


CONFIG_EDITS = [
    ("seed", _set("workload", "seed", 2)),
    ("l2 size", _set("machine", "caches", "l2", "size", 1048576)),
    ("tasks", _set("workload", "tasks", 32)),
    ("kernel name", _set("variant", "name", "c32")),
    ("manifest deleted", lambda c: c.pop("results")),
]


@pytest.fixture(scope="module")
def good_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("good")
    return runner.run(_small(), name="good", out=out, **QUIET)


# Every edit, on a run with the digest and on one made before digests; an
# old run without a manifest is the next test's case, not this one's.
EDITED = [pytest.param(what, edit, before,
                       id=f"{what}-{'made-before-digests' if before else 'digest'}")
          for before in (False, True) for what, edit in CONFIG_EDITS
          if not (before and what == "manifest deleted")]


@pytest.mark.parametrize("what,edit,before_digests", EDITED)
def test_an_edited_config_json_is_refused_everywhere(what, edit, before_digests,
                                                     good_run, tmp_path, capsys):
    run = tmp_path / "runs" / "good"
    shutil.copytree(good_run, run)
    if before_digests:                   # the identity checks alone catch it
        _edit_config(run, lambda c: c.pop("config_sha256"))
        load_run(run)
    _edit_config(run, edit)
    with pytest.raises(ResultsError, match="config.json is damaged"):
        load_run(run)
    for argv in (["verify", str(run)], ["summary", str(run)],
                 ["table", str(run)], ["run", *TINY, "--name", "good",
                                       "--out", str(run.parent)]):
        assert cli_main(argv) == 2, argv
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "config.json is damaged" in err[0], (argv, err)
    from colorsim.results.catalog import build_tables
    assert len(build_tables(run.parent)["runs"]) == 0


def test_a_run_without_a_manifest_is_never_good(good_run, tmp_path, capsys):
    # As made before manifests existed: no results, no digest.
    run = tmp_path / "runs" / "old"
    shutil.copytree(good_run, run)
    _edit_config(run, lambda c: (c.pop("results"), c.pop("config_sha256")))
    assert not load_run(run).verified
    assert cli_main(["verify", str(run)]) == 2
    out = capsys.readouterr()
    assert "unverified:" in out.out and "cannot be verified" in out.err
    assert cli_main(["table", str(run)]) == 0
    out = capsys.readouterr()
    assert "unverified" in out.err
    lines = out.out.splitlines()
    col = lines[0].split(",").index("verified")
    assert {line.split(",")[col] for line in lines[1:]} == {"False"}
    from colorsim.results.catalog import build_tables
    rows = build_tables(run.parent)["runs"]
    assert list(rows["verified"]) == [False]
    # the runner does not take it as the run it asks for
    assert cli_main(["run", *TINY, "--name", "old", "--out", str(run.parent)]) == 2
    assert "cannot be checked" in capsys.readouterr().err


def test_a_run_without_its_configuration_checksum_is_never_good(good_run, tmp_path):
    """Its files are checked, its configuration is not: a build hash edited
    with the checksum removed would load as good under another id."""
    run = tmp_path / "runs" / "nodigest"
    shutil.copytree(good_run, run)
    _edit_config(run, lambda c: (c.pop("config_sha256"),
                                 c.update(kernel_sha256="e" * 64)))
    got = load_run(run)
    assert not got.verified
    from colorsim.results.catalog import build_tables
    assert list(build_tables(run.parent)["runs"]["verified"]) == [False]


# -- one truth about a sweep point -----------------------------------------

@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    from sweeps import sweep_with
    yield from sweep_with(tmp_path_factory, "honest", TINY_EXP, "tiny")


def _status(root: Path):
    from colorsim.report.common import ExpData
    from colorsim.results.catalog import Catalog, rebuild
    from colorsim.describe.experiments import load_experiments
    rebuild(root)
    cat = Catalog(root)
    pts = cat.points("tiny", "paper")
    d = ExpData(cat, load_experiments()["tiny"], "paper")
    return list(pts["status"]), len(cat.table("runs")), d.counts


@pytest.mark.parametrize("damage", ["counters.csv", "seed"])
def test_a_damaged_point_is_not_done_anywhere(swept, damage, tmp_path):
    from colorsim.orchestrate.sweep import BY_ID
    src, counts = swept
    assert counts["done"] == 1
    root = tmp_path / "runs"
    shutil.copytree(src, root, ignore=shutil.ignore_patterns("catalog"))
    assert _status(root)[:2] == (["done"], 1)
    run = next((root / BY_ID).iterdir())
    if damage == "seed":
        _edit_config(run, _set("workload", "seed", 2))
    else:
        f = run / damage
        f.write_bytes(f.read_bytes()[:-40])
    status, rows, c = _status(root)
    assert status == ["damaged"] and rows == 0
    assert (c["done"], c["failed"]) == (0, 1)


@pytest.mark.parametrize("key, value", [("kernel", "c32"), ("seed", 7), ("l2", "1MiB"),
                                        ("timing", True)])
def test_an_edited_sweep_file_does_not_relabel_a_run(swept, key, value, tmp_path):
    """The run id matches, the run is good, but the sweep file now says
    another kernel (seed, L2, mode): the point is damaged, named by the
    label that differs, and no figure counts the run under it."""
    src, _ = swept
    root = tmp_path / "runs"
    shutil.copytree(src, root, ignore=shutil.ignore_patterns("catalog"))
    f = next((root / "sweeps").glob("tiny-*.json"))
    data = json.loads(f.read_text())
    assert data["points"][0][key] != value
    data["points"][0][key] = value
    f.write_text(json.dumps(data))
    status, rows, c = _status(root)
    assert status == ["damaged"] and rows == 1
    assert (c["done"], c["failed"]) == (0, 1)
    from colorsim.results.catalog import Catalog
    reason = Catalog(root).points("tiny", "paper")["reason"].iloc[0]
    assert reason.startswith("its sweep file's labels are not its run's: " + key), reason


def test_a_sweep_runs_an_unverified_point_again(swept, tmp_path, monkeypatch):
    from colorsim.orchestrate.sweep import BY_ID, run_sweep
    src, _ = swept
    root = tmp_path / "runs"
    shutil.copytree(src, root, ignore=shutil.ignore_patterns("catalog"))
    run = next((root / BY_ID).iterdir())
    _edit_config(run, lambda c: (c.pop("results"), c.pop("config_sha256")))
    status, rows, c = _status(root)
    assert status == ["unverified"] and c["done"] == 0
    monkeypatch.setenv("COLORSIM_EXPERIMENTS",
                       str(src.parent / "experiments.toml"))
    with open("/dev/null", "w") as quiet:
        counts = run_sweep("tiny", jobs=1, root=root, retries=0,
                           log=lambda *_: None, progress_stream=quiet)
    assert (counts["ran"], counts["done"]) == (1, 1), counts["failures"]
    assert load_run(run).verified
    assert _status(root)[0] == ["done"]


# -- names that keep runs apart --------------------------------------------

def test_default_names_differ_in_every_setting():
    import dataclasses
    from colorsim.describe.machine import get_machine
    from colorsim.describe.runspec import RunSpec, Workload
    from colorsim.describe.variants import parse_variant
    m = get_machine("ppro4")
    base = RunSpec(m, parse_variant("c32", m), Workload(tasks=64))
    others = [dataclasses.replace(base, workload=dataclasses.replace(base.workload, **kw))
              for kw in ({"seed": 2}, {"roi_ticks": 11}, {"warmup_ticks": 11},
                         {"burst": 2001}, {"buffer": 512})]
    others.append(dataclasses.replace(base, timing=True))
    emu = dataclasses.replace(m.emulation, icount_shift=m.emulation.icount_shift + 1)
    others.append(dataclasses.replace(base, machine=dataclasses.replace(m, emulation=emu)))
    emu = dataclasses.replace(m.emulation, rr_slice_min=1000)
    others.append(dataclasses.replace(base, machine=dataclasses.replace(m, emulation=emu)))
    names = [s.default_name() for s in [base] + others]
    assert len(set(names)) == len(names), names
    assert base.default_name() == RunSpec(m, parse_variant("c32", m),
                                          Workload(tasks=64)).default_name()


def test_figure1_variants_keep_their_own_runs_and_files(tmp_path, capsys):
    small = ["--tasks", "16", "--roi", "2", "--warmup", "2", "--out", str(tmp_path)]
    assert cli_main(["figure1", *small]) == 0
    first = {p.name: p.read_bytes() for p in tmp_path.glob("figure1-*")}
    runs = {p.name for p in tmp_path.iterdir() if p.is_dir()}
    assert len(first) == 2 and len(runs) == 2
    for more in (["--seed", "2"], ["--timing"]):
        assert cli_main(["figure1", *small, *more]) == 0, capsys.readouterr().err
        now = {p.name: p.read_bytes() for p in tmp_path.glob("figure1-*")}
        assert {k: now[k] for k in first} == first      # nothing overwritten
        first = now
    assert len(first) == 6
    dirs = [p for p in tmp_path.iterdir() if p.is_dir()]
    assert len(dirs) == 6 and all(load_run(d).verified for d in dirs)


# -- values the guest cannot honour are refused before anything runs ------

MACHINES = Path(__file__).resolve().parents[1] / "configs" / "machines.toml"


def _refused(argv, expect, capsys, out: Path):
    assert cli_main(argv) == 2, argv
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and expect in err[0], (argv, err)
    assert not out.exists(), "something was written"


@pytest.mark.parametrize("option,value,expect", [
    ("--seed", str(2**64 + 1), "seed must be between 1 and 18446744073709551615"),
    ("--burst", str(10**12), "burst must be between 1 and 4294967295"),
    ("--roi", str(2**63), "roi must be between 1 and"),
    ("--warmup", str(2**64), "warmup must be between 1 and"),
])
def test_workload_values_beyond_the_guests_width(option, value, expect,
                                                 capsys, tmp_path):
    out = tmp_path / "o"
    _refused(["run", *TINY, option, value, "--out", str(out)], expect, capsys, out)
    _refused(["figure1", "--tasks", "16", option, value, "--out", str(out)],
             expect, capsys, out)


@pytest.mark.parametrize("old,new,expect", [
    ('size = "640MiB"', 'size = "0B"', "guest memory 0B is refused"),
    ('size = "640MiB"', 'size = "1MiB"', "guest memory 1MiB is refused"),
    ('size = "640MiB"', 'size = "1500KiB"', "whole number of MiB"),
    ('clock = "200MHz"', 'clock = "0MHz"', "processor clock 0 Hz"),
    ("rr_slice_min = 0", "rr_slice_min = -5", "rr_slice_min -5 is outside 0..2147483647"),
    ("rr_slice_min = 0", "rr_slice_min = 4294967296", "rr_slice_min 4294967296 is outside"),
    ("rr_slice_min = 0", 'rr_slice_min = "many"',
     "emulation.rr_slice_min must be an integer, got 'many'"),
    ("rr_slice_min = 0", "rr_slice_mn = 0", "[ppro4.emulation]: unknown key 'rr_slice_mn'; did you mean 'rr_slice_min'?"),
    ("rr_slice_max = 0", "rr_slice_max = -1", "rr_slice_max -1 is outside 0..2147483647"),
    ("rr_slice_min = 0\nrr_slice_max = 0", "rr_slice_min = 500\nrr_slice_max = 100",
     "rr_slice_min 500 is above rr_slice_max 100"),
    ("hold_for_clients = false", "hold_for_clients = 1",
     "timing.hold_for_clients must be true or false, got 1"),
])
def test_machines_the_guest_cannot_be(old, new, expect, capsys, tmp_path,
                                      monkeypatch):
    text = MACHINES.read_text()
    assert old in text
    f = tmp_path / "machines.toml"
    f.write_text(text.replace(old, new, 1))
    monkeypatch.setenv("COLORSIM_MACHINES", str(f))
    out = tmp_path / "o"
    _refused(["run", *TINY, "--timing", "--out", str(out)], expect, capsys, out)


def test_an_l1_larger_than_the_l2_is_warned_about(capsys, tmp_path, monkeypatch):
    text = MACHINES.read_text()
    old = 'l1d = { size = "8KiB", assoc = 2 }'
    assert old in text
    f = tmp_path / "machines.toml"
    f.write_text(text.replace(old, 'l1d = { size = "1MiB", assoc = 2 }', 1))
    monkeypatch.setenv("COLORSIM_MACHINES", str(f))
    assert cli_main(["run", *TINY, "--dry-run", "--out", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert "warning: L1D 1MiB is larger than L2 512KiB" in err


def test_a_zero_clock_timing_run_does_not_break_the_catalog(tmp_path, monkeypatch):
    import dataclasses
    from colorsim.results import catalog
    spec = dataclasses.replace(_small(), timing=True)
    root = tmp_path / "runs"
    good = runner.run(spec, name="t", out=root, **QUIET)
    bad = root / "z"
    shutil.copytree(good, bad)
    # as published before clocks were checked (no digest then)
    _edit_config(bad, lambda c: (c.pop("config_sha256"),
                                 _set("machine", "processor", "clock_hz", 0)(c)))
    with pytest.raises(ResultsError, match="timing_hz="):
        load_run(bad)
    notes = []
    tables = catalog.build_tables(root, notice=notes.append)
    assert list(tables["runs"]["run"]) == ["t"] and "z" in notes[0]
    # a run the checks pass but the catalog cannot use is left out, too
    real = catalog.run_rows

    def breaks_on_z(run, r):
        if run.path.name == "z":
            raise ZeroDivisionError("float division by zero")
        return real(run, r)
    shutil.rmtree(bad)
    shutil.copytree(good, bad)
    monkeypatch.setattr(catalog, "run_rows", breaks_on_z)
    tables = catalog.build_tables(root)
    assert list(tables["runs"]["run"]) == ["t"]


def test_an_unverified_run_is_labelled_in_plots(good_run, tmp_path):
    run = tmp_path / "old"
    shutil.copytree(good_run, run)
    assert "[unverified]" not in load_run(run).label
    _edit_config(run, lambda c: (c.pop("results"), c.pop("config_sha256")))
    assert load_run(run).label.endswith(" [unverified]")


def test_a_run_with_a_wire_is_compared_with_its_own_wire():
    """A web run's config.json keeps the wire's settings under "network":
    the same spec is the same run, a wire of another bandwidth is another
    (before, the comparison never read the old run's wire, so every web
    run with a wire looked like one of other settings)."""
    from colorsim.describe.machine import get_machine
    from colorsim.describe.runspec import RunSpec, Workload
    from colorsim.describe.variants import parse_variant
    from colorsim.run.runner import differences
    m = get_machine("ppro4")
    w = Workload(program="/bin/web", client_cpus=3, args="--httpd,16,--clients,4")
    spec = RunSpec(m, parse_variant("vanilla", m), w, timing=True)
    old = json.loads(json.dumps(spec.to_dict()))
    assert "network" in old
    assert differences(old, spec, {}) == []
    old["network"]["bandwidth_bps"] *= 10
    assert differences(old, spec, {}) == [
        f"network.bandwidth_bps {m.network.bandwidth_bps * 10!r} -> "
        f"{m.network.bandwidth_bps!r}"]
    # and its client model under "clients": another model is another run
    old = json.loads(json.dumps(spec.to_dict()))
    old["clients"]["pcs"] = 1
    assert differences(old, spec, {}) == ["clients.pcs 1 -> 28"]
