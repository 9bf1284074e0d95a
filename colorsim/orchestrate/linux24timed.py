"""``python3 -m colorsim.maintain linux24-timed``: Linux 2.4 in modelled time beside the testbed.

The user's Linux 2.4.37 on i386 (the paper's port) and on x86_64, and the
testbed kernel, vanilla against 32 colors, on the paper's 4-way Pentium
Pro with its 512 KiB L2, under ``--timing``, running the web server (256
httpd behind Apache's fcntl accept lock, 64 clients of 4 requests) and
Chat (5 rooms of 10 users, 10 messages each: 200 threads).  Every kernel
has its clients on the measured CPUs, over loopback (``--client-cpus 0``),
and the web server runs once more with its clients on one CPU of their
own (``--client-cpus 1``: on 2.4 the client partition and cards patches,
the clients' packets taken by the server's CPUs at once; on the testbed
one client CPU, without the wire, which needs two).  One seed and small loads: a check that the same coloring moves
real Linux as it moves the testbed, in the same directions, not a
paper-scale figure.

The rows come from one runs folder's catalog (default
``runs/linux24-timed``): ``--run`` makes the runs it lacks first
(the Linux ones need ``LINUX24_SRC``).  ``--write FILE`` and ``--check
FILE`` work as for ``headline``, between ``<!-- linux24-timed:begin -->``
and ``<!-- linux24-timed:end -->``.
"""

from __future__ import annotations

from pathlib import Path

from colorsim.errors import ResultsError
from colorsim.report.markdown import emit, markers

BEGIN, END = markers("linux24-timed")
MACHINE, L2 = "ppro4", "512KiB"
# (label, --kernel of vanilla, of c32)
FAMILIES = (("Linux 2.4.37 i386", "linux24-i386:vanilla", "linux24-i386:c32"),
            ("Linux 2.4.37 x86_64", "linux24:vanilla", "linux24:c32"),
            ("testbed", "vanilla", "c32"))
# (label, program, its arguments, client CPUs)
WEB = "--httpd,256,--clients,64,--requests,4,--accept,fcntl"
LOADS = (("web: 256 httpd, fcntl accept, 64 clients x 4 requests", "/bin/web", WEB, 0),
         ("Chat: 5 rooms x 10 users x 10 messages", "/bin/chat",
          "--rooms,5,--users,10,--messages,10", 0),
         ("web as above, its clients on 1 CPU of their own", "/bin/web", WEB, 1))
TIMEOUT_S = 3600.0
# a web run whose region began past the window it asked for (the catalog's
# roi_late): the controller woke late, and the region is the run's tail
LATE = " (late)"
LATE_NOTE = (" (late): the region began after the window it was asked to measure had "
             "passed (the web program's controller, on the measured CPUs, woke late), so "
             "it is the run's tail.")


def is_late(run) -> bool:
    """Whether a run's row says its region began late (catalogs made
    before the column have none: not late)."""
    v = run.get("roi_late")
    return v is not None and v == v and bool(v)


def specs():
    """(load label, family label, kernel, its RunSpec) of every run."""
    from colorsim.describe.machine import get_machine
    from colorsim.describe.runspec import RunSpec, Workload
    from colorsim.describe.variants import parse_variant
    m = get_machine(MACHINE).with_l2(L2)
    for load, program, args, cc in LOADS:
        for fam, *kernels in FAMILIES:
            for k in kernels:
                w = Workload(program=program, args=args, client_cpus=cc)
                yield load, fam, k, RunSpec(m, parse_variant(k, m), w, timing=True,
                                            timeout_s=TIMEOUT_S)


def make_runs(out: Path, log=print) -> None:
    """The runs ``out`` lacks (a complete run is reused)."""
    from colorsim.run.runner import run_each
    run_each((spec for *_, spec in specs()), out, "linux24-timed", log)


def runs_by_name(cat, how: str):
    """The catalog's runs table indexed by run name; ``how`` names the
    maintainer command that makes the runs, for the message."""
    runs = cat.table("runs")
    if not len(runs) or "run" not in runs.columns:
        raise ResultsError(f"the catalog of {cat.root} has no runs: make them with "
                           f"'python3 -m colorsim.maintain {how} --run'")
    return runs.drop_duplicates("run").set_index("run")


def run_row(by_name, name: str, cat, how: str):
    """The catalog's row of the run ``name`` (runs_by_name)."""
    if name not in by_name.index:
        raise ResultsError(f"no run {name} in {cat.root}: make it with "
                           f"'python3 -m colorsim.maintain {how} --run'")
    return by_name.loc[name]


def rows(cat) -> list:
    """One row per load and kernel family: {column: value} from the
    catalog's row of each of its two runs."""
    by_name = runs_by_name(cat, "linux24-timed")
    out = []
    for load, *_ in LOADS:
        for fam, *kernels in FAMILIES:
            pair = []
            for k in kernels:
                name = next(s.default_name() for ld, f, kk, s in specs()
                            if ld == load and f == fam and kk == k)
                pair.append(run_row(by_name, name, cat, "linux24-timed"))
            out.append({"load": load, "family": fam, "vanilla": pair[0], "c32": pair[1]})
    return out


def fmt_pair(values, fmt) -> str:
    """Values as "a / b", each by ``fmt``, "-" where missing or NaN."""
    return " / ".join("-" if x is None or x != x else fmt(x) for x in values)


def _pair(r, col, fmt) -> str:
    return fmt_pair((r["vanilla"].get(col), r["c32"].get(col)), fmt)


def render(rs: list) -> str:
    lines = ["| load | kernel | vanilla / c32 per modelled second | c32's gain | "
             "run-queue loop L2 miss ratio, vanilla / c32 | runqueue_lock contention, "
             "vanilla / c32 | its mean hold, vanilla / c32 | schedule() and lock spin, "
             "share of cycles, vanilla |",
             "|---|---|---|---|---|---|---|---|"]
    late = False
    for r in rs:
        v, c = r["vanilla"]["throughput"], r["c32"]["throughput"]
        marks = [LATE if is_late(r[k]) else "" for k in ("vanilla", "c32")]
        late = late or any(marks)
        share = r["vanilla"].get("sched_share_pct")
        spin = r["vanilla"].get("lock_spin_pct")
        lines.append(
            f"| {r['load']} | {r['family']} | {v:.0f}{marks[0]} / {c:.0f}{marks[1]} "
            f"| {(c / v - 1) * 100:+.1f} % | "
            f"{_pair(r, 'rqloop_l2_miss_ratio', lambda x: f'{x * 100:.1f} %')} | "
            f"{_pair(r, 'lock_contention', lambda x: f'{x * 100:.0f} %')} | "
            f"{_pair(r, 'lock_hold_mean_us', lambda x: f'{x:.1f} µs')} | "
            + ("-" if share is None or share != share else f"{share:.1f} %")
            + " / " + ("-" if spin is None or spin != spin else f"{spin:.1f} %") + " |")
    unit = "requests (web), messages (Chat)"
    return ("\n".join(lines) + f"\n\nThroughput: {unit} per modelled second of the "
            "region. One seed per run." + (LATE_NOTE if late else "") + "\n")


def cmd_linux24_timed(a):
    from colorsim.orchestrate.linux24table import catalog_of
    cat = catalog_of(a, "linux24-timed", "linux24-timed", "linux24-timed", make_runs)
    emit(render(rows(cat)), a, "linux24-timed", how="linux24-timed")


def add_parser(sub):
    from colorsim.orchestrate.linux24table import _add
    return _add(sub, "linux24-timed", "linux24-timed",
                "Linux 2.4 in modelled time beside the testbed: web and Chat "
                "(docs/linux24.md), from the catalog",
                "make the runs first (the Linux ones need LINUX24_SRC) "
                "and rebuild the catalog", cmd_linux24_timed, runs="runs/linux24-timed")
