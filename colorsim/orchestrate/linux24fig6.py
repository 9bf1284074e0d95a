"""``python3 -m colorsim.maintain linux24-fig6``: Figure 6 on Linux 2.4 i386 beside the testbed and the paper.

The paper's Figure 6 point of largest queue (the 4-way Pentium Pro, 1024
httpd behind Apache's fcntl accept lock, 256 clients of 8 requests, as
``configs/experiments.toml``'s fig6 at paper scale) on the user's Linux
2.4.37 built for i386 (the paper's port), vanilla and 32 colors, at the
three L2 sizes, under ``--timing``, with the clients on two CPUs of their
own whose packets the server's CPUs take through its cards (the client
partition and cards patches) and the cards' DMA on the server's bus (the
card DMA patch; machines.toml [network] dma).  ``SEEDS`` (web's request mix on 2.4), a
few minutes per run.  Once more with the kernel's wake-one accept
(``--accept none``, a stock Apache 1.3 with one Listen socket), whose
operating point the paper's build may have had: which serialization it
used is UNCONFIRMED (docs/operating-point.md).

Beside it: the testbed's Figure 6 at the same point, from the recorded
paper-scale catalog (``recorded/paper``: five seeds, another build, its
clients behind the wire and in modelled time), and the paper's Figure 6
and Table 2.

``--run`` makes the runs it lacks (``LINUX24_SRC``) in ``runs/linux24-fig6``;
``--write FILE``/``--check FILE`` as for ``headline``, between
``<!-- linux24-fig6:begin -->`` and ``<!-- linux24-fig6:end -->``;
``--figure PNG`` draws the gains side by side.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from colorsim import ROOT
from colorsim.errors import ResultsError
from colorsim.orchestrate.linux24timed import (LATE, LATE_NOTE, fmt_pair, is_late,
                                               run_row, runs_by_name)
from colorsim.report.markdown import emit

MACHINE = "ppro4"
L2S = ("256KiB", "512KiB", "1MiB")
KERNELS = ("linux24-i386:vanilla", "linux24-i386:c32")
HTTPD = 1024
# fig6's paper-scale point at 1024 httpd (configs/experiments.toml: fcntl
# accept, web's 256 clients of 8 requests); a test checks they agree; and
# the same with the kernel's wake-one accept
ACCEPTS = ("fcntl", "none")
ACCEPT_LABELS = {"fcntl": "fcntl (wake-all)", "none": "none (wake-one)"}


def web_args(accept: str) -> str:
    return f"--httpd,{HTTPD},--clients,256,--requests,8,--accept,{accept}"


ARGS = web_args("fcntl")
CLIENT_CPUS = 2
# 2.4's seed is web's request mix (describe/linux24.py); one for now: each
# run holds its CPUs to modelled time's order, several minutes a run
SEEDS = (1,)
TIMEOUT_S = 3 * 3600.0
TESTBED = ROOT / "recorded" / "paper"


def specs():
    """(accept, L2, kernel, seed, its RunSpec) of every Linux run."""
    from colorsim.describe.machine import get_machine
    from colorsim.describe.runspec import RunSpec, Workload
    from colorsim.describe.variants import parse_variant
    for accept in ACCEPTS:
        for l2 in L2S:
            m = get_machine(MACHINE).with_l2(l2)
            for seed in SEEDS:
                for k in KERNELS:
                    w = Workload(program="/bin/web", args=web_args(accept),
                                 client_cpus=CLIENT_CPUS, seed=seed)
                    yield accept, l2, k, seed, RunSpec(m, parse_variant(k, m), w,
                                                       timing=True, timeout_s=TIMEOUT_S)


def make_runs(out: Path, log=print) -> None:
    """The runs ``out`` lacks (a complete run is reused)."""
    from colorsim.run.runner import run_each
    run_each((spec for *_, spec in specs()), out, "linux24-fig6", log)


def linux_runs(cat) -> pd.DataFrame:
    """The Linux runs' catalog rows, with ``accept``, ``l2``, ``kernel``
    (vanilla or c32) and ``seed`` as the testbed's rows have them."""
    by_name = runs_by_name(cat, "linux24-fig6")
    out = []
    for accept, l2, k, seed, spec in specs():
        name = spec.default_name()
        out.append({**run_row(by_name, name, cat, "linux24-fig6").to_dict(), "run": name,
                    "accept": accept, "l2": l2,
                    "kernel": k.rsplit(":", 1)[1], "seed": seed})
    return pd.DataFrame(out)


def testbed_runs(root: Path = TESTBED) -> pd.DataFrame:
    """The testbed's timed Figure 6 runs at HTTPD httpd, from the recorded
    catalog: one row per run (kernel, seed, l2, throughput, miss ratio)."""
    from colorsim.report.common import L2_NAMES
    cat = root / "catalog"
    try:
        points = pd.read_parquet(cat / "points.parquet")
        runs = pd.read_parquet(cat / "runs.parquet")
    except OSError as e:
        raise ResultsError(f"no recorded testbed catalog in {root}: {e}") from None
    p = points[(points["experiment"] == "fig6") & (points["tasks"] == HTTPD)
               & (points["status"] == "done")]
    df = runs[runs["run_id"].isin(p["run_id"])].drop_duplicates("run_id").copy()
    df["l2"] = df["l2_size"].map(L2_NAMES)
    return df[df["kernel"].isin(["vanilla", "c32"])]


def rows(cat, testbed: pd.DataFrame, paper: dict) -> list:
    """One row per accept mode and L2: the Linux runs', the testbed's (its
    Figure 6 is fcntl's), the paper's."""
    from colorsim.report.common import gain
    per_request = lambda df: df.assign(
        acq=df["n_lock_acquisitions"] / df["roi_requests"],
        sched=(df["n_schedule_calls"] if "n_schedule_calls" in df else float("nan"))
        / df["roi_requests"])
    lin, testbed = per_request(linux_runs(cat)), per_request(testbed)
    tg = gain(testbed, ["l2"], "c32").set_index("l2")
    imp = paper.get("fig6", {}).get("improvement", {})
    t2 = paper.get("table2", {})
    nan2 = (float("nan"), float("nan"))
    out = []
    for accept in ACCEPTS:
        la = lin[lin["accept"] == accept]
        lg = gain(la, ["l2"], "c32").set_index("l2")
        tb = testbed if accept == "fcntl" else None
        for l2 in L2S:
            i = t2.get("l2", []).index(l2) if l2 in t2.get("l2", []) else None
            means = lambda df, col: nan2 if df is None else tuple(
                df[(df["l2"] == l2) & (df["kernel"] == k)][col].mean()
                if col in df else float("nan") for k in ("vanilla", "c32"))
            both = lambda col: (means(la, col), means(tb, col))
            at = la[la["l2"] == l2]
            out.append({
                "accept": accept, "l2": l2,
                "linux": lg.loc[l2] if l2 in lg.index else None,
                "linux_thr": means(la, "throughput"),
                "miss": both("rqloop_l2_miss_ratio"), "held": both("lock_held_pct"),
                "hold": both("lock_hold_mean_us"), "acq": both("acq"),
                "rq": both("n_rq_len_mean"), "sched": both("sched"),
                "linux_late": tuple(any(is_late(r) for _, r in
                                        at[at["kernel"] == k].iterrows())
                                    for k in ("vanilla", "c32")),
                "testbed": tg.loc[l2] if tb is not None and l2 in tg.index else None,
                "paper": imp.get(l2),
                "paper_miss": None if i is None else (t2["vanilla"][i], t2["c32"][i])})
    return out


def seed_points(cat, testbed: pd.DataFrame) -> pd.DataFrame:
    """Per same-seed pair: c32's gain, the pair's mean run queue, and c32's
    own queue and walk miss ratio; ``source`` names the kernel and accept
    (Figure 6 and Table 2 against the queue the walks went over)."""
    from colorsim.report.common import seed_gains
    out = []
    lin = linux_runs(cat)
    for source, df in [(f"Linux 2.4 i386, {ACCEPT_LABELS[a]}", lin[lin["accept"] == a])
                       for a in ACCEPTS] + [("testbed, fcntl (wake-all)", testbed)]:
        if "n_rq_len_mean" not in df:
            continue
        g = seed_gains(df, ["l2"], "c32")
        for _, r in g.iterrows():
            pair = df[(df["l2"] == r["l2"]) & (df["seed"] == r["seed"])]
            c32 = pair[pair["kernel"] == "c32"].iloc[0]
            out.append({"source": source, "l2": r["l2"], "seed": r["seed"],
                        "gain": r["gain"], "rq": pair["n_rq_len_mean"].mean(),
                        "c32_rq": c32["n_rq_len_mean"],
                        "c32_miss": c32["rqloop_l2_miss_ratio"] * 100})
    return pd.DataFrame(out, columns=["source", "l2", "seed", "gain", "rq", "c32_rq",
                                      "c32_miss"])


def _seeds() -> str:
    return ("seed " if len(SEEDS) == 1 else "seeds ") + ", ".join(map(str, SEEDS))


def _gain(g) -> str:
    """A gain row: its mean, with its seeds' range where they differ."""
    if g is None:
        return "-"
    if g["seeds"] > 1 and g["max"] > g["min"]:
        return f"{g['mean']:+.1f} % [{g['min']:+.1f}..{g['max']:+.1f}]"
    return f"{g['mean']:+.1f} %"


def render(rs: list) -> str:
    from colorsim.orchestrate.headline import l2_label
    pct = lambda x: f"{x * 100:.1f} %"
    lines = ["| accept, L2 | c32's gain: Linux 2.4.37 i386 / testbed / paper | Linux 2.4.37 i386: "
             "vanilla / c32 requests per modelled second | run-queue loop L2 miss ratio, "
             "vanilla / c32: Linux 2.4.37 i386; testbed; paper (Table 2) | runqueue_lock "
             "held, share of the region, vanilla / c32: Linux; testbed | its acquisitions "
             "per request | its mean hold | run queue at schedule(), mean, vanilla / c32: "
             "Linux; testbed | schedule() calls per request |",
             "|---|---|---|---|---|---|---|---|---|"]
    late = False
    for r in rs:
        p, pm = r["paper"], r["paper_miss"]
        pp = "-" if p is None else (f"{p:+.1f} %" if isinstance(p, (int, float)) else p)
        m = [LATE if x else "" for x in r["linux_late"]]
        late = late or any(m)
        cols = [f"{fmt_pair(r['miss'][0], pct)}; {fmt_pair(r['miss'][1], pct)}; "
                + ("-" if pm is None else f"{pm[0]:.1f} % / {pm[1]:.1f} %"),
                "; ".join(fmt_pair(x, lambda v: f"{v:.0f} %") for x in r["held"]),
                "; ".join(fmt_pair(x, lambda v: f"{v:.1f}") for x in r["acq"]),
                "; ".join(fmt_pair(x, lambda v: f"{v:.1f} µs") for x in r["hold"]),
                "; ".join(fmt_pair(x, lambda v: f"{v:.0f}") for x in r["rq"]),
                "; ".join(fmt_pair(x, lambda v: f"{v:.1f}") for x in r["sched"])]
        lines.append(
            f"| {ACCEPT_LABELS[r['accept']]}, {l2_label(r['l2'])} | {_gain(r['linux'])} / {_gain(r['testbed'])} / {pp} "
            f"| {r['linux_thr'][0]:.0f}{m[0]} / {r['linux_thr'][1]:.0f}{m[1]} | "
            + " | ".join(cols) + " |")
    return ("\n".join(lines) + f"\n\n{HTTPD} httpd, 256 clients x 8 requests, "
            f"--timing. Linux 2.4.37 i386: {_seeds()} (web's "
            "request mix), the clients on "
            f"{CLIENT_CPUS} CPUs of their own, their packets received on the server's CPUs "
            "(at once: no wire) and their frames' lines crossing the server's bus by the cards' "
            "DMA. Testbed: the recorded paper-scale Figure 6 "
            "(recorded/paper, fcntl accept only), its clients behind the wire in modelled time. Paper: "
            "Figure 6 (best case) and Table 2. Means over the seeds; a gain is the mean "
            "[least..most] of the same-seed gains. The lock figures are busmon's lockmeter on "
            "each kernel's runqueue_lock. The run queue is the kernel's count of the "
            "tasks each schedule() on a server CPU walks (nr_running, the running ones "
            "included), and schedule() calls are counted there too (Linux: "
            "kernels/linux24/patches, run-queue counts)." + (LATE_NOTE if late else "") + "\n")


def _err(gains) -> list:
    """Error bars from gain rows: their seeds' range (None: one seed each)."""
    ok = lambda g: g is not None and g["seeds"] > 1
    if not any(map(ok, gains)):
        return None
    return [[g["mean"] - g["min"] if ok(g) else 0 for g in gains],
            [g["max"] - g["mean"] if ok(g) else 0 for g in gains]]


def draw(rs: list, out: Path, pts: pd.DataFrame = None) -> Path:
    """The gains side by side, per L2: Linux 2.4 i386 with each accept
    mode, the testbed (fcntl), the paper where it gives a number; the bars
    of several seeds with their range.  With ``pts`` (seed_points) two more
    panels: each seed's gain, and c32's walk miss ratio, against the run
    queue the walks went over."""
    from colorsim.report.common import _setup_matplotlib
    from colorsim.report.plots import save_figure
    from colorsim.orchestrate.headline import l2_label
    plt = _setup_matplotlib()
    have = pts is not None and not pts.empty
    fig, axes = plt.subplots(1, 3 if have else 1, figsize=(15, 3.8) if have else (7, 3.4),
                             gridspec_kw={"width_ratios": [1.5, 1, 1]} if have else None)
    ax = axes[0] if have else axes
    by = {(r["accept"], r["l2"]): r for r in rs}
    x = list(range(len(L2S)))
    w = 0.2
    bars = [(f"Linux 2.4.37 i386, accept {ACCEPT_LABELS[a]} ({_seeds()}{'; their range' if len(SEEDS) > 1 else ''})",
             [by[a, l2]["linux"] for l2 in L2S], c)
            for a, c in zip(ACCEPTS, ("#2166ac", "#67a9cf"))]
    bars.append(("testbed, accept fcntl (its seeds' range)",
                 [by["fcntl", l2]["testbed"] for l2 in L2S], "#d1e5f0"))
    for j, (label, gains, color) in enumerate(bars):
        ax.bar([i + (j - 1.5) * w for i in x],
               [g["mean"] if g is not None else float("nan") for g in gains], w,
               yerr=_err(gains), capsize=2, color=color, edgecolor="k", lw=0.4,
               label=label)
    paper = [by["fcntl", l2]["paper"] for l2 in L2S]
    ax.bar([i + 1.5 * w for i in x],
           [p if isinstance(p, (int, float)) else float("nan") for p in paper], w,
           color="#d6604d", edgecolor="k", lw=0.4, label="paper (Figure 6, best case)")
    for i, p in enumerate(paper):
        if isinstance(p, str):
            ax.annotate(f"paper: {p}", (i + 1.5 * w, 0), textcoords="offset points",
                        xytext=(0, 4), ha="center", fontsize=6, rotation=90)
    ax.axhline(0, color="k", lw=0.5)
    ax.set_xticks(x)
    ax.set_xticklabels([f"L2 {l2_label(l2)}" for l2 in L2S])
    ax.set_ylabel("c32 over vanilla (%)")
    ax.set_title(f"Figure 6 at {HTTPD} httpd: Linux 2.4 i386, the testbed, the paper",
                 fontsize=9)
    ax.set_ylim(top=ax.get_ylim()[1] * 1.35)     # room for the legend
    ax.legend(fontsize=7, loc="upper left")
    if have:
        _against_queue(axes[1], axes[2], pts, l2_label)
    fig.text(0.99, 0.01, "python3 -m colorsim.maintain linux24-fig6 --figure FILE",
             ha="right", fontsize=6, color="0.4")
    fig.tight_layout()
    return save_figure(fig, out)


def _against_queue(gax, max_, pts: pd.DataFrame, l2_label) -> None:
    """Each seed's c32 gain against its pair's mean run queue (gax) and c32's
    walk miss ratio against c32's queue (max_): colour the source, marker
    the L2."""
    from matplotlib.lines import Line2D
    colors = dict(zip(pts["source"].unique(), ("#2166ac", "#67a9cf", "#999999")))
    marks = dict(zip(L2S, ("o", "s", "^")))
    for (source, l2), g in pts.groupby(["source", "l2"], sort=False):
        kw = dict(color=colors[source], marker=marks[l2], s=22, edgecolor="k", lw=0.4)
        gax.scatter(g["rq"], g["gain"], **kw)
        max_.scatter(g["c32_rq"], g["c32_miss"], **kw)
    dot = lambda **kw: Line2D([], [], ls="", markeredgecolor="k", markeredgewidth=0.4, **kw)
    gax.legend([dot(marker="o", color=c) for c in colors.values()]
               + [dot(marker=marks[l2], color="w") for l2 in L2S],
               list(colors) + [f"L2 {l2_label(l2)}" for l2 in L2S], fontsize=6, loc="best")
    gax.axhline(0, color="k", lw=0.5)
    gax.set_xlabel("run queue at schedule(), mean of the pair")
    gax.set_ylabel("c32 over vanilla, one seed (%)")
    gax.set_title("Figure 6 against the queue walked", fontsize=9)
    max_.set_xlabel("c32's run queue at schedule(), mean")
    max_.set_ylabel("c32's run-queue loop L2 miss (%)")
    max_.set_title("Table 2 (c32) against the queue walked", fontsize=9)


def cmd_linux24_fig6(a):
    from colorsim.orchestrate.linux24table import catalog_of
    from colorsim.report.common import paper_results
    cat = catalog_of(a, "linux24-fig6", "linux24-fig6", "linux24-fig6", make_runs)
    testbed = testbed_runs()
    rs = rows(cat, testbed, paper_results())
    emit(render(rs), a, "linux24-fig6", how="linux24-fig6")
    if a.figure:
        print(f"linux24-fig6: drew {draw(rs, a.figure, seed_points(cat, testbed))}")


def add_parser(sub):
    from colorsim.orchestrate.linux24table import _add
    p = _add(sub, "linux24-fig6", "linux24-fig6",
             "Figure 6 on Linux 2.4 i386 beside the testbed and the paper "
             "(docs/linux24.md), from the catalog",
             "make the Linux runs first (LINUX24_SRC) and rebuild the catalog",
             cmd_linux24_fig6, runs="runs/linux24-fig6")
    p.add_argument("--figure", metavar="PNG", default=None,
                   help="also draw the gains side by side there (docs/linux24-fig6.png)")
    return p
