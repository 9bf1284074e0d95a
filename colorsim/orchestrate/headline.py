"""``python3 -m colorsim.maintain headline``: the README's headline table, generated.

The paper's central measurement on its 4-way Pentium Pro with 1024
processes, at the three L2 sizes it used, vanilla against 32 colors: where
vanilla's bus traffic peaks, how much of that peak the colored kernel
leaves, how the colored-line transactions change, and the run-queue loop's
L2 miss ratio beside the paper's Table 2.

The rows come from the results catalog of a runs folder (default
``runs/headline``); ``--run`` makes the six runs first (about half a minute).
``--write FILE`` puts the table between the ``<!-- headline:begin -->``
and ``<!-- headline:end -->`` markers of FILE; ``--check FILE`` exits 2
when FILE's table is not the one the catalog gives (a test does that on the
README, so its numbers are never typed by hand).
"""

from __future__ import annotations

from pathlib import Path

from colorsim.errors import ResultsError
from colorsim.argtypes import directory
from colorsim.report.markdown import (add_block_options, check_block_files,
                                      emit, markers)

L2S = ("256KiB", "512KiB", "1MiB")
KERNELS = ("vanilla", "c32")
TASKS = 1024
BEGIN, END = markers("headline")


def specs():
    """The six runs of the table: ppro4, 1024 tasks, built-in workload."""
    from colorsim.describe.machine import get_machine
    from colorsim.describe.runspec import RunSpec, Workload
    from colorsim.describe.variants import parse_variant
    for l2 in L2S:
        m = get_machine("ppro4").with_l2(l2)
        for k in KERNELS:
            yield RunSpec(m, parse_variant(k, m), Workload(tasks=TASKS))


def make_runs(out: Path, log=print) -> None:
    """Make the runs that ``out`` lacks (a complete run is reused)."""
    from colorsim.run.runner import run
    for i, spec in enumerate(specs(), 1):
        log(f"headline: run {i}/{len(L2S) * len(KERNELS)}: {spec.default_name()}")
        run(spec, name=spec.default_name(), out=out)


def pick_runs(cat, kernels=KERNELS, tasks=TASKS, how="headline",
              engine="qemu", machine="ppro4", l2s=L2S) -> list:
    """Per L2 size of ``l2s``, {kernel: its catalog row}: ``machine`` with
    all its CPUs, on ``engine``, counting only, the built-in (or linux24
    init's) tasks workload, seed 1.  ``how`` names the command that makes
    missing runs."""
    from colorsim.describe.machine import get_machine
    from colorsim.units import parse_size
    runs = cat.table("runs")
    need = {"machine", "kernel", "l2_size", "tasks", "workload_program"}
    if not len(runs) or not need <= set(runs.columns):
        raise ResultsError(f"the catalog of {cat.root} has no runs: make them "
                           f"with 'python3 -m colorsim.maintain {how} --run'")
    cpus = get_machine(machine).processor.cpus
    sel = runs[(runs["machine"] == machine) & (runs["tasks"] == tasks) &
               (runs["engine"] == engine) & (runs["workload_program"] == "") &
               (runs["cpus"] == cpus) & (runs["seed"] == 1) &
               ~runs["timing"].fillna(False).astype(bool)]
    out = []
    for l2 in l2s:
        size = parse_size(l2)
        pick = {}
        for k in kernels:
            r = sel[(sel["l2_size"] == size) & (sel["kernel"] == k)]
            if not len(r):
                raise ResultsError(
                    f"no {machine} {l2} {k} run of {tasks} tasks on {engine} in the catalog of "
                    f"{cat.root}: run 'python3 -m colorsim.maintain {how} --run'")
            pick[k] = r.sort_values("run_id").iloc[0]
        out.append(pick)
    return out


def pair_numbers(v, c) -> dict:
    """What the tables say of one vanilla/colored pair of catalog rows."""
    return {"peak": int(v["peak_offset"]),
            "c32_peak_share": c["peak_count"] / max(v["peak_count"], 1),
            "colored_change": (c["colored_lines_sum"] - v["colored_lines_sum"])
            / max(v["colored_lines_sum"], 1),
            "miss_vanilla": v["rqloop_l2_miss_ratio"],
            "miss_c32": c["rqloop_l2_miss_ratio"]}


def headline_rows(cat) -> list:
    """One row per L2 size, from the catalog's runs table."""
    paper = _paper_table2()
    rows = []
    for i, (l2, pick) in enumerate(zip(L2S, pick_runs(cat))):
        rows.append({"l2": l2, **pair_numbers(pick["vanilla"], pick["c32"]),
                     "paper_vanilla": paper["vanilla"][i],
                     "paper_c32": paper["c32"][i]})
    return rows


def _paper_table2() -> dict:
    from colorsim.report.common import paper_results
    return paper_results()["table2"]


def _pct(x: float, sign: bool = False) -> str:
    """A fraction as the README writes percentages: '13.2 %', '-84.9 %'."""
    return f"{x * 100:{'+' if sign else ''}.1f} %"


def render(rows) -> str:
    """The Markdown table."""
    lines = ["| L2 | vanilla's peak offset | c32's largest offset, share of that peak "
             "| colored-line transactions, c32 vs vanilla "
             "| run-queue loop L2 miss ratio, vanilla / c32 "
             "| the paper's (Table 2) |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(
            f"| {r['l2'].replace('KiB', ' KiB').replace('MiB', ' MiB')} "
            f"| {r['peak']:#05x} | {_pct(r['c32_peak_share'])} "
            f"| {_pct(r['colored_change'], sign=True)} "
            f"| {_pct(r['miss_vanilla'])} / {_pct(r['miss_c32'])} "
            f"| {r['paper_vanilla']:.1f} % / {r['paper_c32']:.1f} % |")
    return "\n".join(lines) + "\n"


def cmd_headline(a):
    from colorsim.results.catalog import Catalog, rebuild
    from colorsim.run.rundir import check_out_dir
    from colorsim.run.runner import RUNS
    out = check_out_dir(Path(a.runs) if a.runs else RUNS / "headline")
    check_block_files(a)
    if a.run:
        make_runs(out)
        rebuild(out)
    table = render(headline_rows(Catalog(out)))
    emit(table, a, "headline", how="headline")


def add_parser(sub):
    p = sub.add_parser("headline", help="the README's headline table, from the "
                       "catalog")
    p.add_argument("--runs", type=directory, default=None,
                   help="runs folder with its catalog (default runs/headline)")
    p.add_argument("--run", action="store_true",
                   help="make the six runs first and rebuild the catalog")
    add_block_options(p, "headline")
    p.set_defaults(func=cmd_headline)
    return p
