"""The operating point: what puts the paper's "N httpd" on the run queue.

The paper says 256 to 1024 httpd were runnable.  With 256 closed-loop
clients at most 256 connections exist, and an httpd asleep in accept() is
off 2.4's run queue, so more httpd add sleepers, not walked tasks.  What
can make idle httpd runnable is an accept serialization whose release wakes
every waiter (Apache 1.3's fcntl and flock locks on 2.4), or more clients.

``python3 -m colorsim operating-point [--run]`` runs (with --run) and
prints, for Figure 6's 512 KiB point (ppro4, 4 CPUs, 1024 httpd, --timing),
vanilla and c32 under each accept serialization with the paper's 256
clients, and without serialization with one client per httpd: the
measured run-queue length (mean and largest over the region's samples),
the httpd asleep waiting for a request (in accept() or on the accept
lock), throughput of both kernels, c32's gain and the run-queue loop's L2
miss ratio.  ``--write FILE`` / ``--check FILE`` put the table into, or
compare it with, FILE's ``oppoint`` block (docs/operating-point.md), and
refuse when a row's runs are missing.  A second table (block
``oppoint-l2``) gives the point at the paper's three L2 sizes without
serialization and with the fcntl lock, beside the paper's Table 2 and Figure
6.  --httpd, --clients, --requests and --l2 make a smaller point of the same
shape.
"""

from __future__ import annotations

import json
from pathlib import Path

from colorsim.errors import ConfigError
from colorsim.orchestrate.sensitivity import (add_table_run_options, emit_table,
                                             kernel_rows)

KERNELS = ("vanilla", "c32")
MACHINE = "ppro4"
# Figure 6's 512 KiB point at 1024 httpd (configs/experiments.toml [fig6])
POINT = {"l2": "512KiB", "httpd": 1024, "clients": 256, "requests": 8, "seed": 1}

# What else crosses the bus and the caches in every row: the defaults
COMPETITION = ("the server cards' DMA (machines.toml [network] dma) and Apache's "
               "per-request work (web --work apache)")
# row -> (what it says, accept mode, clients per httpd instead of --clients)
ROWS = {
    "none": ("none: the kernel wakes one accept()er (1.3.19's default)", "none", False),
    "sysvsem": ("sysvsem: a semaphore, wake-one", "sysvsem", False),
    "fcntl": ("fcntl lock: 2.4 wakes every waiter", "fcntl", False),
    "flock": ("flock: 2.4 wakes every waiter", "flock", False),
    "pipe": ("pipe token: every waiter woken (our stand-in)", "pipe", False),
    "none-all": ("none, one client per httpd", "none", True),
}


def spec_for(kernel, row, point=POINT):
    """The timing run of one kernel for one row."""
    from colorsim.describe.experiments import PROGRAMS, workload_args
    from colorsim.describe.machine import get_machine
    from colorsim.describe.runspec import RunSpec, Workload
    from colorsim.describe.variants import parse_variant
    _, accept, all_clients = ROWS[row]
    p = point
    clients = p["httpd"] if all_clients else p["clients"]
    requests = max(1, p["clients"] * p["requests"] // clients)   # same work
    m = get_machine(MACHINE).with_l2(p["l2"])
    w = Workload(tasks=p["httpd"], program=PROGRAMS["web"],
                 args=workload_args("web", p["httpd"],
                                    {"clients": clients, "requests": requests,
                                     "accept": accept}),
                 seed=p["seed"])
    return RunSpec(m, parse_variant(kernel, m), w, timing=True)


def summary(path: Path) -> dict:
    """The numbers a row shows, from the run's catalog row."""
    from colorsim.results.rundata import load_run
    from colorsim.results.runrows import run_rows
    r = run_rows(load_run(path), path.parent)["runs"]
    nan = float("nan")
    waiting = sum(r.get(f"n_wait_{w}_mean", 0) or 0 for w in ("accept", "sem", "lock",
                                                               "pipe_read"))
    return {"req_s": r["requests_per_modeled_second"],
            "rq_mean": r.get("n_rq_len_mean", nan),
            "rq_max": r.get("n_rq_len_max", nan),
            "waiting": waiting,
            "walk_miss": r.get("rqloop_l2_miss_ratio", nan),
            "host_s": json.loads((path / "config.json").read_text())["wall_s"]}


def rows(point: dict, out: Path, run: bool, force: bool, missing=None):
    """(row, {kernel: summary}) per row.  A row whose runs are missing
    (without --run) is left out, and named on stderr and in ``missing``."""
    return kernel_rows(ROWS, lambda k, r: spec_for(k, r, point), summary,
                       out, run, force, missing, KERNELS)


def format_row(row, got, point) -> str:
    v, c = got["vanilla"], got["c32"]
    gain = c["req_s"] / v["req_s"] - 1 if v["req_s"] else float("nan")
    clients = point["httpd"] if ROWS[row][2] else point["clients"]
    pair = lambda key, f: f"{f.format(v[key])} / {f.format(c[key])}"
    return (f"| {ROWS[row][0]} | {clients} | {pair('rq_mean', '{:.0f}')} "
            f"| {pair('rq_max', '{:.0f}')} | {pair('waiting', '{:.0f}')} "
            f"| {v['req_s']:.0f} | {c['req_s']:.0f} | {100 * gain:+.1f} % "
            f"| {100 * v['walk_miss']:.1f} / {100 * c['walk_miss']:.1f} % "
            f"| {pair('host_s', '{:.0f}')} |")


HEADER = ("| accept serialization | clients | run queue, mean (vanilla / c32) "
          "| run queue, largest | httpd waiting for a request | vanilla req/s "
          "| c32 req/s | c32's gain | run-queue loop L2 miss ratio | host s |\n"
          "|---|---|---|---|---|---|---|---|---|---|")


def render(got_rows, p: dict) -> str:
    what = ("Figure 6's point" if p == POINT else "A smaller point")
    lines = [f"{what}: {MACHINE}, 4 CPUs, L2 {p['l2']}, {p['httpd']} httpd, "
             f"{p['clients'] * p['requests']} requests in all (each row's "
             f"clients share them), 3 client CPUs (one drives the wire), "
             f"{COMPETITION}, "
             f"--timing, seed {p['seed']}. Run queue: the tasks on the run "
             f"queue at the kernel's samples in the region (mean and largest); "
             f"httpd waiting for a request: the mean number asleep in accept(), "
             f"on the accept semaphore, lock or pipe; throughput in requests "
             f"per modelled second; host s: each run's wall time on the "
             f"machine that made the table.", "", HEADER]
    lines += [format_row(r, g, p) for r, g in got_rows]
    return "\n".join(lines) + "\n"


# Table 2 and Figure 6 at the queue each serialization gives: the three L2
# sizes the paper used, without serialization and with the fcntl lock
L2S = ("256KiB", "512KiB", "1MiB")
L2_ROWS = ("none", "fcntl")


def l2_rows(point: dict, out: Path, run: bool, force: bool, missing=None):
    """((l2, row), {kernel: summary}) per L2 size and serialization."""
    keys = [(l2, row) for l2 in L2S for row in L2_ROWS]
    return kernel_rows(keys, lambda k, key: spec_for(k, key[1], dict(point, l2=key[0])),
                       summary, out, run, force, missing, KERNELS)


L2_HEADER = ("| L2 | accept serialization | run queue, mean | run-queue loop L2 miss, "
             "vanilla / c32 | the paper's (Table 2) | c32's gain | the paper's "
             "(Figure 6) |\n|---|---|---|---|---|---|---|")


def render_l2(got_rows, p: dict) -> str:
    from colorsim.report.common import paper_results
    paper = paper_results()
    t2 = dict(zip(paper["table2"]["l2"], zip(paper["table2"]["vanilla"],
                                              paper["table2"]["c32"])))
    f6 = paper["fig6"]["improvement"]
    lines = [f"The same point at the paper's three L2 sizes ({p['httpd']} httpd, "
             f"{p['clients']} clients of {p['requests']} requests, --timing, seed "
             f"{p['seed']}; {COMPETITION}), without serialization and with the "
             f"fcntl lock, beside "
             f"the paper's Table 2 and Figure 6 (configs/paper_results.toml).",
             "", L2_HEADER]
    for (l2, row), got in got_rows:
        v, c = got["vanilla"], got["c32"]
        gain = c["req_s"] / v["req_s"] - 1 if v["req_s"] else float("nan")
        pv, pc = t2.get(l2, (float("nan"), float("nan")))
        pf = f6.get(l2, "")
        pf = f"{pf:+.1f} %" if isinstance(pf, (int, float)) else str(pf)
        lines.append(f"| {l2} | {ROWS[row][1]} | {v['rq_mean']:.0f} / {c['rq_mean']:.0f} "
                     f"| {100 * v['walk_miss']:.1f} / {100 * c['walk_miss']:.1f} % "
                     f"| {pv} / {pc} % | {100 * gain:+.1f} % | {pf} |")
    return "\n".join(lines) + "\n"


def cmd_operating_point(a):
    from colorsim.report.markdown import check_block_files
    from colorsim.units import parse_size, format_size
    point = {"l2": format_size(parse_size(a.l2)).replace(" ", ""),
             "httpd": a.httpd, "clients": a.clients, "requests": a.requests,
             "seed": a.seed}
    for k in ("httpd", "clients", "requests", "seed"):
        if point[k] < 1:
            raise ConfigError(f"--{k} must be at least 1, got {point[k]}")
    for k in KERNELS:                   # refuse a point the runner refuses,
        for row in ROWS:                # before any run
            spec_for(k, row, point)
    check_block_files(a, "oppoint")
    check_block_files(a, "oppoint-l2")
    emit_table(a, "oppoint", "operating-point",
               lambda missing: rows(point, a.out, a.run, a.force, missing),
               lambda got: render(got, point))
    emit_table(a, "oppoint-l2", "operating-point",
               lambda missing: l2_rows(point, a.out, a.run, a.force, missing),
               lambda got: render_l2(got, point))
    return 0


def add_parser(sub):
    from colorsim.report.markdown import add_block_options
    t = sub.add_parser("operating-point",
                       help="the run queue under each accept serialization")
    add_table_run_options(t, "oppoint")
    t.add_argument("--l2", default=POINT["l2"], help="L2 size (default 512KiB)")
    for k in ("httpd", "clients", "requests", "seed"):
        t.add_argument(f"--{k}", type=int, default=POINT[k],
                       help=f"{k} (default {POINT[k]}, Figure 6's point)")
    add_block_options(t, "oppoint")
    t.set_defaults(func=cmd_operating_point)
