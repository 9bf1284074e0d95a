"""One run's rows in the catalog.

The catalog (:mod:`colorsim.results.catalog`) is rebuilt from the run
directories alone: this module finds them below a runs folder and turns
each loaded run into its rows: one row of every parameter and derived
number for the ``runs`` table (peak offset, colored-line sums, the
run-queue loop's miss ratios, counts per schedule(), the workload's and,
for --timing runs, the throughput and lockmeter columns), and its long
``offsets``, ``counters`` and ``stats`` tables."""

from __future__ import annotations

import re
from pathlib import Path

from colorsim import ROOT

CATALOG = "catalog"
_SKIP_DIRS = {CATALOG, "sweeps"}
# Runs recorded elsewhere that every catalog also lists (its ``recorded``
# table): the gem5 runs kept in the repository, and new recordings where
# they arrive, beside the checkout.  (label, folder): the label stands in
# the ``path`` column, never an absolute path.
RECORDED = (("recorded/gem5", ROOT / "recorded" / "gem5"),
            ("../shared/gem5", ROOT.parent / "shared" / "gem5"))


# -- finding runs -----------------------------------------------------------

def find_run_dirs(root: Path) -> tuple:
    """(complete-looking run dirs, failed dirs) below ``root``, sorted."""
    root = Path(root)
    found, failed, taken = [], [], []
    if not root.is_dir():
        return found, failed
    below = sorted((c.parent for c in root.rglob("config.json")),
                   key=lambda d: (len(d.parts), str(d)))
    for d in below:
        rel = d.relative_to(root)
        if rel.parts and (rel.parts[0] in _SKIP_DIRS
                          or rel.parts[0].startswith(".catalog")):
            continue
        if any(d.is_relative_to(t) for t in taken):
            continue
        taken.append(d)
        if any(p.startswith(".") for p in rel.parts):
            continue
        if d.name.endswith(".failed"):
            failed.append(d)
        else:
            found.append(d)
    return sorted(found, key=str), sorted(failed, key=str)


def _stats_file(run_dir: Path, config: dict):
    for rel in list((config.get("results") or {})) + ["stats.txt",
                                                       "gem5/stats.txt"]:
        if rel.endswith("stats.txt") and (run_dir / rel).is_file():
            return run_dir / rel
    return None


# -- one run's rows -----------------------------------------------------------

def client_model_label(c) -> str:
    """A timed web run's client model (config.json "clients") as one
    readable value, "" for a run without one."""
    if not c:
        return ""
    if isinstance(c, str):      # Linux 2.4's: where its clients run, in words
        return c
    return (f"{c['pcs']} PCs at {c['clock_hz'] / 1e6:g} MHz, CPI {c['cpi']:g}, "
            f"skew {c['skew_us']} µs")


def run_rows(run, root: Path) -> dict:
    """The catalog rows of one loaded run (colorsim.results.rundata.Run)."""
    import pandas as pd
    from colorsim.results.rundata import (ROI_DUMP, hot_offsets, offset_histogram,
                                  work_units)
    from colorsim.run.statstxt import parse_stats, to_frame
    from colorsim.results.compare import colored_lines_span
    from colorsim.run.identity import identity_dict, run_id, short_id
    from colorsim.run.schedshare import scheduler_shares, spin_counted_once

    cfg = run.config
    rid = run_id(cfg)
    rel = str(run.path.relative_to(root))
    row = dict(run.config_row())
    w, v = cfg["workload"], cfg["variant"]
    row.update(run=run.path.name, path=rel, run_id=rid, recorded=False,
               engine_version=identity_dict(cfg)["engine_version"],
               warmup=w.get("warmup_ticks"), roi=w.get("roi_ticks"),
               buffer=w.get("buffer"), way_bits=v.get("way_bits"),
               build_id=v.get("build_id"),
               kernel_sha256=cfg.get("kernel_sha256"),
               plugin_sha256=cfg.get("plugin_sha256"),
               source_commit=(cfg.get("source") or {}).get("commit"),
               source_dirty=(cfg.get("source") or {}).get("dirty"),
               id_matches_name=(run.path.name == short_id(rid)
                                if run.path.parent.name == "by-id" else None))
    h = offset_histogram(run, "chunk")
    lo, hi = colored_lines_span(run.layout)
    colored = int(h[(h.index >= lo) & (h.index < hi)].sum()) if len(h) else 0
    total = int(h.sum()) if len(h) else 0
    hot = hot_offsets(run.layout)
    row.update(peak_offset=int(h.idxmax()) if len(h) else None,
               peak_count=int(h.max()) if len(h) else 0,
               first_touched=hot["first_touched"],
               hot_line_count=int(h[(h.index >= hot["line_offset"]) &
                                    (h.index < hot["line_offset"] + hot["line"])
                                    ].sum()) if len(h) else 0,
               colored_lo=lo, colored_hi=hi, colored_lines_sum=colored,
               other_lines_sum=total - colored, total=total)
    ct = run.counters
    roi = ct[ct["dump"] == ROI_DUMP]
    per_cpu = roi[roi["cpu"] >= 0].groupby("stat")["value"].sum()
    glob = roi[roi["cpu"] < 0].groupby("stat")["value"].sum()
    for name, val in sorted({**per_cpu.to_dict(), **glob.to_dict()}.items()):
        row[f"n_{name}"] = float(val)

    def ratio(miss, acc):
        a = per_cpu.get(acc, 0)
        return float(per_cpu.get(miss, 0) / a) if a else float("nan")
    row["rqloop_l2_miss_ratio"] = ratio("rqloop_l2_read_misses",
                                        "rqloop_l2_read_accesses")
    row["rqloop_l1d_miss_ratio"] = ratio("rqloop_l1d_read_misses",
                                         "rqloop_l1d_read_accesses")
    row["l2_miss_ratio"] = ratio("l2_misses", "l2_accesses")
    units = work_units(run)
    row["schedule_calls"] = units["schedule"]
    row["kinst"] = units["kinst"]
    row["sim_seconds"] = units["sim_second"]
    for per, div in (("schedule", units["schedule"]), ("kinst", units["kinst"])):
        for c in ("peak_count", "hot_line_count", "colored_lines_sum",
                  "other_lines_sum", "total"):
            row[f"{c}_per_{per}"] = (row[c] / div if div and div == div
                                     else float("nan"))

    off = run.offsets.copy()
    if "view" not in off.columns:
        off["view"] = "memory" if cfg.get("engine") == "gem5" else "bus"
    off.insert(0, "run_id", rid)
    off = off[["run_id", "dump", "view", "cpu", "mode", "kind", "offset",
               "count"]]
    cnt = run.counters.copy()
    cnt.insert(0, "run_id", rid)
    cnt = cnt[["run_id", "dump", "cpu", "mode", "stat", "value"]]
    cnt["value"] = cnt["value"].astype("float64")
    sf = _stats_file(run.path, cfg)
    if sf is not None:
        dumps = parse_stats(sf)
        st = to_frame(dumps)[["dump", "name", "value", "unit", "desc"]]
        row["dumps"] = len(dumps)
    else:
        st = pd.DataFrame(columns=["dump", "name", "value", "unit", "desc"])
        row["dumps"] = 0
    st.insert(0, "run_id", rid)
    row.update(timing_columns(cfg, run.counters, run.path / "console.log",
                              row["schedule_calls"]))
    row.update(kernel_lock_columns(cfg, run.counters))
    # the scheduler's share of the region (colorsim/run/schedshare.py)
    sh = scheduler_shares(run.path)
    row.update(sched_share_basis=sh["basis"], sched_share_pct=sh["sched_pct"],
               lock_held_pct=sh["lock_held_pct"], lock_spin_pct=sh["lock_spin_pct"])
    if not spin_counted_once(run.path):     # an old plugin booked it twice
        row["lock_spin_us"] = float("nan")
    return {"runs": row, "offsets": off, "counters": cnt, "stats": st}


# -- throughput and the lockmeter (--timing runs), user workloads ------------

WEB_WORK = re.compile(r"^web: .*, work (\w+),", re.M)
# the region's requests and the first of them; and where the region was
# asked to begin ("measure requests A..B"): web's controller marks the
# region when it wakes, which under a herd on the measured CPUs can be
# after the asked window has passed
WEB_ROI = re.compile(r"web: roi (\d+) requests \(completed (\d+)\.\.\d+\)")
WEB_ASKED = re.compile(r"; measure requests (\d+)\.\.(\d+)")
CHAT_ROI = re.compile(r"chat: roi (\d+) messages \((\d+) sent, (\d+) received\)")
SIZE_ARGS = ("httpd", "clients", "requests", "rooms", "users", "messages")
TIMING_COLUMNS = ("modeled_seconds", "work_units", "work_per_modeled_second",
                  "requests_per_modeled_second",
                  "messages_per_modeled_second", "throughput",
                  "cycles_per_schedule", "lock_acquisitions",
                  "lock_contention", "lock_contention_pct",
                  "lock_hold_mean_us", "lock_hold_max_us", "lock_spin_us",
                  "cycles_spread", "busy_fraction", "max_skew_us",
                  "wire_late_mean_us", "wire_rx_late_mean_us",
                  "client_busy_fraction")


def modeled_seconds(elapsed_cycles, hz) -> float:
    """The region's elapsed modelled time in seconds, idle time included
    (busmon's ``elapsed_cycles``).  Not the CPUs' ``cycles``: those are
    busy time, and a CPU that idles half the region would make the work
    per second look twice as high on its share.  NaN for a run made before
    busmon recorded the elapsed time."""
    if elapsed_cycles is None or elapsed_cycles != elapsed_cycles:
        return float("nan")
    return float(elapsed_cycles) / hz


def kernel_lock_columns(cfg: dict, counters) -> dict:
    """runqueue_lock as the kernel counted it (kernels/kernel/lockstat.c), the
    same code on both engines: ``kernel_lock_contention`` (the share of
    acquisitions whose first try found it held, by the guest's own order of
    events) and, on gem5, whose TSC keeps modelled time,
    ``kernel_lock_hold_mean_us`` (TSC ticks scaled by the region's
    simulated seconds). NaN where the kernel did not count (the multi-queue
    scheduler, runs made before it counted)."""
    nan = float("nan")
    out = {"kernel_lock_contention": nan, "kernel_lock_hold_mean_us": nan}
    glob = counters[(counters["dump"] == 0) & (counters["cpu"] < 0)]
    val = {s: float(v) for s, v in zip(glob["stat"], glob["value"])}
    acq = val.get("kernel_lock_acquisitions", 0)
    if not acq:
        return out
    out["kernel_lock_contention"] = val.get("kernel_lock_contended", 0) / acq
    region, sim = val.get("kernel_region_tsc", 0), val.get("sim_seconds", 0)
    if cfg.get("engine") == "gem5" and region and sim:
        out["kernel_lock_hold_mean_us"] = (val["kernel_lock_hold_tsc"] / region
                                           * sim / acq * 1e6)
    return out


def timing_columns(cfg: dict, counters, console: Path, sched) -> dict:
    """The catalog's workload, throughput and lockmeter columns of one run.

    ``workload_program`` ("" for the built-in workload), its ``args`` and
    sizes (``httpd`` ... ``messages``), web's ``accept`` mode, the requests or messages inside
    the region (``roi_requests``, ``roi_messages``, from the program's
    ``web: roi`` / ``chat: roi`` line); where web's region began
    (``roi_first_request``) and ``roi_late``, whether that was past the
    window it was asked to measure (its controller woke late: the region
    is then the run's tail).  With ``timing`` (a --timing
    run), as colorsim/timing.py computes them: ``modeled_seconds`` (the
    region's elapsed modelled time, idle included), work units (bursts of
    the built-in workload) and requests or messages per modelled second;
    ``throughput`` is whichever of those is the workload's;
    ``cycles_per_schedule`` (all CPUs); runqueue_lock's acquisitions,
    contention (fraction and %), mean and max hold and total spin in µs.
    NaN where a run has no such number (counting-only runs)."""
    nan = float("nan")
    w = cfg.get("workload", {})
    prog = w.get("program", "") or ""
    args = w.get("args", "") or ""
    out = {"timing": bool(cfg.get("timing")), "workload_program": prog,
           "workload_args": args, "roi_requests": nan, "roi_messages": nan,
           "roi_first_request": nan, "roi_late": False}
    words = args.split(",") if args else []
    opts = {words[i][2:]: words[i + 1] for i in range(len(words) - 1)
            if words[i].startswith("--")}
    for k in SIZE_ARGS:
        v = opts.get(k)
        out[k] = float(v) if v is not None and v.isdigit() else nan
    # web's accept serialisation ("none" unless the run asked for another)
    out["accept"] = opts.get("accept", "none") if prog == "/bin/web" else ""
    text = console.read_text(errors="replace") if (
        prog and console.is_file()) else ""
    # web's per-request work ("apache" unless asked; programs from before
    # the option did only the minimal work and do not name it)
    m = WEB_WORK.search(text)
    out["work"] = ((opts.get("work") or (m.group(1) if m else "minimal"))
                   if prog == "/bin/web" else "")
    out["client_model"] = client_model_label(cfg.get("clients"))
    m, asked = WEB_ROI.findall(text), WEB_ASKED.findall(text)
    if m:
        requests, first = m[-1]
        out["roi_requests"] = float(requests)
        out["roi_first_request"] = float(first)
        out["roi_late"] = bool(asked) and int(first) >= int(asked[-1][1])
    m = CHAT_ROI.findall(text)
    if m:
        out["roi_messages"] = float(m[-1][0])
    out.update({k: nan for k in TIMING_COLUMNS})
    gem5 = cfg.get("engine") == "gem5"      # gem5 keeps modelled time itself
    if not out["timing"] and not (gem5 and prog):
        return out
    hz = cfg["machine"]["processor"]["clock_hz"]
    roi = counters[(counters["dump"] == 0) & (counters["cpu"] >= 0)]
    per = roi.groupby(["cpu", "stat"])["value"].sum().unstack(fill_value=0)

    def col(name):
        return per[name] if name in per.columns else per.index.to_series() * 0

    cycles = col("cycles")
    if not len(cycles) or not cycles.sum():
        return out
    glob = counters[(counters["dump"] == 0) & (counters["cpu"] < 0)]
    el = glob[glob["stat"] == "elapsed_cycles"]["value"]
    seconds = modeled_seconds(float(el.iloc[-1]) if len(el) else None, hz)
    if gem5:        # the region's simulated time: gem5's own clock
        sim = glob[glob["stat"] == "sim_seconds"]["value"]
        seconds = float(sim.iloc[-1]) if len(sim) else nan
    sk = glob[glob["stat"] == "max_skew_cycles"]["value"]
    # the wire in modelled time (how late its late deliveries were) and
    # the client CPUs' load
    net = {s: float(glob[glob["stat"] == s]["value"].sum())
            for s in ("wire_late_deliveries", "wire_late_cycles",
                      "wire_rx_late", "wire_rx_late_cycles",
                      "client_cpus", "client_busy_cycles")}
    acq = float(col("lock_acquisitions").sum())
    units = float(col("work_units").sum())
    if not units and not prog and sched == sched:  # runs made before
        units = float(sched or 0)   # work_units existed: schedule() calls
    us = lambda c: c / hz * 1e6
    out.update(
        modeled_seconds=seconds, work_units=units,
        work_per_modeled_second=units / seconds if units else nan,
        requests_per_modeled_second=out["roi_requests"] / seconds,
        messages_per_modeled_second=out["roi_messages"] / seconds,
        cycles_per_schedule=(float(cycles.sum()) / sched
                             if sched and sched == sched else nan),
        lock_acquisitions=acq,
        lock_contention=(float(col("lock_contended").sum()) / acq
                         if acq else nan),
        lock_hold_mean_us=(us(float(col("lock_hold_cycles").sum()) / acq)
                           if acq else nan),
        lock_hold_max_us=us(float(col("lock_hold_max_cycles").max())),
        lock_spin_us=us(float(col("lock_spin_cycles").sum())),
        cycles_spread=float((cycles.max() - cycles.min()) / cycles.max()),
        max_skew_us=us(float(sk.iloc[-1])) if len(sk) else nan,
        wire_late_mean_us=(us(net["wire_late_cycles"] / net["wire_late_deliveries"])
                           if net["wire_late_deliveries"] else nan),
        wire_rx_late_mean_us=(us(net["wire_rx_late_cycles"] / net["wire_rx_late"])
                              if net["wire_rx_late"] else nan),
        busy_fraction=(float(cycles.mean()) / hz / seconds
                       if seconds else nan),
        # the client CPUs' share of the region not halted: near 1, they
        # could send no more and the throughput may be theirs
        client_busy_fraction=(net["client_busy_cycles"] / net["client_cpus"]
                              / hz / seconds
                              if net["client_cpus"] and seconds else nan))
    out["lock_contention_pct"] = out["lock_contention"] * 100
    out["throughput"] = {"/bin/web": out["requests_per_modeled_second"],
                         "/bin/chat": out["messages_per_modeled_second"]
                         }.get(prog, out["work_per_modeled_second"])
    return out
