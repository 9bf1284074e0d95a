"""Command line: ``python3 -m colorsim <command>``.

  machines                      list the machine descriptions
  build [--kernel K ...]        build the plugin and kernel variants
  run --machine M --kernel K    one run -> runs/<name>/
  plot offsets RUN [RUN ...]    Figure 1: transactions per page offset
  summary RUN [RUN ...]         the offset peaks and colored-line sums
  table RUN [RUN ...] -o F      the tidy results table (CSV), config on every row
  figure1                       the README's experiment: vanilla vs c32 + plot
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

from . import compare
from .errors import ConfigError, RunError
from .machine import get_machine, load_machines
from .runspec import RunSpec, Workload
from .units import format_size
from .variants import parse_variant


def _positive_int(text):
    try:
        v = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least 1")
    return v


def add_run_options(p, kernel_required=True):
    p.add_argument("--machine", default="ppro4", help="machine description (configs/machines.toml)")
    p.add_argument("--l2", help="L2 size per CPU, e.g. 512KiB (default: the machine's)")
    p.add_argument("--cpus", type=_positive_int, help="CPUs to use (default: all)")
    if kernel_required:
        p.add_argument("--kernel", required=True, help="vanilla or cN (N colors: c2..c32)")
    p.add_argument("--tasks", type=_positive_int, default=1024, help="workload tasks (default 1024)")
    p.add_argument("--burst", type=_positive_int, default=Workload.burst, help="compute iterations between sleeps")
    p.add_argument("--warmup", type=_positive_int, default=Workload.warmup_ticks, help="ticks before the region of interest")
    p.add_argument("--roi", type=_positive_int, default=Workload.roi_ticks, help="ticks measured")
    p.add_argument("--seed", type=_positive_int, default=Workload.seed, help="allocation-history seed")
    p.add_argument("--engine", default="qemu", help="qemu (default) or gem5 (needs GEM5=path/to/gem5.opt)")
    p.add_argument("--timeout", type=float, default=900.0, help="seconds before a run is declared hung")
    p.add_argument("--out", type=Path, default=None, help="directory for run directories (default runs/)")
    p.add_argument("--force", action="store_true", help="run again even if a complete run exists")


def spec_from_args(a, kernel=None) -> RunSpec:
    machine = get_machine(a.machine)
    if a.l2:
        machine = machine.with_l2(a.l2)
    if a.cpus:
        machine = machine.with_cpus(a.cpus)
    variant = parse_variant(kernel or a.kernel, machine)
    w = Workload(tasks=a.tasks, burst=a.burst, warmup_ticks=a.warmup,
                 roi_ticks=a.roi, seed=a.seed)
    return RunSpec(machine, variant, w, engine=a.engine, timeout_s=a.timeout)


def cmd_machines(a):
    for name, m in load_machines().items():
        c = m.caches
        print(f"{name:8} {m.processor.cpus} CPUs {m.processor.clock_hz // 10**6} MHz; "
              f"L1D {c.l1d.describe()}; L2 {c.l2.describe()} "
              f"(choices {', '.join(map(format_size, m.l2_choices))}); "
              f"memory {format_size(m.memory.size)} - {m.description}")


def cmd_build(a):
    from .build import ensure_built
    machine = get_machine(a.machine)
    if a.l2:
        machine = machine.with_l2(a.l2)
    ids = [parse_variant(k, machine).build_id for k in a.kernel]
    ensure_built(ids)


def cmd_run(a):
    from . import runner
    spec = spec_from_args(a)
    if a.dry_run:
        print(dry_run_text(spec, a.name))
        return
    runner.run(spec, name=a.name, out=a.out or runner.RUNS, force=a.force)


def dry_run_text(spec, name=None) -> str:
    from . import runner
    from .engines import get_engine
    engine = get_engine(spec.engine)
    run_dir = (runner.RUNS / (name or spec.default_name()))
    if spec.engine == "qemu":
        import json
        layout = (json.loads(spec.layout_file.read_text())
                  if spec.layout_file.is_file() else
                  {"ranges": {"rqloop": [0, 0], "user": []}})
        return engine.describe(spec, run_dir, layout)
    return engine.describe(spec, run_dir)


def cmd_plot(a):
    from analysis.plots import plot_offsets
    from analysis.results import load_run
    runs = [load_run(p) for p in a.runs]
    out = a.output or (runs[0].path.parent / f"offsets-{'-vs-'.join(r.name for r in runs)[:120]}.png")
    print(f"plot: {plot_offsets(runs, out, view=a.view)}")


def cmd_summary(a):
    from analysis.results import load_run, offset_summary
    runs = [load_run(p) for p in a.runs]
    print_summary(offset_summary(runs, view=a.view))


def cmd_table(a):
    from analysis.results import (counters_table, load_run, offset_summary,
                                  offsets_table)
    runs = [load_run(p) for p in a.runs]
    make = {"offsets": offsets_table, "counters": counters_table,
            "summary": offset_summary}[a.what]
    df = make(runs)
    if a.output is None:
        print(df.to_csv(index=False), end="")
        return
    tmp = a.output.with_name(a.output.name + ".tmp")
    df.to_csv(tmp, index=False)
    tmp.replace(a.output)
    print(f"table: {len(df)} rows from {len(runs)} runs -> {a.output}")


def print_summary(df):
    import pandas as pd
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        cols = ["run", "kernel", "tasks", "peak_offset", "peak_count",
                "colored_lines_sum", "colored_span", "total", "rqloop_l2_miss_ratio"]
        d = df[cols].copy()
        d["peak_offset"] = d["peak_offset"].map(lambda x: f"{x:#05x}")
        d["rqloop_l2_miss_ratio"] = d["rqloop_l2_miss_ratio"].map(lambda x: f"{x:.1%}")
        print(d.to_string(index=False))


def cmd_figure1(a):
    """Vanilla and N-color runs on one machine, then the offset plot."""
    from analysis.plots import plot_offsets
    from analysis.results import load_run, offset_summary

    from . import runner
    out = a.out or (runner.RUNS / "figure1")
    runs = []
    for k in ("vanilla", a.colored):
        spec = spec_from_args(a, kernel=k)
        runs.append(load_run(runner.run(spec, out=out, force=a.force)))
    png = plot_offsets(runs, out / "figure1-offsets.png")
    df = offset_summary(runs)
    df.to_csv(out / "figure1-summary.csv", index=False)
    print_summary(df)
    v, c = df.iloc[0], df.iloc[1]
    print(f"vanilla peak {v.peak_count} at {v.peak_offset:#05x} (first-touched "
          f"word {v.first_touched:#04x}); {c.kernel} largest offset "
          f"{c.peak_count} = {c.peak_count / max(v.peak_count, 1):.1%} of it; "
          f"colored-lines sum {c.colored_lines_sum} vs {v.colored_lines_sum} "
          f"({(c.colored_lines_sum - v.colored_lines_sum) / max(v.colored_lines_sum, 1):+.1%})")
    print(f"figure: {png}")


def build_parser():
    ap = argparse.ArgumentParser(prog="colorsim", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    sub.add_parser("machines", help="list machines").set_defaults(func=cmd_machines)

    b = sub.add_parser("build", help="build the plugin and kernel variants")
    b.add_argument("--machine", default="ppro4")
    b.add_argument("--l2")
    b.add_argument("--kernel", nargs="+", default=["vanilla", "c32"])
    b.set_defaults(func=cmd_build)

    r = sub.add_parser("run", help="one run")
    add_run_options(r)
    r.add_argument("--name", help="run directory name (default: derived)")
    r.add_argument("--dry-run", action="store_true", help="print what would run")
    r.set_defaults(func=cmd_run)

    p = sub.add_parser("plot", help="figures")
    psub = p.add_subparsers(dest="figure", required=True)
    po = psub.add_parser("offsets", help="bus transactions per page offset")
    po.add_argument("runs", nargs="+", type=Path)
    po.add_argument("--view", choices=["chunk", "line"], default="chunk")
    po.add_argument("-o", "--output", type=Path)
    po.set_defaults(func=cmd_plot)

    s = sub.add_parser("summary", help="offset peaks of runs")
    s.add_argument("runs", nargs="+", type=Path)
    s.add_argument("--view", choices=["chunk", "line"], default="chunk")
    s.set_defaults(func=cmd_summary)

    t = sub.add_parser("table", help="tidy results table of runs (CSV)")
    t.add_argument("runs", nargs="+", type=Path)
    t.add_argument("--what", choices=["offsets", "counters", "summary"], default="counters")
    t.add_argument("-o", "--output", type=Path, help="CSV file (default: stdout)")
    t.set_defaults(func=cmd_table)

    f = sub.add_parser("figure1", help="vanilla vs colored offsets + plot")
    add_run_options(f, kernel_required=False)
    f.add_argument("--colored", default="c32", help="colored kernel to compare (default c32)")
    f.set_defaults(func=cmd_figure1)
    compare.add_parser(sub)
    return ap


def main(argv=None):
    ap = build_parser()
    a = ap.parse_args(argv)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("default")
            a.func(a)
    except (ConfigError, RunError) as e:
        print(f"colorsim: error: {e}", file=sys.stderr)
        return 2
    except Exception as e:  # analysis errors on bad run directories
        from analysis.results import ResultsError
        if isinstance(e, ResultsError):
            print(f"colorsim: error: {e}", file=sys.stderr)
            return 2
        raise
    return 0
