"""scripts/build-gem5.sh: the build of gem5 from the user's source.  The
build itself takes about 45 minutes, so it runs only where a user asks
(`scons gem5`); these tests check its refusals, which come before anything
is installed, checked out or written."""

import subprocess

import pytest

from colorsim import ROOT

SCRIPT = ROOT / "scripts" / "build-gem5.sh"


def build(env_extra, tmp_path):
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path),
           "COLORSIM_GEM5_CACHE": str(tmp_path / "cache"), **env_extra}
    return subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True,
                          text=True, timeout=60)


def fake_tree(path, version):
    (path / "src" / "python" / "gem5").mkdir(parents=True)
    (path / "src" / "base").mkdir(parents=True, exist_ok=True)
    (path / "SConstruct").write_text("# not gem5\n")
    (path / "src" / "base" / "version.cc").write_text(
        f'const char *gem5Version = "{version}";\n')
    return path


@pytest.mark.parametrize("setup, words", [
    (lambda t: {}, "GEM5_SRC is not set"),
    (lambda t: {"GEM5_SRC": str(t / "nowhere")}, "is not a directory"),
    (lambda t: {"GEM5_SRC": str(t)}, "neither a git repository nor a gem5 source tree"),
    (lambda t: {"GEM5_SRC": str(fake_tree(t / "g", "23.1.0.0"))},
     "is gem5 '23.1.0.0', not 24.0.0.1"),
    (lambda t: {"GEM5_SRC": str(t), "COLORSIM_GEM5_TAG": "v23.0.0.0"},
     "patches and recorded runs are for v24.0.0.1"),
    (lambda t: {"GEM5_SRC": str(t), "COLORSIM_JOBS": "0"}, "not a positive number"),
])
def test_bad_input_is_refused_before_anything_is_written(tmp_path, setup, words):
    p = build(setup(tmp_path), tmp_path)
    assert p.returncode == 2, p.stderr
    assert words in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert not (tmp_path / "cache").exists()


def test_a_git_source_without_the_tag_is_refused(tmp_path):
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    p = build({"GEM5_SRC": str(repo)}, tmp_path)
    assert p.returncode == 2 and "has no tag v24.0.0.1" in p.stderr, p.stderr
    assert not (tmp_path / "cache").exists()



def test_a_cached_build_makes_gem5_experiments_available(tmp_path, monkeypatch):
    """With no GEM5 set, the suite's own build (the cache's current-gem5)
    is what describes gem5 as available, as it is what the engine runs."""
    from colorsim.describe.experiments import available
    monkeypatch.delenv("GEM5", raising=False)
    monkeypatch.setenv("COLORSIM_GEM5_CACHE", str(tmp_path))
    assert "gem5" not in available()
    binary = tmp_path / "gem5-x" / "src" / "build" / "X86C" / "gem5.fast"
    binary.parent.mkdir(parents=True)
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    (tmp_path / "current-gem5").write_text("gem5-x\n")
    assert "gem5" in available()
    binary.chmod(0o644)                 # not executable: not a build
    assert "gem5" not in available()
