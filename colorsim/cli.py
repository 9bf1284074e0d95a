"""Command line: ``python3 -m colorsim <command>``.

  machines                      list the machine descriptions
  build [--kernel K ...]        build the plugin and kernel variants
  run --machine M --kernel K    one run -> runs/<name>/
  plot offsets RUN [RUN ...]    Figure 1: transactions per page offset
                                (RUN: a run, or a folder of runs)
  summary RUN [RUN ...]         the offset peaks and colored-line sums
  table RUN [RUN ...] -o F      the tidy results table (CSV), config on every row
  verify RUN [RUN ...]          check runs against the manifests their completion wrote
  figure1                       the README's experiment: vanilla vs c32 + plot
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import traceback
import warnings
from pathlib import Path

from . import compare, crosscheck
from .errors import ConfigError, Interrupted, ResultsError, RunError
from .machine import get_machine, read_machines
from .rundir import check_out_dir, check_run_name, partial_dir
from .runspec import RunSpec, Workload, parse_workload
from .units import format_size
from .variants import colors_rule, parse_variant


def _positive_int(text):
    try:
        v = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least 1")
    return v


def _positive_seconds(text):
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not v > 0 or v == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} must be a positive, finite "
                                         f"number of seconds")
    return v


# Options handed to a user workload as "--name value" (web, chat).
WORKLOAD_OPTIONS = {
    "httpd": "web: server processes (default 256)",
    "clients": "web: closed-loop clients (default 256)",
    "requests": "web: requests per client",
    "accept": "web: accept serialisation, none or pipe",
    "keepalive": "web: requests per connection (1: HTTP/1.0)",
    "rooms": "chat: rooms (default 30)",
    "users": "chat: users per room (default 20)",
    "messages": "chat: messages per user (default 300)",
}


def program_args(a) -> str:
    """The comma-separated program arguments of the workload options."""
    words = []
    for opt in WORKLOAD_OPTIONS:
        v = getattr(a, opt, None)
        if v is not None:
            words += [f"--{opt}", str(v)]
    if getattr(a, "args", ""):
        words += a.args.split(",")
    return ",".join(words)


def add_run_options(p, kernel_required=True):
    p.add_argument("--machine", default="ppro4", help="machine description (configs/machines.toml)")
    p.add_argument("--l2", help="L2 size per CPU, e.g. 512KiB (default: the machine's)")
    p.add_argument("--cpus", type=_positive_int, help="CPUs to use (default: all)")
    if kernel_required:
        p.add_argument("--kernel", required=True,
                       help=f"vanilla, cN for N colors, mq (multi-queue scheduler) "
                            f"or mq-cN: {colors_rule(32)}")
    p.add_argument("--workload", default="tasks",
                   help="tasks (the built-in workload, default), or a user program "
                        "from the root-file-system image run as init: init:/bin/roitest, "
                        "or just roitest")
    p.add_argument("--tasks", type=_positive_int, default=1024, help="workload tasks (default 1024)")
    g = p.add_argument_group("web and chat workloads (passed to the program; "
                             "workloads/README.md)")
    for opt, what in WORKLOAD_OPTIONS.items():
        g.add_argument(f"--{opt}", help=what)
    g.add_argument("--args", default="", help="more program arguments, comma-separated")
    p.add_argument("--burst", type=_positive_int, default=Workload.burst, help="compute iterations between sleeps")
    p.add_argument("--warmup", type=_positive_int, default=Workload.warmup_ticks, help="ticks before the region of interest")
    p.add_argument("--roi", type=_positive_int, default=Workload.roi_ticks, help="ticks measured")
    p.add_argument("--seed", type=_positive_int, default=Workload.seed, help="allocation-history seed")
    p.add_argument("--engine", default="qemu", help="qemu (default) or gem5 (needs GEM5=path/to/gem5.opt)")
    p.add_argument("--timeout", type=_positive_seconds, default=900.0,
                   help="seconds a run may take before it is stopped as hung (default 900)")
    p.add_argument("--out", type=Path, default=None, help="directory for run directories (default runs/)")
    p.add_argument("--force", action="store_true", help="run again even if a complete run exists")
    p.add_argument("--timing", action="store_true",
                   help="modelled time: cycles, lockmeter, throughput (QEMU; machines.toml [x.timing])")


def spec_from_args(a, kernel=None) -> RunSpec:
    """The run the options describe; what-if warnings are shown only for a
    run that is valid, so a refusal stays one line."""
    with warnings.catch_warnings(record=True) as notes:
        warnings.simplefilter("always")
        machine = get_machine(a.machine)
        if a.l2:
            machine = machine.with_l2(a.l2)
        if a.cpus:
            machine = machine.with_cpus(a.cpus)
        variant = parse_variant(kernel or a.kernel, machine)
        w = Workload(tasks=a.tasks, burst=a.burst, warmup_ticks=a.warmup,
                     roi_ticks=a.roi, seed=a.seed,
                     program=parse_workload(a.workload), args=program_args(a))
        spec = RunSpec(machine, variant, w, engine=a.engine, timeout_s=a.timeout,
                       timing=getattr(a, "timing", False))
    for n in notes:
        warnings.warn(n.message)
    return spec


def cmd_machines(a):
    machines, broken = read_machines()
    for name, m in machines.items():
        c = m.caches
        print(f"{name:8} {m.processor.cpus} CPUs {m.processor.clock_hz // 10**6} MHz; "
              f"L1D {c.l1d.describe()}; L2 {c.l2.describe()} "
              f"(choices {', '.join(map(format_size, m.l2_choices))}); "
              f"memory {format_size(m.memory.size)} - {m.description}")
    if broken:
        raise ConfigError("; ".join(broken.values()))


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
    out = check_out_dir(a.out or runner.RUNS)
    name = check_run_name(spec.default_name() if a.name is None else a.name)
    if a.dry_run:
        print(dry_run_text(spec, name, out))
        return
    runner.run(spec, name=name, out=out, force=a.force)


def dry_run_text(spec, name, out) -> str:
    """Exactly what ``run`` would execute: the kernel is built first (its
    layout gives the plugin's PC ranges), and the paths are the partial
    directory the real run writes into."""
    from . import runner
    from .engines import get_engine
    engine = get_engine(spec.engine)
    partial = partial_dir(out, name)
    note = (f"writes into {partial}, renamed to {out / name} when complete "
            f"and verified")
    if spec.engine == "qemu":
        layout = runner.prepare(spec, progress=lambda m: print(m, file=sys.stderr))
        return engine.describe(spec, partial, layout) + f"\nrun: {note}"
    return engine.describe(spec, partial) + f"\nrun: {note}"


def check_output(path: Path, suffixes) -> Path:
    """An output file we may write: its folder exists, it is not a folder,
    and its suffix is one we can write."""
    path = Path(path)
    if path.is_dir():
        raise ConfigError(f"output {path} is a directory; give a file name")
    if not path.parent.is_dir():
        raise ConfigError(f"output {path}: directory {path.parent} does not exist")
    if not os.access(path.parent, os.W_OK):
        raise ConfigError(f"output {path}: directory {path.parent} is not writable")
    if path.suffix.lower().lstrip(".") not in suffixes:
        raise ConfigError(f"output {path}: unknown suffix {path.suffix or '(none)'!r}; "
                          f"use one of {', '.join('.' + x for x in sorted(suffixes))}")
    return path


def _runs(paths):
    from analysis.results import find_runs
    return find_runs(paths, notice=lambda m: print(m, file=sys.stderr))


def cmd_plot(a):
    from analysis.plots import IMAGE_SUFFIXES, plot_offsets
    if a.output is not None:
        check_output(a.output, IMAGE_SUFFIXES)
    runs = _runs(a.runs)
    out = a.output or (runs[0].path.parent /
                       f"offsets-{'-vs-'.join(r.name for r in runs)[:120]}.png")
    print(f"plot: {plot_offsets(runs, out, view=a.view)}")


def cmd_summary(a):
    from analysis.results import offset_summary, work_units
    runs = _runs(a.runs)
    df = offset_summary(runs, view=a.view)
    df["schedules"] = [work_units(r)["schedule"] for r in runs]
    print_summary(df)


def cmd_table(a):
    from analysis.results import counters_table, offset_summary, offsets_table
    if a.output is not None:
        check_output(a.output, {"csv"})
    runs = _runs(a.runs)
    make = {"offsets": offsets_table, "counters": counters_table,
            "summary": offset_summary}[a.what]
    df = make(runs)
    if a.output is None:
        print(df.to_csv(index=False), end="")
        return
    tmp = a.output.with_name(f".{a.output.name}.tmp{os.getpid()}")
    try:
        df.to_csv(tmp, index=False)
        tmp.replace(a.output)
    finally:
        tmp.unlink(missing_ok=True)
    print(f"table: {len(df)} rows from {len(runs)} runs -> {a.output}")


def print_summary(df):
    import pandas as pd
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        cols = ["run", "kernel", "tasks", "peak_offset", "peak_count",
                "colored_lines_sum", "colored_span", "total", "rqloop_l2_miss_ratio"]
        cols += [c for c in ("schedules",) if c in df]   # schedule() calls in the region
        d = df[cols].copy()
        d["peak_offset"] = d["peak_offset"].map(lambda x: f"{x:#05x}")
        d["rqloop_l2_miss_ratio"] = d["rqloop_l2_miss_ratio"].map(lambda x: f"{x:.1%}")
        if "schedules" in d:
            d["schedules"] = d["schedules"].map(lambda x: "-" if x != x else f"{x:.0f}")
        print(d.to_string(index=False))


def cmd_verify(a):
    runs = _runs(a.runs)
    for r in runs:
        files = r.config.get("results")
        what = (f"{len(files)} files match the manifest" if files
                else "no manifest (made before manifests existed); tables readable")
        print(f"ok: {r.path}: {what}")


def cmd_figure1(a):
    """Vanilla and N-color runs on one machine, then the offset plot."""
    from analysis.plots import plot_offsets
    from analysis.results import load_run, offset_summary

    from . import runner
    out = check_out_dir(a.out or (runner.RUNS / "figure1"))
    family = "linux24:" if a.colored.startswith("linux24:") else ""
    specs = [spec_from_args(a, kernel=k) for k in (family + "vanilla", a.colored)]
    runs = [load_run(runner.run(s, out=out, force=a.force)) for s in specs]
    s = specs[1]
    tag = (f"{s.machine.name}-{s.cpus}cpu-l2_{s.machine.caches.l2.size // 1024}k-"
           f"t{s.workload.tasks}-{s.variant.name}")
    png = plot_offsets(runs, out / f"figure1-{tag}.png")
    df = offset_summary(runs)
    csv = out / f"figure1-{tag}-summary.csv"
    tmp = csv.with_name(f".{csv.name}.tmp{os.getpid()}")
    df.to_csv(tmp, index=False)
    tmp.replace(csv)
    print_summary(df)
    v, c = df.iloc[0], df.iloc[1]
    print(f"vanilla peak {v.peak_count} at {v.peak_offset:#05x} (first-touched "
          f"word {v.first_touched:#04x}); {c.kernel} largest offset "
          f"{c.peak_count} = {c.peak_count / max(v.peak_count, 1):.1%} of it; "
          f"colored-lines sum {c.colored_lines_sum} vs {v.colored_lines_sum} "
          f"({(c.colored_lines_sum - v.colored_lines_sum) / max(v.colored_lines_sum, 1):+.1%})")
    print(f"figure: {png}")
    print(f"summary: {csv}")


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage mistake is one line on stderr and status 2."""

    def error(self, message):
        print(f"{self.prog}: error: {message} (see {self.prog} --help)",
              file=sys.stderr)
        sys.exit(2)


def build_parser():
    ap = _Parser(prog="colorsim", description=__doc__,
                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True, parser_class=_Parser)
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
    psub = p.add_subparsers(dest="figure", required=True, parser_class=_Parser)
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

    v = sub.add_parser("verify", help="check runs against their manifests")
    v.add_argument("runs", nargs="+", type=Path)
    v.set_defaults(func=cmd_verify)

    f = sub.add_parser("figure1", help="vanilla vs colored offsets + plot")
    add_run_options(f, kernel_required=False)
    f.add_argument("--colored", default="c32", help="colored kernel to compare (default c32)")
    f.set_defaults(func=cmd_figure1)
    compare.add_parser(sub)
    crosscheck.add_parser(sub)
    from . import catalog, figures, sweep, timing
    sweep.add_parser(sub)
    timing.add_parser(sub)
    catalog.add_parsers(sub)
    figures.add_parser(sub)
    return ap


def _raise_interrupted(signum, frame):
    raise Interrupted(signal.Signals(signum).name)


def _one_line_warning(message, category, filename, lineno, file=None, line=None):
    print(f"colorsim: warning: {message}", file=sys.stderr)


EXIT_USER = 2          # bad input or damaged results: a one-line message
EXIT_INTERNAL = 70     # a bug in colorsim (EX_SOFTWARE)


def main(argv=None):
    a = build_parser().parse_args(argv)
    old = {s: signal.signal(s, _raise_interrupted)
           for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("default")
            warnings.showwarning = _one_line_warning
            a.func(a)
    except (ConfigError, RunError, ResultsError) as e:
        print(f"colorsim: error: {e}", file=sys.stderr)
        return EXIT_USER
    except (Interrupted, KeyboardInterrupt) as e:
        name = e.signame if isinstance(e, Interrupted) else "SIGINT"
        print(f"colorsim: interrupted by {name}; nothing half-written was kept "
              f"as a result", file=sys.stderr)
        return 128 + getattr(signal, name)
    except BrokenPipeError:            # | head
        sys.stderr.close()
        return 0
    except Exception as e:
        if os.environ.get("COLORSIM_DEBUG"):
            traceback.print_exc()
        print(f"colorsim: internal error: {type(e).__name__}: {e} (a bug: "
              f"COLORSIM_DEBUG=1 shows the traceback)", file=sys.stderr)
        return EXIT_INTERNAL
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    return 0
