"""What every figure builder shares: the experiment's runs as the figures
see them (:class:`ExpData`), one figure or table of the report
(:class:`Item`), the paper's numbers, number formats, spreads over seeds,
the deterministic figure writer, and the loop-miss table and figure that
Table 2 and Tables 5 and 7 share."""

from __future__ import annotations

import copy
import math
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from colorsim import ROOT
from colorsim.errors import ConfigError


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
    runs: list = field(default_factory=list)       # (run, engine build, commit)


def runs_behind(runs) -> list:
    """(run name, engine build, source commit's first 10 digits) of each of
    a figure's runs (catalog rows)."""
    from colorsim.results.record import engine_build
    return [(r["run"], engine_build(r.get("engine_version") or r.get("engine"),
                                    r.get("plugin_sha256")),
             str(r.get("source_commit") or "unknown")[:10])
            for r in runs.to_dict("records")]


def engine_builds(runs) -> dict:
    """{engine build: runs} of a figure's runs (:func:`runs_behind`): more
    than one means its points mix builds."""
    out = {}
    for _, build, _ in runs:
        out[build] = out.get(build, 0) + 1
    return out


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
        self.lacking = sorted(set(", ".join(x) for x in pts["lacks"] if len(x)))
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

    def in_band(self, lo: int, hi: int) -> pd.Series:
        """Per run of ``runs`` (same index): its transactions at page
        offsets [lo, hi), as ``offsets`` counts them."""
        return pd.Series([self.offsets(r).loc[lambda h: (h.index >= lo) & (h.index < hi)].sum()
                          for r in self.runs["run_id"]], index=self.runs.index, dtype=float)


# Page offsets 0x00-0x41f: the task structure's first two lines (its state
# line and the walk's line) at any of 32 colors, in vanilla and colored
# kernels alike.  The colored span (0x20-0x41f, the walk's line's reach)
# holds the state line too for colors 1 to 31, but not vanilla's at 0x00.
TASK_REACH = (0x00, 0x420)


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


def cpu_counts(cpus: list) -> str:
    """The CPU counts a knee was found among: a run of counts as "4-8",
    others listed ("1, 2, 4, 5, 6, 8"), so no count reads as swept that
    was not."""
    if len(cpus) > 2 and cpus == list(range(cpus[0], cpus[-1] + 1)):
        return f"{cpus[0]}-{cpus[-1]}"
    return ", ".join(map(str, cpus))


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


def _setup_matplotlib():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from colorsim.report.plots import STYLE
    plt.rcParams.update(STYLE)
    return plt


def fitted(fig, text: str, fontsize: float) -> str:
    """``text`` broken at its " | " separators into lines that each fit
    the figure's width as rendered, so a long title is never clipped."""
    renderer = fig.canvas.get_renderer()
    width = fig.bbox.width * 0.96

    def fits(line):
        t = fig.text(0, 0, line, fontsize=fontsize)
        w = t.get_window_extent(renderer).width
        t.remove()
        return w <= width
    lines, cur = [], ""
    for part in text.split(" | "):
        trial = f"{cur} | {part}" if cur else part
        if cur and not fits(trial):
            lines.append(cur)
            cur = part
        else:
            cur = trial
    return "\n".join(lines + [cur])


def save(fig, out: Path, stem: str, d: "ExpData" = None, norm: str = "") -> list:
    """``stem``.png and ``stem``.svg in ``out``, written atomically, with no
    dates or software versions that would change the bytes.  With ``d``,
    the title gains a line saying what the figure was made from (scale,
    seeds, web's accept mode, counting or modelled time) and ``norm``,
    what its numbers are normalised to."""
    import matplotlib.pyplot as plt
    if d is not None and len(d.runs):
        sup = fig._suptitle.get_text() if fig._suptitle else ""
        size = fig._suptitle.get_fontsize() if sup else 9
        ctx = fitted(fig, context(d, norm), size)
        fig.suptitle(f"{sup}\n{ctx}" if sup else ctx, fontsize=size)
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


def context(d: ExpData, norm: str = "") -> str:
    """What every figure of ``d`` was made from, for its title: the scale,
    the placement seeds, web's accept mode, counting or modelled time, and
    ``norm``: what the numbers are normalised to ("not normalised" if
    nothing)."""
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
    parts.append(norm or "not normalised")
    return " | ".join(p for p in parts if p)


QUEUE = "n_rq_len_mean"     # the kernel's run-queue samples in the region


def queue_spread(runs: pd.DataFrame, by: list):
    """The measured run-queue length (mean of the kernel's samples in the
    region) per group, as :func:`spread`; None if no run has it."""
    if QUEUE not in runs or not runs[QUEUE].notna().any():
        return None
    return spread(runs[runs[QUEUE].notna()], by, QUEUE)


def fmt_queue(q, where, with_spread=True) -> str:
    """'1023 [1020-1024]' (or with_spread False, '1023') for the rows of
    ``q`` that ``where`` selects; '-' for none."""
    r = q[where(q)] if q is not None else None
    if r is None or not len(r):
        return "-"
    if not with_spread:
        return f"{r['mean'].iloc[0]:.0f}"
    return fmt_spread(r["mean"].iloc[0], r["min"].iloc[0], r["max"].iloc[0], 0)


def _miss_table(d: ExpData, axis: str, paper_tab: dict, keys, key_name):
    """Our run-queue loop miss ratio (mean [min-max] over seeds) per
    ``axis`` value and kernel, beside the paper's row, and the run queue
    our walks had (the miss ratio is a function of its length, not of the
    task count: docs/operating-point.md)."""
    s = spread(d.runs, ["kernel", axis], "rqloop_l2_miss_ratio")
    q = queue_spread(d.runs, ["kernel", axis])
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
        if q is not None:
            rows.append({"kernel": k, "source": "run queue, mean (tasks)",
                         **{key_name(key): fmt_queue(
                             q, lambda x: (x["kernel"] == k) & (x[axis] == key))
                            for key in keys}})
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
    q = queue_spread(d.runs, [axis]) if d is not None else None
    ax.set_xticklabels([key_name(x) + ("" if q is None else "\nq " + fmt_queue(
        q, lambda r: r[axis] == x, with_spread=False)) for x in keys],
        fontsize=7 if q is not None and len(keys) > 4 else None)
    if q is not None:
        xlabel += " (q: the run queue's mean length)"
    ax.set_ylim(0, 105)
    ax.set_ylabel("L2 miss ratio in the run-queue loop (%)")
    ax.set_xlabel(xlabel)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    fig.tight_layout()
    return save(fig, out, stem, d, norm="misses per loop L2 read")


def _colors_axis(ax, colors, xlabel: str, title: str) -> None:
    """A log2 axis of color counts (1 = vanilla), as Figure 8 draws it."""
    ax.set_xscale("log", base=2)
    ax.set_xticks(colors)
    ax.set_xticklabels(["vanilla" if c == 1 else str(c) for c in colors])
    ax.minorticks_off()
    ax.set_xlabel(xlabel)
    ax.set_title(title, fontsize=9)


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


def seed_gains(df: pd.DataFrame, by: list, kernel: str, base: str = "vanilla",
               col: str = "throughput") -> pd.DataFrame:
    """``kernel`` over ``base`` in % per group of ``by`` and seed (the
    same-seed ratios ``gain`` summarises), and whether either run of the
    pair recalculated every time slice in its region (2.4's schedule()
    found every runnable task's counter spent: ``n_counter_recalcs``)."""
    rows = []
    recalc = "n_counter_recalcs" in df.columns
    for key, g in df.groupby(by + ["seed"], sort=True):
        a, b = g[g["kernel"] == kernel], g[g["kernel"] == base]
        if a.empty or b.empty or not b[col].iloc[0]:
            continue
        rows.append({**dict(zip(by + ["seed"], key)),
                     "gain": (a[col].iloc[0] / b[col].iloc[0] - 1) * 100,
                     "recalc": recalc and bool(a["n_counter_recalcs"].iloc[0] > 0
                                               or b["n_counter_recalcs"].iloc[0] > 0)})
    return pd.DataFrame(rows, columns=by + ["seed", "gain", "recalc"])


def steady_runs(df: pd.DataFrame):
    """The runs of ``df`` whose regions never recalculated every time slice
    (2.4's schedule() found every runnable task's counter spent:
    ``n_counter_recalcs``), kept run by run, not by seed: a run's state is
    its own (the first of the two states, docs/operating-point.md).  None
    where the runs do not say; all of ``df`` where none recalculated."""
    if "n_counter_recalcs" not in df.columns:
        return None
    return df[df["n_counter_recalcs"].fillna(0) == 0]


def some_recalculated(df: pd.DataFrame) -> bool:
    """Whether a run of ``df`` recalculated every time slice in its region."""
    keep = steady_runs(df)
    return keep is not None and len(keep) < len(df)


def steady_gain(g: pd.DataFrame, kernel: str = "c32", base: str = "vanilla",
                col: str = "throughput"):
    """``kernel`` over ``base`` in % from one point's runs whose regions
    never recalculated every time slice (the first of the two states,
    docs/operating-point.md), kept run by run, not by seed: a run's state
    is its own.  {"mean": the kernel's mean over the base's, "min"/"max":
    over every pair of such runs, "n": {kernel: runs kept}, "of": {kernel:
    runs}}, or None where a kernel kept none (or the runs do not say)."""
    kept = steady_runs(g)
    if kept is None:
        return None
    a = kept[kept["kernel"] == kernel][col]
    b = kept[kept["kernel"] == base][col]
    if not len(a) or not len(b) or not b.min():
        return None
    return {"mean": (a.mean() / b.mean() - 1) * 100, "min": (a.min() / b.max() - 1) * 100,
            "max": (a.max() / b.min() - 1) * 100,
            "n": {kernel: len(a), base: len(b)},
            "of": {k: int((g["kernel"] == k).sum()) for k in (kernel, base)}}


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


def _signed(x) -> str:
    return "-" if x is None or x != x else f"{x:+.1f} %"


def gain_range(r) -> str:
    """A gain with the range of its same-seed ratios: seeds that disagree in
    sign show at a glance that the difference is noise."""
    if r["max"] == r["max"] and r["max"] > r["min"]:
        return f"{_signed(r['mean'])} [{r['min']:+.0f}..{r['max']:+.0f}]"
    return _signed(r["mean"])


def agree(ours: list, theirs: list) -> str:
    """Directions compared one by one.  ``ours`` holds gain rows (mean, min,
    max of the same-seed ratios): a gain whose seeds disagree in sign has no
    direction, it is noise.  All alike "yes", all opposite "no", a mix
    "partly", and "noise" where no compared point has a direction."""
    verdicts = []
    for o, t in zip(ours, theirs):
        if t is None or o["mean"] != o["mean"]:
            continue
        lo, hi = o["min"], o["max"]
        if lo == lo and hi == hi and lo < 0 < hi:
            verdicts.append("noise")
        else:
            verdicts.append("same" if (o["mean"] > 0) == (t > 0) else "opposite")
    if not verdicts:
        return "-"
    signed = [v for v in verdicts if v != "noise"]
    if not signed:
        return "noise"
    if all(v == "same" for v in signed):
        return "yes" if len(signed) == len(verdicts) else "partly (rest noise)"
    if all(v == "opposite" for v in signed):
        return "no" if len(signed) == len(verdicts) else "no (rest noise)"
    return "partly"
