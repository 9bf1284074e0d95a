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
import re
from pathlib import Path

CSS = """
body { font-family: sans-serif; max-width: 1100px; margin: 2em auto; padding: 0 1em;
       color: #222; }
table { border-collapse: collapse; margin: 0.6em 0 1.2em; font-size: 0.85em;
        max-width: 100%; }
table.wide { font-size: 0.62em; }
table.wide th, table.wide td { padding: 1px 3px; }
th, td { border: 1px solid #bbb; padding: 2px 5px; text-align: right; }
th { background: #eee; }
td { overflow-wrap: break-word; }
h1, h2, p, li { overflow-wrap: anywhere; }
/* printed (the PDF): A4 landscape, nothing cut at the right edge, no
   figure or table row split across pages */
@page { size: A4 landscape; margin: 12mm; }
@media print {
  body { max-width: none; margin: 0; padding: 0; font-size: 10pt; }
  table { font-size: 7.5pt; }
  table.wide { font-size: 6.5pt; }
  figure, tr, img { break-inside: avoid; }
  h2 { break-after: avoid; }
  a { color: inherit; text-decoration: none; }
}
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


def _lacks(it) -> str:
    """What a figure with done points still lacks: missing points, mixed
    builds, instruments (or "")."""
    return ", ".join(filter(None, [_missing(it), _mixed(it), *it.lacks]))


def _state(it) -> str:
    """A figure's state in the summary: not swept, what it lacks, or
    complete."""
    if not it.counts.get("done"):
        return "not swept" + (f"; lacks {', '.join(it.lacks)}" if it.lacks else "")
    return _lacks(it) or "nothing"


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


WIDE_COLUMNS = 10      # a table with more columns prints smaller


def _table(df, caption: str) -> str:
    body = df.to_html(index=False, escape=True, border=0, na_rep="-")
    cls = "dataframe results" + (" wide" if len(df.columns) > WIDE_COLUMNS else "")
    # a long header may break after an underscore or a slash, not mid-word
    body = re.sub(r"<th>([^<]*)</th>",
                  lambda m: "<th>" + re.sub(r"([_/])", r"\1<wbr>", m.group(1)) + "</th>",
                  body)
    return (f"<p class=\"caption\">{html.escape(caption)}</p>\n"
            + body.replace('<table class="dataframe">', f'<table class="{cls}">'))


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


def _section(it, out: Path, root: Path) -> dict:
    """What the template shows of one figure or table."""
    lacks = _lacks(it) if it.counts.get("done") else ", ".join(it.lacks)
    return {"id": it.id, "title": it.title, "swept": bool(it.counts.get("done")),
            "lacks": lacks, "notes": list(it.notes), "paper": it.paper,
            "runs": _runs_html(it, out, root),
            "images": [img for img in it.images if img.endswith(".png")],
            "tables": [_table(df, caption) for caption, df in it.tables]}


def _template():
    """The report's page (templates/report.html.j2), HTML-escaped."""
    import jinja2
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(Path(__file__).parent / "templates"),
        autoescape=True, undefined=jinja2.StrictUndefined,
        trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    return env.get_template("report.html.j2")


def write_report(items, out: Path, cat, exps, used=None) -> Path:
    """report.html in ``out``: the template filled from the catalog and the
    figures' items, written in one step."""
    import pandas as pd
    runs = cat.table("runs")
    pts = cat.table("points")
    status = pts["status"]
    summary = pd.DataFrame([{
        "figure/table": it.id, "experiment": it.experiment,
        "scale": it.scale or "-",
        "points done": it.counts.get("done", 0),
        "failed": it.counts.get("failed", 0),
        "missing": it.counts.get("missing", 0),
        "not runnable": it.counts.get("lacks", 0),
        "images": len(it.images) // 2,
        "lacks": _state(it)} for it in items])
    page = _template().render(
        css=CSS, n_runs=len(runs),
        points={"all": len(pts), **{k: int((status == k).sum()) for k in
                                    ("done", "failed", "missing", "lacks")}},
        summary=_table(summary, "What each figure and table has, and lacks"),
        deviations=large_deviations(items), limit=f"{LARGE_DEVIATION_PP:g}",
        provenance=provenance(used, items, cat.root),
        sections=[_section(it, out, cat.root) for it in items])
    path = out / "report.html"
    tmp = out / f".report.tmp{os.getpid()}.html"
    tmp.write_text(page)
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
