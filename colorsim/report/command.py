"""``python3 -m colorsim figures EXPERIMENT|all``: figures and the report
from the catalog (colorsim/report/figures.py, colorsim/report/html.py)."""

from __future__ import annotations

from colorsim.argtypes import directory


def cmd_figures(a):
    from colorsim.report.figures import make_figures
    make_figures(a.experiment, root=a.runs, out=a.out, quick=a.quick,
                 require_points=True, pdf=a.pdf)


def add_parser(subparsers):
    p = subparsers.add_parser(
        "figures", help="the paper's figures and tables, and the "
                        "HTML report")
    p.add_argument("experiment", help="an experiment name, or 'all'")
    p.add_argument("--quick", action="store_true", default=None,
                   help="use the --quick sweep's points (default: the "
                        "paper-scale points where the catalog has any, "
                        "else the quick ones)")
    p.add_argument("--runs", type=directory, default=None,
                   help="runs folder holding the catalog (default runs/)")
    p.add_argument("--out", type=directory, default=None,
                   help="output folder (default RUNS/figures)")
    p.add_argument("--pdf", action="store_true",
                   help="also print the report to report.pdf (headless "
                        "chromium)")
    p.set_defaults(func=cmd_figures)
    return p


def cmd_shapes(a):
    from colorsim.report import shapes
    from colorsim.report.markdown import check_block_files, emit
    from colorsim.results.catalog import Catalog
    from colorsim.run.rundir import runs_root
    check_block_files(a)
    cat = Catalog(runs_root(a.runs))
    cat.table("runs")                  # a missing catalog: one line, early
    # the quick scale's table and the paper scale's are two blocks
    emit(shapes.block(cat, a.quick), a, "shapes" if a.quick else "shapes-paper",
         how="shapes")


def add_shapes_parser(subparsers):
    from colorsim.report.markdown import add_block_options
    p = subparsers.add_parser(
        "shapes", help="the paper's timed results beside ours, and what our "
                       "runs measured")
    p.add_argument("--quick", action="store_true", default=None,
                   help="use the --quick sweep's points, and FILE's shapes "
                        "block (default: the paper-scale points where the "
                        "catalog has any, and FILE's shapes-paper block)")
    p.add_argument("--runs", type=directory, default=None,
                   help="runs folder holding the catalog (default runs/)")
    add_block_options(p, "shapes (--quick) or shapes-paper")
    p.set_defaults(func=cmd_shapes)
    return p
