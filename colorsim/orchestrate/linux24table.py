"""``python3 -m colorsim.maintain linux24-table``: the real-Linux table of docs/results.md, generated.

Real Linux 2.4.37 (built from the user's tree, ``LINUX24_SRC``), its i386
port (the paper's) and its x86_64 one, beside the testbed kernel and the
paper, on the paper's 4-way Pentium Pro at the three L2 sizes it used,
vanilla against 32 colors: where vanilla's bus traffic peaks, how the
colored-line transactions change, and the run-queue loop's L2 miss ratio
(the paper's Table 2).  A second table puts the task-structure fields the
walk reads at their offsets: 2.4.4 on i386 as the testbed lays them out,
2.4.37 on i386 and on x86_64 as the built kernels' DWARF gives them, and
the field on which each Linux's measured vanilla peak falls.

The rows come from one runs folder's catalog (default ``runs/linux24``):
``--run`` makes the headline's six testbed runs and the twelve Linux runs
(six per architecture) in it first.  ``--write FILE`` and ``--check FILE`` work as for ``headline``,
between ``<!-- linux24:begin -->`` and ``<!-- linux24:end -->``.

``linux24-engines`` puts the same six x86_64 Linux runs, and the Xeon's
pair (piii8, 8 CPUs, 1 MiB), beside their gem5 twins (the boot image of
colorsim/run/linux24gem5.py, TimingSimple CPUs): Figure 1's peak, Figure
7's colored-line change and Table 2's loop miss ratio on both engines
(block ``linux24-engines`` of docs/linux24.md; ``--run`` makes the Xeon's
QEMU pair and the gem5 runs, which need gem5 and the user's tree);
``--figure`` draws Figure 1's hot lines of each 1 MiB pair on both engines
side by side (docs/linux24-engines.png).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from colorsim.argtypes import directory
from colorsim.errors import ResultsError
from colorsim.orchestrate import headline
from colorsim.report.linux24 import NAMES, field_rows, picks, table_rows
from colorsim.report.markdown import (add_block_options, check_block_files,
                                      emit, markers)
from colorsim.report.pairs import per_kinst_pair

KERNELS = ("linux24:vanilla", "linux24:c32")
# the same pair on i386 (linux24-table only: gem5 v24 runs no 32-bit
# protected-mode kernel)
I386_KERNELS = ("linux24-i386:vanilla", "linux24-i386:c32")
TASKS = headline.TASKS
TIMEOUT_S = 7200.0
# The engines table adds the Xeon's pair (its 8 CPUs, its one L2 size) to
# the Pentium Pro's three L2 sizes; gem5 boots its 8 CPUs for most of an hour.
XEON = ("piii8", ("1MiB",))
XEON_TIMEOUT_S = 4 * 3600.0
BEGIN, END = markers("linux24")


def specs(kernels=KERNELS):
    """The six Linux runs of ``kernels``: ppro4, TASKS processes, l24tasks
    as init."""
    from colorsim.describe.machine import get_machine
    from colorsim.describe.runspec import RunSpec, Workload
    from colorsim.describe.variants import parse_variant
    for l2 in headline.L2S:
        m = get_machine("ppro4").with_l2(l2)
        for k in kernels:
            # a Linux boot is a minute of CPU or more; on a shared
            # machine the wall time is several times that
            yield RunSpec(m, parse_variant(k, m), Workload(tasks=TASKS),
                          timeout_s=TIMEOUT_S)


def make_runs(out: Path, log=print) -> None:
    """The testbed's headline runs and the Linux runs that ``out`` lacks."""
    from colorsim.run.runner import run_each
    headline.make_runs(out, log)
    run_each([*specs(), *specs(I386_KERNELS)], out, "linux24-table", log)


def xeon_specs():
    """Linux's pair on the Xeon: piii8's 8 CPUs, TASKS processes."""
    from colorsim.describe.machine import get_machine
    from colorsim.describe.runspec import RunSpec, Workload
    from colorsim.describe.variants import parse_variant
    machine, (l2,) = XEON
    m = get_machine(machine).with_l2(l2)
    for k in KERNELS:
        yield RunSpec(m, parse_variant(k, m), Workload(tasks=TASKS),
                      timeout_s=XEON_TIMEOUT_S)


def gem5_specs() -> list:
    """The eight Linux runs of the engines table on gem5."""
    return [dataclasses.replace(s, engine="gem5")
            for s in (*specs(), *xeon_specs())]


def make_engine_runs(out: Path, log=print) -> None:
    """The engines table's runs beyond linux24-table's: the Xeon's pair on
    QEMU and every Linux run on gem5."""
    from colorsim.run.runner import run
    todo = [*xeon_specs(), *gem5_specs()]
    for i, spec in enumerate(todo, 1):
        log(f"linux24-engines: run {i}/{len(todo)}: {spec.default_name()}")
        run(spec, name=spec.default_name(), out=out)


# The engines table's rows: (architecture, its kernels' catalog names,
# machine, L2 sizes); another architecture on gem5 is one more row.
ENGINE_ROWS = (("x86_64", NAMES, "ppro4", headline.L2S),
               ("x86_64", NAMES, *XEON))


def engine_picks(cat) -> list:
    """The engines table's runs, picked once: per row of ENGINE_ROWS, (arch,
    names, machine, l2s, {engine: per L2 size of l2s, {kernel: its catalog
    row}})."""
    return [(arch, names, machine, l2s,
             {e: headline.pick_runs(cat, names, TASKS, how="linux24-engines",
                                    engine=e, machine=machine, l2s=l2s)
              for e in ("qemu", "gem5")})
            for arch, names, machine, l2s in ENGINE_ROWS]


def engine_rows(cat, picked=None) -> list:
    """One row per architecture, machine and L2 size: Linux's vanilla/c32
    pair on QEMU and on gem5, and the paper's numbers where it measured
    that machine (Figure 1, Figure 7 and Table 2 are the Pentium Pro's);
    the runs from ``picked`` (:func:`engine_picks`) or the catalog's."""
    from colorsim.report.common import paper_results
    paper = paper_results()
    rows = []
    for arch, names, machine, l2s, by in picked or engine_picks(cat):
        qemu, gem5 = by["qemu"], by["gem5"]
        ppro = machine == "ppro4"
        rows += [{"machine": machine, "l2": l2, "arch": arch,
                  "qemu": per_kinst_pair(*(qemu[i][k] for k in names)),
                  "gem5": per_kinst_pair(*(gem5[i][k] for k in names)),
                  "bus": tuple(int(p[k]["colored_lines_sum"])
                               for p in (qemu[i], gem5[i]) for k in names),
                  "paper_peak": paper["fig1"]["peak_offset"] if ppro else None,
                  "paper_colored": (paper["fig7"]["colored_change"].get(l2)
                                    if ppro else None),
                  "paper_miss": ((paper["table2"]["vanilla"][i],
                                  paper["table2"]["c32"][i]) if ppro else None)}
                 for i, l2 in enumerate(l2s)]
    return rows


def engine_grid(cat, picked=None) -> list:
    """Figure 1's runs of the engines figure: per row of ENGINE_ROWS at its
    largest L2, {engine: [vanilla, c32]} loaded from the catalog's folder
    (the runs from ``picked``, :func:`engine_picks`, or the catalog's)."""
    from colorsim.results.rundata import load_run
    return [(f"{arch}, {machine}, {headline.l2_label(l2s[-1])}",
             {label: [load_run(cat.root / by[e][-1][k]["path"]) for k in names]
              for label, e in (("QEMU", "qemu"), ("gem5", "gem5"))})
            for arch, names, machine, l2s, by in picked or engine_picks(cat)]


def draw_engines(cat, out: Path, picked=None) -> Path:
    """The engines figure (docs/linux24-engines.png) from the catalog."""
    from colorsim.report.plots import engines_figure
    return engines_figure(
        engine_grid(cat, picked), out,
        f"Linux 2.4.37 on QEMU and on gem5: bus transactions per page offset, "
        f"{TASKS} tasks", footer="python3 -m colorsim.maintain linux24-engines "
        "--figure FILE")


def render_engines(rows) -> str:
    # QEMU books a miss at the offset of the access, gem5's bus view at its
    # line's base: the peak is compared by line
    from colorsim.describe.linux24 import LINE
    line = lambda off: off & ~(LINE - 1)
    out = ["| Linux 2.4.37, machine, L2 | vanilla's peak line: QEMU / gem5 / paper "
           "| colored-line transactions in the region, vanilla and c32: QEMU / gem5 "
           "| change per instruction, c32 vs vanilla: QEMU / gem5 / paper (Figure 7) "
           "| run-queue loop L2 miss ratio, vanilla / c32: QEMU; gem5; paper (Table 2) |",
           "|---|---|---|---|---|"]
    for r in rows:
        q, g, pc = r["qemu"], r["gem5"], r["paper_colored"]
        qv, qc, gv, gc = r["bus"]
        pp, pm = r["paper_peak"], r["paper_miss"]
        out.append(
            f"| {r['arch']}, {r['machine']}, "
            f"{headline.l2_label(r['l2'])} "
            f"| {line(q['peak']):#05x} / {line(g['peak']):#05x} / "
            f"{'—' if pp is None else f'{line(pp):#05x}'} "
            f"| {qv:,} and {qc:,} / {gv:,} and {gc:,} "
            f"| {_pct(q['colored_change'], True)} / {_pct(g['colored_change'], True)}"
            f" / {'—' if pc is None else f'{pc:+.1f} %'} "
            f"| {_pct(q['miss_vanilla'])} / {_pct(q['miss_c32'])}; "
            f"{_pct(g['miss_vanilla'])} / {_pct(g['miss_c32'])}; "
            + ("—" if pm is None else f"{pm[0]:.1f} % / {pm[1]:.1f} %") + " |")
    return "\n".join(out) + "\n"


def _pct(x, sign=False) -> str:
    # a run without a counter (a gem5 built before its loop probe) has none
    return "—" if x is None or x != x else headline._pct(x, sign)


def render(rows, fields) -> str:
    """The two Markdown tables."""
    out = ["| L2 | vanilla's peak offset: Linux 2.4.37 i386 / x86_64 / testbed / paper "
           "| colored-line transactions per instruction, c32 vs vanilla: Linux 2.4.37 "
           "i386 / x86_64 / testbed / paper "
           "| run-queue loop L2 miss ratio, vanilla / c32: Linux 2.4.37 i386 "
           "| Linux 2.4.37 x86_64 | testbed | the paper's (Table 2) |",
           "|---|---|---|---|---|---|---|"]
    for r in rows:
        i3, li, tb = r["i386"], r["linux"], r["testbed"]
        pc = r["paper_colored"]
        out.append(
            f"| {headline.l2_label(r['l2'])} "
            f"| {i3['peak']:#05x} / {li['peak']:#05x} / {tb['peak']:#05x} / "
            f"{r['paper_peak']:#05x} "
            f"| {_pct(i3['colored_change'], True)} / {_pct(li['colored_change'], True)}"
            f" / {_pct(tb['colored_change'], True)}"
            f" / {'—' if pc is None else f'{pc:+.1f} %'} "
            f"| {_pct(i3['miss_vanilla'])} / {_pct(i3['miss_c32'])} "
            f"| {_pct(li['miss_vanilla'])} / {_pct(li['miss_c32'])} "
            f"| {_pct(tb['miss_vanilla'])} / {_pct(tb['miss_c32'])} "
            f"| {r['paper_miss'][0]:.1f} % / {r['paper_miss'][1]:.1f} % |")
    out += ["", "| field the walk reads: 2.4.4 (i386, the testbed's layout) | offset, size "
            "| 2.4.37 | offset, size: i386 | x86_64 |", "|---|---|---|---|---|"]
    for old, fo, new, fi, fx in fields["fields"]:
        out.append(f"| `{old}` | {_at(fo)} | `{new}` | {_at(fi)} | {_at(fx)} |")
    out += ["", f"The first field each walk step touches: `{fields['testbed_first']}` "
            f"(2.4.4), `{fields['i386']['first']}` (2.4.37)."]
    for arch in ("i386", "x86_64"):
        w = fields[arch]
        lines = "; ".join(f"{lo:#05x} ({', '.join(f'`{n}`' for n in names)}): "
                          f"{100 * share:.1f} %" for lo, names, share in w["lines"])
        out.append(f"Linux 2.4.37 {arch}'s vanilla peak (512 KiB): {w['peak']:#05x}, "
                   f"in `{w['peak_field'] or 'no field the walk reads'}`; the lines "
                   f"its walk reads on every task, with vanilla's share of all "
                   f"transactions: {lines}.")
    return "\n".join(out) + "\n"


def _at(f) -> str:
    return "—" if f is None else f"{f['offset']:#05x}, {f['size']} B"


def catalog_of(a, folder: str, how: str, block: str, make, checks=()):
    """The catalog of ``a.runs`` (default runs/``folder``), after making
    its runs with ``make(out)`` under ``--run`` (LINUX24_SRC and each of
    ``checks`` refuse in one line before any run); ``how`` names the
    command in the message when there is no catalog."""
    from colorsim.results.catalog import Catalog, rebuild
    from colorsim.run.rundir import check_out_dir
    from colorsim.run.runner import RUNS
    out = check_out_dir(Path(a.runs) if a.runs else RUNS / folder)
    check_block_files(a, block)
    if a.run:
        from colorsim.describe.linux24 import source_tree
        source_tree()
        for check in checks:
            check()
        make(out)
        rebuild(out)
    if not (out / "catalog" / "runs.parquet").is_file():
        raise ResultsError(f"no catalog of runs in {out}: make the runs with "
                           f"'python3 -m colorsim.maintain {how} --run'")
    return Catalog(out)


def cmd_linux24_table(a):
    cat = catalog_of(a, "linux24", "linux24-table", "linux24", make_runs)
    picked = picks(cat)
    emit(render(table_rows(cat, picked), field_rows(cat, picked)), a, "linux24",
         how="linux24-table")


def cmd_linux24_engines(a):
    from colorsim.run.engines.gem5 import Gem5Engine

    def make(out):
        make_runs(out)
        make_engine_runs(out)
    cat = catalog_of(a, "linux24", "linux24-engines", "linux24-engines", make,
                     checks=(Gem5Engine().check_available,))
    picked = engine_picks(cat)
    emit(render_engines(engine_rows(cat, picked)), a, "linux24-engines",
         how="linux24-engines")
    if a.figure:
        print(f"wrote {draw_engines(cat, Path(a.figure), picked)}")


def _add(sub, name, block, help_, run_help, func, runs="runs/linux24"):
    p = sub.add_parser(name, help=help_)
    p.add_argument("--runs", type=directory, default=None,
                   help=f"runs folder with its catalog (default {runs})")
    p.add_argument("--run", action="store_true", help=run_help)
    add_block_options(p, block)
    p.set_defaults(func=func)
    return p


def add_parser(sub):
    return _add(sub, "linux24-table", "linux24",
                "the real Linux 2.4 table (docs/results.md), from the catalog",
                "make the eighteen runs first (the Linux ones need LINUX24_SRC) "
                "and rebuild the catalog", cmd_linux24_table)


def add_engines_parser(sub):
    p = _add(sub, "linux24-engines", "linux24-engines",
             "Linux 2.4 on QEMU and on gem5 (docs/linux24.md), from the catalog",
             "make the eight Linux runs on each engine first (needs "
             "LINUX24_SRC and gem5) and rebuild the catalog", cmd_linux24_engines)
    p.add_argument("--figure", metavar="PNG", default=None,
                   help="also draw Figure 1's hot lines on both engines there "
                        "(docs/linux24-engines.png)")
    return p
