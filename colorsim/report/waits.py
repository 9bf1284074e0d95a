"""Where the server's tasks wait, from the catalog (web and Chat runs).

The kernel samples every task's state at each tick of the region (the
``wait:`` line, kernels/README.md "Where tasks wait"): running, runnable
(on the run queue, not running), or asleep in a named channel.  The
paper's long run queues need many runnable httpd; this table shows, per
point, how many there were and where the others slept, beside the mean
run-queue length at ``schedule()``, the requests in flight (web: the
closed loop's clients, no think time) and the throughput.  For Chat the
same table shows where its threads wait (socket reads and writes on
either side of a connection, futexes) as the CPU count changes.  Every
number is the catalog's.
"""

from __future__ import annotations

import pandas as pd

from colorsim.report.common import ExpData, Item
from colorsim.units import format_size

# The kernel's channels (colorsim/results/schema.py WAIT_WORDS), as the
# table names them.
STATES = ("running", "runnable")
CHANNELS = ("accept", "connect", "recv_accepted", "recv_connected",
            "send_accepted", "send_connected", "pipe_read", "pipe_write",
            "poll", "futex", "sem", "lock", "wait4", "sleep", "exited", "other")
KEYS = ("cpus", "l2_size", "kernel", "accept", "httpd", "clients")
# the user workloads the kernel samples, and their throughput's name
PROGRAMS = {"/bin/web": "requests/s", "/bin/chat": "messages/s"}


def _col(name: str) -> str:
    return f"n_wait_{name}_mean"


def wait_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Mean tasks per sample in each state, per point (seeds averaged):
    the web runs of ``runs`` that have the kernel's wait report."""
    if runs.empty or _col("tasks") not in runs.columns:
        return pd.DataFrame()
    web = runs[runs["workload_program"].isin(list(PROGRAMS))
               & (runs["n_wait_samples"].fillna(0) > 0)]
    if web.empty:
        return pd.DataFrame()
    # a key no run has (Chat has no httpd) is not a column
    keys = [k for k in KEYS if k in web.columns
            and web[k].replace("", pd.NA).notna().any()]
    vals = (["n_rq_len_mean", _col("tasks")] + [_col(s) for s in STATES + CHANNELS])
    vals = [v for v in vals if v in web.columns]
    g = web.groupby(keys, sort=True, dropna=False)
    t = g[vals].mean()
    # the accept mode, not the channel of the same name
    t.index.names = ["accept mode" if n == "accept" else n for n in t.index.names]
    t["seeds"] = g.size()
    if "throughput" in web.columns:
        for prog, unit in PROGRAMS.items():
            if (web["workload_program"] == prog).any():
                t[unit] = g["throughput"].mean()
    t = t.reset_index()
    if "l2_size" in t.columns:             # 524288 -> 512KiB, as elsewhere
        t["l2_size"] = t["l2_size"].map(lambda v: format_size(int(v)) if v == v else v)
    for k in ("cpus", "httpd", "clients"):  # counts print as counts
        if k in t.columns:
            num = pd.to_numeric(t[k], errors="coerce")
            if num.notna().all():
                t[k] = num.round().astype("Int64")
    asleep = [_col(c) for c in CHANNELS if _col(c) in t.columns]
    t["asleep"] = t[asleep].sum(axis=1)
    # the channel most tasks slept in: the answer to "why not runnable"
    t["most asleep in"] = t[asleep].idxmax(axis=1).str[len("n_wait_"):-len("_mean")]
    t = t.drop(columns=[c for c in asleep if not t[c].any()])
    names = {_col(w): w for w in ("tasks",) + STATES + CHANNELS}
    names.update({"n_rq_len_mean": "run queue (mean)", "l2_size": "L2",
                  "clients": "clients (in flight)"})
    t = t.rename(columns=names)
    return t.round(1)


def waits(d: ExpData) -> list:
    """A "where tasks wait" item for an experiment with web or Chat runs,
    or none."""
    t = wait_table(d.runs)
    if t.empty:
        return []
    return [Item(d.stem(f"waits_{d.exp.name}"),
                 f"Where tasks wait: {d.exp.title}", d.exp.name, d.scale,
                 tables=[("Tasks per sample at each tick of the region (the "
                          "server's tasks; clients on client CPUs are not "
                          "counted): running, runnable (on the run queue), "
                          "asleep by channel; the run queue's mean length at "
                          "schedule(); the closed loop's requests in flight",
                          t)])]
