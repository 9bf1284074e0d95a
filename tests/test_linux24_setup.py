"""Set-up remembers the user's Linux 2.4 tree for the tests
(scripts/remember-linux24.sh, read by conftest.py), so that the tests that
build Linux 2.4 run on that machine without LINUX24_SRC."""

import subprocess
import sys

from colorsim import ROOT


def test_a_tree_given_to_set_up_is_remembered_for_the_tests(tmp_path):
    """set-up remembers LINUX24_SRC's tree (scripts/remember-linux24.sh);
    a later pytest without the variable builds from it, and a record whose
    tree is gone, or a directory that is no tree, leaves the tests skipped."""
    import os
    tree, rec = tmp_path / "linux-2.4.37.11", tmp_path / "cache" / "linux24-src"
    (tree / "kernel").mkdir(parents=True)
    rec.parent.mkdir()
    (tree / "Makefile").write_text("VERSION = 2\n")
    env = {k: v for k, v in os.environ.items() if k != "LINUX24_SRC"}
    env["COLORSIM_LINUX24_RECORD"] = str(rec)

    def remember(src):
        return subprocess.run(["bash", str(ROOT / "scripts" / "remember-linux24.sh")],
                              env={**env, "LINUX24_SRC": str(src)},
                              capture_output=True, text=True, timeout=60)

    def header():
        p = subprocess.run([sys.executable, "-m", "pytest", "--co", "-p", "no:cacheprovider",
                            "tests/test_envvars.py"], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stdout + p.stderr
        return [l for l in p.stdout.splitlines() if l.startswith("Linux 2.4 tree:")]

    p = remember(tmp_path)                      # no kernel/: not a tree
    assert p.returncode == 0 and "not remembered" in p.stderr and not rec.exists()
    assert header() == ["Linux 2.4 tree: none (the requires_linux24 tests skip)"]
    p = remember(tree)
    assert p.returncode == 0 and rec.read_text().strip() == str(tree.resolve())
    assert header() == [f"Linux 2.4 tree: {tree.resolve()}"]
    (tree / "Makefile").unlink()                # the tree is gone
    assert header() == ["Linux 2.4 tree: none (the requires_linux24 tests skip)"]
