"""The analysis layer (analysis/): each script runs on the recorded catalog
with pandas alone and prints what the paper-scale results table (docs/results.md), made by
colorsim's own report code, says for the same runs."""

import re
import subprocess
import sys

import pytest

from colorsim import ROOT

A = ROOT / "analysis"
SCRIPTS = sorted(p.name for p in A.glob("*.py") if p.name != "catalog.py")


def run(script, *args):
    p = subprocess.run([sys.executable, str(A / script), *map(str, args)],
                       capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert p.returncode == 0, p.stderr
    return p.stdout


def readme_row(title_start):
    rows = [l for l in (ROOT / "docs" / "results.md").read_text().splitlines()
            if l.startswith(f"| {title_start}") and "[paper," in l]
    assert rows, title_start
    return rows[0]                      # the result's row (a table may follow)


@pytest.mark.parametrize("script", SCRIPTS)
def test_every_script_runs_and_draws(script, tmp_path):
    if script == "stats_dump.py":
        out = run(script, "--grep", "simSeconds")
        assert re.search(r"\d+ stats in 2 dumps", out)
        return
    png = tmp_path / "p.png"
    out = run(script, "--plot", png)
    assert out.strip() and png.stat().st_size > 1000


def test_no_script_imports_colorsim():
    for p in A.glob("*.py"):
        assert not re.search(r"^\s*(from|import) colorsim", p.read_text(), re.M), p


def test_figure1_agrees_with_the_report():
    out = run("fig1_offsets.py")
    share = re.search(r"largest offset is ([\d.]+) %", out).group(1)
    assert f"0x030; {share} %" in readme_row("Figure 1:")
    assert "vanilla  peak at 0x030" in out


def test_table4_agrees_with_the_report():
    out = run("table4_web_speedup.py")
    row8 = [l.split() for l in out.splitlines() if l.split()[:1] == ["8"]][0]
    mean, lo, hi = (float(x) for x in row8[1:4])
    assert f"8 CPU {mean:+.1f} % [{lo:+.0f}..{hi:+.0f}]" in readme_row("Table 4:")


def test_fig6_agrees_with_the_report():
    # the results page's row gives each L2 size's best httpd count
    out = run("fig6_web_gain.py")
    lines = [l.split() for l in out.splitlines() if l.split()[:1] == ["512KiB"]]
    best = max(lines, key=lambda l: float(l[2]))
    mean, lo, hi = (float(x) for x in best[2:5])
    assert (f"512KiB {mean:+.1f} % [{lo:+.0f}..{hi:+.0f}] at {best[1]}"
            in readme_row("Figure 6:"))


def test_fig6s_steady_gain_agrees_with_the_report():
    # the results page's row from the runs that never recalculated, at 1024
    # httpd; where every region stayed steady, neither has such a row and
    # both say so
    out = run("fig6_web_gain.py")
    page = (ROOT / "docs" / "results.md").read_text()
    if "Every region stayed steady" in out:
        assert "runs whose regions never recalculated" not in page
        assert "In this recording no region fell into it" in page
        return
    assert "In this recording no region fell into it" not in page
    out = out.split("steady runs only")[1]
    row = readme_row("Figure 6 at 1024 httpd, runs whose regions never")
    seen = 0
    for l in out.splitlines():
        f = l.split()
        if f[1:2] == ["1024"]:
            assert f"{f[0]} {float(f[2]):+.1f} %" in row, (f, row)
            seen += 1
    assert seen == 3, out


def test_fig7s_task_reach_agrees_with_the_report():
    # the Figure 7 row's last column ends with the change over 0x00-0x41f
    out = run("fig7_colored_lines.py")
    row = readme_row("Figure 7: colored-line transactions, c32 vs vanilla (1024 httpd) [")
    reach = row.split("over offsets 0x00-0x41f")[1]
    seen = 0
    for l in out.splitlines():
        f = l.split()
        if f[:1] in (["256KiB"], ["512KiB"], ["1MiB"]):
            assert f"{f[0]} {float(f[-1]):+.1f} %" in reach, (f, reach)
            seen += 1
    assert seen == 3, out


def test_fig3_agrees_with_the_report():
    out = run("fig3_offset_0x30.py")
    m = re.search(r"from (\d+) to (\d+) httpd: 0x30 per request (x[\d.]+), "
                  r"throughput ([+-][\d.]+ %)", out)
    assert m, out
    assert (f"0x30 per request {m[3]} from {m[1]} to {m[2]} httpd; throughput {m[4]}"
            in readme_row("Figure 3:"))


def _by_cpu(out):
    """The rows of a per-CPU-count table the scripts print: {cpus: floats}."""
    return {int(f[0]): [float(x) for x in f[1:]] for f in map(str.split, out.splitlines())
            if f and f[0].isdigit()}


def test_table5_agrees_with_the_reports_miss_table():
    from colorsim.report.common import spread
    from colorsim.report.shapes import data
    from colorsim.results.catalog import Catalog

    rows = _by_cpu(run("table5_xeon_loop_misses.py"))
    runs = data(Catalog(ROOT / "recorded" / "paper"))["fig9"].runs
    s = spread(runs, ["cpus", "kernel"], "rqloop_l2_miss_ratio").set_index(["cpus", "kernel"])
    assert sorted(rows) == list(range(1, 9))
    for c, (van, c32, _queue) in rows.items():
        assert van == round(s.loc[(c, "vanilla"), "mean"] * 100, 1)
        assert c32 == round(s.loc[(c, "c32"), "mean"] * 100, 1)


def test_tables7_and_8_agree_with_the_report():
    from colorsim.report.common import spread
    from colorsim.report.shapes import data
    from colorsim.results.catalog import Catalog

    out = run("table7_8_chat.py")
    got = {m[1]: (int(m[0]), float(m[2]), float(m[3])) for m in re.findall(
        r"at (\d+) CPUs, (walk L2 miss %|contention %): vanilla ([\d.]+), c32 ([\d.]+)", out)}
    assert set(got) == {"walk L2 miss %", "contention %"}, out
    top, van, c32 = got["contention %"]
    assert f"| {van:.1f} % / {c32:.1f} % |" in readme_row("Table 8:")
    runs = data(Catalog(ROOT / "recorded" / "paper"))["fig10"].runs
    s = spread(runs[runs["cpus"] == top], ["kernel"], "rqloop_l2_miss_ratio").set_index("kernel")
    _, van, c32 = got["walk L2 miss %"]
    assert (van, c32) == (round(s.loc["vanilla", "mean"] * 100, 1),
                          round(s.loc["c32", "mean"] * 100, 1))
