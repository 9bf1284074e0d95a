"""The figures and tables of throughput in modelled time and the
lockmeter: Figure 6, and the scalability of Figures 9 and 10 with Tables
4-8."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from colorsim.report.common import (KERNEL_COLORS, miss_kernels, l2_name, Item,
                                    ExpData, spread, fmt_num,
                                    _setup_matplotlib, save, timed, unit_of,
                                    gain, fmt_spread, _yerr, _errbar,
                                    paper_only_tables, _miss_table,
                                    _miss_figure, queue_spread, fmt_queue,
                                    seed_gains, steady_gain)


# A seed whose vanilla or c32 run recalculated every time slice in its
# region (open, red): with a herd such runs call schedule() many times per
# request (docs/operating-point.md, "Two states").  Short, so the legend
# leaves the plot its width.
SEED_LABELS = {False: "a seed's pair", True: "a seed's pair, recalculated"}
STEADY_LABEL = "steady runs' means"     # where some run of the point recalculated


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
    q = queue_spread(df, ["l2_size", "tasks"])
    seeds = seed_gains(df, ["l2_size", "tasks"], "c32")
    shown = set()
    for j, t in enumerate(tasks):
        r = g[g["tasks"] == t].set_index("l2_size").reindex(sizes)
        x = [i + (j - (len(tasks) - 1) / 2) * width for i in range(len(sizes))]
        ax.bar(x, r["mean"], width, label=f"{t} httpd (ours)", edgecolor="k", lw=0.4)
        ax.errorbar(x, r["mean"], yerr=_yerr(r), fmt="none", color="k",
                    capsize=2, lw=0.8)
        for xi, l2 in zip(x, sizes):    # each seed's pair, open where a run recalculated
            s = seeds[(seeds["tasks"] == t) & (seeds["l2_size"] == l2)]
            for hit, sub in s.groupby("recalc"):
                label = SEED_LABELS[bool(hit)]
                ax.plot([xi] * len(sub), sub["gain"], ls="none", ms=3.5, zorder=3,
                        marker="o", mfc="none" if hit else "k",
                        mec="tab:red" if hit else "k",
                        label=None if label in shown else label)
                shown.add(label)
            pt = df[(df["tasks"] == t) & (df["l2_size"] == l2)]
            sg = steady_gain(pt) if s["recalc"].any() else None
            if sg is not None:  # the first state alone, run by run
                ax.plot([xi], [sg["mean"]], ls="none", marker="D", ms=4.5, zorder=4,
                        mfc="gold", mec="k",
                        label=None if STEADY_LABEL in shown else STEADY_LABEL)
                shown.add(STEADY_LABEL)
        if q is not None:       # the run queue each bar's runs walked
            for xi, l2, top in zip(x, sizes, r["max"]):
                qq = fmt_queue(q, lambda v: (v["l2_size"] == l2) & (v["tasks"] == t),
                               with_spread=False)
                if qq != "-":
                    ax.annotate(f"q {qq}", (xi, max(top, 0) if top == top else 0),
                                textcoords="offset points", xytext=(0, 2), ha="center",
                                fontsize=6)
    imp = p.get("improvement", {})
    for i, l2 in enumerate(sizes):
        v = imp.get(l2_name(l2))
        if isinstance(v, (int, float)):
            ax.plot([i - 0.45, i + 0.45], [v, v], color="k", ls="--", lw=1,
                    label="paper (best case)" if i == len(sizes) - 1 else None)
        elif v:                 # a word, not a number: above the group's bars,
            # but inside the axes where a seed's gain reaches their top
            top = g.loc[g["l2_size"] == l2, "max"].max()
            top = min(max(top, 0) if top == top else 0, 0.8 * ax.get_ylim()[1])
            ax.annotate(f"paper: {v}", (i, top),
                        textcoords="offset points", xytext=(0, 14), ha="center",
                        fontsize=7)
    ax.axhline(0, color="k", lw=0.5)
    ax.set_xticks(range(len(sizes)))
    ax.set_xticklabels([f"L2 {l2_name(x)}" for x in sizes])
    ax.set_ylabel("c32 over vanilla (%)")
    ax.set_title(f"Figure 6: {unit_of(df)}, mean of seeds, bars: min-max of "
                 "same-seed ratios" + (";\nq: the run queue's mean length"
                                       if q is not None else ""), fontsize=8)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    fig.tight_layout()
    it.images = save(fig, out, "fig6", d, norm="c32's throughput over vanilla's, same seed")
    rows = []
    thr = spread(df, ["l2_size", "tasks", "kernel"], "throughput")
    qs = queue_spread(df, ["l2_size", "tasks", "kernel"])
    for _, r in g.iterrows():
        pv = imp.get(l2_name(r["l2_size"]))
        row = {"L2": l2_name(r["l2_size"]), "httpd": int(r["tasks"])}
        if qs is not None:      # what the scheduler walked, beside the httpd count
            row["run queue, mean (vanilla / c32)"] = " / ".join(
                fmt_queue(qs, lambda x: (x["l2_size"] == r["l2_size"])
                          & (x["tasks"] == r["tasks"]) & (x["kernel"] == k))
                for k in ("vanilla", "c32"))
        for k in ("vanilla", "c32"):
            t = thr[(thr["l2_size"] == r["l2_size"]) & (thr["tasks"] == r["tasks"])
                    & (thr["kernel"] == k)]
            row[f"{k} req/s"] = (fmt_spread(t["mean"].iloc[0], t["min"].iloc[0],
                                            t["max"].iloc[0], 0) if len(t) else "-")
        pt = df[(df["l2_size"] == r["l2_size"]) & (df["tasks"] == r["tasks"])]
        sg = steady_gain(pt)
        row.update({"improvement % (ours)": fmt_spread(r["mean"], r["min"], r["max"]),
                    "steady runs' improvement %": (
                        "-" if sg is None else fmt_spread(sg["mean"], sg["min"], sg["max"])
                        + f" ({sg['n']['vanilla']} / {sg['n']['c32']} runs)"),
                    "paper %": "-" if pv is None else str(pv),
                    "deviation (pp)": (fmt_num(r["mean"] - pv)
                                       if isinstance(pv, (int, float)) else "-"),
                    "seeds": int(r["seeds"])})
        rows.append(row)
    it.tables.append(("Throughput (mean [min-max] over seeds) and the improvement "
                      "of 32 colors, beside the paper's best case", pd.DataFrame(rows)))
    return [it]


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
    it.images = save(fig, out, oid, d,
                     norm="throughput per modelled second")
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
    it.images = save(fig, out, oid, d,
                     norm="throughput over vanilla's, same seed")
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
    it.images = save(fig, out, oid, d,
                     norm="contention: share of acquisitions that waited; hold: per acquisition")
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
