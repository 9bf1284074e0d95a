"""The burst table: how the shapes of Figure 6 (32 colors over vanilla
across L2 sizes) and Table 6 (runqueue_lock contention and hold time
across CPUs) change with the built-in workload's burst length, the
iterations of each task's compute loop between two sleeps
(configs/experiments.toml, [burst])."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from colorsim.report.common import (Item, ExpData, fmt_num,
                                    fmt_spread, gain, l2_name, save, spread,
                                    timed, _setup_matplotlib)


def _cell(s: pd.DataFrame, **key) -> str:
    """The mean [min-max] of the one row of ``s`` matching ``key``."""
    r = s
    for k, v in key.items():
        r = r[r[k] == v]
    if r.empty:
        return "-"
    r = r.iloc[0]
    return fmt_spread(r["mean"], r["min"], r["max"])


def burst_rows(df: pd.DataFrame, paper: dict) -> pd.DataFrame:
    """One row per burst length: the scheduler's share (vanilla), Figure
    6's c32 gain per L2 size at the most CPUs, Table 6's contention per
    CPU count and hold mean at the largest L2; then the paper's web
    numbers for the same cells."""
    top, big = max(df["cpus"]), max(df["l2_size"])
    sizes, cpus = sorted(set(df["l2_size"])), sorted(set(df["cpus"]))
    g6 = gain(df[df["cpus"] == top], ["burst", "l2_size"], "c32")
    at_big = df[df["l2_size"] == big]
    share = spread(at_big[at_big["kernel"] == "vanilla"], ["burst", "cpus"],
                   "sched_share_pct")
    held = spread(at_big[at_big["kernel"] == "vanilla"], ["burst", "cpus"],
                  "lock_held_pct")
    cont = spread(at_big, ["burst", "kernel", "cpus"], "lock_contention_pct")
    hold = spread(at_big, ["burst", "kernel", "cpus"], "lock_hold_mean_us")
    rows = []
    for b in sorted(set(df["burst"])):
        row = {"burst": str(b),
               f"schedule() % (vanilla, {top} CPU)": _cell(share, burst=b, cpus=top),
               f"lock held % (vanilla, {top} CPU)": _cell(held, burst=b, cpus=top)}
        for s in sizes:
            row[f"c32 gain % L2 {l2_name(s)}"] = _cell(g6, burst=b, l2_size=s)
        for c in cpus:
            row[f"contention % {c} CPU v / c32"] = (
                f"{_cell(cont, burst=b, kernel='vanilla', cpus=c)} / "
                f"{_cell(cont, burst=b, kernel='c32', cpus=c)}")
        row[f"hold mean µs {top} CPU v / c32"] = (
            f"{_cell(hold, burst=b, kernel='vanilla', cpus=top)} / "
            f"{_cell(hold, burst=b, kernel='c32', cpus=top)}")
        rows.append(row)
    rows.append(_paper_row(rows[0].keys(), sizes, cpus, top, paper))
    return pd.DataFrame(rows)


def _paper_row(cols, sizes, cpus, top, paper) -> dict:
    """The paper's web numbers in the table's columns (Figure 6's best
    case; Table 6's 8-way PIII at the same CPU counts)."""
    imp = paper.get("fig6", {}).get("improvement", {})
    t6 = paper.get("table6", {})
    at = {k: dict(zip(t6.get("cpus", []), t6.get(k, [])))
          for k in ("vanilla_contention", "c32_contention",
                    "vanilla_hold_mean", "c32_hold_mean")}
    row = dict.fromkeys(cols, "-")
    row["burst"] = "paper (web)"
    for s in sizes:
        v = imp.get(l2_name(s))
        row[f"c32 gain % L2 {l2_name(s)}"] = "-" if v is None else str(v)
    for c in cpus:
        row[f"contention % {c} CPU v / c32"] = (
            f"{fmt_num(at['vanilla_contention'].get(c))} / "
            f"{fmt_num(at['c32_contention'].get(c))}")
    row[f"hold mean µs {top} CPU v / c32"] = (
        f"{fmt_num(at['vanilla_hold_mean'].get(top), 0)} / "
        f"{fmt_num(at['c32_hold_mean'].get(top), 0)}")
    return row


def _figure(df: pd.DataFrame, out: Path, d: ExpData) -> list:
    """Left: c32 over vanilla per L2 size, a line per burst length (Figure
    6's shape); right: contention per CPU count, vanilla solid and c32
    dashed (Table 6's)."""
    plt = _setup_matplotlib()
    top, big = max(df["cpus"]), max(df["l2_size"])
    sizes, cpus = sorted(set(df["l2_size"])), sorted(set(df["cpus"]))
    bursts = sorted(set(df["burst"]))
    shades = plt.get_cmap("viridis")
    fig, (a6, a8) = plt.subplots(1, 2, figsize=(10, 3.4))
    g6 = gain(df[df["cpus"] == top], ["burst", "l2_size"], "c32")
    cont = spread(df[df["l2_size"] == big], ["burst", "kernel", "cpus"],
                  "lock_contention_pct")
    for i, b in enumerate(bursts):
        color = shades(i / max(len(bursts) - 1, 1))
        r = g6[g6["burst"] == b].set_index("l2_size").reindex(sizes)
        a6.plot(range(len(sizes)), r["mean"], marker="o", color=color,
                label=f"burst {b}")
        for k, ls in (("vanilla", "-"), ("c32", "--")):
            r = cont[(cont["burst"] == b) & (cont["kernel"] == k)]
            r = r.set_index("cpus").reindex(cpus)
            a8.plot(cpus, r["mean"], marker="o", ls=ls, color=color,
                    label=f"burst {b} {k}")
    a6.axhline(0, color="k", lw=0.5)
    a6.set_xticks(range(len(sizes)))
    a6.set_xticklabels([f"L2 {l2_name(s)}" for s in sizes])
    a6.set_ylabel(f"c32 over vanilla (%), {top} CPUs")
    a6.set_title("Figure 6's shape", fontsize=9)
    a6.legend(fontsize=7)
    a8.set_xticks(cpus)
    a8.set_xlabel("CPUs")
    a8.set_ylabel(f"runqueue_lock contention (%), L2 {l2_name(big)}")
    a8.set_ylim(bottom=0)
    a8.set_title("Table 6's shape (solid vanilla, dashed c32)", fontsize=9)
    a8.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1))
    fig.suptitle("Built-in workload: burst length vs the shapes of Figure 6 and "
                 "Table 6 (mean of seeds)", fontsize=9)
    fig.tight_layout()
    return save(fig, out, d.stem("burst"), d,
                norm="c32 over vanilla work per modelled second; lock shares of the region")


def burst(d: ExpData, out: Path, paper: dict) -> list:
    it = Item("burst", "Burst length: the shapes of Figure 6 and Table 6 with "
              "the built-in workload", d.exp.name, d.scale)
    df = timed(d)
    if df.empty:
        it.notes.append("no timed runs yet")
        return [it]
    it.images = _figure(df, out, d)
    it.tables.append((
        "Per burst length (iterations between two sleeps): the scheduler's "
        "share and lock hold (vanilla), 32 colors over vanilla in throughput "
        "per L2 size at the most CPUs (Figure 6), runqueue_lock contention "
        "per CPU count and mean hold time at the largest L2 (Table 6); mean "
        "[min-max] over seeds.  The paper's row is its web server on its "
        "machines, for the shape only", burst_rows(df, paper)))
    return [it]
