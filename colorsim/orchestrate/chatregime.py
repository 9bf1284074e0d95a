"""Chat's regime: the run queue, walk and lock Chat gives per CPU count.

The paper's Tables 7 and 8 imply that Chat kept a long run queue on 2.4
even on one CPU (vanilla's walk missed the L2 on 99.7 % of its steps).
``python3 -m colorsim chat-regime [--run]`` runs (with --run) and prints,
for Figure 10's machine (piii8, 1 MiB L2) at the paper's 2400 threads and
a given number of messages per user (the middle of the run, ``--skip``),
vanilla and c32 at each CPU count: the run queue's mean, the walk's L2
miss ratio beside the paper's Table 7, runqueue_lock contention and mean
hold beside Table 8, messages per modelled second and c32's gain, and
where the threads sleep.  ``--write FILE`` / ``--check FILE`` put the
table into, or compare it with, FILE's ``chat-regime`` block
(docs/operating-point.md).  A check of the regime, not Figure 10: the
paper's 300 messages per user take about an hour per point.
"""

from __future__ import annotations

import json
from pathlib import Path

from colorsim.errors import ConfigError
from colorsim.orchestrate.sensitivity import (add_table_run_options, emit_table,
                                             kernel_rows)

KERNELS = ("vanilla", "c32")
MACHINE = "piii8"
L2 = "1MiB"
THREADS = 2400                     # the paper's: 30 rooms x 20 users x 4
POINT = {"cpus": (1, 2, 4, 8), "messages": 40, "skip": 20, "seed": 1}
# where a thread sleeps: the wait classes of the kernel's samples
SLEEPS = (("sem", "semaphore"), ("recv_accepted", "server recv"),
          ("recv_connected", "client recv"), ("send_accepted", "server send"),
          ("send_connected", "client send"), ("futex", "futex"))


def spec_for(kernel, cpus, point=POINT):
    """The timing run of one kernel at one CPU count."""
    from colorsim.describe.experiments import PROGRAMS, workload_args
    from colorsim.describe.machine import get_machine
    from colorsim.describe.runspec import RunSpec, Workload
    from colorsim.describe.variants import parse_variant
    m = get_machine(MACHINE).with_l2(L2).with_cpus(cpus)
    w = Workload(tasks=THREADS, program=PROGRAMS["chat"],
                 args=workload_args("chat", THREADS, {"messages": point["messages"],
                                                      "skip": point["skip"]}),
                 seed=point["seed"])
    return RunSpec(m, parse_variant(kernel, m), w, timing=True)


def summary(path: Path) -> dict:
    """The numbers a row shows, from the run's catalog row."""
    from colorsim.results.rundata import load_run
    from colorsim.results.runrows import run_rows
    r = run_rows(load_run(path), path.parent)["runs"]
    nan = float("nan")
    s = {"msg_s": r["messages_per_modeled_second"],
         "rq_mean": r.get("n_rq_len_mean", nan),
         "walk_miss": r.get("rqloop_l2_miss_ratio", nan),
         "contention": r.get("lock_contention_pct", nan),
         "hold": r.get("lock_hold_mean_us", nan),
         "host_s": json.loads((path / "config.json").read_text())["wall_s"]}
    s.update({k: r.get(f"n_wait_{k}_mean", 0) or 0 for k, _ in SLEEPS})
    s["tasks"] = r.get("n_wait_tasks_mean", nan)
    return s


def rows(point: dict, out: Path, run: bool, force: bool, missing=None):
    """(cpus, {kernel: summary}) per CPU count whose runs are there."""
    return kernel_rows(point["cpus"], lambda k, c: spec_for(k, c, point), summary,
                       out, run, force, missing, KERNELS)


HEADER = ("| CPUs | run queue, mean (vanilla / c32) | walk L2 miss, vanilla / c32 "
          "| the paper's (Table 7) | lock contention | the paper's (Table 8) "
          "| lock hold, mean µs | the paper's | vanilla msg/s | c32's gain "
          "| vanilla's tasks, and where they slept | host s |\n"
          "|---|---|---|---|---|---|---|---|---|---|---|---|")


def _paper(paper, table, key, cpus):
    t = paper[table]
    return dict(zip(t["cpus"], t.get(key, []))).get(cpus)


def render(got_rows, p: dict) -> str:
    from colorsim.report.common import paper_results
    paper = paper_results()
    lines = [f"Chat on {MACHINE}, L2 {L2}, the paper's {THREADS} threads (30 rooms x 20 "
             f"users), {p['messages']} messages per user (the paper's: 300), the middle "
             f"of the run ({p['skip']} % to {100 - p['skip']} % of the received "
             f"messages), --timing, seed {p['seed']}. Run queue: mean over the "
             f"kernel's samples in the region; lock: runqueue_lock contention (% of "
             f"acquisitions that found it held) and mean hold; the paper's values "
             f"from configs/paper_results.toml (- where the paper has none); "
             f"vanilla's tasks: how many there were (a client send thread exits "
             f"after its last message) and how many slept in each place, means "
             f"over the kernel's samples; host s: each run's wall time on the "
             f"machine that made the table.", "", HEADER]
    fmt = lambda x: "-" if x is None else f"{x}"
    for cpus, got in got_rows:
        v, c = got["vanilla"], got["c32"]
        gain = c["msg_s"] / v["msg_s"] - 1 if v["msg_s"] else float("nan")
        asleep = f"{v['tasks']:.0f}: " + ", ".join(
            f"{name} {v[k]:.0f}" for k, name in SLEEPS if v[k] >= 0.5)
        pair = lambda key, f: f"{f.format(v[key])} / {f.format(c[key])}"
        lines.append(
            f"| {cpus} | {pair('rq_mean', '{:.0f}')} "
            f"| {100 * v['walk_miss']:.1f} / {100 * c['walk_miss']:.1f} % "
            f"| {fmt(_paper(paper, 'table7', 'vanilla', cpus))} / "
            f"{fmt(_paper(paper, 'table7', 'c32', cpus))} % "
            f"| {pair('contention', '{:.1f}')} % "
            f"| {fmt(_paper(paper, 'table8', 'vanilla_contention', cpus))} / "
            f"{fmt(_paper(paper, 'table8', 'c32_contention', cpus))} % "
            f"| {pair('hold', '{:.1f}')} "
            f"| {fmt(_paper(paper, 'table8', 'vanilla_hold_mean', cpus))} / "
            f"{fmt(_paper(paper, 'table8', 'c32_hold_mean', cpus))} "
            f"| {v['msg_s']:.0f} | {100 * gain:+.1f} % | {asleep} "
            f"| {pair('host_s', '{:.0f}')} |")
    return "\n".join(lines) + "\n"


def cmd_chat_regime(a):
    from colorsim.report.markdown import check_block_files
    cpus = tuple(a.cpus) if a.cpus else POINT["cpus"]
    point = {"cpus": cpus, "messages": a.messages, "skip": a.skip, "seed": a.seed}
    if a.messages < 1 or a.seed < 1:
        raise ConfigError("--messages and --seed must be at least 1")
    if not 0 <= a.skip < 50:
        raise ConfigError(f"--skip must be 0 to 49, got {a.skip}")
    for k in KERNELS:                   # refuse a point the runner refuses,
        for c in cpus:                  # before any run
            spec_for(k, c, point)
    check_block_files(a, "chat-regime")
    emit_table(a, "chat-regime", "chat-regime",
               lambda missing: rows(point, a.out, a.run, a.force, missing),
               lambda got: render(got, point))
    return 0


def add_parser(sub):
    from colorsim.report.markdown import add_block_options
    t = sub.add_parser("chat-regime",
                       help="Chat's run queue, walk and lock per CPU count")
    add_table_run_options(t, "chat-regime")
    t.add_argument("--cpus", type=int, nargs="+",
                   help="CPU counts (default 1 2 4 8)")
    for k, what in (("messages", "messages per user"), ("skip", "%% of the received "
                    "messages left out at each end"), ("seed", "placement seed")):
        t.add_argument(f"--{k}", type=int, default=POINT[k],
                       help=f"{what} (default {POINT[k]})")
    add_block_options(t, "chat-regime")
    t.set_defaults(func=cmd_chat_regime)
