"""What the emulator's interleaving moves.

``python3 -m colorsim interleaving-sensitivity [--run] [--out DIR]`` runs
(with --run) and prints, for Figure 9's 8-CPU point (piii8, 256 httpd, 256
clients of 8 requests on 6 client CPUs, with --timing), vanilla and c32,
three seeds each, with the machine as configs/machines.toml describes it
and then with one simulation setting changed per row: QEMU's round-robin
slices capped or given a floor ([x.emulation] rr_slice_max, rr_slice_min),
the client model dropped ([x.clients]: clients as fast as the round robin
runs them) and the server made to wait while a client CPU has work
([x.timing] hold_for_clients).  None of them is a cost of the machine; a
row whose mean gain differs from the configured row's by more than the
wider of the two seed ranges (the convergence table's rule) is one the
emulation, not the modelled machine, decides.  Per row: requests per
modelled second of both kernels and c32's gain (mean [least..most] over
the seeds), and the means of the run-queue lock's contention, the httpd
waiting for a request, schedule() calls per request, how busy the client
CPUs were and each run's host time.  ``--write FILE`` / ``--check FILE``
put the table into, or compare it with, FILE's ``interleaving`` block
(engine/qemu-plugin/README.md's), and refuse when a row's runs are
missing.  --cpus, --httpd, --clients, --requests and --client-cpus make a
smaller point of the same shape; --seeds fewer seeds.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from colorsim.argtypes import seeds_count
from colorsim.errors import ConfigError
from colorsim.orchestrate.seeds import KERNELS, agrees, mean_of, rate_cells, seeded
from colorsim.orchestrate.sensitivity import add_table_run_options, emit_table

MACHINE = "piii8"
# Figure 9's 8-CPU point (configs/experiments.toml [fig9]); the options
# change it for a smaller table
POINT = {"cpus": 8, "httpd": 256, "clients": 256, "requests": 8,
         "client_cpus": 6, "seed": 1}

RR = {"clients": False}           # clients as QEMU's round robin runs them
HOLD = {"clients": False, "hold_for_clients": True}
# change -> (what the row's second column says, emulation fields, timing
# fields; "clients": False drops the machine's client model)
CHANGES = {
    None: ("as configured", {}, {}),
    "max250": ("slices at most 250 instructions", {"rr_slice_max": 250}, {}),
    "min1000": ("slices at least 1000 instructions", {"rr_slice_min": 1000}, {}),
    "min2000": ("slices at least 2000 instructions", {"rr_slice_min": 2000}, {}),
    "rr": ("no client model: clients as fast as the round robin runs them",
           {}, RR),
    "rr+min1000": ("no client model, slices at least 1000",
                   {"rr_slice_min": 1000}, RR),
    "hold": ("no client model, servers wait for busy clients", {}, HOLD),
}


def machine_for(change, cpus=POINT["cpus"]):
    """piii8 with ``cpus`` CPUs and the row's settings."""
    from colorsim.describe.machine import get_machine
    m = get_machine(MACHINE).with_cpus(cpus)
    _, emu, tim = CHANGES[change]
    tim = dict(tim)
    m = m.with_clients(tim.pop("clients", m.clients is not None))
    return dataclasses.replace(
        m, emulation=dataclasses.replace(m.emulation, **emu),
        timing=dataclasses.replace(m.timing, **tim))


def spec_for(kernel, change, point=POINT):
    """The timing run of one kernel for one row, at the point's seed."""
    return web_spec(machine_for(change, point["cpus"]), kernel, point, point["seed"])


def web_spec(machine, kernel, point, seed):
    """The web point's timing run on ``machine`` with this kernel and seed."""
    from colorsim.describe.experiments import PROGRAMS, workload_args
    from colorsim.describe.runspec import RunSpec, Workload
    from colorsim.describe.variants import parse_variant
    p = point
    w = Workload(tasks=p["httpd"], program=PROGRAMS["web"],
                 args=workload_args("web", p["httpd"],
                                    {"clients": p["clients"],
                                     "requests": p["requests"]}),
                 client_cpus=p["client_cpus"], seed=seed)
    return RunSpec(machine, parse_variant(kernel, machine), w, timing=True)


def summary(path: Path) -> dict:
    """The numbers a row shows, from the run's catalog row."""
    from colorsim.results.rundata import load_run
    from colorsim.results.runrows import run_rows
    r = run_rows(load_run(path), path.parent)["runs"]
    reqs = r["roi_requests"]
    return {"rate": r["requests_per_modeled_second"],
            "contention": r["lock_contention"],
            "accept": r.get("n_wait_accept_mean", float("nan")),
            "sched_per_req": r["schedule_calls"] / reqs if reqs else float("nan"),
            "clients": r.get("client_busy_fraction", float("nan")),
            "host_s": json.loads((path / "config.json").read_text())["wall_s"]}


SEED_COUNT = 3         # seeds per row: the point's seed and the next ones


def rows(point: dict, out: Path, run: bool, force: bool, missing=None,
         seeds: int = SEED_COUNT):
    """(change, {kernel: [summary per seed]}) per row.  A row whose runs
    are missing (without --run) is left out, and named on stderr and in
    ``missing``."""
    first = point["seed"]
    for change in CHANGES:
        got = seeded(lambda k, s: spec_for(k, change, dict(point, seed=s)), summary,
                     out, run, force, missing, range(first, first + seeds))
        if got is not None:
            yield change, got


def format_row(change, got, configured) -> str:
    # "—": the configured row itself, or (printing without --write) its runs missing
    moves = ("—" if change is None or configured is None
             else "no" if agrees(got, configured) else "yes")
    v, c = got["vanilla"], got["c32"]
    pair = lambda key, f: f"{f.format(mean_of(v, key))} / {f.format(mean_of(c, key))}"
    return (f"| {CHANGES[change][0]} {rate_cells(got)}| {moves} "
            f"| {pair('contention', '{:.2f}')} "
            f"| {pair('accept', '{:.1f}')} | {pair('sched_per_req', '{:.2f}')} "
            f"| {pair('clients', '{:.2f}')} | {pair('host_s', '{:.0f}')} |")


HEADER = ("| emulation | vanilla req/s | c32 req/s | c32's gain "
          "| moves beyond chance | lock contention, vanilla / c32 "
          "| httpd waiting for a request | schedule() per request "
          "| client CPUs busy | host s |\n"
          "|---|---|---|---|---|---|---|---|---|---|")


def render(got_rows, p: dict, seeds: int = SEED_COUNT) -> str:
    what = "Figure 9's 8-CPU point" if p == POINT else "A smaller point"
    got_rows = list(got_rows)
    configured = dict(got_rows).get(None)
    lines = [f"{what}: {MACHINE}, {p['cpus']} CPUs, {p['httpd']} httpd, "
             f"{p['clients']} clients of {p['requests']} requests on "
             f"{p['client_cpus']} client CPUs (one drives the wire), --timing, "
             f"seeds {', '.join(str(p['seed'] + i) for i in range(seeds))}: "
             "requests per modelled second of the region and c32's gain (paired "
             "by seed) as mean [least..most] over the seeds, the other columns "
             "as means. A row moves beyond chance when its mean gain differs "
             "from the configured row's by more than the wider of the two seed "
             "ranges. Contention: the share of run-queue "
             "lock acquisitions that found it taken; httpd waiting for a "
             "request: the mean number asleep in accept() at the kernel's "
             "samples; client CPUs busy: their share of the region not halted "
             "(the wire's CPU not counted); host s: each run's wall time on "
             "the machine that made the table.", "", HEADER]
    lines += [format_row(change, got, configured) for change, got in got_rows]
    if configured is not None and len(got_rows) > 1:
        moved = [CHANGES[c][0] for c, got in got_rows
                 if c is not None and not agrees(got, configured)]
        lines += ["", f"{len(moved)} of {len(got_rows) - 1} settings move c32's "
                  "gain beyond chance" + (f": {'; '.join(moved)}." if moved else ".")]
    lines.append(_pairs_apart(got_rows))
    return "\n".join(lines) + "\n"


def _pairs_apart(got_rows) -> str:
    """The pairs of changed settings whose gains differ beyond chance
    (the same rule between two settings as against the configured row)."""
    changed = [(c, got) for c, got in got_rows if c is not None]
    apart = [f"{CHANGES[a][0]} / {CHANGES[b][0]}"
             for i, (a, ga) in enumerate(changed) for b, gb in changed[i + 1:]
             if not agrees(ga, gb)]
    return (f"Pairs of settings apart beyond chance: {'; '.join(apart)}." if apart
            else "No two settings are apart beyond chance.")


def point_from_args(a, seed) -> dict:
    """The web point the options name (``seed``: its first seed), or a
    ConfigError for one the guest could not run."""
    point = {k: getattr(a, k) for k in POINT if k != "seed"}
    point["seed"] = seed
    for k, v in point.items():
        if v < 1:
            raise ConfigError(f"--{k.replace('_', '-')} must be at least 1, got {v}")
    if point["client_cpus"] < 2:
        raise ConfigError("--client-cpus must be at least 2: one of them "
                          "drives the wire")
    return point


def add_point_options(t) -> None:
    """--cpus, --httpd, --clients, --requests and --client-cpus: a smaller
    point of the same shape as Figure 9's 8-CPU point."""
    for k, v in POINT.items():
        if k != "seed":
            t.add_argument(f"--{k.replace('_', '-')}", type=int, default=v,
                           help=f"{k.replace('_', ' ')} (default {v}, "
                           "Figure 9's 8-CPU point)")


def cmd_interleaving_sensitivity(a):
    from colorsim.report.markdown import check_block_files
    point = point_from_args(a, a.seed)
    for k in KERNELS:                   # refuse a point the runner refuses,
        spec_for(k, None, point)        # before any run
    check_block_files(a, "interleaving")
    emit_table(a, "interleaving", "interleaving-sensitivity",
               lambda missing: rows(point, a.out, a.run, a.force, missing, a.seeds),
               lambda got: render(got, point, a.seeds))
    return 0


def add_parser(sub):
    from colorsim.report.markdown import add_block_options
    t = sub.add_parser("interleaving-sensitivity",
                       help="the web results with QEMU's slicing and the "
                       "clients' speed changed")
    add_table_run_options(t, "interleaving")
    add_point_options(t)
    t.add_argument("--seed", type=int, default=POINT["seed"],
                   help="the first allocation-history seed (default 1); "
                   "each row runs it and the next ones")
    t.add_argument("--seeds", type=seeds_count, default=SEED_COUNT,
                   help=f"seeds per row (default {SEED_COUNT}; at least 2, "
                   "since chance is their spread)")
    add_block_options(t, "interleaving")
    t.set_defaults(func=cmd_interleaving_sensitivity)
