"""The report from the recorded paper-scale catalog stands alone: it is
drawn from recorded/paper without any run of this machine, exits 0 though
the catalog holds only some experiments, says how much of each sweep is
missing, and lists under every figure the runs behind it and the engine
builds they came from, flagging a figure whose points mix builds."""

import re
import subprocess
import sys

from colorsim import ROOT
from colorsim.report.common import Item, engine_builds
from colorsim.report.html import _mixed, _state


def test_a_figure_mixing_builds_is_flagged():
    one = [("a", "qemu 1; plugin x", "1"), ("b", "qemu 1; plugin x", "2")]
    two = one + [("c", "qemu 1; plugin y", "2")]
    assert engine_builds(one) == {"qemu 1; plugin x": 2}     # commits alone do not
    it = Item("fig9", "t", "fig9", counts={"points": 3, "done": 3}, runs=one)
    assert _state(it) == "nothing" and _mixed(it) == ""
    it.runs = two
    assert _state(it) == "points from 2 engine builds"
    it.counts = {"points": 4, "done": 3}
    assert _state(it) == "1 of 4 points missing, points from 2 engine builds"


def test_the_recorded_report_stands_alone(tmp_path):
    out = tmp_path / "figures"
    p = subprocess.run([sys.executable, "-m", "colorsim", "figures", "all",
                        "--runs", str(ROOT / "recorded" / "paper"), "--out", str(out)],
                       cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stderr[-2000:]
    html = (out / "report.html").read_text()
    sections = dict(re.findall(r'<section id="([^"]+)">(.*?)</section>', html, re.S))
    assert "table2" in sections and "table2.png" in sections["table2"]
    drawn = 0
    for sid, sec in sections.items():
        if "Not swept" in sec or sid == "unmeasured":
            continue
        m = re.search(r"The (\d+) runs behind it, from (\d+) engine build", sec)
        assert m, sid
        runs = re.findall(r'<li><a href="[^"]+/">([^<]+)</a></li>', sec)
        assert len(runs) == int(m.group(1)) > 0, sid
        mixed = int(m.group(2)) > 1
        assert (f"points from {m.group(2)} engine builds" in sec) == mixed, sid
        assert mixed or "engine builds" not in sec.split("<details>")[0], sid
        drawn += 1
    assert drawn >= 10
    # an incomplete sweep is never "lacks nothing"
    for sid, sec in sections.items():
        if re.search(r"\d+ of \d+ points missing", sec):
            assert "Lacks nothing" not in sec, sid


FIT = r"""<!DOCTYPE html><html><body>
<iframe id="f" src="report.html" style="width:%dpx;height:900px"></iframe>
<pre id="out">pending</pre>
<script>
document.getElementById('f').onload = function () {
  var d = this.contentDocument, w = d.documentElement.clientWidth, wide = [];
  d.querySelectorAll('table, figure, h1, h2, p').forEach(function (t) {
    var r = t.getBoundingClientRect();
    if (r.right > w + 1) wide.push((t.closest('section') || d.body).id + ':' +
                                   t.tagName + ':' + Math.round(r.right));
  });
  document.getElementById('out').textContent =
    'WIDTH ' + w + ' TABLES ' + d.querySelectorAll('table').length +
    ' WIDE ' + (wide.join(' ') || 'none') + ' END';
};
</script></body></html>
"""


def test_the_recorded_report_fits_a_printed_page(tmp_path):
    """Every table, figure and heading of the recorded report fits the width
    of an A4 page printed landscape (273 mm inside the margins, about 1030
    CSS pixels; the report prints at a smaller size than 1000 pixels of a
    screen show): nothing is cut at the right edge."""
    import shutil
    chromium = shutil.which("chromium")
    assert chromium, "chromium is missing: run scripts/setup.sh (it installs it)"
    out = tmp_path / "figures"
    p = subprocess.run([sys.executable, "-m", "colorsim", "figures", "all",
                        "--runs", str(ROOT / "recorded" / "paper"), "--out", str(out)],
                       cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stderr[-2000:]
    for width in (1000,):
        (out / "fit.html").write_text(FIT % width)
        r = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu",
                            "--allow-file-access-from-files",
                            "--virtual-time-budget=10000",
                            f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom",
                            (out / "fit.html").as_uri()],
                           capture_output=True, text=True, timeout=180)
        m = re.search(r"WIDTH (\d+) TABLES (\d+) WIDE (.*) END", r.stdout)
        assert m, (r.stdout[-2000:], r.stderr[-2000:])
        assert int(m.group(2)) >= 10
        assert m.group(3) == "none", (width, m.group(3))


def test_figure_7s_task_reach_holds_both_lines_in_both_kernels():
    """Offsets 0x00-0x41f hold the colored span (0x20-0x41f) and vanilla's
    state line (0x00-0x1f), which every fcntl wake-all reads: vanilla's
    runs put far more there than c32's, whose state lines are spread over
    the span, and the note that compares the kernels over the reach covers
    every L2 size."""
    from colorsim.report.common import TASK_REACH
    from colorsim.report.counting import task_lines_change
    from colorsim.report.shapes import data
    from colorsim.results.catalog import Catalog
    d = data(Catalog(ROOT / "recorded" / "paper"))["fig7"]
    assert not d.runs.empty
    lo, hi = TASK_REACH
    assert (d.in_band(0x20, hi) == d.runs["colored_lines_sum"]).all()
    state = d.in_band(lo, 0x20) / d.runs["schedule_calls"]
    for l2, g in d.runs.groupby("l2_size"):
        v = state[g.index[g["kernel"] == "vanilla"]].mean()
        c = state[g.index[g["kernel"] == "c32"]].mean()
        assert c < 0.2 * v, (l2, v, c)
    note = task_lines_change(d)
    assert len(note) == 1 and all(f"{x} " in note[0] for x in ("256KiB", "512KiB", "1MiB"))
