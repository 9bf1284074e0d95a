"""The paper's figures and tables from the results catalog.

``python3 -m colorsim figures EXPERIMENT|all`` reads ``runs/catalog``
(colorsim/catalog.py), selects each experiment's sweep points, and writes
PNG and SVG figures plus an HTML report (colorsim/report/html.py) into
``runs/figures``.  Every figure and table says how many of its points are
done, failed, missing or not runnable, and what it still lacks; where the
paper published numbers (configs/paper_results.toml) they stand beside
ours with the deviation.  The same catalog gives byte-identical files:
no dates in the image metadata, a fixed SVG hash salt, sorted rows.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from colorsim.errors import ConfigError, ResultsError
from colorsim.report.common import (paper_results, Item, ExpData, pick_scale,
                                    _status_line, runs_behind, paper_only_tables)
from colorsim.report.counting import (HERD, eq3, fig1, fig3, fig7, fig8, herd,
                                      table2)
from colorsim.report.scaling import fig6, fig9, fig10
from colorsim.report.burst import burst
from colorsim.report.waits import waits


def lacking_only(d: ExpData, out: Path, paper: dict) -> list:
    items = []
    for o in d.exp.outputs.values():
        it = Item(o.id, f"{paper.get(o.id, {}).get('source', o.id)}: {o.what}",
                  d.exp.name, d.scale, lacks=list(d.exp.output_lacks(o)),
                  paper=paper.get(o.id, {}).get("note", ""))
        it.tables += paper_only_tables(o.id, paper)
        items.append(it)
    return items


BUILDERS = {"fig1": fig1, "fig3": fig3, "fig6": fig6, "fig7": fig7,
            "table2": table2, "fig8": fig8, "fig9": fig9, "fig10": fig10,
            "eq3": eq3, HERD: herd, "burst": burst}


def make_figures(name: str, root=None, out=None, quick=None, log=print,
                 require_points=False, pdf=False) -> Path:
    """Every figure of ``name`` ("all" or one experiment) and the report.

    With ``require_points`` the report is still written, and then a
    ResultsError names every asked-for figure or table that has no done
    point (the command line's exit status says so); for "all", only when
    no figure at all has one (a catalog, such as a recorded one, need not
    hold every experiment).  With ``pdf`` the
    report is printed to report.pdf too."""
    from colorsim.results.catalog import Catalog
    from colorsim.describe.experiments import load_experiments, select
    from colorsim.run.rundir import runs_root
    from colorsim.report.html import write_report
    root = runs_root(root)
    cat = Catalog(root)
    exps = select(load_experiments(check_points=False), name)
    out = Path(out) if out else root / "figures"
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out} is a file, not a directory")
    cat.table("runs")                  # a missing catalog: one line, early
    out.mkdir(parents=True, exist_ok=True)
    paper = paper_results()
    items, used = [], []
    for e in exps:
        scale = pick_scale(cat, e, quick)
        d = ExpData(cat, e, scale)
        used.append(d.runs)
        if d.counts["points"] == 0:
            for o in e.outputs.values():
                it = Item(o.id, f"{paper.get(o.id, {}).get('source', o.id)}: "
                          f"{o.what}", e.name, scale,
                          lacks=list(e.output_lacks(o)),
                          notes=[f"not swept at the {scale} scale: run "
                                 f"'python3 -m colorsim sweep {e.name}"
                                 f"{' --quick' if scale == 'quick' else ''}'"])
                it.tables += paper_only_tables(o.id, paper)
                items.append(it)
            continue
        new = BUILDERS.get(e.name, lacking_only)(d, out, paper)
        new += waits(d)     # web and Chat runs: where the server's tasks wait
        behind = runs_behind(d.runs)
        for it in new:
            it.counts = d.counts
            it.runs = behind
            it.notes.insert(0, _status_line(d))
            if not it.lacks and it.id in e.outputs:
                it.lacks = list(e.output_lacks(e.outputs[it.id]))
            wl = sorted(set(d.runs["workload"]) - {"synthetic"})
            if d.stand_in and not set(wl) & set(it.lacks):
                it.lacks.append(f"the {'/'.join(wl)} workload (the synthetic "
                                f"stand-in ran)")
        items += new
    if name == "all":                      # a catalog with Linux 2.4's pairs
        from colorsim.report import linux24
        more, runs = linux24.section(cat, out)
        items += more
        if runs is not None:
            used.append(runs)
    used = pd.concat([u for u in used if len(u)], ignore_index=True) \
        if any(len(u) for u in used) else None
    report = write_report(items, out, cat, exps, used)
    for it in items:
        what = ", ".join(it.images) if it.images else "no figure"
        lack = f"; lacks {', '.join(it.lacks)}" if it.lacks else ""
        log(f"{it.id} ({it.experiment}, {it.scale or '-'}): {what}; "
            f"{it.counts.get('done', 0)}/{it.counts.get('points', 0)} points done, "
            f"{it.counts.get('failed', 0)} failed, "
            f"{it.counts.get('missing', 0)} missing, "
            f"{it.counts.get('lacks', 0)} not runnable{lack}")
    log(f"report: {report}")
    if pdf:
        from colorsim.report.html import write_pdf
        log(f"report (PDF): {write_pdf(report)}")
    empty = [it.id for it in items if not it.counts.get("done")]
    if name == "all" and len(empty) < len(items):
        for e in empty:             # a catalog need not hold every experiment
            log(f"{e}: not swept in this catalog (named in the report)")
        empty = []
    if require_points and empty:
        raise ResultsError(
            f"no done points for {', '.join(empty)} (the report {report} shows "
            f"them as not swept): run 'python3 -m colorsim sweep "
            f"{name}{' --quick' if quick else ''}' first")
    return report
