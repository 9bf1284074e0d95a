"""``python3 -m colorsim.maintain linux24-waits``: where Linux 2.4's httpd wait at Figure 6's point, beside the testbed's.

linux24-fig6's runs at one L2 (``L2``) and one seed: the user's Linux
2.4.37 for i386 on the 4-way Pentium Pro, 1024 httpd, 256 clients of 8
requests, ``--timing``, the clients on CPUs of their own, vanilla and 32
colors, behind Apache's fcntl accept lock (whose release 2.4 answers by
waking every waiter) and with the kernel's wake-one accept.  Each run's
kernel counts where the server's tasks were at every tick of the region
(the wait-sites patch, kernels/linux24/README.md): on a CPU, on the run
queue waiting for one, or asleep on the accept lock, in accept(), on a
socket.  Beside them the testbed's recorded Figure 6 runs at the same point
(``recorded/paper``, fcntl, every seed), whose kernel prints the same
report.  The question it answers: where the httpd that are not on the
run queue are, when a run's queue falls short of the httpd count.

They are linux24-fig6's own runs, read from its folder: ``--run`` makes the
four it needs if they are missing (``LINUX24_SRC``) in ``runs/linux24-fig6``;
``--write FILE``/``--check FILE`` as for ``headline``, between
``<!-- linux24-waits:begin -->`` and ``<!-- linux24-waits:end -->``;
``--figure PNG`` draws the tasks' states as stacked bars.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from colorsim.orchestrate import linux24fig6
from colorsim.orchestrate.linux24timed import run_row, runs_by_name
from colorsim.report.markdown import emit

L2 = "512KiB"
SEED = 1
# where a task can be, in the order the table and the bars give them; the
# channels are the kernel's (both kernels name them alike)
STATES = ("running", "runnable", "lock", "accept", "recv_accepted", "send_accepted",
          "sem", "wait4", "poll", "sleep")
LABELS = {"running": "on a CPU", "runnable": "runnable, waiting for a CPU",
          "lock": "asleep on the accept lock", "accept": "asleep in accept()",
          "recv_accepted": "reading a request", "send_accepted": "writing a response",
          "sem": "semop()", "wait4": "wait4()", "poll": "select()/poll()",
          "sleep": "nanosleep()"}


def specs():
    """(accept, kernel, its RunSpec): linux24-fig6's runs at L2, SEED."""
    for accept, l2, kernel, seed, spec in linux24fig6.specs():
        if l2 == L2 and seed == SEED:
            yield accept, kernel, spec


def make_runs(out: Path, log=print) -> None:
    """The runs ``out`` lacks (a complete run is reused)."""
    from colorsim.run.runner import run_each
    run_each((spec for *_, spec in specs()), out, "linux24-waits", log)


def _row(source: str, accept: str, kernel: str, runs: pd.DataFrame) -> dict:
    """One table row: the means over ``runs`` (one run, or the testbed's
    seeds) of the tasks in each state, the queue, recalculations and rate."""
    mean = lambda col: runs[col].mean() if col in runs and runs[col].notna().any() \
        else float("nan")
    r = {"source": source, "accept": accept, "kernel": kernel, "runs": len(runs),
         "tasks": mean("n_wait_tasks_mean"), "rq": mean("n_rq_len_mean"),
         "recalcs": mean("n_counter_recalcs"), "throughput": mean("throughput")}
    r["states"] = {s: mean(f"n_wait_{s}_mean") for s in STATES}
    return r


def rows(cat, testbed: pd.DataFrame) -> list:
    """The Linux runs' rows (per accept mode and kernel), then the
    testbed's (fcntl, seeds averaged)."""
    by_name = runs_by_name(cat, "linux24-waits")     # among linux24-fig6's
    out = []
    for accept, kernel, spec in specs():
        r = run_row(by_name, spec.default_name(), cat, "linux24-waits")
        out.append(_row("Linux 2.4.37 i386", accept, kernel.rsplit(":", 1)[1],
                        pd.DataFrame([r])))
    tb = testbed[testbed["l2"] == L2]
    for kernel in ("vanilla", "c32"):
        out.append(_row("testbed", "fcntl", kernel, tb[tb["kernel"] == kernel]))
    return out


def render(rs: list) -> str:
    from colorsim.orchestrate.headline import l2_label
    num = lambda v, f="{:.0f}": "-" if v != v else f.format(v)
    head = (["source, accept, kernel", "tasks counted"] + [LABELS[s] for s in STATES]
            + ["run queue at schedule(), mean", "time-slice recalculations",
               "requests per modelled second"])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rs:
        acc = linux24fig6.ACCEPT_LABELS[r["accept"]]
        seeds = f" ({r['runs']} seeds)" if r["runs"] > 1 else ""
        cells = ([f"{r['source']}{seeds}, {acc}, {r['kernel']}", num(r["tasks"])]
                 + [num(r["states"][s], "{:.1f}") for s in STATES]
                 + [num(r["rq"]), num(r["recalcs"]), num(r["throughput"])])
        lines.append("| " + " | ".join(cells) + " |")
    return ("\n".join(lines) + f"\n\nMean tasks in each state over the region's ticks. "
            f"{linux24fig6.HTTPD} httpd, 256 clients x 8 requests, L2 {l2_label(L2)}, "
            f"--timing, ppro4. Linux 2.4.37 i386: seed {SEED}, linux24-fig6's runs (the "
            f"clients on {linux24fig6.CLIENT_CPUS} CPUs of their own, their packets "
            "received on the server's CPUs, the cards' DMA on the bus); its kernel counts "
            "the server's tasks only, and a task asleep anywhere else is in no column, so "
            "its tasks counted are the columns' sum. Testbed: the recorded paper-scale "
            "Figure 6 runs at the same point (recorded/paper, fcntl accept only), its "
            "kernel counting every task, its clients behind the wire. Both kernels sample "
            "at their ticks (kernels/linux24/README.md, kernels/README.md \"Where tasks "
            "wait\").\n")


def draw(rs: list, out: Path) -> Path:
    """Each row's tasks as one stacked bar, state by state."""
    from colorsim.report.common import _setup_matplotlib
    from colorsim.report.plots import save_figure
    plt = _setup_matplotlib()
    from colorsim.orchestrate.headline import l2_label
    fig, ax = plt.subplots(figsize=(11, 0.45 * len(rs) + 1.6))
    names = [f"{r['source']}, {linux24fig6.ACCEPT_LABELS[r['accept']]}, {r['kernel']}"
             for r in rs]
    y = list(range(len(rs)))[::-1]
    colors = plt.get_cmap("tab10").colors
    left = [0.0] * len(rs)
    for s, c in zip(STATES, colors):
        vals = [0.0 if r["states"][s] != r["states"][s] else r["states"][s] for r in rs]
        if not any(vals):
            continue
        ax.barh(y, vals, left=left, color=c, label=LABELS[s], height=0.6)
        left = [a + b for a, b in zip(left, vals)]
    ax.set_yticks(y)
    ax.set_yticklabels(names, fontsize=7)
    ax.set_xlabel("tasks, mean over the region's ticks")
    ax.set_title(f"Where the server's tasks were: {linux24fig6.HTTPD} httpd, "
                 f"Figure 6's point, L2 {l2_label(L2)}", fontsize=9)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    return save_figure(fig, out)


def cmd_linux24_waits(a):
    from colorsim.orchestrate.linux24table import catalog_of
    cat = catalog_of(a, "linux24-fig6", "linux24-waits", "linux24-waits", make_runs)
    rs = rows(cat, linux24fig6.testbed_runs())
    emit(render(rs), a, "linux24-waits", how="linux24-waits")
    if a.figure:
        print(f"linux24-waits: drew {draw(rs, a.figure)}")


def add_parser(sub):
    from colorsim.orchestrate.linux24table import _add
    p = _add(sub, "linux24-waits", "linux24-waits",
             "where Linux 2.4's httpd wait at Figure 6's point, beside the testbed's "
             "(docs/linux24.md), from the catalog",
             "make the Linux runs first (LINUX24_SRC) and rebuild the catalog",
             cmd_linux24_waits, runs="runs/linux24-fig6")
    p.add_argument("--figure", metavar="PNG", default=None,
                   help="also draw the tasks' states there (docs/linux24-waits.png)")
    return p
