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

from colorsim.argtypes import directory
from colorsim.report.markdown import (add_block_options, check_block_files,
                                      emit, markers)

# the runs and their pairs: colorsim/report/pairs.py
from colorsim.report.pairs import KERNELS, L2S, TASKS, pair_numbers, pick_runs  # noqa: F401
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
    from colorsim.run.runner import run_each
    run_each(specs(), out, "headline", log)


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


def l2_label(l2: str) -> str:
    """An L2 size as the tables print it: "512KiB" -> "512 KiB"."""
    return l2.replace("KiB", " KiB").replace("MiB", " MiB")


def render(rows) -> str:
    """The Markdown table."""
    lines = ["| L2 | vanilla's peak offset | c32's largest offset, share of that peak "
             "| colored-line transactions, c32 vs vanilla "
             "| run-queue loop L2 miss ratio, vanilla / c32 "
             "| the paper's (Table 2) |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(
            f"| {l2_label(r['l2'])} "
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
