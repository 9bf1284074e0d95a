"""Convergence in the skew bound: do the timed web results settle as the
modelled clocks are held closer together?

``python3 -m colorsim convergence [--run] [--out DIR]`` runs (with --run)
and prints Figure 9's 8-CPU point (the interleaving table's: piii8, 256
httpd, 256 clients of 8 requests on 6 client CPUs, --timing), vanilla and
c32, three seeds each, with every clock held within Q of the slowest
running one, for four Q from coarse to fine: busmon's quantum for the
server CPUs and the client model's skew for the client CPUs, both Q.  The
row of the machine as configs/machines.toml describes it is marked; when
its bounds are none of the four, it comes first as a row of its own.  A row agrees with the
next finer one when their mean gains differ by no more than the wider of
their seed ranges; the rows where that holds from there on are converged.
``--write FILE`` / ``--check FILE`` put the table into, or compare it with,
FILE's ``convergence`` block (engine/qemu-plugin/README.md's).
--cpus, --httpd, --clients, --requests and --client-cpus make a smaller
point of the same shape.
"""

from __future__ import annotations

import dataclasses
import functools
import statistics

from colorsim.errors import ConfigError

from colorsim.orchestrate.seeds import (SEEDS, agrees, contention_cell,
                                        mean_of, rate_cells, seeded)
from colorsim.orchestrate.interleaving import (KERNELS, MACHINE, POINT,
                                               add_point_options, point_from_args,
                                               summary, web_spec)
from colorsim.orchestrate.sensitivity import add_table_run_options, emit_table

QS_US = (100, 20, 5, 1)        # the skew bound Q, modelled µs, coarse to fine


def bounded(m, q_us):
    """Machine ``m`` with its clocks held within ``q_us`` µs: busmon's
    quantum for the server CPUs, the client model's skew for the clients
    (None: as configured)."""
    if q_us is None:
        return m
    hz = m.processor.clock_hz
    clients = (dataclasses.replace(m.clients, skew_us=q_us)
               if m.clients is not None else None)
    return dataclasses.replace(
        m, clients=clients,
        timing=dataclasses.replace(m.timing, quantum=hz * q_us // 1_000_000))


def machine_for(q_us, cpus=POINT["cpus"]):
    """piii8 with ``cpus`` CPUs, its clocks held within ``q_us`` µs."""
    from colorsim.describe.machine import get_machine
    return bounded(get_machine(MACHINE).with_cpus(cpus), q_us)


def spec_for(kernel, q_us, seed, point=POINT):
    return web_spec(machine_for(q_us, point["cpus"]), kernel, point, seed)


# Figure 6's key point, a point of its paper-scale grid (configs/
# experiments.toml [fig6]): ppro4, 4 CPUs, 512 KiB, 1024 httpd.
FIG6 = {"l2": "512KiB", "tasks": 1024}


@functools.lru_cache(maxsize=1)
def _fig6_points() -> tuple:
    from colorsim.describe.experiments import expand, load_experiments
    return tuple(p for p in expand(load_experiments(check_points=False)["fig6"])
                 if all(getattr(p, k) == v for k, v in FIG6.items()))


def fig6_spec(kernel, q_us, seed):
    """Figure 6's key point's run, its clocks held within ``q_us`` µs."""
    pts = [p for p in _fig6_points() if p.kernel == kernel and p.seed == seed]
    if len(pts) != 1:
        raise ConfigError(f"fig6's grid has {len(pts)} points of {kernel}, "
                          f"seed {seed} at {FIG6}; the convergence table "
                          "needs one")
    spec = pts[0].spec()
    return dataclasses.replace(spec, machine=bounded(spec.machine, q_us))


def configured_q(machine):
    """The Q whose bounds are ``machine``'s own (None when its bounds are
    none of the table's)."""
    return next((q for q in QS_US if bounded(machine, q) == machine), None)


def table_rows(machine) -> tuple:
    """The rows' Q, coarse to fine; None (as configured) first when the
    machine as configured is none of them."""
    return QS_US if configured_q(machine) is not None else (None, *QS_US)


def web_summary(path) -> dict:
    """A web run's row numbers: requests per modelled second as the rate."""
    s = summary(path)
    return {"rate": s["rate"], "contention": s["contention"], "host_s": s["host_s"]}


def chat_summary(path) -> dict:
    """A Chat run's: messages per modelled second as the rate."""
    from colorsim.orchestrate import chatregime
    s = chatregime.summary(path)
    return {"rate": s["msg_s"], "contention": s["contention"] / 100,
            "host_s": s["host_s"]}


def rows(at, out, run, force, missing=None):
    """(q_us, {kernel: [summary per seed]}) per row of the point ``at``
    whose runs are all there (made first with ``run``)."""
    for q in table_rows(at.machine):
        got = seeded(lambda k, s: at.spec_of(k, q, s),
                     lambda path: dict(at.summary(path), mips=guest_mips(path)),
                     out, run, force, missing)
        if got is not None:
            yield q, got


def guest_mips(path) -> float:
    """Guest instructions (all vCPUs, clients' too) per host second, in
    millions: what the row's order costs."""
    import json
    bm = json.loads((path / "busmon.json").read_text())
    wall = json.loads((path / "config.json").read_text())["wall_s"]
    return bm["insts_since_start"] / wall / 1e6 if wall else float("nan")


def _q_label(q, configured) -> str:
    if q is None:
        return "as configured"
    return f"{q} µs (as configured)" if q == configured else f"{q} µs"


def header(unit: str) -> str:
    return (f"| clocks held within | vanilla {unit} | c32 {unit} | c32's gain "
            "| agrees with the next finer row | lock contention, vanilla / c32 "
            "| host s, vanilla / c32 | guest MIPS |\n|---|---|---|---|---|---|---|---|")


def format_row(q, got, finer, configured=None) -> str:
    v, c = got["vanilla"], got["c32"]
    nxt = "—" if finer is None else ("yes" if agrees(got, finer) else "no")
    return (f"| {_q_label(q, configured)} {rate_cells(got)}| {nxt} "
            f"{contention_cell(got)}"
            f"| {mean_of(v, 'host_s'):.0f} / {mean_of(c, 'host_s'):.0f} "
            f"| {statistics.mean(r['mips'] for r in v + c):.1f} |")


def web_point_title(p: dict) -> str:
    """What a Figure 9-shaped point is, for the table's first line."""
    what = "Figure 9's 8-CPU point" if p == POINT else "A smaller point"
    return (f"{what}: {MACHINE}, {p['cpus']} CPUs, {p['httpd']} httpd, "
            f"{p['clients']} clients of {p['requests']} requests on "
            f"{p['client_cpus']} client CPUs")


def fig6_title() -> str:
    """Figure 6's key point, as its runs are made."""
    from colorsim.units import format_size
    sp = fig6_spec("vanilla", None, SEEDS[0])
    m, w = sp.machine, sp.workload
    return (f"Figure 6's key point (configs/experiments.toml [fig6]): {m.name}, "
            f"{m.processor.cpus} CPUs, {format_size(m.caches.l2.size)} L2, web "
            f"{w.args.replace(',', ' ')}")


def render(got_rows, title: str, configured=None, unit="req/s",
           rate="Requests") -> str:
    lines = [f"{title}, --timing, seeds "
             f"{', '.join(map(str, SEEDS))}: mean [least..most] over the seeds. "
             f"{rate} per modelled second of the region; c32's gain paired "
             "by seed; a row agrees with the next finer one when the mean "
             "gains differ by no more than the wider of the two seed ranges; "
             "host s: mean wall time per run, and guest MIPS: guest "
             "instructions (every vCPU's) per host second, on the machine "
             "that made the table.", "", header(unit)]
    got_rows = list(got_rows)
    for i, (q, got) in enumerate(got_rows):
        finer = (got_rows[i + 1][1] if q is not None and i + 1 < len(got_rows)
                 else None)
        lines.append(format_row(q, got, finer, configured))
    return "\n".join(lines) + "\n"


# Chat at 2 CPUs: the chat-regime table's point (docs/operating-point.md;
# Figure 10's machine and threads, fewer messages than the paper's 300).
CHAT_CPUS = 2


def chat_spec(kernel, q_us, seed):
    """Chat's run at 2 CPUs, its clocks held within ``q_us`` µs."""
    from colorsim.orchestrate import chatregime
    spec = chatregime.spec_for(kernel, CHAT_CPUS, dict(chatregime.POINT, seed=seed))
    return dataclasses.replace(spec, machine=bounded(spec.machine, q_us))


def chat_title() -> str:
    from colorsim.orchestrate import chatregime as c
    p = c.POINT
    return (f"Chat at {CHAT_CPUS} CPUs (the chat-regime table's point): {c.MACHINE}, "
            f"L2 {c.L2}, {c.THREADS} threads, {p['messages']} messages per user, "
            f"the middle {p['skip']} % to {100 - p['skip']} % of the received messages")


@dataclasses.dataclass(frozen=True)
class At:
    """A point the table can be made at."""
    block: str              # the Markdown block it is written into
    title: str
    spec_of: object         # (kernel, q_us, seed) -> RunSpec
    machine: object         # its machine as configured
    summary: object         # run directory -> {"rate", "contention", "host_s"}
    unit: str = "req/s"
    rate: str = "Requests"


def at_point(name, point) -> At:
    if name == "fig9":
        return At("convergence", web_point_title(point),
                  lambda k, q, s: spec_for(k, q, s, point),
                  machine_for(None, point["cpus"]), web_summary)
    if point != dict(POINT, seed=SEEDS[0]):
        raise ConfigError("--cpus, --httpd, --clients, --requests and "
                          "--client-cpus shape Figure 9's point; --at "
                          f"{name} is its own point as it is")
    if name == "fig6":
        return At("convergence-fig6", fig6_title(), fig6_spec,
                  fig6_spec("vanilla", None, SEEDS[0]).machine, web_summary)
    return At("convergence-chat", chat_title(), chat_spec,
              chat_spec("vanilla", None, SEEDS[0]).machine, chat_summary,
              "msg/s", "Messages")


AT = ("fig9", "fig6", "chat")


def cmd_convergence(a):
    from colorsim.report.markdown import check_block_files
    at = at_point(a.at, point_from_args(a, SEEDS[0]))
    for k in KERNELS:                   # refuse a point the runner refuses,
        at.spec_of(k, QS_US[-1], SEEDS[0])      # before any run
    check_block_files(a, at.block)
    emit_table(a, at.block, "convergence",
               lambda missing: rows(at, a.out, a.run, a.force, missing),
               lambda got: render(got, at.title, configured_q(at.machine),
                                  at.unit, at.rate))
    return 0


def add_parser(sub):
    from colorsim.report.markdown import add_block_options
    t = sub.add_parser("convergence",
                       help="the web results with the modelled clocks held "
                       "closer together")
    add_table_run_options(t, "convergence")
    t.add_argument("--at", choices=AT, default="fig9",
                   help="the point: Figure 9's 8-CPU point (default; the "
                   "options below make it smaller; block convergence), "
                   "Figure 6's 512 KiB, 1024-httpd point (convergence-fig6) "
                   "or Chat at 2 CPUs (convergence-chat)")
    add_point_options(t)
    add_block_options(t, "convergence")
    t.set_defaults(func=cmd_convergence)
