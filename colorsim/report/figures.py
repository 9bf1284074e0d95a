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

import copy
import math
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from colorsim import ROOT
from colorsim.errors import ConfigError, ResultsError

PAPER_FILE = ROOT / "configs" / "paper_results.toml"
L2_NAMES = {256 * 1024: "256KiB", 512 * 1024: "512KiB", 1024 * 1024: "1MiB"}
KERNEL_COLORS = {"vanilla": "#b2182b", "c32": "#2166ac", "c16": "#4393c3",
                 "c8": "#92c5de", "c4": "#f4a582", "c2": "#fddbc7",
                 "mq": "#1b7837", "mq-c32": "#5aae61"}


def miss_kernels(present) -> list:
    """The kernels of a miss-ratio table: the paper's two, then the
    multi-queue ones where the experiment ran them (the paper has no MQ
    row: its MQ runs measured throughput only)."""
    return ["vanilla", "c32"] + [k for k in ("mq", "mq-c32") if k in set(present)]


def l2_name(size) -> str:
    size = int(size)
    if size in L2_NAMES:
        return L2_NAMES[size]
    return f"{size >> 20}MiB" if size % (1 << 20) == 0 else f"{size // 1024}KiB"


def paper_results() -> dict:
    try:
        return tomllib.loads(PAPER_FILE.read_text())
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise ConfigError(f"{PAPER_FILE}: {e}") from None


@dataclass
class Item:
    """One figure or table of the paper, as the report shows it."""

    id: str
    title: str
    experiment: str
    scale: str = ""
    images: list = field(default_factory=list)     # file names (png, svg)
    tables: list = field(default_factory=list)     # (caption, DataFrame)
    lacks: list = field(default_factory=list)
    counts: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)
    paper: str = ""


# -- selecting an experiment's runs -------------------------------------------

class ExpData:
    """The done points of one experiment at one scale, joined with their
    catalog rows, and the counts of every status."""

    def __init__(self, cat, exp, scale: str):
        self.cat, self.exp, self.scale = cat, exp, scale
        pts = cat.points(exp.name, scale)
        self.points = pts
        runs = cat.table("runs")
        if "run_id" not in runs.columns:            # no runs at all
            runs = pd.DataFrame(columns=["run_id", "kernel", "tasks", "seed",
                                         "cpus"])
        runs = runs.drop_duplicates("run_id")
        done = pts[pts["status"] == "done"]
        keep = ["run_id", "experiment", "point", "l2", "kernel", "tasks",
                "seed", "cpus", "workload", "workload_run", "stand_in"]
        self.runs = done[keep].merge(
            runs.drop(columns=["kernel", "tasks", "seed", "cpus"]),
            on="run_id", how="inner").sort_values(["point"]).reset_index(drop=True)
        lost = len(done) - len(self.runs)
        self.counts = {"points": len(pts),
                       "done": len(self.runs),
                       # a damaged or unverified run is there but unusable
                       "failed": int(pts["status"].isin(
                           ["failed", "damaged", "unverified"]).sum()),
                       "missing": int((pts["status"] == "missing").sum()) + lost,
                       "lacks": int((pts["status"] == "lacks").sum())}
        self.lacking = sorted(set(x for x in pts["lacks"] if x))
        self.stand_in = bool(self.runs["stand_in"].any()) if len(self.runs) else False
        self.tag = ""

    def view(self, runs: pd.DataFrame, tag: str) -> "ExpData":
        """The same experiment with only ``runs``, its files named with
        ``tag`` (one experiment drawing several of the paper's figures)."""
        v = copy.copy(self)
        v.runs, v.tag = runs.reset_index(drop=True), tag
        return v

    def stem(self, name: str) -> str:
        """A figure's file name: ``name``, or ``name_tag`` in a view."""
        return f"{name}_{self.tag}" if self.tag else name

    def offsets(self, run_id) -> pd.Series:
        """Chunk-view transactions per page offset in the region (bus view
        where the run has it), all CPUs, modes and kinds."""
        df = self.cat.offsets(run_id)
        df = df[df["dump"] == 0]
        if "bus" in set(df["view"]):
            df = df[df["view"] == "bus"]
        return df.groupby("offset")["count"].sum()


def pick_scale(cat, exp, quick):
    pts = cat.table("points")
    pts = pts[pts["experiment"] == exp.name]
    if quick is True:
        return "quick"
    if quick is False:
        return "paper"
    done = pts[pts["status"] == "done"]
    if (done["scale"] == "paper").any():
        return "paper"
    if (done["scale"] == "quick").any() or not (pts["scale"] == "paper").any():
        return "quick"
    return "paper"          # swept at the paper scale, nothing done yet


def spread(df: pd.DataFrame, by: list, col: str) -> pd.DataFrame:
    """mean, min, max and seeds of ``col`` per group."""
    g = df.groupby(by, sort=True)[col]
    out = pd.DataFrame({"mean": g.mean(), "min": g.min(), "max": g.max(),
                        "seeds": g.count()}).reset_index()
    return out


def fmt_pct(mean, lo=None, hi=None, digits=1) -> str:
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return "-"
    s = f"{mean * 100:.{digits}f}"
    if lo is not None and hi is not None and hi > lo:
        s += f" [{lo * 100:.{digits}f}-{hi * 100:.{digits}f}]"
    return s


def fmt_num(x, digits=1) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return f"{x:.{digits}f}"


# -- saving figures deterministically -----------------------------------------

def _setup_matplotlib():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from colorsim.report.plots import STYLE
    plt.rcParams.update(STYLE)
    return plt


def save(fig, out: Path, stem: str, d: "ExpData" = None) -> list:
    """``stem``.png and ``stem``.svg in ``out``, written atomically, with no
    dates or software versions that would change the bytes.  With ``d``,
    the title gains a line saying what the figure was made from (scale,
    seeds, web's accept mode, counting or modelled time)."""
    import matplotlib.pyplot as plt
    if d is not None and len(d.runs):
        sup = fig._suptitle.get_text() if fig._suptitle else ""
        ctx = context(d)
        fig.suptitle(f"{sup}\n{ctx}" if sup else ctx,
                     fontsize=fig._suptitle.get_fontsize() if sup else 9)
        fig.tight_layout()
    names = []
    for suffix, meta in ((".png", {"Software": None}),
                         (".svg", {"Date": None, "Creator": None})):
        path = out / f"{stem}{suffix}"
        tmp = out / f".{stem}.tmp{os.getpid()}{suffix}"
        try:
            fig.savefig(tmp, dpi=110, metadata=meta)
            tmp.replace(path)
        finally:
            tmp.unlink(missing_ok=True)
        names.append(path.name)
    plt.close(fig)
    return names


def procs(d: ExpData) -> str:
    """What the runs' ``tasks`` count, for titles: "1024 httpd" for web,
    "64 threads" for Chat, "1024 tasks" for the built-in workload."""
    n = ", ".join(map(str, sorted(set(d.runs["tasks"]))))
    wl = set(d.runs["workload_run"])
    unit = ({"web": "httpd", "chat": "threads"}.get(wl.pop(), "tasks")
            if len(wl) == 1 else "tasks")
    return f"{n} {unit}"


def _status_line(d: ExpData) -> str:
    c = d.counts
    s = (f"{c['done']} of {c['points']} points done, {c['failed']} failed, "
         f"{c['missing']} missing, {c['lacks']} not runnable")
    if d.lacking:
        s += f" (lack: {'; '.join(d.lacking)})"
    miss = d.points[(d.points["status"] == "missing") &
                    (d.points["reason"].fillna("") != "")]
    for why, n in sorted(miss.groupby("reason").size().items()):
        ks = ", ".join(sorted(set(miss[miss["reason"] == why]["kernel"])))
        s += f"; {n} missing ({ks}): {why}"
    if d.stand_in:
        s += "; stand-in workload: the built-in synthetic one"
    return s


# -- the figures and tables -----------------------------------------------------

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
            paper_peak=paper["fig1"]["peak_offset"], footer=context(d))
    it.images = [f"{stem}.png", f"{stem}.svg"]
    it.tables.append(("Peak per seed (ours) beside the paper's peak offset",
                      pd.DataFrame(rows)))
    return [it]


def context(d: ExpData) -> str:
    """What every figure of ``d`` was made from, for its footer: the scale,
    the placement seeds, web's accept mode, counting or modelled time."""
    r = d.runs
    parts = [f"{d.scale} scale" if d.scale else "",
             "seeds " + ", ".join(str(int(s)) for s in sorted(set(r["seed"])))
             if len(r) else ""]
    if "accept" in r and (r["workload_run"] == "web").any():
        modes = sorted(set(r.loc[r["workload_run"] == "web", "accept"]) - {""})
        names = {"none": "wake-one accept", "pipe": "herd accept lock"}
        parts.append("web: " + ", ".join(names.get(m, f"{m} accept") for m in modes))
    if "timing" in r:
        parts.append("modelled time" if r["timing"].fillna(False).astype(bool).all()
                     else "counting" if not r["timing"].fillna(False).astype(bool).any()
                     else "counting and modelled time")
    return " | ".join(p for p in parts if p)


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
    it.images = save(fig, out, "fig3", d)
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
                         "seeds": len(base["c32"])})
    ax.set_xticks(range(len(l2s)))
    ax.set_xticklabels([f"L2 {l2_name(x)}" for x in l2s])
    ax.set_ylabel("bus transactions per schedule()")
    ax.set_title(f"Figure 7: {procs(d)}; colored lines = offsets 0x20-0x41f",
                 fontsize=9)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    fig.tight_layout()
    it.images = save(fig, out, d.stem("fig7"), d)
    it.tables.append(("Colored-line transactions per schedule(), 32 colors vs "
                      "vanilla, beside the paper's change", pd.DataFrame(rows)))
    return [it]


def _miss_table(d: ExpData, axis: str, paper_tab: dict, keys, key_name):
    """Our run-queue loop miss ratio (mean [min-max] over seeds) per
    ``axis`` value and kernel, beside the paper's row."""
    s = spread(d.runs, ["kernel", axis], "rqloop_l2_miss_ratio")
    rows = []
    for k in miss_kernels(s["kernel"]):
        if k not in paper_tab and k not in set(s["kernel"]):
            continue
        ours = {"kernel": k, "source": "ours (%)"}
        theirs = {"kernel": k, "source": "paper (%)"}
        dev = {"kernel": k, "source": "deviation (pp)"}
        for i, key in enumerate(keys):
            r = s[(s["kernel"] == k) & (s[axis] == key)]
            label = key_name(key)
            pv = paper_tab.get(k, [None] * len(keys))[i] if k in paper_tab else None
            if len(r):
                m, lo, hi = r["mean"].iloc[0], r["min"].iloc[0], r["max"].iloc[0]
                ours[label] = fmt_pct(m, lo, hi)
                dev[label] = "-" if pv is None else fmt_num(m * 100 - pv)
            else:
                ours[label] = "-"
                dev[label] = "-"
            theirs[label] = "-" if pv is None else fmt_num(pv)
        rows += [ours, theirs, dev]
    return pd.DataFrame(rows), s


def _miss_figure(plt, s, axis, keys, key_name, paper_tab, title, xlabel, out,
                 stem, d=None):
    fig, ax = plt.subplots(figsize=(7.5, 3.4))
    for k in miss_kernels(s["kernel"]):
        r = s[s["kernel"] == k].set_index(axis).reindex(keys)
        if r["mean"].notna().any():
            ax.errorbar(range(len(keys)), r["mean"] * 100,
                        yerr=[(r["mean"] - r["min"]) * 100, (r["max"] - r["mean"]) * 100],
                        marker="o", capsize=3, color=KERNEL_COLORS[k],
                        label=f"{k} (ours, min-max of seeds)")
        if k in paper_tab:
            ax.plot(range(len(keys)), paper_tab[k], ls="--", marker="x",
                    color=KERNEL_COLORS[k], alpha=0.7, label=f"{k} (paper)")
    ax.set_xticks(range(len(keys)))
    ax.set_xticklabels([key_name(x) for x in keys])
    ax.set_ylim(0, 105)
    ax.set_ylabel("L2 miss ratio in the run-queue loop (%)")
    ax.set_xlabel(xlabel)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    fig.tight_layout()
    return save(fig, out, stem, d)


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


def _colors_axis(ax, colors, xlabel: str, title: str) -> None:
    """A log2 axis of color counts (1 = vanilla), as Figure 8 draws it."""
    ax.set_xscale("log", base=2)
    ax.set_xticks(colors)
    ax.set_xticklabels(["vanilla" if c == 1 else str(c) for c in colors])
    ax.minorticks_off()
    ax.set_xlabel(xlabel)
    ax.set_title(title, fontsize=9)


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
    it.images = save(fig, out, "fig8", d)
    it.tables.append(("Colored-line transactions per schedule() and eq. (3)",
                      pd.DataFrame(rows)))
    return [it, thr]


# -- throughput and the lockmeter (--timing runs) ------------------------------

THROUGHPUT_UNIT = {"web": "requests per modelled second",
                   "chat": "messages per modelled second",
                   "synthetic": "bursts per modelled second"}


def timed(d: ExpData) -> pd.DataFrame:
    """The experiment's done runs that have a throughput (--timing)."""
    if d.runs.empty or "throughput" not in d.runs.columns:
        return d.runs.iloc[0:0]
    return d.runs[d.runs["throughput"].notna()]


def unit_of(df) -> str:
    wl = sorted(set(df["workload_run"])) if len(df) else []
    return THROUGHPUT_UNIT.get(wl[0], "work per modelled second") if wl else ""


def gain(df: pd.DataFrame, by: list, kernel: str, base: str = "vanilla",
         col: str = "throughput") -> pd.DataFrame:
    """``kernel`` over ``base`` in %, per group of ``by``: the mean, min
    and max of the same-seed ratios (the ratio of the means where no seed
    has both)."""
    rows = []
    for key, g in df.groupby(by, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        a, b = g[g["kernel"] == kernel], g[g["kernel"] == base]
        if a.empty or b.empty or not b[col].mean():
            continue
        pair = a.set_index("seed")[col].div(b.set_index("seed")[col]).dropna()
        rows.append({**dict(zip(by, key)),
                     "mean": ((pair.mean() if len(pair) else
                               a[col].mean() / b[col].mean()) - 1) * 100,
                     "min": (pair.min() - 1) * 100 if len(pair) else float("nan"),
                     "max": (pair.max() - 1) * 100 if len(pair) else float("nan"),
                     "seeds": min(len(a), len(b))})
    return pd.DataFrame(rows, columns=by + ["mean", "min", "max", "seeds"])


def fmt_spread(m, lo, hi, digits=1) -> str:
    if m is None or m != m:
        return "-"
    s = f"{m:.{digits}f}"
    if lo == lo and hi == hi and hi > lo:
        s += f" [{lo:.{digits}f}-{hi:.{digits}f}]"
    return s


def _yerr(s):
    """Error bars from mean to min and max (never negative)."""
    return [(s["mean"] - s["min"]).clip(lower=0).fillna(0),
            (s["max"] - s["mean"]).clip(lower=0).fillna(0)]


def _errbar(ax, x, s, **kw):
    return ax.errorbar(x, s["mean"], yerr=_yerr(s), marker="o", capsize=3, **kw)


def fig6(d: ExpData, out: Path, paper: dict) -> list:
    plt = _setup_matplotlib()
    p = paper.get("fig6", {})
    it = Item("fig6", "Figure 6: web throughput improvement of 32 colors over "
              "vanilla", "fig6", d.scale, paper=p.get("source", ""))
    df = timed(d)
    if df.empty:
        it.notes.append("no timed runs yet")
        it.tables += paper_only_tables("fig6", paper)
        return [it]
    g = gain(df, ["l2_size", "tasks"], "c32")
    sizes = sorted(set(df["l2_size"]))
    tasks = sorted(set(df["tasks"]))
    fig, ax = plt.subplots(figsize=(8, 3.4))
    width = 0.8 / max(len(tasks), 1)
    for j, t in enumerate(tasks):
        r = g[g["tasks"] == t].set_index("l2_size").reindex(sizes)
        x = [i + (j - (len(tasks) - 1) / 2) * width for i in range(len(sizes))]
        ax.bar(x, r["mean"], width, label=f"{t} httpd (ours)", edgecolor="k", lw=0.4)
        ax.errorbar(x, r["mean"], yerr=_yerr(r), fmt="none", color="k",
                    capsize=2, lw=0.8)
    imp = p.get("improvement", {})
    for i, l2 in enumerate(sizes):
        v = imp.get(l2_name(l2))
        if isinstance(v, (int, float)):
            ax.plot([i - 0.45, i + 0.45], [v, v], color="k", ls="--", lw=1,
                    label="paper (best case)" if i == len(sizes) - 1 else None)
        elif v:
            ax.annotate(f"paper: {v}", (i, 0), textcoords="offset points",
                        xytext=(0, 4), ha="center", fontsize=7)
    ax.axhline(0, color="k", lw=0.5)
    ax.set_xticks(range(len(sizes)))
    ax.set_xticklabels([f"L2 {l2_name(x)}" for x in sizes])
    ax.set_ylabel("c32 over vanilla (%)")
    ax.set_title(f"Figure 6: {unit_of(df)}, mean of seeds, bars: min-max of "
                 "same-seed ratios", fontsize=8)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    fig.tight_layout()
    it.images = save(fig, out, "fig6", d)
    rows = []
    thr = spread(df, ["l2_size", "tasks", "kernel"], "throughput")
    for _, r in g.iterrows():
        pv = imp.get(l2_name(r["l2_size"]))
        row = {"L2": l2_name(r["l2_size"]), "httpd": int(r["tasks"])}
        for k in ("vanilla", "c32"):
            t = thr[(thr["l2_size"] == r["l2_size"]) & (thr["tasks"] == r["tasks"])
                    & (thr["kernel"] == k)]
            row[f"{k} req/s"] = (fmt_spread(t["mean"].iloc[0], t["min"].iloc[0],
                                            t["max"].iloc[0], 0) if len(t) else "-")
        row.update({"improvement % (ours)": fmt_spread(r["mean"], r["min"], r["max"]),
                    "paper %": "-" if pv is None else str(pv),
                    "deviation (pp)": (fmt_num(r["mean"] - pv)
                                       if isinstance(pv, (int, float)) else "-"),
                    "seeds": int(r["seeds"])})
        rows.append(row)
    it.tables.append(("Throughput (mean [min-max] over seeds) and the improvement "
                      "of 32 colors, beside the paper's best case", pd.DataFrame(rows)))
    return [it]


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
    it.images = save(fig, out, "fig8_throughput", d)
    it.tables.append((f"Throughput ({unit_of(df)}), mean [min-max] over seeds",
                      pd.DataFrame(rows)))


def _throughput_vs_cpus(d, out, paper, oid, title) -> Item:
    plt = _setup_matplotlib()
    it = Item(oid, title, d.exp.name, d.scale,
              paper=paper.get(oid, {}).get("note", ""))
    df = timed(d)
    if df.empty:
        it.notes.append("no timed runs yet")
        return it
    cpus = sorted(set(df["cpus"]))
    s = spread(df, ["kernel", "cpus"], "throughput")
    fig, ax = plt.subplots(figsize=(5.5, 3.3))
    rows = []
    for k in miss_kernels(s["kernel"]):
        r = s[s["kernel"] == k].set_index("cpus").reindex(cpus)
        if r["mean"].notna().any():
            _errbar(ax, cpus, r, color=KERNEL_COLORS.get(k), label=k)
        rows.append({"kernel": k, **{f"{c} CPU": fmt_spread(
            r.loc[c, "mean"], r.loc[c, "min"], r.loc[c, "max"], 0) for c in cpus}})
    ax.set_xticks(cpus)
    ax.set_xlabel("CPUs")
    ax.set_ylabel(unit_of(df))
    ax.set_ylim(bottom=0)
    ax.set_title(f"{title} (mean, min-max of seeds)", fontsize=8)
    ax.legend(fontsize=7)
    fig.tight_layout()
    it.images = save(fig, out, oid, d)
    it.tables.append((f"Throughput ({unit_of(df)}), mean [min-max] over seeds "
                      "(- : no run)", pd.DataFrame(rows)))
    return it


def _speedup(d, out, paper, oid) -> Item:
    plt = _setup_matplotlib()
    p = paper.get(oid, {})
    it = Item(oid, f"{p.get('source', oid)}: speed-up over vanilla per CPU count",
              d.exp.name, d.scale)
    df = timed(d)
    if df.empty:
        it.notes.append("no timed runs yet")
        it.tables += paper_only_tables(oid, paper)
        return it
    cpus = sorted(set(df["cpus"]))
    fig, ax = plt.subplots(figsize=(5.5, 3.3))
    rows = []
    pcpus = p.get("cpus", [])
    for k in [k for k in ("c32", "mq", "mq-c32") if k in set(df["kernel"]) or k in p]:
        g = gain(df, ["cpus"], k).set_index("cpus").reindex(cpus)
        theirs = dict(zip(pcpus, p.get(k, [])))
        if g["mean"].notna().any():
            _errbar(ax, cpus, g, color=KERNEL_COLORS.get(k), label=f"{k} (ours)")
        if theirs:
            ax.plot(pcpus, p[k], ls="--", marker="x", color=KERNEL_COLORS.get(k),
                    alpha=0.7, label=f"{k} (paper)")
        rows.append({"kernel": k, "source": "ours (%)", **{
            f"{c} CPU": fmt_spread(g.loc[c, "mean"], g.loc[c, "min"], g.loc[c, "max"])
            for c in cpus}})
        rows.append({"kernel": k, "source": "paper (%)", **{
            f"{c} CPU": fmt_num(theirs.get(c)) for c in cpus}})
        rows.append({"kernel": k, "source": "deviation (pp)", **{
            f"{c} CPU": (fmt_num(g.loc[c, "mean"] - theirs[c])
                         if c in theirs and g.loc[c, "mean"] == g.loc[c, "mean"] else "-")
            for c in cpus}})
    ax.axhline(0, color="k", lw=0.5)
    ax.set_xticks(sorted(set(cpus) | set(pcpus)))
    ax.set_xlabel("CPUs")
    ax.set_ylabel("throughput over vanilla (%)")
    ax.set_title(f"{oid}: speed-up over vanilla (bars: same-seed min-max)", fontsize=8)
    ax.legend(fontsize=7)
    fig.tight_layout()
    it.images = save(fig, out, oid, d)
    it.tables.append(("Speed-up over vanilla: ours (mean [min-max] of same-seed "
                      "ratios), the paper's, deviation", pd.DataFrame(rows)))
    return it


LOCK_STATS = (("contention", "lock_contention_pct", "contention %"),
              ("hold_mean", "lock_hold_mean_us", "hold mean µs"),
              ("hold_max", "lock_hold_max_us", "hold max µs"))


def _locks(d, out, paper, oid) -> Item:
    plt = _setup_matplotlib()
    p = paper.get(oid, {})
    it = Item(oid, f"{p.get('source', oid)}: run-queue lock contention and hold "
              "times per CPU count", d.exp.name, d.scale)
    df = timed(d)
    if df.empty:
        it.notes.append("no timed runs yet")
        it.tables += paper_only_tables(oid, paper)
        return it
    cpus = sorted(set(df["cpus"]))
    pcpus = p.get("cpus", [])
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.2), squeeze=False)
    rows = []
    for ax, (key, col, label) in zip(axes[0], LOCK_STATS):
        s = spread(df, ["kernel", "cpus"], col)
        for k in miss_kernels(s["kernel"]):
            r = s[s["kernel"] == k].set_index("cpus").reindex(cpus)
            if r["mean"].notna().any():
                _errbar(ax, cpus, r, color=KERNEL_COLORS.get(k), label=f"{k} (ours)")
            theirs = dict(zip(pcpus, p.get(f"{k}_{key}", [])))
            if theirs:
                ax.plot(pcpus, p[f"{k}_{key}"], ls="--", marker="x",
                        color=KERNEL_COLORS.get(k), alpha=0.7, label=f"{k} (paper)")
            rows.append({"stat": label, "kernel": k, "source": "ours", **{
                f"{c} CPU": fmt_spread(r.loc[c, "mean"], r.loc[c, "min"], r.loc[c, "max"])
                for c in cpus}})
            if theirs:
                rows.append({"stat": label, "kernel": k, "source": "paper", **{
                    f"{c} CPU": fmt_num(theirs.get(c)) for c in cpus}})
        ax.set_xticks(sorted(set(cpus) | set(pcpus)))
        ax.set_xlabel("CPUs")
        ax.set_ylabel(label)
        ax.set_ylim(bottom=0)
        ax.set_title(label, fontsize=9)
    axes[0, 0].legend(fontsize=6)
    fig.suptitle(f"{oid}: runqueue_lock (lockmeter, all CPUs; mean, min-max of seeds)",
                 fontsize=9)
    fig.tight_layout()
    it.images = save(fig, out, oid, d)
    it.tables.append(("runqueue_lock per CPU count: ours (mean [min-max] over seeds) "
                      "and the paper's", pd.DataFrame(rows)))
    return it


def _scaling(d: ExpData, out: Path, paper: dict, miss_id: str, others) -> list:
    plt = _setup_matplotlib()
    items = []
    p = paper[miss_id]
    it = Item(miss_id, f"{p['source']}: run-queue loop L2 miss ratio vs CPUs",
              d.exp.name, d.scale, paper=p["source"])
    it.lacks = list(d.exp.output_lacks(d.exp.outputs[miss_id]))
    if d.runs.empty:
        it.notes.append("no runs yet")
    else:
        cpus = sorted(set(d.runs["cpus"]))
        ptab = {k: [dict(zip(p["cpus"], p[k])).get(c) for c in cpus]
                for k in ("vanilla", "c32")}
        tab, s = _miss_table(d, "cpus", ptab, cpus, lambda c: f"{c} CPU")
        it.tables.append(("Run-queue loop L2 miss ratio per CPU count: ours "
                          "(mean [min-max] over seeds), the paper's, deviation", tab))
        it.images = _miss_figure(plt, s, "cpus", cpus, str, ptab,
                                 f"{miss_id}: {d.runs['machine'].iloc[0]}, "
                                 f"{sorted(set(d.runs['tasks']))[0]} tasks",
                                 "CPUs", out, miss_id, d)
    items.append(it)
    for oid in others:
        o = d.exp.outputs[oid]
        if not d.exp.output_lacks(o) and oid in SCALING_BUILDERS:
            items.append(SCALING_BUILDERS[oid](d, out, paper))
            continue
        ot = Item(oid, f"{paper.get(oid, {}).get('source', oid)}: {o.what}",
                  d.exp.name, d.scale, lacks=list(d.exp.output_lacks(o)),
                  paper=paper.get(oid, {}).get("note", ""))
        ot.tables += paper_only_tables(oid, paper)
        items.append(ot)
    return items


def paper_only_tables(oid, paper) -> list:
    """The paper's numbers for an output we cannot measure yet."""
    p = paper.get(oid, {})
    if "cpus" in p:
        rows = []
        for k, v in p.items():
            if isinstance(v, list) and k != "cpus":
                rows.append({"row": k, **{f"{c} CPU": x for c, x in zip(p["cpus"], v)},
                             "ours": "-"})
        return [(f"The paper's {p.get('source', oid)} ({p.get('unit', '')}); "
                 f"ours: no runs", pd.DataFrame(rows))]
    if "improvement" in p:
        return [(f"The paper's {p['source']} ({p['unit']})",
                 pd.DataFrame([{"L2": k, "paper": v, "ours": "-"}
                               for k, v in p["improvement"].items()]))]
    return []


SCALING_BUILDERS = {
    "fig9": lambda d, out, paper: _throughput_vs_cpus(
        d, out, paper, "fig9", "Figure 9: web throughput vs CPUs"),
    "fig10": lambda d, out, paper: _throughput_vs_cpus(
        d, out, paper, "fig10", "Figure 10: Chat throughput vs CPUs"),
    "table4": lambda d, out, paper: _speedup(d, out, paper, "table4"),
    "table6": lambda d, out, paper: _locks(d, out, paper, "table6"),
    "table8": lambda d, out, paper: _locks(d, out, paper, "table8"),
}


def fig9(d, out, paper):
    return _scaling(d, out, paper, "table5", ["fig9", "table4", "table6"])


def fig10(d, out, paper):
    return _scaling(d, out, paper, "table7", ["fig10", "table8"])


def lacking_only(d: ExpData, out: Path, paper: dict) -> list:
    items = []
    for o in d.exp.outputs.values():
        it = Item(o.id, f"{paper.get(o.id, {}).get('source', o.id)}: {o.what}",
                  d.exp.name, d.scale, lacks=list(d.exp.output_lacks(o)),
                  paper=paper.get(o.id, {}).get("note", ""))
        it.tables += paper_only_tables(o.id, paper)
        items.append(it)
    return items


# -- beyond the paper: eq. (3) on held-out geometries -------------------------

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
    fig.suptitle("Eq. (3), c >= p / (s / 8 KB), on held-out geometries", fontsize=10)
    fig.tight_layout()
    it.images = save(fig, out, "eq3", d)
    it.tables.append(("The run-queue loop's L2 miss ratio (mean over seeds) at eq. (3)'s "
                      "colors and twice them; the fewest colors that bring it under 50 %",
                      pd.DataFrame(rows)))
    return [it]


BUILDERS = {"fig1": fig1, "fig3": fig3, "fig6": fig6, "fig7": fig7,
            "table2": table2, "fig8": fig8, "fig9": fig9, "fig10": fig10,
            "eq3": eq3, HERD: herd}


def make_figures(name: str, root=None, out=None, quick=None, log=print,
                 require_points=False) -> Path:
    """Every figure of ``name`` ("all" or one experiment) and the report.

    With ``require_points`` the report is still written, and then a
    ResultsError names every asked-for figure or table that has no done
    point (the command line's exit status says so)."""
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
        for it in new:
            it.counts = d.counts
            it.notes.insert(0, _status_line(d))
            if not it.lacks and it.id in e.outputs:
                it.lacks = list(e.output_lacks(e.outputs[it.id]))
            wl = sorted(set(d.runs["workload"]) - {"synthetic"})
            if d.stand_in and not set(wl) & set(it.lacks):
                it.lacks.append(f"the {'/'.join(wl)} workload (the synthetic "
                                f"stand-in ran)")
        items += new
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
    empty = [it.id for it in items if not it.counts.get("done")]
    if require_points and empty:
        raise ResultsError(
            f"no done points for {', '.join(empty)} (the report {report} shows "
            f"them as not swept): run 'python3 -m colorsim sweep "
            f"{name}{' --quick' if quick else ''}' first")
    return report
