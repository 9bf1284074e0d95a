"""Figures and the report from the catalog: byte-identical for the same
catalog, honest about what is missing, and checked in a real headless
browser (Debian's chromium, installed by scripts/setup.sh)."""

import re
import shutil
import subprocess

import pytest

from colorsim.report.figures import make_figures
from colorsim.results.catalog import rebuild
from tests.sweeps import sweep_with

SMALL = """
[defaults]
engine = "qemu"
warmup = 2
roi = 2
burst = 2000
timeout = 120
seeds = [1, 2]

[fig1]
title = "Figure 1, tiny"
needs = ["counting"]
stand_in = "synthetic"
outputs.fig1 = { needs = ["counting"], what = "offsets" }
[fig1.grid]
machine = "ppro4"
l2 = ["512KiB"]
cpus = [2]
kernels = ["vanilla", "c32"]
workload = "web"
tasks = [32]

[table2]
title = "Table 2, tiny"
needs = ["counting", "rqloop"]
stand_in = "synthetic"
outputs.table2 = { needs = ["rqloop"], what = "loop miss ratio" }
[table2.grid]
machine = "ppro4"
l2 = ["256KiB", "1MiB"]
cpus = [2]
kernels = ["vanilla", "c32"]
workload = "web"
tasks = [64]

[fig6]
title = "Figure 6, lacking (gem5: the fixture hides $GEM5)"
needs = ["gem5"]
outputs.fig6 = { needs = ["gem5", "timing", "web"], what = "throughput" }
[fig6.grid]
machine = "ppro4"
l2 = ["512KiB"]
cpus = [4]
kernels = ["vanilla", "c32"]
workload = "web"
tasks = [256]
"""

CHECK = r"""<!DOCTYPE html><html><body>
<iframe id="f" src="report.html" style="width:1200px;height:900px"></iframe>
<pre id="out">pending</pre>
<script>
document.getElementById('f').onload = function () {
  var d = this.contentDocument;
  var imgs = Array.prototype.slice.call(d.images).map(function (i) {
    return i.getAttribute('src') + '=' + (i.complete ? i.naturalWidth : 0); });
  var prov = d.querySelector('table.provenance');
  document.getElementById('out').textContent = 'IMAGES ' + imgs.join(' ') +
    ' TABLES ' + d.querySelectorAll('table.results').length +
    ' SECTIONS ' + d.querySelectorAll('section').length +
    ' PROVENANCE ' + (prov ? prov.innerText.replace(/\s+/g, ' ') : 'none') +
    ' END';
};
</script></body></html>
"""


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.delenv("GEM5", raising=False)        # so that fig6 lacks something
    mp.setenv("COLORSIM_GEM5_CACHE", str(tmp_path_factory.mktemp("no-gem5")))
    try:
        for root, c in sweep_with(tmp_path_factory, "figs", SMALL, "all"):
            assert c["done"] == 12 and c["lacks"] == 4
            yield root
    finally:
        mp.undo()


def _files(d):
    return {p.name: p.read_bytes() for p in sorted(d.iterdir()) if p.is_file()}


def test_same_catalog_same_bytes(swept, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    make_figures("all", root=swept, out=a, log=lambda *_: None)
    rebuild(swept)                                  # a fresh catalog
    make_figures("all", root=swept, out=b, log=lambda *_: None)
    fa, fb = _files(a), _files(b)
    assert set(fa) >= {"fig1.png", "fig1.svg", "table2.png", "table2.svg",
                       "report.html"}
    assert fa == fb
    svg = fa["fig1.svg"].decode()
    assert "<dc:date>" not in svg and not re.search(rb"20\d\d-\d\d-\d\d", fa["report.html"])


def test_report_puts_the_paper_beside_ours_and_says_what_lacks(swept, tmp_path):
    out = tmp_path / "f"
    make_figures("all", root=swept, out=out, log=lambda *_: None)
    html = (out / "report.html").read_text()
    assert "99.7" in html and "82.7" in html        # Table 2, the paper's
    assert "deviation (pp)" in html
    assert "Lacks: gem5" in html                    # fig6, not silently gone
    assert "the web workload (the synthetic stand-in ran)" in html
    assert "What the paper did not measure" in html and "Multi-queue + colored" in html
    # a point that went missing is counted, not quietly left out
    by_id = swept / "by-id"
    victim = sorted(d for d in by_id.iterdir() if not d.name.startswith("."))[0]
    moved = tmp_path / "moved"
    shutil.move(str(victim), moved)
    try:
        rebuild(swept)
        out2 = tmp_path / "g"
        lines = []
        make_figures("all", root=swept, out=out2, log=lines.append)
        assert any("1 missing" in l for l in lines), lines
        assert ">1</td>" in (out2 / "report.html").read_text()
    finally:
        shutil.move(str(moved), victim)
        rebuild(swept)


def test_report_opens_in_a_headless_browser(swept, tmp_path):
    chromium = shutil.which("chromium")
    assert chromium, "chromium is missing: run scripts/setup.sh (it installs it)"
    out = tmp_path / "f"
    make_figures("all", root=swept, out=out, log=lambda *_: None)
    (out / "check.html").write_text(CHECK)
    args = [chromium, "--headless", "--no-sandbox", "--disable-gpu",
            "--allow-file-access-from-files", "--virtual-time-budget=10000",
            f"--user-data-dir={tmp_path / 'profile'}"]
    r = subprocess.run(args + ["--dump-dom", (out / "check.html").as_uri()],
                       capture_output=True, text=True, timeout=120)
    m = re.search(r"IMAGES (.*) TABLES (\d+) SECTIONS (\d+) PROVENANCE (.*) END",
                  r.stdout)
    assert m, (r.stdout[-2000:], r.stderr[-2000:])
    imgs = dict(x.split("=") for x in m.group(1).split())
    assert set(imgs) == {"fig1.png", "table2.png"}
    assert all(int(w) > 100 for w in imgs.values()), imgs   # decoded, not broken
    assert int(m.group(2)) >= 4 and int(m.group(3)) >= 4
    # the provenance block, as the browser renders it: the catalog's hash,
    # the runs' source commit, the scale and the seeds
    from colorsim.report.html import catalog_hash
    prov = m.group(4)
    assert catalog_hash(swept) in prov and "source commit" in prov, prov
    assert "placement seeds 1, 2" in prov and "scale paper" in prov, prov
    shot = tmp_path / "shot.png"
    subprocess.run(args + ["--window-size=1200,2000", f"--screenshot={shot}",
                           (out / "report.html").as_uri()],
                   capture_output=True, timeout=120)
    assert shot.is_file() and shot.stat().st_size > 20000


def test_report_has_provenance_and_honest_states(swept, tmp_path):
    import sys

    import pandas as pd

    from colorsim.report.html import catalog_hash
    from colorsim import ROOT
    out = tmp_path / "f"
    make_figures("all", root=swept, out=out, log=lambda *_: None)
    html = (out / "report.html").read_text()
    assert "Provenance" in html and catalog_hash(swept) in html
    runs = pd.read_parquet(swept / "catalog" / "runs.parquet")
    for commit in set(runs["source_commit"].dropna()):
        assert commit in html
    assert "placement seeds" in html and ">1, 2<" in html
    # fig6 has no done point: not swept, never "lacks nothing"
    sec = html[html.index('<section id="fig6">'):]
    sec = sec[:sec.index("</section>")]
    assert "Not swept" in sec and "Lacks nothing" not in sec
    # "all" draws what the catalog holds and names the rest (a catalog
    # need not hold every experiment); asking for fig6 itself exits
    # non-zero, naming it; the report is written either way
    cli = [sys.executable, "-m", "colorsim", "figures"]
    p = subprocess.run(cli + ["all", "--runs", str(swept), "--out",
                              str(tmp_path / "g")],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "fig6: not swept in this catalog" in p.stdout
    assert "fig1: not swept" not in p.stdout
    p = subprocess.run(cli + ["fig6", "--runs", str(swept), "--out",
                              str(tmp_path / "g")],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert p.returncode == 2 and "fig6" in p.stderr and "fig1" not in p.stderr
    assert (tmp_path / "g" / "report.html").is_file()
    p = subprocess.run(cli + ["fig1", "--runs", str(swept), "--out",
                              str(tmp_path / "h")],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr


def test_large_deviations_are_flagged():
    import pandas as pd

    from colorsim.report.common import Item
    from colorsim.report.html import large_deviations
    t2 = pd.DataFrame([
        {"kernel": "c32", "source": "ours (%)", "L2 512KiB": "60.0 [59.0-61.0]"},
        {"kernel": "c32", "source": "paper (%)", "L2 512KiB": "35.8"},
        {"kernel": "c32", "source": "deviation (pp)", "L2 512KiB": "+24.2"}])
    f7 = pd.DataFrame([{"L2": "1MiB", "colored change % (ours)": "-97.0",
                        "colored change % (paper)": "-73.0",
                        "deviation (pp)": "-24.0"},
                       {"L2": "512KiB", "colored change % (ours)": "-40.0",
                        "colored change % (paper)": "-33.3",
                        "deviation (pp)": "-6.7"}])
    items = [Item("table2", "t", "table2", tables=[("c", t2)]),
             Item("fig7", "f", "fig7", tables=[("c", f7)])]
    got = large_deviations(items)
    assert [(i, round(v, 1)) for i, _, v in got] == [("table2", 24.2), ("fig7", -24.0)]
    assert "L2 512KiB" in got[0][1] and "1MiB" in got[1][1]


def test_report_prints_to_pdf(swept, tmp_path):
    out = tmp_path / "f"
    lines = []
    make_figures("all", root=swept, out=out, log=lines.append, pdf=True)
    pdf = out / "report.pdf"
    data = pdf.read_bytes()
    assert data.startswith(b"%PDF-") and b"%%EOF" in data[-64:]
    assert len(re.findall(rb"/Type\s*/Page[^s]", data)) >= 2   # every section, not a blank page
    assert any("report (PDF)" in l for l in lines)
    assert not list(out.glob(".report.tmp*"))
