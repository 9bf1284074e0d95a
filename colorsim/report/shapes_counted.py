"""The paper's counted web results beside ours: Figure 1's peak, Figure 3
(transactions at 0x30 and throughput against the httpd count) and Figure 7
(colored-line transactions per L2 size), as rows of the ``shapes`` table.

Each row reads its own experiment's done runs (fig1, fig3, fig7); the
counts are normalised per request of the region where they are compared
across runs whose regions differ (Figure 3's httpd counts), and left as the
region's sums where both kernels served the same requests (Figures 1, 7).
"""

from __future__ import annotations

from colorsim.report.common import ExpData, l2_name
from colorsim.report.shapes import Row


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
    cells, theirs, verdicts = [], [], []
    for s in sizes:
        v = df[(df["l2_size"] == s) & (df["kernel"] == "vanilla")]
        c = df[(df["l2_size"] == s) & (df["kernel"] == "c32")]
        if v.empty or c.empty:
            continue
        change = (_per_request(c, "colored_lines_sum").mean()
                  / _per_request(v, "colored_lines_sum").mean() - 1) * 100
        cells.append(f"{l2_name(s)} {change:+.1f} %")
        t = p.get(l2_name(s))
        if t is not None:
            theirs.append(f"{l2_name(s)} {t:+.1f} %")
            verdicts.append((change < 0) == (t < 0))
    if not cells:
        return Row(what, "-", "-", "-", "needs vanilla and c32 runs")
    small = min(sizes)
    v = df[(df["l2_size"] == small) & (df["kernel"] == "vanilla")]
    c = df[(df["l2_size"] == small) & (df["kernel"] == "c32")]
    why = "-"
    if len(v) and len(c):
        tot = (_per_request(c, "total").mean() / _per_request(v, "total").mean() - 1) * 100
        why = (f"all transactions per request at {l2_name(small)}, c32 vs vanilla: "
               f"{tot:+.1f} % (the paper's rose slightly)")
    agree = "-" if not verdicts else ("yes" if all(verdicts) else
                                      ("no" if not any(verdicts) else "partly"))
    top = int(df["tasks"].max())
    return Row(what + f" ({top} httpd)", ", ".join(theirs) or "-",
                ", ".join(cells), agree, why)
