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

from analysis.results import load_run
from colorsim import runner
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
    from colorsim.sweep import run_sweep
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
    from colorsim.engines.qemu import QemuEngine
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


def test_a_full_disk_is_the_reason(tiny_disk, capsys):
    rc = cli_main(["run", *TINY, "--name", "r", "--out", str(tiny_disk)])
    err = capsys.readouterr().err
    assert rc == 2 and "internal error" not in err
    assert "no space left on the disk" in err and "never ended" not in err
    assert not (tiny_disk / "r").exists()
