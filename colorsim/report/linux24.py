"""Real Linux 2.4 beside the testbed and the paper: the report's section.

Linux 2.4.37 built from the user's tree, as i386 (the paper's) and as
x86_64, vanilla against 32 colors on the paper's 4-way Pentium Pro at its
three L2 sizes, beside the testbed kernel's headline pair and the paper:
where vanilla's bus traffic peaks (Figure 1), how the colored-line
transactions change (Figure 7) and the run-queue loop's L2 miss ratio
(Table 2); and where each kernel puts the fields the walk reads.  The rows
come from a catalog that holds those eighteen counting runs
(``python3 -m colorsim.maintain linux24-table --run`` makes them; the
repository records them in ``recorded/linux24``).  docs/results.md's
``linux24`` block is the same table in Markdown
(colorsim/orchestrate/linux24table.py).
"""

from __future__ import annotations

from pathlib import Path

from colorsim.errors import ResultsError
from colorsim.report.pairs import KERNELS, L2S, TASKS, per_kinst_pair, pick_runs

NAMES = ("linux24-vanilla", "linux24-c32")   # the catalog's kernel column
I386_NAMES = ("linux24-i386-vanilla", "linux24-i386-c32")
# The walk's fields, 2.4.4's name (the testbed's layout) and 2.4.37's:
# 2.4.37 tests cpus_runnable where 2.4.4 tested has_cpu, and its layout
# names the list head, of which the walk reads .next.
FIELDS = (("counter", "counter"), ("nice", "nice"), ("policy", "policy"),
          ("mm", "mm"), ("has_cpu", "cpus_runnable"),
          ("processor", "processor"), ("cpus_allowed", "cpus_allowed"),
          ("run_list.next", "run_list"))


def picks(cat) -> dict:
    """The eighteen runs, picked once: {"linux", "i386", "testbed": per L2
    size of L2S, {kernel: its catalog row}} (pairs.pick_runs)."""
    return {key: pick_runs(cat, names, TASKS, how="linux24-table")
            for key, names in (("linux", NAMES), ("i386", I386_NAMES),
                               ("testbed", KERNELS))}


def table_rows(cat, picked=None) -> list:
    """One row per L2 size: Linux's pairs (i386, x86_64), the testbed's
    pair, the paper's (from ``picked``, :func:`picks`, or the catalog's)."""
    from colorsim.report.common import paper_results
    paper = paper_results()
    p = picked or picks(cat)
    linux, i386, testbed = p["linux"], p["i386"], p["testbed"]
    rows = []
    for i, l2 in enumerate(L2S):
        rows.append({
            "l2": l2,
            "i386": per_kinst_pair(*(i386[i][k] for k in I386_NAMES)),
            "linux": per_kinst_pair(*(linux[i][k] for k in NAMES)),
            "testbed": per_kinst_pair(testbed[i]["vanilla"], testbed[i]["c32"]),
            "paper_peak": paper["fig1"]["peak_offset"],
            "paper_colored": paper["fig7"]["colored_change"].get(l2),
            "paper_miss": (paper["table2"]["vanilla"][i],
                           paper["table2"]["c32"][i])})
    return rows


def _walk(cat, row) -> dict:
    """One Linux vanilla run's walk (the paper's 512 KiB L2): its fields,
    its peak and the field under it, and every line the walk reads per
    task with the fields in it and vanilla's share of all transactions
    there (each transaction at its line's base)."""
    from colorsim.results.rundata import hot_offsets, load_run, offset_histogram
    # the catalog's paths are relative to its runs folder
    run = load_run(Path(cat.root) / row["path"])
    lay = run.layout
    fl = lay["task_struct"]["fields"]
    read = sorted(lay["scheduler_hot"]["fields_read_per_task"],
                  key=lambda n: fl[n]["offset"])
    peak = int(row["peak_offset"])
    under = [n for n in read if fl[n]["offset"] <= peak < fl[n]["offset"] + fl[n]["size"]]
    hot = hot_offsets(lay)
    h = offset_histogram(run, "line")
    total = float(h.sum()) or 1.0
    lines = [(lo, [n for n in read if lo <= fl[n]["offset"] < lo + hot["line"]],
              float(h.get(lo, 0)) / total) for lo in hot["lines"][:hot["per_task"]]]
    return {"fields": fl, "peak": peak, "peak_field": under[0] if under else None,
            "lines": lines, "first": lay["scheduler_hot"]["first_touched"]}


def field_rows(cat, picked=None) -> dict:
    """The walk's fields at their offsets in the testbed's layout and both
    Linux builds, and what each Linux's vanilla walk does (512 KiB; the
    runs from ``picked``, :func:`picks`, or the catalog's)."""
    from colorsim.results.rundata import load_run
    i = L2S.index("512KiB")
    p = picked or picks(cat)
    linux = _walk(cat, p["linux"][i]["linux24-vanilla"])
    i386 = _walk(cat, p["i386"][i]["linux24-i386-vanilla"])
    testbed = p["testbed"][i]
    lay_t = load_run(Path(cat.root) / testbed["vanilla"]["path"]).layout
    ft = lay_t["task_struct"]["fields"]
    return {"fields": [(old, ft.get(old), new, i386["fields"].get(new),
                        linux["fields"].get(new)) for old, new in FIELDS],
            "x86_64": linux, "i386": i386,
            "testbed_first": lay_t["scheduler_hot"]["first_touched"]}


SOURCES = (("i386", "Linux 2.4.37 i386"), ("linux", "Linux 2.4.37 x86_64"),
           ("testbed", "testbed"))


def _frames(rows, fields):
    """The section's two tables as DataFrames: one row per L2 size and
    kernel source, and the walk's fields at their offsets."""
    import pandas as pd
    pct = lambda x: None if x is None or x != x else round(100 * x, 1)
    out = []
    for r in rows:
        for key, name in SOURCES:
            p = r[key]
            out.append({"L2": r["l2"], "kernel": name, "vanilla's peak": f"{p['peak']:#05x}",
                        "colored lines, c32 vs vanilla (%)": pct(p["colored_change"]),
                        "walk L2 miss, vanilla (%)": pct(p["miss_vanilla"]),
                        "walk L2 miss, c32 (%)": pct(p["miss_c32"])})
        pc = r["paper_colored"]
        out.append({"L2": r["l2"], "kernel": "the paper (2.4.4, i386)",
                    "vanilla's peak": f"{r['paper_peak']:#05x}",
                    "colored lines, c32 vs vanilla (%)": pc,
                    "walk L2 miss, vanilla (%)": r["paper_miss"][0],
                    "walk L2 miss, c32 (%)": r["paper_miss"][1]})
    at = lambda f: "—" if f is None else f"{f['offset']:#05x}, {f['size']} B"
    walk = pd.DataFrame([{"2.4.4 (the testbed's layout)": old, "offset, size": at(fo),
                          "2.4.37": new, "i386": at(fi), "x86_64": at(fx)}
                         for old, fo, new, fi, fx in fields["fields"]])
    return pd.DataFrame(out), walk


def _figure(pairs, out: Path) -> list:
    """Two panels per L2 size and kernel source: the colored-line change
    and c32's walk miss ratio."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from colorsim.report.common import save
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    for ax, col in zip(axes, ("colored lines, c32 vs vanilla (%)", "walk L2 miss, c32 (%)")):
        wide = pairs.pivot(index="L2", columns="kernel", values=col).reindex(list(L2S))
        wide.plot.bar(ax=ax, rot=0, width=0.8)
        ax.set_title(col, fontsize=9)
        ax.axhline(0, color="#444", lw=0.6)
        ax.set_xlabel("L2 (4-way PPro, 1024 tasks)")
        ax.get_legend().remove()
    fig.legend(*axes[1].get_legend_handles_labels(), loc="lower center", ncol=4,
               fontsize=7, frameon=False)
    fig.suptitle("Real Linux 2.4 beside the testbed and the paper (counting runs, seed 1)",
                 fontsize=9)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    return save(fig, out, "linux24")


def section(cat, out: Path) -> tuple:
    """(items, runs): the report's Linux 2.4 section and the catalog rows of
    its runs, where ``cat`` holds those pairs; else ([], None) (most
    catalogs have no Linux runs)."""
    import pandas as pd

    from colorsim.report.common import Item, runs_behind
    try:
        picked = picks(cat)
        rows, fields = table_rows(cat, picked), field_rows(cat, picked)
    except ResultsError:
        return [], None
    pairs, walk = _frames(rows, fields)
    runs = pd.DataFrame([row for per_l2 in picked.values() for pick in per_l2
                         for row in pick.values()])
    it = Item("linux24", "Real Linux 2.4 beside the testbed: Figure 1's peak, Figure 7's "
              "colored lines, Table 2's walk miss ratio", "linux24-table", "",
              paper="the paper ran Linux 2.4.4 on i386; ours is the user's 2.4.37 tree, "
                    "built for i386 and for x86_64 with our coloring patch")
    it.counts = {"points": len(runs), "done": len(runs)}
    it.runs = runs_behind(runs)
    it.notes.append(f"{len(runs)} counting runs of {TASKS} tasks on ppro4, seed 1: "
                    "vanilla and c32 of each kernel at each L2 size")
    it.tables += [("Per L2 size and kernel: vanilla's peak page offset, the colored-line "
                   "transactions (per instruction) and the run-queue loop's L2 miss ratio",
                   pairs),
                  ("The fields the walk reads, at their offsets in each kernel", walk)]
    it.images = _figure(pairs, out)
    return [it], runs
