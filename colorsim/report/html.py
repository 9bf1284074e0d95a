"""The HTML report: every figure and table of the paper, ours beside theirs.

Written by ``python3 -m colorsim figures`` (colorsim/report/figures.py) into the
figures folder as ``report.html``, with the images beside it.  Each
section says how many points are done, failed, missing or not runnable,
and what the figure or table still lacks.  No dates, no absolute paths: the
same catalog gives the same bytes.
"""

from __future__ import annotations

import hashlib
import html
import os
from pathlib import Path

CSS = """
body { font-family: sans-serif; max-width: 1100px; margin: 2em auto; color: #222; }
table { border-collapse: collapse; margin: 0.6em 0 1.2em; font-size: 0.85em; }
th, td { border: 1px solid #bbb; padding: 2px 6px; text-align: right; }
th { background: #eee; }
.lacks { color: #a40; font-weight: bold; }
.ok { color: #262; }
.status { color: #444; font-size: 0.9em; }
.notswept { color: #777; font-weight: bold; }
.provenance td, .provenance th { text-align: left; }
figure { margin: 0.5em 0; }
img { max-width: 100%; border: 1px solid #ddd; }
"""


def _missing(it) -> str:
    """"80 of 96 points missing" for a figure whose sweep is not done, or
    ""."""
    n, done = it.counts.get("points", 0), it.counts.get("done", 0)
    return f"{n - done} of {n} points missing" if done < n else ""


def _mixed(it) -> str:
    """"points from 2 engine builds" for a figure whose runs mix builds,
    or ""."""
    from colorsim.report.common import engine_builds
    n = len(engine_builds(it.runs))
    return f"points from {n} engine builds" if n > 1 else ""


def _state(it) -> str:
    """A figure's state in the summary: not swept, what it lacks, or
    complete."""
    if not it.counts.get("done"):
        return "not swept" + (f"; lacks {', '.join(it.lacks)}" if it.lacks else "")
    return ", ".join(filter(None, [_missing(it), _mixed(it), *it.lacks])) or "nothing"


def _runs_html(it, out: Path, root: Path) -> str:
    """The runs behind a figure, each linked to its folder, under the
    engine builds they came from."""
    from colorsim.report.common import engine_builds
    if not it.runs:
        return ""
    by = {}
    for name, build, commit in it.runs:
        by.setdefault(f"{build}; commit {commit}", []).append(name)
    parts = [f"<details><summary>The {len(it.runs)} runs behind it, from "
             f"{len(engine_builds(it.runs))} engine build(s)</summary>"]
    for build in sorted(by):
        parts.append(f"<p class=\"status\">{html.escape(build)}: "
                     f"{len(by[build])} runs</p><ul>")
        for name in sorted(by[build]):
            href = os.path.relpath(root / name, out).replace(os.sep, "/")
            parts.append(f"<li><a href=\"{html.escape(href)}/\">"
                         f"{html.escape(name)}</a></li>")
        parts.append("</ul>")
    return "".join(parts) + "</details>"


def _table(df, caption: str) -> str:
    body = df.to_html(index=False, escape=True, border=0, na_rep="-")
    return (f"<p class=\"caption\">{html.escape(caption)}</p>\n"
            + body.replace('<table class="dataframe">',
                           '<table class="dataframe results">'))


def catalog_hash(root: Path) -> str:
    """SHA-256 over the catalog's Parquet files (names and bytes, sorted):
    two reports from the same catalog name the same hash."""
    h = hashlib.sha256()
    folder = Path(root) / "catalog"
    for f in sorted(folder.glob("*.parquet")):
        h.update(f.name.encode() + b"\0" + f.read_bytes())
    return h.hexdigest()


def _values(df, col) -> list:
    if df is None or col not in df.columns:
        return []
    return sorted({str(v) for v in df[col] if v is not None and v == v})


def provenance(used, items, root: Path) -> str:
    """What the report's numbers come from: every source commit (and whether
    its tree was dirty) of the runs it mixes, the engines' exact versions,
    the plugin builds, the catalog's hash, the scales, accept modes and
    seeds."""
    import pandas as pd
    rows = []
    if used is not None and len(used):
        runs = used.drop_duplicates("run_id")
        src = runs.assign(
            commit=runs.get("source_commit", pd.Series(dtype=object)).fillna("unknown"),
            dirty=runs.get("source_dirty", pd.Series(dtype=object)).map(
                {True: "dirty", False: "clean"}).fillna("unknown"))
        for (c, d), g in src.groupby(["commit", "dirty"]):
            rows.append(("source commit", f"{c} ({d})", len(g)))
        for col, what in (("engine_version", "engine"),
                          ("plugin_sha256", "bus-monitor plugin (SHA-256)")):
            if col in runs.columns:
                for v, g in runs.groupby(runs[col].fillna("none")):
                    rows.append((what, str(v), len(g)))
        n_runs = len(runs)
    else:
        n_runs = 0
    scales = sorted({it.scale for it in items if it.scale})
    rows.append(("scale", ", ".join(scales) or "-", ""))
    rows.append(("accept mode (web)", ", ".join(
        v for v in _values(used, "accept") if v) or "-", ""))
    rows.append(("placement seeds", ", ".join(_values(used, "seed")) or "-", ""))
    rows.append(("catalog (SHA-256 of its Parquet files)", catalog_hash(root), ""))
    df = pd.DataFrame(rows, columns=["what", "value", "runs"])
    dirty = any("(dirty)" in str(v) for _, v, _ in rows)
    warn = ("<p class=\"lacks\">Some runs were made from a source tree with "
            "uncommitted changes: their source commit does not say all of "
            "what ran.</p>") if dirty else ""
    return ("<h2 id=\"provenance\">Provenance</h2>"
            f"<p>The {n_runs} runs behind this report, by where they came from. "
            "Two reports with the same catalog hash show the same numbers.</p>"
            + warn + _table(df, "Provenance of the runs in this report")
            .replace("dataframe results", "dataframe provenance"))


LARGE_DEVIATION_PP = 20.0     # flagged: ours and the paper's this far apart


def _number(text):
    try:
        return float(str(text).split("[")[0].replace("+", "").strip())
    except ValueError:
        return None


def large_deviations(items, limit: float = LARGE_DEVIATION_PP) -> list:
    """(figure, what, deviation in points) wherever one of the report's
    tables puts ours at least ``limit`` percentage points from the paper:
    a "deviation" column, or a row whose ``source`` is the deviation."""
    found = []
    for it in items:
        for _caption, df in it.tables:
            cols = [c for c in df.columns if str(c).startswith("deviation")]
            keys = [c for c in df.columns if c not in cols and not
                    str(c).startswith(("paper", "ours"))][:2]
            for _, row in df.iterrows():
                label = ", ".join(str(row[k]) for k in keys)
                for c in cols:
                    v = _number(row[c])
                    if v is not None and abs(v) >= limit:
                        found.append((it.id, label, v))
                if str(row.get("source", "")).startswith("deviation"):
                    for c in df.columns:
                        if c in ("kernel", "source"):
                            continue
                        v = _number(row[c])
                        if v is not None and abs(v) >= limit:
                            found.append((it.id, f"{row.get('kernel', '')}, {c}", v))
    return found


def _deviations_html(items) -> str:
    dev = large_deviations(items)
    if not dev:
        return ("<p class=\"ok\">No table puts ours " f"{LARGE_DEVIATION_PP:g} "
                "percentage points or more from the paper.</p>")
    lis = "".join(f"<li><a href=\"#{html.escape(i)}\">{html.escape(i)}</a>: "
                  f"{html.escape(w)}: {v:+.1f} pp</li>" for i, w, v in dev)
    return (f"<p class=\"lacks\">{len(dev)} numbers lie {LARGE_DEVIATION_PP:g} "
            f"percentage points or more from the paper's (each explained, or "
            f"not yet, in its section):</p><ul class=\"deviations\">{lis}</ul>")


def write_report(items, out: Path, cat, exps, used=None) -> Path:
    runs = cat.table("runs")
    pts = cat.table("points")
    parts = ["<!DOCTYPE html>", "<html lang=\"en\"><head><meta charset=\"utf-8\">",
             "<title>colorsim: Yamamura et al. 2002 reproduced</title>",
             f"<style>{CSS}</style></head><body>",
             "<h1>colorsim report: cache coloring of the task structure</h1>",
             "<p>Each figure and table of Yamamura et al., <i>Speeding Up Kernel "
             "Scheduler by Reducing Cache Misses</i> (USENIX FREENIX 2002), from "
             "the results catalog, with the paper's published numbers "
             "(configs/paper_results.toml) beside ours and the deviation. Our "
             "numbers are the mean over placement seeds with [min-max]. "
             f"The catalog holds {len(runs)} runs; the sweeps list "
             f"{len(pts)} points ({int((pts['status'] == 'done').sum())} done, "
             f"{int((pts['status'] == 'failed').sum())} failed, "
             f"{int((pts['status'] == 'missing').sum())} missing, "
             f"{int((pts['status'] == 'lacks').sum())} not runnable with "
             "today's instruments). Throughput is per modelled second of "
             "the region (--timing): requests (web), messages (Chat) or "
             "bursts (the built-in workload) over the region's elapsed "
             "modelled time, idle time included.</p>",
             "<h2 id=\"summary\">Summary</h2>"]
    import pandas as pd
    summary = pd.DataFrame([{
        "figure/table": it.id, "experiment": it.experiment,
        "scale": it.scale or "-",
        "points done": it.counts.get("done", 0),
        "failed": it.counts.get("failed", 0),
        "missing": it.counts.get("missing", 0),
        "not runnable": it.counts.get("lacks", 0),
        "images": len(it.images) // 2,
        "lacks": _state(it)} for it in items])
    parts.append(_table(summary, "What each figure and table has, and lacks"))
    parts.append("<h2 id=\"deviations\">Large deviations from the paper</h2>")
    parts.append(_deviations_html(items))
    parts.append(provenance(used, items, cat.root))
    for it in items:
        parts.append(f"<section id=\"{html.escape(it.id)}\">")
        parts.append(f"<h2>{html.escape(it.title)}</h2>")
        if not it.counts.get("done"):
            parts.append("<p class=\"notswept\">Not swept: no point of this "
                         "figure or table is done.</p>")
            if it.lacks:
                parts.append(f"<p class=\"lacks\">Lacks: "
                             f"{html.escape(', '.join(it.lacks))}</p>")
        elif it.lacks or _missing(it) or _mixed(it):
            lacks = ", ".join(filter(None, [_missing(it), _mixed(it), *it.lacks]))
            parts.append(f"<p class=\"lacks\">Lacks: {html.escape(lacks)}</p>")
        else:
            parts.append("<p class=\"ok\">Lacks nothing the suite can measure "
                         "today.</p>")
        for n in it.notes:
            parts.append(f"<p class=\"status\">{html.escape(n)}</p>")
        parts.append(_runs_html(it, out, cat.root))
        if it.paper:
            parts.append(f"<p class=\"paper\">Paper: {html.escape(it.paper)}</p>")
        for img in it.images:
            if img.endswith(".png"):
                svg = img[:-4] + ".svg"
                parts.append(f"<figure><img src=\"{html.escape(img)}\" "
                             f"alt=\"{html.escape(it.title)}\"><figcaption>"
                             f"<a href=\"{html.escape(svg)}\">SVG</a></figcaption>"
                             "</figure>")
        for caption, df in it.tables:
            parts.append(_table(df, caption))
        parts.append("</section>")
    parts.append("<section id=\"unmeasured\"><h2>What the paper did not measure"
                 "</h2>")
    parts.append("<ul><li><b>Multi-queue + colored.</b> The paper measured the "
                 "multi-queue scheduler and coloring separately. Ours: the "
                 "mq-c32 rows of fig9/fig10 and Tables 4-8, throughput and "
                 "the lockmeter over every CPU's run-queue lock included.</li>"
                 "<li><b>Held-out geometries of eq. (3).</b> L2 sizes and "
                 "process counts outside the paper's grid (2048 and 4096 "
                 "processes at 512 KiB-2 MiB of L2), where eq. (3), c &ge; p / (s / 8 "
                 "KiB), predicts the colors needed: the eq3 experiment "
                 "(<code>python3 -m colorsim sweep eq3</code>) and its figure "
                 "above, the loop miss ratio at eq. (3)'s colors and twice "
                 "them.</li>"
                 "<li><b>The built-in workload's burst length.</b> How the "
                 "shapes of Figure 6 and Table 6 change when the scheduler's "
                 "share of the work changes: the burst experiment "
                 "(<code>python3 -m colorsim sweep burst</code>) and its "
                 "table above.</li></ul></section>")
    parts.append("</body></html>\n")
    path = out / "report.html"
    tmp = out / f".report.tmp{os.getpid()}.html"
    tmp.write_text("\n".join(parts))
    tmp.replace(path)
    return path


def write_pdf(report: Path) -> Path:
    """The report as PDF beside it (``report.pdf``), printed by headless
    Chromium (Debian's ``chromium``, which set-up installs), for people who
    print papers.  Written in one step; a PDF carries its print date, so
    unlike the HTML it is not the same bytes twice."""
    import shutil
    import subprocess
    import tempfile

    from colorsim.errors import ConfigError, ResultsError
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        raise ConfigError("--pdf needs chromium (scripts/setup.sh installs it)")
    report = Path(report).resolve()
    pdf = report.with_suffix(".pdf")
    tmp = report.with_name(f".report.tmp{os.getpid()}.pdf")
    with tempfile.TemporaryDirectory() as profile:
        p = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu",
                            "--allow-file-access-from-files",
                            f"--user-data-dir={profile}", "--no-pdf-header-footer",
                            f"--print-to-pdf={tmp}", report.as_uri()],
                           capture_output=True, text=True, timeout=300)
    if p.returncode != 0 or not tmp.is_file() or tmp.stat().st_size == 0:
        tmp.unlink(missing_ok=True)
        raise ResultsError(f"chromium could not print {report} to PDF "
                           f"(exit status {p.returncode})")
    tmp.replace(pdf)
    return pdf
