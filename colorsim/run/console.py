"""What the testbed kernel prints about its measured region, as counters.

At the end of the region of interest the kernel prints (``kernels/kernel/
roi.c``)::

    roi: end at jiffies 29: schedules 368 switches 369 recalcs 0 nr_running 1022

Both engines carry these numbers into ``counters.csv`` as rows of the region's
dump with cpu -1 (all CPUs) and mode ``all``: ``schedule_calls`` (the unit of
work every cross-engine comparison divides by), ``context_switches``,
``counter_recalcs`` and ``roi_jiffies``.

After it, the kernel prints the run-queue lengths its ``schedule()`` calls
saw in the region (``kernels/kernel/rqstat.c``)::

    rq: samples 734 sum 5496 max 13 hist 0:0 1:0 2:0 3-4:30 5-8:504 ... 4097+:0

which become ``rq_samples``, ``rq_len_sum``, ``rq_len_max``, ``rq_len_mean``
and one ``rq_len_<lo>_<hi>`` count per bucket (``rq_len_4097_up`` for the
last).

Then where the tasks were, sampled at every CPU's tick in the region
(``kernels/kernel/waitstat.c``), as sums over the samples::

    wait: samples 170 tasks 13383 running 679 runnable 825 other 0 accept 10093 ...

which become ``wait_samples`` and, per word, ``wait_<word>_mean`` (the sum over
the samples): ``wait_tasks_mean`` all tasks, ``wait_running_mean`` on a CPU,
``wait_runnable_mean`` on the run queue waiting for one, and one mean per
channel a task was asleep in (``wait_accept_mean``, ``wait_recv_connected_mean``,
...; ``wait_exited_mean`` counts exited tasks not yet reaped).

Then ``runqueue_lock`` as the kernel itself counted it (``kernels/kernel/
lockstat.c``; the global-queue scheduler only)::

    rqlock: acquisitions 1234 contended 56 hold_tsc 789012 region_tsc 3456789

which become ``kernel_lock_acquisitions``, ``kernel_lock_contended`` (first
try found it held), ``kernel_lock_hold_tsc`` and ``kernel_region_tsc`` (the
TSC's advance over the region, to turn ticks into time).

A user program may mark its region's quarters (the web server does:
``m5_mark`` in ``workloads/include/m5roi.h``).  At each mark the kernel
prints its counts so far, and the program what it has done so far::

    roi: mark at jiffies 640: schedules 301 switches 290 recalcs 0 nr_running 1023 cycles 41000000
    rq: mark samples 300 sum 306900 max 1024
    web: mark 1 of 4: 256 requests in 0.210000 s

which, with the region's end, give each quarter's run-queue mean, its
schedule() calls per request and its rate of requests.  The counters are
the least and most over the quarters (``quarter_rq_mean_lo``/``_hi``,
``quarter_sched_per_request_lo``/``_hi`` and ``quarter_rate_lo``/``_hi``,
each quarter's requests per unit of time over the whole region's: modelled
cycles where the kernel printed them, ``cycles`` on the mark and end lines,
else the program's clock), how many quarters there were
(``window_quarters``) and in how many the kernel recalculated every time
slice (``quarters_recalculated``): whether the region was steady.
"""

from __future__ import annotations

import re
from pathlib import Path

ROI_END = re.compile(r"roi: end at jiffies (?P<end>\d+): schedules (?P<schedules>\d+)"
                     r" switches (?P<switches>\d+) recalcs (?P<recalcs>\d+)"
                     r"(?: nr_running \d+ cycles (?P<cycles>\d+))?")
ROI_BEGIN = re.compile(r"roi: begin at jiffies (?P<begin>\d+)")
# stat name -> regex group
STATS = {"schedule_calls": "schedules", "context_switches": "switches",
         "counter_recalcs": "recalcs"}
RQ = re.compile(r"rq: samples (?P<samples>\d+) sum (?P<sum>\d+) max (?P<max>\d+) "
                r"hist (?P<hist>[0-9:+ -]+)")
RQLOCK = re.compile(r"rqlock: acquisitions (?P<acq>\d+) contended (?P<cont>\d+) "
                    r"hold_tsc (?P<hold>\d+) region_tsc (?P<region>\d+)")
WAIT = re.compile(r"wait: samples (?P<samples>\d+)(?P<rest>(?: [a-z0-9_]+ \d+)+)")
ALL_CPUS, ALL_MODES, ROI_DUMP = -1, "all", 0
ROI_MARK = re.compile(r"roi: mark at jiffies (?P<at>\d+): schedules (?P<schedules>\d+)"
                      r" switches \d+ recalcs (?P<recalcs>\d+) nr_running \d+"
                      r"(?: cycles (?P<cycles>\d+))?")
RQ_MARK = re.compile(r"rq: mark samples (?P<samples>\d+) sum (?P<sum>\d+)")
WEB_MARK = re.compile(r"web: mark (?P<k>\d+) of \d+: (?P<done>\d+) requests in "
                      r"(?P<secs>[0-9.]+) s")
WEB_ROI = re.compile(r"web: roi (?P<done>\d+) requests \(completed [0-9.]+\) in "
                     r"(?P<secs>[0-9.]+) s")


def parse_wait(text: str, start: int = 0) -> dict:
    """The where-tasks-wait counters of the first ``wait:`` line at or
    after ``start`` ({} if there is none)."""
    m = WAIT.search(text, start)
    if not m:
        return {}
    samples = int(m.group("samples"))
    words = m.group("rest").split()
    out = {"wait_samples": samples}
    for name, total in zip(words[::2], words[1::2]):
        out[f"wait_{name}_mean"] = round(int(total) / samples, 3) if samples else 0.0
    return out


def parse_rq(text: str, start: int = 0) -> dict:
    """The run-queue-length counters of the first ``rq:`` line at or after
    ``start`` ({} if there is none)."""
    m = RQ.search(text, start)
    if not m:
        return {}
    samples, total = int(m.group("samples")), int(m.group("sum"))
    out = {"rq_samples": samples, "rq_len_sum": total, "rq_len_max": int(m.group("max")),
           "rq_len_mean": round(total / samples, 3) if samples else 0.0}
    for word in m.group("hist").split():
        label, count = word.rsplit(":", 1)
        name = label.replace("+", "_up").replace("-", "_")
        out[f"rq_len_{name}"] = int(count)
    return out


def parse_rqlock(text: str, start: int = 0) -> dict:
    """runqueue_lock as the kernel counted it, from the first ``rqlock:``
    line at or after ``start`` ({} if there is none, or the kernel took the
    lock nowhere it counts)."""
    m = RQLOCK.search(text, start)
    if not m or not int(m.group("acq")):
        return {}
    return {"kernel_lock_acquisitions": int(m.group("acq")),
            "kernel_lock_contended": int(m.group("cont")),
            "kernel_lock_hold_tsc": int(m.group("hold")),
            "kernel_region_tsc": int(m.group("region"))}


def parse_roi(text: str) -> dict:
    """The region's numbers from a console log ({} if it never ended).

    :returns: ``{"schedule_calls": n, "context_switches": n,
        "counter_recalcs": n, "roi_jiffies": n}`` (the last only when the
        begin line is there too).
    """
    text = text.replace("\r", "")
    ends = list(ROI_END.finditer(text))
    if not ends:
        return {}
    m = ends[-1]
    out = {stat: int(m.group(g)) for stat, g in STATS.items()}
    begins = list(ROI_BEGIN.finditer(text, 0, m.start()))
    if begins:
        out["roi_jiffies"] = int(m.group("end")) - int(begins[-1].group("begin"))
        out.update(parse_marks(text, begins[-1].end(), m))
    out.update(parse_rq(text, m.end()))
    out.update(parse_wait(text, m.end()))
    out.update(parse_rqlock(text, m.end()))
    return out


def parse_marks(text: str, begin: int, end) -> dict:
    """The region's steadiness from the marks between ``begin`` (offset
    of the region's begin line) and ``end`` (the ``roi: end`` match): per
    quarter the run queue's mean, schedule() calls per request and the
    rate of requests, as least and most over the quarters ({} without
    marks)."""
    marks = list(ROI_MARK.finditer(text, begin, end.start()))
    end_rq = RQ.search(text, end.end())
    if not marks or not end_rq:
        return {}
    # at each boundary, cumulative: schedules, recalcs, rq samples, rq sum,
    # modelled cycles
    points = [(0, 0, 0, 0, 0)]
    for m in marks:
        rq = RQ_MARK.search(text, m.end())
        if not rq:
            return {}
        points.append((int(m["schedules"]), int(m["recalcs"]), int(rq["samples"]),
                       int(rq["sum"]), int(m["cycles"] or 0)))
    points.append((int(end["schedules"]), int(end["recalcs"]), int(end_rq["samples"]),
                   int(end_rq["sum"]), int(end["cycles"] or 0)))
    steps = list(zip(points, points[1:]))
    rq = [(b[3] - a[3]) / (b[2] - a[2]) for a, b in steps if b[2] > a[2]]
    out = {"window_quarters": len(steps),
           "quarters_recalculated": sum(b[1] > a[1] for a, b in steps)}
    if rq:
        out.update(quarter_rq_mean_lo=round(min(rq), 3), quarter_rq_mean_hi=round(max(rq), 3))
    web = {int(m["k"]): (int(m["done"]), float(m["secs"]))
           for m in WEB_MARK.finditer(text, begin)}
    last = WEB_ROI.search(text, end.end())
    if not last or sorted(web) != list(range(1, len(marks) + 1)):
        return out
    done = [(0, 0.0)] + [web[k] for k in sorted(web)] + [(int(last["done"]),
                                                           float(last["secs"]))]
    n = [b[0] - a[0] for a, b in zip(done, done[1:])]
    if all(k > 0 for k in n):
        sched = [(b[0] - a[0]) / k for (a, b), k in zip(steps, n)]
        out.update(quarter_sched_per_request_lo=round(min(sched), 3),
                   quarter_sched_per_request_hi=round(max(sched), 3))
    # each quarter's time: modelled cycles where the run kept them, else
    # the program's own clock (jiffies: coarse)
    t = ([b[4] - a[4] for a, b in steps] if points[-1][4] else
         [b[1] - a[1] for a, b in zip(done, done[1:])])
    if all(x > 0 for x in t):
        whole = sum(n) / sum(t)
        rate = [k / x / whole for k, x in zip(n, t)]
        out.update(quarter_rate_lo=round(min(rate), 3), quarter_rate_hi=round(max(rate), 3))
    return out


def roi_counters(console: Path) -> dict:
    """:func:`parse_roi` of a console file ({} if the file is missing)."""
    console = Path(console)
    if not console.is_file():
        return {}
    return parse_roi(console.read_text(errors="replace"))


def counter_rows(values: dict, dump: int = ROI_DUMP) -> list[list]:
    """``counters.csv`` rows (dump, -1, all, stat, value) for ``values``."""
    return [[dump, ALL_CPUS, ALL_MODES, stat, value]
            for stat, value in values.items()]
