"""The figures and tables of bus traffic and the run-queue loop's misses:
Figure 1, 3, 7 and 8 (with its throughput panel), Table 2, the herd's
three, and eq. (3) on held-out geometries."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from colorsim.report.common import (KERNEL_COLORS, l2_name, Item, ExpData, TASK_REACH,
                                    some_recalculated, steady_runs,
                                    spread, fmt_num, _setup_matplotlib, save,
                                    procs, context, timed, unit_of, fmt_spread,
                                    _errbar, _colors_axis, _miss_table,
                                    _miss_figure, queue_spread, fmt_queue)


def fig1(d: ExpData, out: Path, paper: dict) -> list:
    from colorsim.report.plots import HotLines, OffsetPanel, figure1
    it = Item("fig1", "Figure 1: bus transactions per page offset", "fig1",
              d.scale, paper=paper.get("fig1", {}).get("note", ""))
    kernels = [k for k in ("vanilla", "c32") if k in set(d.runs["kernel"])]
    if not kernels:
        it.notes.append("no runs yet")
        return [it]
    panels, rows = [], []
    for k in kernels:
        sub = d.runs[d.runs["kernel"] == k].sort_values("seed")
        panels.append(OffsetPanel(k, KERNEL_COLORS.get(k, "k"),
                                  [d.offsets(r) for r in sub["run_id"]]))
        for _, r in sub.iterrows():
            rows.append({"kernel": k, "seed": int(r["seed"]),
                         "peak offset": f"{int(r['peak_offset']):#05x}",
                         "peak count": int(r["peak_count"]),
                         "colored lines": int(r["colored_lines_sum"]),
                         "all offsets": int(r["total"]),
                         **_peak_vs_paper(k, int(r["peak_offset"]),
                                          paper["fig1"]["peak_offset"])})
    r0 = d.runs.iloc[0]
    line = int(r0["line"])
    first = int(d.runs[d.runs["kernel"] == kernels[0]]["first_touched"].iloc[0])
    hot = HotLines(first - first % line, line, int(d.runs["colored_lo"].min()),
                   int(d.runs["colored_hi"].max()))
    stem = d.stem("fig1")
    _setup_matplotlib()
    figure1(panels, [out / f"{stem}.png", out / f"{stem}.svg"], hot,
            f"Figure 1: {r0['machine']}, L2 {l2_name(r0['l2_size'])}, {procs(d)}",
            paper_peak=paper["fig1"]["peak_offset"], footer=context(d, "not normalised: transactions in the region"))
    it.images = [f"{stem}.png", f"{stem}.svg"]
    it.tables.append(("Peak per seed (ours) beside the paper's peak offset",
                      pd.DataFrame(rows)))
    return [it]


def _peak_vs_paper(kernel, ours, theirs) -> dict:
    """The paper gives the vanilla peak only (0x30)."""
    if kernel != "vanilla":
        return {"paper peak": "-", "deviation": "-"}
    return {"paper peak": f"{theirs:#05x}",
            "deviation": ("same offset" if ours == theirs
                          else f"{ours - theirs:+#x} bytes")}


def fig3(d: ExpData, out: Path, paper: dict) -> list:
    plt = _setup_matplotlib()
    it = Item("fig3", "Figure 3: transactions at offset 0x30 vs. processes",
              "fig3", d.scale, paper=paper.get("fig3", {}).get("note", ""))
    it.lacks = list(d.exp.output_lacks(d.exp.outputs["fig3"]))
    if d.runs.empty:
        it.notes.append("no runs yet")
        return [it]
    at30 = [int(d.offsets(r).get(0x30, 0)) for r in d.runs["run_id"]]
    df = d.runs.assign(at30=at30)
    s = spread(df, ["tasks"], "at30")
    tdf = timed(d)
    fig, axes = plt.subplots(1, 2 if len(tdf) else 1, squeeze=False,
                             figsize=(10 if len(tdf) else 5.5, 3.2))
    ax = axes[0, 0]
    _errbar(ax, s["tasks"], s, color=KERNEL_COLORS["vanilla"],
            label="vanilla, transactions at 0x30 (mean, min-max of seeds)")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("processes (httpd)" if "web" in set(d.runs["workload_run"])
                  else "processes on the run queue")
    ax.set_ylabel("bus transactions at 0x30")
    ax.set_title("Figure 3: transactions at 0x30", fontsize=9)
    ax.legend(fontsize=7)
    it.tables.append(("Transactions at offset 0x30 in the region",
                      s.rename(columns={"tasks": "processes"})
                      .assign(mean=lambda x: x["mean"].round(1))))
    if len(tdf):
        ts = spread(tdf, ["tasks"], "throughput")
        ax = axes[0, 1]
        _errbar(ax, ts["tasks"], ts, color=KERNEL_COLORS["vanilla"],
                label="vanilla (mean, min-max of seeds)")
        ax.set_xscale("log", base=2)
        ax.set_ylim(bottom=0)
        ax.set_xlabel("processes (httpd)")
        ax.set_ylabel(unit_of(tdf))
        ax.set_title("Figure 3: throughput", fontsize=9)
        ax.legend(fontsize=7)
        it.tables.append((f"Throughput ({unit_of(tdf)})",
                          ts.rename(columns={"tasks": "processes"}).round(1)))
    fig.tight_layout()
    it.images = save(fig, out, "fig3", d,
                     norm="transactions in the region; throughput per modelled second")
    return [it]


def fig7(d: ExpData, out: Path, paper: dict) -> list:
    plt = _setup_matplotlib()
    p = paper.get("fig7", {})
    it = Item("fig7", "Figure 7: colored lines vs other lines", "fig7", d.scale,
              paper=p.get("note", ""))
    if d.runs.empty:
        it.notes.append("no runs yet")
        return [it]
    col = "colored_lines_sum_per_schedule"
    oth = "other_lines_sum_per_schedule"
    l2s = sorted(set(d.runs["l2_size"]))
    kernels = [k for k in ("vanilla", "c32") if k in set(d.runs["kernel"])]
    fig, ax = plt.subplots(figsize=(8, 3.4))
    rows, width, drew_paper = [], 0.38, False
    q = queue_spread(d.runs, ["l2_size", "kernel"])
    for i, l2 in enumerate(l2s):
        base = {}
        for j, k in enumerate(kernels):
            sub = d.runs[(d.runs["l2_size"] == l2) & (d.runs["kernel"] == k)]
            if sub.empty:
                continue
            c, o = sub[col].mean(), sub[oth].mean()
            x = i + (j - 0.5) * width
            ax.bar(x, c, width, color=KERNEL_COLORS.get(k), edgecolor="k",
                   lw=0.4, label=f"{k}: colored lines" if i == 0 else None)
            ax.bar(x, o, width, bottom=c, color=KERNEL_COLORS.get(k), alpha=0.35,
                   edgecolor="k", lw=0.4, label=f"{k}: other lines" if i == 0 else None)
            ax.errorbar(x, c, yerr=[[c - sub[col].min()], [sub[col].max() - c]],
                        color="k", capsize=2, lw=0.8)
            base[k] = sub
        if "vanilla" in base and "c32" in base:
            v, c32 = base["vanilla"][col].mean(), base["c32"][col].mean()
            change = (c32 - v) / v if v else float("nan")
            tv = (base["vanilla"][col] + base["vanilla"][oth]).mean()
            tc = (base["c32"][col] + base["c32"][oth]).mean()
            pc = p.get("colored_change", {}).get(l2_name(l2))
            if pc is not None:
                xc = i + (kernels.index("c32") - 0.5) * width
                ax.plot([xc - width / 2, xc + width / 2],
                        [v * (1 + pc / 100)] * 2, color="k", ls="--", lw=1.2,
                        label="c32 colored lines at the paper's change"
                        if not drew_paper else None)
                drew_paper = True
            rows.append({"L2": l2_name(l2),
                         "vanilla colored/sched": fmt_num(v),
                         "c32 colored/sched": fmt_num(c32),
                         "colored change % (ours)": fmt_num(change * 100),
                         "colored change % (paper)": "-" if pc is None else fmt_num(pc),
                         "deviation (pp)": "-" if pc is None else fmt_num(change * 100 - pc),
                         "total change % (ours)": fmt_num((tc - tv) / tv * 100 if tv else float("nan")),
                         **({"run queue, mean (vanilla / c32)": " / ".join(
                             fmt_queue(q, lambda x: (x["l2_size"] == l2) & (x["kernel"] == k))
                             for k in ("vanilla", "c32"))} if q is not None else {}),
                         "seeds": len(base["c32"])})
    ax.set_xticks(range(len(l2s)))
    ax.set_xticklabels([f"L2 {l2_name(x)}" for x in l2s])
    ax.set_ylabel("bus transactions per schedule()")
    ax.set_title(f"Figure 7: {procs(d)}; colored lines = offsets 0x20-0x41f",
                 fontsize=9)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    fig.tight_layout()
    it.images = save(fig, out, d.stem("fig7"), d, norm="per schedule() call")
    it.tables.append(("Colored-line transactions per schedule(), 32 colors vs "
                      "vanilla, beside the paper's change", pd.DataFrame(rows)))
    it.notes += steady_changes(d.runs, col)
    it.notes += task_lines_change(d)
    return [it]


def _change_cells(m: pd.Series, sizes) -> list:
    """"256KiB +12.3 %" per L2 size of ``sizes`` (sorted, once each) where
    ``m``, a mean per (l2_size, kernel), has c32 and a nonzero vanilla:
    c32's change against vanilla."""
    return [f"{l2_name(l2)} {(m[(l2, 'c32')] / m[(l2, 'vanilla')] - 1) * 100:+.1f} %"
            for l2 in sorted(set(sizes))
            if (l2, "c32") in m and (l2, "vanilla") in m and m[(l2, "vanilla")]]


def task_lines_change(d: ExpData) -> list:
    """c32's change against vanilla per L2 size in the transactions per
    schedule() over TASK_REACH, where both kernels keep the task's first
    two lines, from every run and (where some recalculated) from the steady
    runs, as a note: the colored span compares c32's two lines with
    vanilla's one."""
    if "schedule_calls" not in d.runs.columns or not {"vanilla", "c32"} <= set(d.runs["kernel"]):
        return []
    lo, hi = TASK_REACH
    per = d.in_band(lo, hi) / d.runs["schedule_calls"]

    def cells(keep):
        m = per[keep.index].groupby([keep["l2_size"], keep["kernel"]]).mean()
        return ", ".join(_change_cells(m, keep["l2_size"])) or "-"
    steady = (f"; steady runs: {cells(steady_runs(d.runs))}"
              if some_recalculated(d.runs) else "")
    return [f"Over offsets {lo:#04x}-{hi - 1:#x}, where both kernels keep the task "
            "structure's first two lines (the colored span starts at the walk's line; with "
            "32 colors it also holds the first line, the state every wake-up reads, which "
            f"vanilla keeps at 0x00), c32's change per schedule(): {cells(d.runs)}{steady}"]


def steady_changes(runs: pd.DataFrame, col: str) -> list:
    """c32's change in ``col`` against vanilla's per L2 size from only the
    runs whose regions never recalculated every time slice (the first of
    the two states, docs/operating-point.md), as a note, where some run
    did; [] otherwise."""
    if not some_recalculated(runs):
        return []
    keep = steady_runs(runs)
    cells = _change_cells(keep.groupby(["l2_size", "kernel"])[col].mean(), keep["l2_size"])
    return [f"From the {len(keep)} of {len(runs)} runs whose regions never recalculated "
            f"every time slice (the others fell into a convoy on the accept lock), c32's "
            f"colored-line change: {', '.join(cells) or '-'}"]


def table2(d: ExpData, out: Path, paper: dict) -> list:
    plt = _setup_matplotlib()
    p = paper["table2"]
    it = Item("table2", "Table 2: L2 miss ratio inside the run-queue loop",
              "table2", d.scale, paper=p["source"])
    if d.runs.empty:
        it.notes.append("no runs yet")
        return [it]
    sizes = sorted(set(d.runs["l2_size"]))
    tab, s = _miss_table(d, "l2_size", {k: [dict(zip(p["l2"], p[k])).get(l2_name(x))
                                            for x in sizes] for k in ("vanilla", "c32")},
                         sizes, lambda x: f"L2 {l2_name(x)}")
    it.tables.append(("Run-queue loop L2 miss ratio: ours (mean [min-max] over "
                      "seeds), the paper's, and the deviation", tab))
    it.images = _miss_figure(
        plt, s, "l2_size", sizes, lambda x: l2_name(x),
        {k: [dict(zip(p["l2"], p[k])).get(l2_name(x)) for x in sizes]
         for k in ("vanilla", "c32")},
        f"Table 2: {procs(d)}, "
        f"{d.runs['machine'].iloc[0]}", "L2 size", out, d.stem("table2"), d)
    return [it]


HERD = "herd"


def herd(d: ExpData, out: Path, paper: dict) -> list:
    """Figures 1 and 7 and Table 2 drawn again from the herd experiment's
    runs (web behind an accept lock that wakes every waiter): Figure 1 at
    512 KiB (the paper's L2; the middle size if it was not run), the
    others over every L2 size.  Their ids end in ``_herd``."""
    if d.runs.empty:
        return [Item(f"{o}_{HERD}", f"{o} with a herd", d.exp.name, d.scale,
                     notes=["no runs yet"]) for o in ("fig1", "fig7", "table2")]
    sizes = sorted(set(d.runs["l2_size"]))
    l2 = 512 * 1024 if 512 * 1024 in sizes else sizes[len(sizes) // 2]
    accept = ", ".join(sorted(set(d.runs["accept"]))) if "accept" in d.runs else "?"
    items = []
    for build, runs in ((fig1, d.runs[d.runs["l2_size"] == l2]),
                        (fig7, d.runs), (table2, d.runs)):
        for it in build(d.view(runs, HERD), out, paper):
            it.id = f"{it.id}_{HERD}"
            it.experiment = d.exp.name
            it.title += (f", with a herd (web accept: {accept}; every "
                         "release wakes all waiting httpd)")
            items.append(it)
    return items


def fig8(d: ExpData, out: Path, paper: dict) -> list:
    from colorsim.describe.variants import colors_needed
    plt = _setup_matplotlib()
    it = Item("fig8", "Figure 8: colors x processes", "fig8", d.scale,
              paper=paper.get("fig8", {}).get("note", ""))
    thr = Item("fig8_throughput", "Figure 8: throughput vs colors and processes",
               "fig8", d.scale, lacks=list(d.exp.output_lacks(
                   d.exp.outputs["fig8_throughput"])))
    if d.runs.empty:
        it.notes.append("no runs yet")
        return [it, thr]
    if not thr.lacks:
        fig8_throughput(d, out, paper, thr)
    col = "colored_lines_sum_per_schedule"
    sizes = sorted(set(d.runs["l2_size"]))
    fig, axes = plt.subplots(1, len(sizes), figsize=(4 * len(sizes), 3.2),
                             sharey=True, squeeze=False)
    rows = []
    df = d.runs.assign(ncolors=d.runs["colors"].astype(int))
    for ax, l2 in zip(axes[0], sizes):
        for t in sorted(set(df["tasks"])):
            sub = df[(df["l2_size"] == l2) & (df["tasks"] == t)]
            s = spread(sub, ["ncolors"], col)
            line = ax.errorbar(s["ncolors"], s["mean"],
                               yerr=[s["mean"] - s["min"], s["max"] - s["mean"]],
                               marker="o", capsize=2, label=f"{t} tasks")
            need = colors_needed(t, int(l2))
            ax.axvline(need, ls=":", color=line[0].get_color(), lw=0.8)
            v = s[s["ncolors"] == 1]["mean"]
            for _, r in s.iterrows():
                rows.append({"L2": l2_name(l2), "tasks": t,
                             "colors": int(r["ncolors"]),
                             "colored/sched": fmt_num(r["mean"]),
                             "vs vanilla %": (fmt_num((r["mean"] / v.iloc[0] - 1) * 100)
                                              if len(v) and v.iloc[0] else "-"),
                             "eq.(3) colors": need,
                             "at or above eq.(3)": "yes" if r["ncolors"] >= need else "no",
                             "seeds": int(r["seeds"])})
        _colors_axis(ax, [1, 2, 4, 8, 16, 32],
                     "colors; dotted: eq. (3) threshold per task count", f"L2 {l2_name(l2)}")
        ax.legend(fontsize=7)
    axes[0, 0].set_ylabel("colored-line transactions per schedule()")
    fig.suptitle("Figure 8: colored-line transactions vs colors", fontsize=10)
    fig.tight_layout()
    it.images = save(fig, out, "fig8", d, norm="per schedule() call")
    it.tables.append(("Colored-line transactions per schedule() and eq. (3)",
                      pd.DataFrame(rows)))
    return [it, thr]


def fig8_throughput(d: ExpData, out: Path, paper: dict, it: Item) -> None:
    plt = _setup_matplotlib()
    df = timed(d)
    if df.empty:
        it.notes.append("no timed runs yet")
        return
    df = df.assign(ncolors=df["colors"].astype(int))
    sizes = sorted(set(df["l2_size"]))
    fig, axes = plt.subplots(1, len(sizes), figsize=(4 * len(sizes), 3.2),
                             sharey=True, squeeze=False)
    rows = []
    for ax, l2 in zip(axes[0], sizes):
        for t in sorted(set(df["tasks"])):
            sub = df[(df["l2_size"] == l2) & (df["tasks"] == t)]
            s = spread(sub, ["ncolors"], "throughput")
            _errbar(ax, s["ncolors"], s, label=f"{t} httpd")
            for _, r in s.iterrows():
                rows.append({"L2": l2_name(l2), "httpd": t, "colors": int(r["ncolors"]),
                             "throughput": fmt_spread(r["mean"], r["min"], r["max"], 0),
                             "seeds": int(r["seeds"])})
        _colors_axis(ax, [1, 2, 4, 8, 16, 32], "colors", f"L2 {l2_name(l2)}")
        ax.legend(fontsize=7)
    axes[0, 0].set_ylabel(unit_of(df))
    fig.suptitle("Figure 8: throughput vs colors (mean, min-max of seeds)", fontsize=10)
    fig.tight_layout()
    it.images = save(fig, out, "fig8_throughput", d,
                     norm="throughput per modelled second")
    it.tables.append((f"Throughput ({unit_of(df)}), mean [min-max] over seeds",
                      pd.DataFrame(rows)))


def eq3(d: ExpData, out: Path, paper: dict) -> list:
    """The run-queue loop's L2 miss ratio against colors on L2 sizes and
    process counts outside the paper's grid, each beside the colors eq. (3)
    says are needed: the equation used as a prediction, not a fit."""
    from colorsim.describe.variants import colors_needed
    plt = _setup_matplotlib()
    it = Item("eq3", "Beyond the paper: eq. (3) on held-out geometries", "eq3",
              d.scale, paper=paper.get("fig8", {}).get("note", ""))
    if d.runs.empty:
        it.notes.append("no runs yet")
        return [it]
    df = d.runs.assign(ncolors=d.runs["colors"].astype(int))
    sizes = sorted(set(df["l2_size"]))
    fig, axes = plt.subplots(1, len(sizes), figsize=(max(6.0, 4.5 * len(sizes)), 3.6),
                             sharey=True, squeeze=False)
    rows = []
    for ax, l2 in zip(axes[0], sizes):
        for t in sorted(set(df["tasks"])):
            sub = df[(df["l2_size"] == l2) & (df["tasks"] == t)]
            if sub.empty:
                continue
            s = spread(sub, ["ncolors"], "rqloop_l2_miss_ratio")
            # colored kernels joined along the colors axis; vanilla is
            # another kernel, a point of its own
            col, van = s[s["ncolors"] > 1], s[s["ncolors"] == 1]
            line = ax.errorbar(col["ncolors"], col["mean"] * 100,
                               yerr=[(col["mean"] - col["min"]) * 100,
                                     (col["max"] - col["mean"]) * 100],
                               marker="o", capsize=2, label=f"{t} tasks")
            if len(van):
                ax.errorbar(van["ncolors"], van["mean"] * 100,
                            yerr=[(van["mean"] - van["min"]) * 100,
                                  (van["max"] - van["mean"]) * 100],
                            marker="D", ls="none", capsize=2,
                            color=line[0].get_color(),
                            label=f"{t} tasks, vanilla")
            need = colors_needed(t, int(l2))
            ax.axvline(need, ls=":", color=line[0].get_color(), lw=1)
            miss = dict(zip(s["ncolors"], s["mean"]))
            below = [c for c in sorted(miss) if miss[c] < 0.5]
            rows.append({"L2": l2_name(l2), "tasks": t, "eq.(3) colors": need,
                         "loop miss, vanilla %": fmt_num(miss[1] * 100) if 1 in miss else "-",
                         "at eq.(3) %": fmt_num(miss[need] * 100) if need in miss else "not run",
                         "at 2x eq.(3) %": (fmt_num(miss[2 * need] * 100)
                                            if 2 * need in miss else "not run"),
                         "fewest colors under 50 %": below[0] if below else "none run",
                         "seeds": int(s["seeds"].min())})
        _colors_axis(ax, sorted(set(df["ncolors"])),
                     "colors; dotted: eq. (3) colors per task count",
                     f"L2 {l2_name(l2)}, {df['machine'].iloc[0]}")
        ax.set_ylim(0, 105)
    axes[0, -1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    axes[0, 0].set_ylabel("L2 miss ratio in the run-queue loop (%)")
    fig.suptitle("Eq. (3), c >= p / (s / 8 KiB), on held-out geometries", fontsize=10)
    fig.tight_layout()
    it.images = save(fig, out, "eq3", d, norm="misses per loop L2 read")
    it.tables.append(("The run-queue loop's L2 miss ratio (mean over seeds) at eq. (3)'s "
                      "colors and twice them; the fewest colors that bring it under 50 %",
                      pd.DataFrame(rows)))
    return [it]
