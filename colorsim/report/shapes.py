"""The paper's results beside ours, shape by shape, with what our runs
measured that explains where they part.

``python3 -m colorsim shapes`` reads the catalog of a runs folder (the one
the sweeps write) and prints one row per claim of the paper that needs
modelled time or counts the web runs' bus transactions (Figures 1, 3, 7):
the paper's shape, ours, whether they agree, and the
measurements that say why (how long the run queue was, how much of the CPUs'
time went to ``schedule()`` and to spinning on ``runqueue_lock``, where the
tasks waited).  ``--write FILE`` puts the table between FILE's
``<!-- shapes:begin -->`` and ``<!-- shapes:end -->`` markers, so the
README's numbers are generated, never typed.  Every row is a function of the
catalog; a claim whose experiment has no done runs says which sweep makes it.
Below the table, where fig9 or fig10 ran the multi-queue kernels, two small
tables set mq and mq-c32 beside vanilla and c32 (colorsim/report/shapes_mq.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from colorsim.report import shapes_mq
from colorsim.report.markdown import markers
from colorsim.report.common import (ExpData, cpu_counts, gain, l2_name,
                                    paper_results, pick_scale, spread, timed)
from colorsim.report.common import (TASK_REACH, agree as _agree, gain_range as _range,
                                     some_recalculated, steady_gain, steady_runs)

BEGIN, END = markers("shapes")
# the wait report's columns that are not a channel tasks sleep on
NOT_ASLEEP = {"n_wait_tasks_mean", "n_wait_running_mean",
              "n_wait_runnable_mean", "n_wait_exited_mean"}


@dataclass
class Row:
    claim: str          # the paper's result, named as the paper does
    paper: str          # its shape, in the paper's numbers
    ours: str           # our shape, from the catalog
    agree: str          # "yes", "no", "partly" or "-" (not measured)
    why: str            # what our runs measured that bears on it


def _pct(x, sign=True) -> str:
    if x is None or x != x:
        return "-"
    return f"{x:+.1f} %" if sign else f"{x:.1f} %"


def _mean(df: pd.DataFrame, col: str):
    return float(df[col].mean()) if col in df.columns and len(df) else float("nan")


def context(df: pd.DataFrame) -> str:
    """What the runs measured about their own operating point: how busy the
    server's CPUs were (a server that idles waits for its load, not its
    scheduler), the run queue's mean length, the tasks waiting in accept,
    the share of cycles in ``schedule()`` and spinning on the run-queue lock
    (vanilla's runs)."""
    v = df[df["kernel"] == "vanilla"] if "kernel" in df.columns else df
    v = v if len(v) else df
    parts = []
    busy = _mean(v, "busy_fraction")
    if busy == busy:
        parts.append(f"server CPUs busy {busy * 100:.0f} %")
    rq = _mean(v, "n_rq_len_mean")
    if rq == rq:
        parts.append(f"run queue {rq:.1f} tasks on average" + steady(v))
    tasks = _mean(v, "n_wait_tasks_mean")
    asleep = {c[len("n_wait_"):-len("_mean")]: _mean(v, c) for c in v.columns
              if c.startswith("n_wait_") and c.endswith("_mean")
              and c not in NOT_ASLEEP}
    asleep = {k: x for k, x in asleep.items() if x == x and x > 0}
    if tasks == tasks and tasks and asleep:
        chan = max(sorted(asleep), key=asleep.get)
        share = asleep[chan] / tasks * 100
        # a herd keeps every httpd runnable: no channel holds a whole percent
        parts.append(f"{share:.0f} % of tasks asleep in {chan}" if share >= 0.5
                     else "under 1 % of tasks asleep anywhere")
    sched = _mean(v, "sched_share_pct")
    if sched == sched:
        parts.append(f"schedule() {sched:.1f} % of cycles")
    spin = _mean(v, "lock_spin_pct")
    if spin == spin:
        parts.append(f"spinning on runqueue_lock {spin:.1f} %")
    clients = _mean(df, "client_busy_fraction")
    if clients == clients:
        parts.append(f"client CPUs busy {clients * 100:.0f} %")
    idle = idle_runs(df)
    if idle:
        parts.append(f"{idle} of {len(df)} runs' servers idle over "
                     f"{IDLE_LIMIT * 100:.0f} % of the region (their load, not "
                     f"the scheduler, set their throughput)")
    recalc = recalc_runs(df)
    if recalc:
        parts.append(recalc)
    return "; ".join(parts) if parts else "-"


def steady(df: pd.DataFrame) -> str:
    """How steady the runs' regions were, where the program marked their
    quarters (colorsim/run/console.py): the least and most quarter mean of
    the run queue, and of a quarter's rate of work over its region's, over
    all the runs; "" without marks."""
    lo, hi = "n_quarter_rq_mean_lo", "n_quarter_rq_mean_hi"
    if lo not in df.columns or not df[lo].notna().any():
        return ""
    text = f" (its quarters {df[lo].min():.0f} to {df[hi].max():.0f}"
    if "n_quarter_rate_lo" in df.columns and df["n_quarter_rate_lo"].notna().any():
        text += (f"; a quarter's rate {df['n_quarter_rate_lo'].min():.2f} to "
                 f"{df['n_quarter_rate_hi'].max():.2f} of its region's")
    return text + ")"


def recalc_runs(df: pd.DataFrame) -> str:
    """The runs whose region held a recalculation of every task's time
    slice (2.4's schedule() found every runnable task's counter spent),
    per kernel, and schedule() calls per unit of work in them against the
    others': with the wake-all accept lock such runs call schedule() many
    times per request (docs/operating-point.md, "Two states"), "" where
    no run recalculated."""
    need = {"n_counter_recalcs", "n_schedule_calls", "kernel"}
    if not need <= set(df.columns) or not (df["n_counter_recalcs"] > 0).any():
        return ""
    work = next((df[c] for c in ("roi_requests", "work_units")
                 if c in df.columns and (df[c] > 0).all()), None)
    if work is None:
        return ""
    per = df["n_schedule_calls"] / work
    hit = df["n_counter_recalcs"] > 0
    counts = ", ".join(f"{k} {int(hit[df['kernel'] == k].sum())} of "
                       f"{int((df['kernel'] == k).sum())}"
                       for k in sorted(set(df["kernel"])))
    text = (f"runs that recalculated every time slice in the region: {counts}; "
            f"schedule() per unit of work {per[hit].mean():.1f}")
    return text + (f" in them, {per[~hit].mean():.1f} in the others" if (~hit).any() else "")


# A timed run whose server CPUs were idle more than this share of the region
# did not run at its load's limit: for the web workload its clients could
# not keep every httpd busy (engine/qemu-plugin/README.md, "The quantum").
IDLE_LIMIT = 0.05


def idle_runs(df: pd.DataFrame) -> int:
    """How many of the runs (every kernel's) had their server CPUs idle
    more than IDLE_LIMIT of the region."""
    if "busy_fraction" not in df.columns:
        return 0
    return int((df["busy_fraction"] < 1 - IDLE_LIMIT).sum())


def fig6_row(d: ExpData, paper: dict) -> Row:
    """At the most httpd swept (the paper's best case is its largest
    queue), per L2 size: the mean and range of same-seed gains."""
    p = paper["fig6"]["improvement"]
    df = timed(d)
    if df.empty:
        return Row("Figure 6: web throughput, c32 over vanilla (4-way PPro)",
                   "-", "-", "-", "no timed runs")
    counts = sorted(int(t) for t in set(df["tasks"]))
    # the paper gives its best case ("up to"): per L2 the httpd count whose
    # mean gain is largest; with one count swept, that count
    g = gain(df, ["l2_size", "tasks"], "c32")
    g = g.loc[g.groupby("l2_size")["mean"].idxmax()].set_index("l2_size")
    sizes = sorted(g.index)
    theirs = [p.get(l2_name(s)) for s in sizes]
    num = [t if isinstance(t, (int, float)) else None for t in theirs]
    agree = _agree([g.loc[s] for s in sizes], num)
    if agree == "yes" and not _grows([float(g.loc[s, "mean"]) for s in sizes], num):
        agree = "partly: the gain does not grow with the L2 as the paper's"
    at = (lambda s: f" at {int(g.loc[s, 'tasks'])}") if len(counts) > 1 else (lambda s: "")
    what = (f"4-way PPro, {counts[0]} httpd" if len(counts) == 1 else
            f"4-way PPro, the best of {', '.join(map(str, counts))} httpd")
    top = df[df["tasks"] == counts[-1]]
    return Row(f"Figure 6: web throughput, c32 over vanilla ({what})",
               ", ".join(f"{l2_name(s)} {t if isinstance(t, str) else _pct(t)}"
                         for s, t in zip(sizes, theirs)),
               ", ".join(f"{l2_name(s)} {_range(g.loc[s])}{at(s)}" for s in sizes),
               agree, (f"at {counts[-1]} httpd: " if len(counts) > 1 else "")
               + context(top))


def fig6_counts_row(df: pd.DataFrame):
    """Figure 6 at every httpd count swept (the paper draws 256, 512 and
    1024): c32's gain per L2 size at each, where a sweep ran more than one
    count; the paper gives numbers only for its best case (the row above)."""
    counts = sorted(set(df["tasks"])) if len(df) else []
    if len(counts) < 2:
        return None
    g = gain(df, ["tasks", "l2_size"], "c32")
    cells = []
    for t in counts:
        sub = g[g["tasks"] == t].set_index("l2_size")
        cells.append(f"{int(t)}: " + ", ".join(
            f"{l2_name(s)} {_range(sub.loc[s])}" for s in sorted(sub.index)))
    rq = df[df["kernel"] == "vanilla"].groupby("tasks")["n_rq_len_mean"].mean() \
        if "n_rq_len_mean" in df.columns else pd.Series(dtype=float)
    return Row("Figure 6 at each httpd count: c32 over vanilla per L2",
               "curves; numbers for the best case only (the row above)",
               "; ".join(cells), "-",
               "vanilla's run queue per httpd count: " + ", ".join(
                   f"{int(t)}: {rq[t]:.0f}" for t in counts if t in rq.index))


def fig6_steady_row(df: pd.DataFrame):
    """Figure 6 at the most httpd swept from the runs whose regions stayed
    out of 2.4's recalculation of every time slice (common.steady_gain),
    where some run did not: per L2 size, c32's mean throughput over its
    steady runs against vanilla's, with the range over every pair."""
    if df.empty:
        return None
    top = df[df["tasks"] == max(df["tasks"])]
    if not some_recalculated(top):
        return None
    cells = []
    for l2, g in top.groupby("l2_size", sort=True):
        r = steady_gain(g)
        if r is None:
            cells.append(f"{l2_name(l2)} - (a kernel's every run recalculated)")
        else:
            cells.append(f"{l2_name(l2)} {_range(r)} (vanilla {r['n']['vanilla']} of "
                         f"{r['of']['vanilla']}, c32 {r['n']['c32']} of {r['of']['c32']} runs)")
    return Row(f"Figure 6 at {int(max(df['tasks']))} httpd, runs whose regions never "
               "recalculated every time slice", "as the row above",
               ", ".join(cells), "-",
               "c32's mean over vanilla's, the range over every pair of such runs; the "
               "other runs' regions fell into a convoy on the accept lock "
               "(docs/operating-point.md, \"Two states\")")


def steady_rows(d: ExpData, make, paper: dict) -> list:
    """``make``'s row again from only the runs whose regions never
    recalculated every time slice (the first of the two states,
    docs/operating-point.md), where some run did; [] where none did."""
    df = d.runs
    if not some_recalculated(df):
        return []
    keep = steady_runs(df)
    r = make(d.view(keep, d.tag), paper)
    r.claim += ", runs whose regions never recalculated every time slice"
    top = df["tasks"].max()                     # the rows read the most httpd
    r.why = f"{int((keep['tasks'] == top).sum())} of {int((df['tasks'] == top).sum())} runs; " + r.why
    return [r]


def fig6_more_rows(df: pd.DataFrame) -> list:
    """The Figure 6 rows beyond the best case that the timed runs ``df``
    give: per httpd count, and from the steady seeds."""
    return [r for r in (fig6_counts_row(df), fig6_steady_row(df)) if r]


def _grows(ours: list, theirs: list) -> bool:
    """Where the paper's values rise from one L2 size to the next, ours
    rise too."""
    pts = [(o, t) for o, t in zip(ours, theirs) if t is not None]
    return all(o2 > o1 for (o1, t1), (o2, t2) in zip(pts, pts[1:]) if t2 > t1)


def loop_miss_row(d: ExpData, paper: dict) -> Row:
    """Table 2's run-queue loop L2 miss ratio, from the same runs as
    Figure 6's gain: how much of the walk's misses coloring left."""
    p = paper["table2"]
    df = d.runs
    what = "Table 2: run-queue loop L2 miss ratio, vanilla / c32, in those runs"
    if df.empty or "rqloop_l2_miss_ratio" not in df.columns:
        return Row(what, "-", "-", "-", "no runs")
    top = int(max(df["tasks"]))
    df = df[df["tasks"] == top]
    m = df.groupby(["l2_size", "kernel"])["rqloop_l2_miss_ratio"].mean() * 100
    theirs = dict(zip(p["l2"], zip(p["vanilla"], p["c32"])))
    sizes = sorted(set(df["l2_size"]))
    have = [s for s in sizes if (s, "vanilla") in m and (s, "c32") in m]
    ours = ", ".join(f"{l2_name(s)} {m[(s, 'vanilla')]:.1f} / {m[(s, 'c32')]:.1f} %"
                     for s in have)
    paper_s = ", ".join(f"{l2_name(s)} {theirs[l2_name(s)][0]:.1f} / "
                        f"{theirs[l2_name(s)][1]:.1f} %"
                        for s in have if l2_name(s) in theirs)
    # the shape: c32 below vanilla, and falling as the L2 grows
    c32 = [m[(s, "c32")] for s in have]
    below = all(m[(s, "c32")] < m[(s, "vanilla")] for s in have)
    falls = all(a >= b for a, b in zip(c32, c32[1:]))
    agree = "-" if not have else ("yes" if below and falls else
                                  ("partly" if below or falls else "no"))
    return Row(what, paper_s or "-", ours or "-", agree,
               "c32's walk misses by why the line was gone (" + "; ".join(
                   f"{l2_name(s)} {miss_causes(df[(df['l2_size'] == s) & (df['kernel'] == 'c32')])}"
                   for s in have) + "): what evicts the colored lines is what "
               "competes with them in the L2")


# why a walk load missed the L2 (busmon's rqloop_l2_read_* counters, which
# add up to the walk's misses): short names for the table
MISS_CAUSES = (("evicted_user", "user lines"), ("evicted_kernel", "kernel lines"),
               ("evicted_loop", "walk lines"), ("invalidated", "another CPU's write"),
               ("first", "first load"))


def miss_causes(df: pd.DataFrame) -> str:
    """The shares of the walk's L2 misses by cause, summed over ``df``'s
    runs: evicted by a user-mode, another kernel or another walk line,
    invalidated by another CPU's write, or never loaded before."""
    cols = {k: f"n_rqloop_l2_read_{k}" for k, _ in MISS_CAUSES}
    if not set(cols.values()) <= set(df.columns) or df.empty:
        return "-"
    n = {k: float(df[c].sum()) for k, c in cols.items()}
    total = sum(n.values())
    if not total:
        return "no misses"
    return ", ".join(f"{name} {n[k] / total * 100:.0f} %" for k, name in MISS_CAUSES
                     if n[k] / total >= 0.005)


# -- the counted web results: Figures 1, 3 and 7 ------------------------------
# Each reads its own experiment's done runs; counts are per request of the
# region where runs with different regions are compared (Figure 3's httpd
# counts), the region's sums where both kernels served the same requests.

def _per_request(df, col):
    """``col`` per request of the region (web), or the region's sum."""
    if "roi_requests" in df.columns and (df["roi_requests"] > 0).all():
        return df[col] / df["roi_requests"]
    return df[col]


def fig1_row(d: ExpData, paper: dict) -> Row:
    """Vanilla's peak page offset (the offset most seeds peak at) and how
    much of that peak's height c32 leaves at any offset."""
    what = "Figure 1: vanilla's peak page offset; c32's largest offset, share of that peak"
    df = d.runs
    theirs = f"{paper['fig1']['peak_offset']:#05x}; one dominant peak"
    v, c = df[df["kernel"] == "vanilla"], df[df["kernel"] == "c32"]
    if v.empty or c.empty:
        return Row(what, theirs, "-", "-", "needs vanilla and c32 runs")
    peak = int(v["peak_offset"].mode().iloc[0])
    share = c["peak_count"].mean() / max(v["peak_count"].mean(), 1) * 100
    agree = "yes" if peak == paper["fig1"]["peak_offset"] else "no"
    top = int(df["tasks"].max())
    return Row(what + f" ({top} httpd, L2 {l2_name(df['l2_size'].iloc[0])})",
                theirs, f"{peak:#05x}; {share:.1f} %", agree,
                f"vanilla peaks there in {int((v['peak_offset'] == peak).sum())} "
                f"of {len(v)} runs")


def fig3_row(d: ExpData, paper: dict) -> Row:
    """Vanilla at the fewest and the most httpd: transactions at 0x30 per
    request and requests per modelled second."""
    what = "Figure 3: vanilla, transactions at 0x30 per request and throughput vs httpd"
    df = d.runs[d.runs["kernel"] == "vanilla"]
    if df.empty:
        return Row(what, "-", "-", "-", "no vanilla runs")
    df = df.assign(at30=[int(d.offsets(r).get(0x30, 0)) for r in df["run_id"]])
    df = df.assign(at30=_per_request(df, "at30"))
    lo, hi = int(df["tasks"].min()), int(df["tasks"].max())
    if lo == hi:
        return Row(what, "-", "-", "-", f"one httpd count ({lo}) only")
    a, b = df[df["tasks"] == lo], df[df["tasks"] == hi]
    grow = b["at30"].mean() / max(a["at30"].mean(), 1e-9)
    ours = f"0x30 per request x{grow:.1f} from {lo} to {hi} httpd"
    falls = None
    if "throughput" in df.columns and df["throughput"].notna().all():
        t0, t1 = a["throughput"].mean(), b["throughput"].mean()
        falls = t1 < t0
        ours += f"; throughput {(t1 / t0 - 1) * 100:+.1f} %"
    agree = "yes" if grow > 1 and falls is not False else \
        ("partly" if grow > 1 or falls else "no")
    rq = ", ".join(f"{int(t)}: {df[df['tasks'] == t]['n_rq_len_mean'].mean():.0f}"
                   for t in sorted(set(df["tasks"]))) \
        if "n_rq_len_mean" in df.columns else "-"
    return Row(what, "0x30 grows sharply with the processes; throughput falls",
                ours, agree, f"run queue (tasks on average) per httpd count: {rq}")


def fig7_row(d: ExpData, paper: dict) -> Row:
    """Colored-line transactions, c32 against vanilla, per L2 size; at the
    smallest L2 also all transactions per request (the paper's 256 KB
    result: they rose slightly)."""
    p = paper["fig7"]["colored_change"]
    what = "Figure 7: colored-line transactions, c32 vs vanilla"
    df = d.runs
    sizes = sorted(set(df["l2_size"]))
    # per L2 size that has both kernels: (vanilla's runs, c32's runs)
    pairs = {s: (df[(df["l2_size"] == s) & (df["kernel"] == "vanilla")],
                 df[(df["l2_size"] == s) & (df["kernel"] == "c32")]) for s in sizes}
    pairs = {s: vc for s, vc in pairs.items() if len(vc[0]) and len(vc[1])}

    def change(s, col):
        """c32 against vanilla at L2 ``s``, per request, in %."""
        v, c = pairs[s]
        return (_per_request(c, col).mean() / _per_request(v, col).mean() - 1) * 100

    cells, theirs, verdicts = [], [], []
    for s in pairs:
        x = change(s, "colored_lines_sum")
        cells.append(f"{l2_name(s)} {x:+.1f} %")
        t = p.get(l2_name(s))
        if t is not None:
            theirs.append(f"{l2_name(s)} {t:+.1f} %")
            verdicts.append((x < 0) == (t < 0))
    if not cells:
        return Row(what, "-", "-", "-", "needs vanilla and c32 runs")
    small = min(sizes)
    why = "-"
    if small in pairs:
        why = (f"all transactions per request at {l2_name(small)}, c32 vs vanilla: "
               f"{change(small, 'total'):+.1f} % (the paper's rose slightly)")
    walk = "n_rqloop_l2_read_misses"
    if walk in df.columns:
        share = {(s, k): (g[walk].sum() / max(g["colored_lines_sum"].sum(), 1) * 100)
                 for (s, k), g in df.groupby(["l2_size", "kernel"])}
        why += ("; the walk's own L2 misses, share of the colored-line "
                "transactions, vanilla / c32: " + ", ".join(
                    f"{l2_name(s)} {share[(s, 'vanilla')]:.0f} / {share[(s, 'c32')]:.0f} %"
                    for s in sizes if (s, "vanilla") in share and (s, "c32") in share))
    lo, hi = TASK_REACH
    reach = _per_request(df.assign(reach=d.in_band(lo, hi)), "reach")
    m = reach.groupby([df["l2_size"], df["kernel"]]).mean()
    why += (f"; over offsets {lo:#04x}-{hi - 1:#x}, where both kernels keep the task's first "
            "two lines (c32's span also holds its state line): " + ", ".join(
                f"{l2_name(s)} {(m[(s, 'c32')] / m[(s, 'vanilla')] - 1) * 100:+.1f} %"
                for s in pairs))
    agree = "-" if not verdicts else ("yes" if all(verdicts) else
                                      ("no" if not any(verdicts) else "partly"))
    top = int(df["tasks"].max())
    return Row(what + f" ({top} httpd)", ", ".join(theirs) or "-",
                ", ".join(cells), agree, why)


def speedup_row(d: ExpData, paper: dict) -> Row:
    p = paper["table4"]
    df = timed(d)
    g = gain(df, ["cpus"], "c32").set_index("cpus") if len(df) else pd.DataFrame()
    cpus = sorted(g.index) if len(g) else []
    theirs = dict(zip(p["cpus"], p["c32"]))
    ends = [c for c in (cpus[:1] + cpus[-1:]) if c in theirs] if cpus else []
    ends = sorted(set(ends))
    return Row("Table 4: web speed-up of c32 over vanilla (8-way Xeon)",
               ", ".join(f"{c} CPU {_pct(theirs[c])}" for c in ends) or "-",
               ", ".join(f"{c} CPU {_range(g.loc[c])}" for c in ends) or "-",
               _agree([g.loc[c] for c in ends], [theirs[c] for c in ends]),
               f"at {ends[-1]} CPUs: " + context(df[df["cpus"] == ends[-1]])
               if ends else context(df))


def lock_row(d: ExpData, paper: dict, oid: str, what: str) -> Row:
    p = paper[oid]
    df = timed(d)
    if df.empty or "lock_contention_pct" not in df.columns:
        return Row(what, "-", "-", "-", "no timed runs")
    top = max(c for c in set(df["cpus"]) if c in p["cpus"]) \
        if set(df["cpus"]) & set(p["cpus"]) else None
    if top is None:
        return Row(what, "-", "-", "-", "no CPU count the paper measured")
    s = spread(df[df["cpus"] == top], ["kernel"], "lock_contention_pct").set_index("kernel")
    i = p["cpus"].index(top)
    pv, pc = p["vanilla_contention"][i], p["c32_contention"][i]
    ov = float(s.loc["vanilla", "mean"]) if "vanilla" in s.index else float("nan")
    oc = float(s.loc["c32", "mean"]) if "c32" in s.index else float("nan")
    agree = "-" if ov != ov or oc != oc else ("yes" if (oc < ov) == (pc < pv) else "no")
    return Row(what + f" at {top} CPUs, vanilla / c32",
               f"{_pct(pv, False)} / {_pct(pc, False)}",
               f"{_pct(ov, False)} / {_pct(oc, False)}", agree,
               context(df[df["cpus"] == top]))


def _knee_side(df: pd.DataFrame, kernel: str, cpus: int) -> dict:
    """One kernel's lock and walk at one CPU count, mean over seeds."""
    r = df[(df["kernel"] == kernel) & (df["cpus"] == cpus)]
    per_msg = r["n_lock_hold_cycles"] / r["roi_messages"] \
        if {"n_lock_hold_cycles", "roi_messages"} <= set(r.columns) else pd.Series(dtype=float)
    return {"held": _mean(r, "lock_held_pct"), "rq": _mean(r, "n_rq_len_mean"),
            "sched": _mean(r, "sched_share_pct"),
            "miss": _mean(r, "rqloop_l2_miss_ratio") * 100,
            "hold": float(per_msg.mean()) if len(per_msg) else float("nan")}


def knee_why(df: pd.DataFrame, best: dict) -> str:
    """Why vanilla stops scaling where it does: its lock, walk and queue at
    its best CPU count and at the next count swept, c32's beside them.
    When the lock is held nearly all the time a message costs its hold
    time whatever the CPU count, so throughput follows the hold cycles per
    message; the hold grows with the queue's length and the walk's L2
    misses."""
    if "vanilla" not in best:
        return ""
    cpus = sorted(int(c) for c in set(df["cpus"]))
    b = best["vanilla"]
    later = [c for c in cpus if c > b]
    if not later:
        return ""
    n = later[0]
    parts = []
    for k in ("vanilla", "c32"):
        a, z = _knee_side(df, k, b), _knee_side(df, k, n)
        if a["held"] != a["held"] or z["held"] != z["held"]:
            continue
        parts.append(
            f"{k} at {b} -> {n} CPUs: runqueue_lock held {a['held']:.0f} -> "
            f"{z['held']:.0f} % of the time, {a['hold']:.0f} -> {z['hold']:.0f} "
            f"hold cycles per message (run queue {a['rq']:.0f} -> {z['rq']:.0f} "
            f"tasks, walk L2 miss ratio {a['miss']:.0f} -> {z['miss']:.0f} %, "
            f"schedule() {a['sched']:.0f} -> {z['sched']:.0f} % of cycles)")
    return "; ".join(parts)


def knee_row(d: ExpData, paper: dict) -> Row:
    df = timed(d)
    what = "Figure 10: Chat throughput's best CPU count, vanilla / c32"
    if df.empty:
        return Row(what, "4 / 6", "-", "-", "no timed runs")
    cpus = sorted(int(c) for c in set(df["cpus"]))
    if len(cpus) < 2:           # one CPU count has no best: c32's gain there
        g = gain(df, ["cpus"], "c32")
        gains = "c32 over vanilla: " + ", ".join(
            f"{int(r['cpus'])} CPUs {_range(r)}" for _, r in g.iterrows()) + "; " \
            if len(g) else ""
        return Row(what, "4 / 6 (of 1-8)", f"- (only {cpu_counts(cpus)} CPUs swept)",
                   "-", gains + context(df))
    best = shapes_mq.knees(df)
    most = cpus[-1]
    ours = f"{best.get('vanilla', '-')} / {best.get('c32', '-')} (of {cpu_counts(cpus)})"
    agree = "-"
    if "vanilla" in best and "c32" in best:
        agree = "yes" if best["vanilla"] < most and best["c32"] >= best["vanilla"] \
            else ("partly" if best["c32"] >= best["vanilla"] else "no")
    why = knee_why(df, best)
    return Row(what, "4 / 6 (of 1-8)", ours, agree,
               (why + "; at the most CPUs: " if why else "")
               + context(df[df["cpus"] == most]))


def data(cat, quick=None) -> dict:
    """The ExpData of every experiment the table reads, at the scale
    picked, each with its experiment (those the experiments file has)."""
    from colorsim.describe.experiments import load_experiments
    exps = load_experiments(check_points=False)
    return {name: ExpData(cat, exps[name], pick_scale(cat, exps[name], quick))
            for name in ("fig1", "fig3", "fig6", "fig7", "fig9", "fig10")
            if name in exps}


def rows(cat, quick=None, ds=None) -> list:
    """One Row per timed claim, from the experiments' done points."""
    ds = ds or data(cat, quick)
    paper = paper_results()
    out = []
    plan = (("fig1", lambda d: [fig1_row(d, paper)]),
            ("fig3", lambda d: [fig3_row(d, paper)]),
            ("fig6", lambda d: [fig6_row(d, paper), loop_miss_row(d, paper)]
             + steady_rows(d, loop_miss_row, paper) + fig6_more_rows(timed(d))),
            ("fig7", lambda d: [fig7_row(d, paper)] + steady_rows(d, fig7_row, paper)),
            ("fig9", lambda d: [speedup_row(d, paper),
                                lock_row(d, paper, "table6",
                                         "Table 6: web run-queue lock contention")]),
            ("fig10", lambda d: [knee_row(d, paper),
                                 lock_row(d, paper, "table8",
                                          "Table 8: Chat run-queue lock contention")]))
    for name, make in plan:
        if name not in ds:          # an experiments file without it
            continue
        d = ds[name]
        e, scale = d.exp, d.scale
        if d.counts["done"] == 0:
            out.append(Row(f"{e.title.split(':')[0]} ({name})", "-", "-", "-",
                           f"not swept: python3 -m colorsim sweep {name}"
                           f"{' --quick' if scale == 'quick' else ''}"))
            continue
        for r in make(d):
            r.claim += f" [{scale}, {d.counts['done']} runs]"
            out.append(r)
    return out


def block(cat, quick=None) -> str:
    """The README's whole shapes block: the table of claims, then the
    multi-queue kernels' tables where fig9 or fig10 ran them.  Without
    ``quick`` (the paper-scale block) only the experiments swept at the
    paper's scale have rows; the others are named in a line."""
    ds = data(cat, quick)
    later = ""
    if quick is None:           # the paper-scale table: its rows only
        wait = [n for n, d in ds.items() if d.scale != "paper" or not d.counts["done"]]
        ds = {n: d for n, d in ds.items() if n not in wait}
        if wait:
            later = (f"\nNot yet swept at the paper's scale: {', '.join(wait)} "
                     "(`python3 -m colorsim sweep NAME`; the quick table has them).\n")
    done = {k: (d if d.counts["done"] else None) for k, d in ds.items()}
    return render(rows(cat, quick, ds)) + shapes_mq.render(
        done.get("fig9"), done.get("fig10"), paper_results()) + later + (
        provenance(ds) if quick is None else "")


def provenance(ds: dict) -> str:
    """Which of the suite's commits made the table's runs (the paper-scale
    table's runs are made over days and recorded; colorsim/results/record.py)."""
    frames = [d.runs for d in ds.values() if len(d.runs)]
    if not frames:
        return ""
    runs = pd.concat(frames, ignore_index=True).drop_duplicates("run_id")
    made = []
    for (c, dirty), g in runs.groupby([runs["source_commit"].fillna("unknown"),
                                       runs["source_dirty"].fillna(False)]):
        made.append(f"{len(g)} at {c[:12]}{' with uncommitted changes' if dirty else ''}")
    return (f"\nIts {len(runs)} distinct runs were made by the suite's commit"
            f"{'s' if len(made) > 1 else ''}: {'; '.join(made)}.\n")


def render(rs: list) -> str:
    lines = ["| the paper's result | the paper | ours | same direction | what our runs measured (vanilla) |",
             "|---|---|---|---|---|"]
    for r in rs:
        lines.append(f"| {r.claim} | {r.paper} | {r.ours} | {r.agree} | {r.why} |")
    return "\n".join(lines) + "\n"
