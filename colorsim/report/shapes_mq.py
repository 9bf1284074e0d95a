"""The multi-queue kernels in the paper-beside-ours block.

Figure 9's and Figure 10's sweeps also run ``mq`` (the multi-queue
scheduler the paper compares against) and ``mq-c32`` (it with 32 colors,
which the paper calls orthogonal to coloring and never measured).  These
two small tables put them beside vanilla and c32: Table 4's speed-up over
vanilla per CPU count, Tables 6 and 8's lock contention, and Figure 10's
best CPU count.  The paper published mq's speed-ups only; every other mq
cell and every mq-c32 cell of the paper's side is a dash.
"""

from __future__ import annotations

from colorsim.report.common import (agree, cpu_counts, gain, gain_range, spread,
                                    timed)

MQ = ("mq", "mq-c32")
KERNELS = ("vanilla", "c32") + MQ
NONE = "—"                 # the paper has no number there
# Figure 10's knee, from the paper's text (no table): vanilla peaks at 4
# CPUs, c32 at 6; of mq it says only that it was best.
PAPER_KNEE = {"vanilla": "4", "c32": "6", "mq": "— (highest throughput)"}
LOCK_NOTE = (
    "Lock contention is the share of run-queue lock acquisitions that found "
    "the lock held, as the lockmeter counts them: for vanilla and c32 the one "
    "global runqueue_lock; for mq and mq-c32 every CPU's own run-queue lock, "
    "summed (a CPU takes its own in schedule(), and another CPU's to wake a "
    "task on that queue or to steal one from it).")


def _pct(x) -> str:
    return "-" if x is None or x != x else f"{x:+.1f} %"


def has_mq(*dfs) -> bool:
    """Whether any of the timed runs ran a multi-queue kernel."""
    return any(len(df) and df["kernel"].isin(MQ).any() for df in dfs)


def speedup_table(df, paper: dict, label: str) -> list:
    """Table 4, per CPU count the runs have and the paper measured: each
    kernel's speed-up over vanilla, the paper's line above ours, and
    whether the directions agree (common.agree)."""
    p = paper["table4"]
    cpus = sorted(c for c in set(df["cpus"]) if c in p["cpus"]) if len(df) else []
    head = (f"| Table 4: web speed-up over vanilla (8-way Xeon) {label} | | "
            + " | ".join(f"{int(c)} CPU" for c in cpus) + " | same direction |")
    lines = [head, "|" + "---|" * (len(cpus) + 3)]
    for k in KERNELS[1:]:
        if k not in set(df["kernel"]):
            continue
        g = gain(df, ["cpus"], k).set_index("cpus")
        theirs = dict(zip(p["cpus"], p[k])) if k in p else {}
        lines.append(f"| {k} | the paper | "
                     + " | ".join(_pct(theirs[c]) if c in theirs else NONE
                                  for c in cpus) + " | |")
        have = [c for c in cpus if c in g.index]
        verdict = agree([g.loc[c] for c in have], [theirs.get(c) for c in have]) \
            if theirs else NONE
        lines.append(f"| {k} | ours | "
                     + " | ".join(gain_range(g.loc[c]) if c in g.index else "-"
                                  for c in cpus) + f" | {verdict} |")
    return lines


def _lock_cells(df, paper: dict, oid: str) -> tuple:
    """(CPU count, {kernel: "the paper / ours"}): contention at the most
    CPUs both the runs and the paper's table have."""
    p = paper[oid]
    both = sorted(set(df["cpus"]) & set(p["cpus"])) if len(df) and \
        "lock_contention_pct" in df.columns else []
    if not both:
        return None, {}
    top = both[-1]
    s = spread(df[df["cpus"] == top], ["kernel"], "lock_contention_pct") \
        .set_index("kernel")
    i = p["cpus"].index(top)
    out = {}
    for k in KERNELS:
        col = f"{k}_contention"
        theirs = f"{p[col][i]:.1f} %" if col in p else NONE
        ours = f"{s.loc[k, 'mean']:.1f} %" if k in s.index else "-"
        out[k] = f"{theirs} / {ours}"
    return top, out


def knees(df) -> dict:
    """Each kernel's CPU count of highest mean throughput (none where
    fewer than two CPU counts ran: one has no best)."""
    if not len(df) or len(set(df["cpus"])) < 2:
        return {}
    s = spread(df, ["kernel", "cpus"], "throughput")
    return {k: int(g.loc[g["mean"].idxmax(), "cpus"]) for k, g in s.groupby("kernel")}


def lock_knee_table(web, chat, paper: dict, labels: tuple) -> list:
    """One row per kernel: Table 6's and Table 8's contention and Figure
    10's best CPU count, the paper's beside ours."""
    n6, c6 = _lock_cells(web, paper, "table6")
    n8, c8 = _lock_cells(chat, paper, "table8")
    knee = knees(chat)
    swept = cpu_counts(sorted(int(c) for c in set(chat["cpus"])))
    present = set(web["kernel"] if len(web) else []) | \
        set(chat["kernel"] if len(chat) else [])
    h6 = f"at {n6} CPUs" if n6 else "(no CPU count the paper measured)"
    h8 = f"at {n8} CPUs" if n8 else "(no CPU count the paper measured)"
    hk = f"of {swept} CPUs swept" if swept else "not swept"
    lines = [f"| kernel | Table 6: web lock contention {h6}, the paper / ours "
             f"{labels[0]} | Table 8: Chat lock contention {h8}, the paper / ours "
             f"{labels[1]} | Figure 10: Chat's best CPU count, the paper / ours "
             f"({hk}) |", "|---|---|---|---|"]
    for k in KERNELS:
        if k not in present:
            continue
        lines.append(f"| {k} | {c6.get(k, '-')} | {c8.get(k, '-')} | "
                     f"{PAPER_KNEE.get(k, NONE)} / {knee.get(k, '-')} |")
    return lines


def render(d9, d10, paper: dict) -> str:
    """The multi-queue tables from fig9's and fig10's data (ExpData, or
    None where not swept); empty if neither ran an mq kernel."""
    web = timed(d9) if d9 is not None else None
    chat = timed(d10) if d10 is not None else None
    import pandas as pd
    empty = pd.DataFrame(columns=["kernel", "cpus", "throughput", "seed"])
    web = empty if web is None else web
    chat = empty if chat is None else chat
    if not has_mq(web, chat):
        return ""
    label = lambda d: (f"[{d.scale}, {d.counts['done']} runs]" if d is not None
                       else "[not swept]")
    lines = ["", "The multi-queue kernels (the paper published mq's speed-ups "
             f"only; mq-c32, the multi-queue scheduler with 32 colors, it never "
             f"ran; {NONE}: no number in the paper):", ""]
    if len(web):
        lines += speedup_table(web, paper, label(d9)) + [""]
    lines += lock_knee_table(web, chat, paper, (label(d9), label(d10)))
    lines += ["", LOCK_NOTE]
    return "\n".join(lines) + "\n"
