"""The catalog's declared schema: the same columns and types whatever runs
are present, lists as lists, gem5's units and descriptions kept; and the
recorded gem5 runs listed in every catalog."""

import json
import re
import shutil
import subprocess
import sys
import textwrap

import pyarrow.parquet as pq
import pytest

from colorsim import ROOT
from colorsim.cli import main as cli_main
from colorsim.results import runrows
from colorsim.results.catalog import TABLES, Catalog, rebuild
from colorsim.results.schema import COUNTERS, SCHEMAS
from colorsim.run import runner

RECORDED = ROOT / "recorded" / "gem5"
REAL_RECORDED = runrows.RECORDED


def _schemas(root):
    return {t: pq.read_schema(root / "catalog" / f"{t}.parquet").remove_metadata()
            for t in TABLES}


def _sweep_file(root, lacks):
    """A sweep file of one point that lacks ``lacks`` (no run needed)."""
    d = root / "sweeps"
    d.mkdir(parents=True)
    point = {"machine": "ppro4", "l2": "512KiB", "cpus": 4, "kernel": "c32",
             "workload": "web", "workload_run": "web", "tasks": 256,
             "seed": 1, "warmup": None, "roi": None, "burst": 2000,
             "engine": "gem5", "lacks": lacks}
    (d / "fig6-paper.json").write_text(json.dumps({
        "experiment": "fig6", "scale": "paper", "points": [point],
        "outputs": {"fig6": {"what": "throughput", "needs": ["gem5", "timing"],
                             "lacks": lacks}}}))


@pytest.fixture(scope="module")
def catalogs(tmp_path_factory):
    """Three catalogs of different runs: a QEMU run, two gem5 runs, none."""
    from test_integrity import _small
    mp = pytest.MonkeyPatch()
    mp.setattr(runrows, "RECORDED", ())     # the recorded runs: a test below
    try:
        qemu = tmp_path_factory.mktemp("qemu")
        runner.run(_small(), name="q", out=qemu, progress=lambda *_: None)
        gem5 = tmp_path_factory.mktemp("gem5")
        for name in ("ppro4-l2_512k-c32-t1024", "piii8-l2_1024k-vanilla-t1024"):
            shutil.copytree(RECORDED / name, gem5 / name)
        _sweep_file(gem5, ["gem5"])
        empty = tmp_path_factory.mktemp("empty")
        for root in (qemu, gem5, empty):
            rebuild(root)
        yield qemu, gem5, empty
    finally:
        mp.undo()


def test_the_same_schema_whatever_runs_are_there(catalogs):
    qemu, gem5, empty = catalogs
    a, b, c = map(_schemas, catalogs)
    for t in TABLES:
        assert a[t] == b[t] == c[t] == SCHEMAS[t], t
    assert len(Catalog(qemu).runs()) == 1 and len(Catalog(gem5).runs()) == 2
    assert len(Catalog(empty).runs()) == 0


def test_columns_keep_their_types_and_lists_stay_lists(catalogs):
    _, gem5, _ = catalogs
    runs = Catalog(gem5).runs()
    for _, r in runs.iterrows():                  # config.json's way_bits
        cfg = json.loads((gem5 / r["path"] / "config.json").read_text())
        assert r["way_bits"] == cfg["variant"]["way_bits"]
    assert runs["n_cycles"].notna().all()         # a gem5 counter
    # the loop's reads on gem5: the suite's probe (gem5 patch 0002)
    assert runs["n_rqloop_l2_read_misses"].notna().all()
    pts = Catalog(gem5).points()
    assert list(pts["lacks"].iloc[0]) == ["gem5"]
    out = Catalog(gem5).outputs()
    assert list(out["needs"].iloc[0]) == ["gem5", "timing"]
    st = Catalog(gem5).stats()
    sim = st[st["name"] == "simSeconds"].iloc[0]
    assert sim["unit"] == "Second" and sim["desc"] == "Number of seconds simulated"


def test_every_counter_a_run_writes_is_a_declared_column(catalogs):
    qemu, gem5, _ = catalogs
    for root in (qemu, gem5):
        stats = set(Catalog(root).counters()["stat"])
        assert stats <= set(COUNTERS), stats - set(COUNTERS)


def test_declared_counters_follow_the_plugin_and_the_kernel():
    """A counter added to the cache model, busmon or the kernel's wait
    report without a column here fails this test."""
    src = (ROOT / "engine" / "qemu-plugin" / "cachemodel.c").read_text()
    body = src[src.index("cm_counter_name[CM_NCOUNTERS] = {"):]
    names = re.findall(r'"(\w+)"', body[:body.index("};")])
    busmon = (ROOT / "engine" / "qemu-plugin" / "busmon.c").read_text()
    fill = busmon[busmon.index("static void fill_counters_csv"):]
    fill = fill[:fill.index("\n}\n")]
    names += re.findall(r'"(\w+)"', fill)
    names += re.findall(r"all,(\w+),", fill)
    names += re.findall(r",\w+,(\w+),%", fill)
    for fn in ("machine_counters", "dma_counters"):   # cpu -1 rows
        body = busmon[busmon.index(f"static void {fn}("):]
        names += re.findall(r'\{ "(\w+)",', body[:body.index("\n}\n")])
    body = busmon[busmon.index("static void wset_counters("):]
    names += re.findall(r"all,(\w+),", body[:body.index("\n}\n")])
    body = busmon[busmon.index("wset_name[WS_KINDS] = {"):]
    names += re.findall(r'"(\w+)"', body[:body.index("};")])
    wait = (ROOT / "kernels" / "kernel" / "waitstat.c").read_text()
    words = wait[wait.index("names[NR_WCHAN] = {"):]
    names += [f"wait_{w}_mean" for w in
              re.findall(r'"(\w+)"', words[:words.index("};")])]
    assert len(names) > 40
    assert set(names) <= set(COUNTERS), set(names) - set(COUNTERS)


def test_recorded_gem5_runs_are_in_the_catalog(tmp_path, capsys, monkeypatch):
    """`runs --where engine=gem5` lists the repository's recorded gem5
    runs, with where they came from, in a catalog of no runs at all."""
    monkeypatch.setattr(runrows, "RECORDED", REAL_RECORDED)
    rebuild(tmp_path)
    assert cli_main(["runs", "--runs", str(tmp_path), "--where",
                     "engine=gem5", "--where", "machine=ppro4"]) == 0
    out = capsys.readouterr().out
    folders = sorted(d.name for d in RECORDED.iterdir()
                     if d.name.startswith("ppro4") and d.is_dir())
    assert len(folders) == 6
    for name in folders:
        assert f"recorded/gem5/{name}" in out
    assert "source_commit" in out and "9fcf1bb9a822" in out
    rec = Catalog(tmp_path).recorded()
    assert rec["recorded"].all() and len(Catalog(tmp_path).runs()) == 0
    # each run once: ../shared/gem5's full copies of the same runs are not
    # listed again
    assert rec["run_id"].is_unique
    assert not rec["path"].str.startswith("/").any()
    # by id: a name may also be an older recording's in ../shared/gem5
    rid = rec[rec["path"] == f"recorded/gem5/{folders[0]}"]["run_id"].iloc[0]
    assert cli_main(["show", "--runs", str(tmp_path), rid[:16]]) == 0
    assert "a recorded run" in capsys.readouterr().out


def _doc_snippet(start):
    """The docs page's Python block that begins with ``start``."""
    text = (ROOT / "docs" / "sweeps-and-catalog.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    found = [textwrap.dedent(b) for b in blocks
             if textwrap.dedent(b).startswith(start)]
    assert len(found) == 1, f"no one block of the docs begins with {start!r}"
    return found[0]


def _run_outside(code, catalogs, tmp_path):
    """``code`` run from a folder outside the checkout whose runs/catalog is
    the gem5 catalog, with nothing of ours on the path (-I: no PYTHONPATH,
    no user site, no current folder)."""
    _, gem5, _ = catalogs
    work = tmp_path / "elsewhere"
    (work / "runs").mkdir(parents=True)
    shutil.copytree(gem5 / "catalog", work / "runs" / "catalog")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    p = subprocess.run([sys.executable, "-I", "-c", code], cwd=work, env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "colorsim" not in p.stderr
    return p.stdout


def test_the_documented_pandas_query_needs_no_checkout(catalogs, tmp_path):
    code = _doc_snippet("import pandas")
    assert len(code.strip().splitlines()) == 2
    out = _run_outside(code, catalogs, tmp_path)
    assert "rqloop_l2_miss_ratio" in out and "c32" in out and "vanilla" in out


def test_the_documented_duckdb_query_needs_no_checkout(catalogs, tmp_path):
    pytest.importorskip("duckdb", reason="requires duckdb: the DuckDB query "
                        "needs it (pip install duckdb)")
    code = _doc_snippet("import duckdb")
    assert len(code.strip().splitlines()) == 2
    out = _run_outside(code, catalogs, tmp_path)
    assert "per_schedule" in out and "gem5" in out and "piii8" in out
