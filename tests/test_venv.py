"""Set-up's Python environment: the checkout's own .venv, every package at
the version constraints.txt pins, colorsim installed from this checkout,
so that two clones on one machine never run each other's code."""

import re
import subprocess
import sys

import pytest

from colorsim import ROOT

VENV = ROOT / ".venv"


def _pins() -> dict:
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            name, version = line.split("==")
            pins[name.lower().replace("_", "-")] = version
    return pins


def test_every_requirement_is_pinned():
    """One list of what set-up installs (pyproject.toml, with every extra,
    the extras set-up names), every package of it, and of what those need,
    pinned exactly in constraints.txt."""
    import tomllib
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    setup = (ROOT / "scripts" / "setup.sh").read_text()
    assert f'-e ".[{",".join(sorted(extras))}]"' in setup
    assert not (ROOT / "requirements.txt").exists()
    pins = _pins()
    for req in project["dependencies"] + sum(extras.values(), []):
        base = re.split(r"[\[<>=!~ ]", req)[0]
        assert base.lower().replace("_", "-") in pins, base
    assert {"pyarrow", "pandas", "numpy", "matplotlib", "dask-jobqueue"} <= set(pins)


def test_the_checkouts_environment_runs_its_own_colorsim_at_the_pinned_versions():
    assert (VENV / "bin" / "python3").is_file(), \
        "no .venv in the checkout: run scripts/setup.sh"
    p = subprocess.run([str(VENV / "bin" / "python3"), "-c",
                        "import colorsim, pandas, pyarrow, numpy, matplotlib\n"
                        "print(colorsim.__file__)\n"
                        "for m in (pandas, pyarrow, numpy, matplotlib):\n"
                        "    print(m.__name__, m.__version__)"],
                       cwd="/", capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0] == str(ROOT / "colorsim" / "__init__.py")
    pins = _pins()
    for line in lines[1:]:
        name, version = line.split()
        assert pins[name] == version, (name, version, pins[name])
    cmd = subprocess.run([str(VENV / "bin" / "colorsim"), "machines"], cwd="/",
                         capture_output=True, text=True, timeout=120)
    assert cmd.returncode == 0 and "ppro4" in cmd.stdout, cmd.stderr


@pytest.mark.slow
def test_two_clones_each_run_their_own_colorsim(tmp_path):
    """A second clone set up on the same machine gets its own .venv, whose
    colorsim is the second clone's; the first clone's stays its own."""
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    shared = ROOT.parent / "shared"
    if shared.exists():
        (tmp_path / "shared").symlink_to(shared.resolve())
    p = subprocess.run(["bash", "scripts/setup.sh"], cwd=clone,
                       capture_output=True, text=True, timeout=3600)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    where = "import colorsim; print(colorsim.__file__)"
    for root in (clone, ROOT):
        out = subprocess.run([str(root / ".venv" / "bin" / "python3"), "-c", where],
                             cwd="/", capture_output=True, text=True,
                             timeout=120).stdout.strip()
        assert out == str(root / "colorsim" / "__init__.py"), (root, out)
    assert sys.prefix != str(clone / ".venv")
