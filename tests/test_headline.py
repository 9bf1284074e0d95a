"""The README's headline table is generated from a catalog, and the
catalog's Parquet tables are read with plain pandas and DuckDB, as the README
shows, with no checkout on the path."""

import re
import shutil
import subprocess
import sys

import pytest

from colorsim import ROOT


def _cli(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "colorsim", *map(str, args)],
                          cwd=cwd, capture_output=True, text=True, timeout=600)


def _docs(*args, cwd=ROOT):
    """The maintainer's command line (it writes and checks the docs' tables)."""
    return subprocess.run([sys.executable, "-m", "colorsim.maintain", *map(str, args)],
                          cwd=cwd, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def headline_runs(tmp_path_factory):
    out = tmp_path_factory.mktemp("headline")
    p = _docs("headline", "--run", "--runs", out)
    assert p.returncode == 0, p.stderr
    return out, p.stdout


def test_readme_headline_is_the_catalogs(headline_runs):
    out, table = headline_runs
    p = _docs("headline", "--runs", out, "--check", ROOT / "README.md")
    assert p.returncode == 0, p.stderr
    # the table has the paper's shape: vanilla peaks at 0x030 everywhere
    rows = [l for l in table.splitlines() if re.match(r"\| \d+ [KM]iB", l)]
    assert len(rows) == 3 and all("| 0x030 |" in r for r in rows)


def test_a_hand_edited_headline_is_caught(headline_runs, tmp_path):
    out, _ = headline_runs
    readme = tmp_path / "README.md"
    text = (ROOT / "README.md").read_text()
    readme.write_text(text.replace("| 0x030 |", "| 0x031 |", 1))
    p = _docs("headline", "--runs", out, "--check", readme)
    assert p.returncode == 2 and "not what the catalog gives" in p.stderr
    p = _docs("headline", "--runs", out, "--write", readme)
    assert p.returncode == 0, p.stderr
    assert readme.read_text() == text
    readme.write_text("no markers here\n")
    p = _docs("headline", "--runs", out, "--write", readme)
    assert p.returncode == 2 and "markers" in p.stderr
    assert readme.read_text() == "no markers here\n"


def test_headline_without_runs_says_how_to_make_them(tmp_path):
    p = _docs("headline", "--runs", tmp_path / "empty")
    assert p.returncode == 2 and "catalog" in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1


def _readme_snippet(lang, start):
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(rf"```{lang}\n(.*?)```", text, re.S)
    return next(b for b in blocks if b.lstrip().startswith(start))


def test_readme_catalog_queries_need_no_checkout(headline_runs, tmp_path):
    out, _ = headline_runs
    work = tmp_path / "elsewhere"
    (work / "runs").mkdir(parents=True)
    shutil.copytree(out / "catalog", work / "runs" / "catalog")
    py = _readme_snippet("python", "import pandas")
    code = py.strip().splitlines()
    code[-1] = f"print(({code[-1]}).to_csv(index=False))"
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    p = subprocess.run([sys.executable, "-I", "-c", "\n".join(code)], cwd=work,
                       capture_output=True, text=True, timeout=120, env=env)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.strip().splitlines()
    assert lines[0] == "run,l2_size,rqloop_l2_miss_ratio" and len(lines) == 4
    # DuckDB is an optional extra: without it, said by name
    pytest.importorskip("duckdb", reason="requires duckdb: the README's DuckDB "
                        "query needs it (pip install duckdb)")
    sh = _readme_snippet("sh", "python3 -c \"import duckdb")
    cmd = sh.strip().replace("python3", sys.executable, 1)
    p = subprocess.run(["bash", "-c", cmd.replace(" -c ", " -I -c ", 1)],
                       cwd=work, capture_output=True, text=True, timeout=120,
                       env=env)
    assert p.returncode == 0, p.stderr
    assert "vanilla" in p.stdout and "c32" in p.stdout
