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
import json
import os
import signal
import sys
import traceback
import warnings
from pathlib import Path

from colorsim.results import compare
from colorsim.errors import ConfigError, Interrupted, ResultsError, RunError
from colorsim.describe.machine import TIMING_SWITCHES, get_machine, read_machines
from colorsim.run.rundir import check_out_dir, check_run_name, partial_dir
from colorsim.describe.runspec import (CLIENT_CPUS_DEFAULT, RunSpec, Workload,
                                       parse_workload)
from colorsim.argtypes import directory
from colorsim.argtypes import positive_int as _positive_int
from colorsim.argtypes import positive_seconds as _positive_seconds
from colorsim.argtypes import positive_hours as _positive_hours
from colorsim.argtypes import nonnegative_int
from colorsim.units import format_size
from colorsim.describe.variants import colors_rule, parse_variant
from colorsim.describe.experiments import ACCEPT_MODES, WORK_MODES
from colorsim.describe.programs import (MAX_HOURS_DEFAULT, check_host_time,
                                       sized_timeout)
from colorsim.envvars import epilog


# Options handed to a user workload as "--name value" (web, chat).
WORKLOAD_OPTIONS = {
    "httpd": "web: server processes (default 256)",
    "clients": "web: closed-loop clients (default 256)",
    "requests": "web: requests per client",
    "accept": "web: accept serialisation: none (kernel wake-one, default), pipe (a lock that wakes every waiter), sysvsem (a SysV semaphore, wake-one), fcntl or flock (Apache 1.3's file locks; 2.4 wakes every waiter)",
    "keepalive": "web: requests per connection (1: HTTP/1.0)",
    "work": "web: the server's per-request work: apache (Apache 1.3's core path: request pool, header tables, scoreboard in shared memory, access log; default) or minimal (parse, stat, send)",
    "rooms": "chat: rooms (default 30)",
    "users": "chat: users per room (default 20)",
    "messages": "chat: messages per user (default 10 for a run, a few minutes; the paper's 300: about an hour)",
    "skip": "chat: the region is the middle of the run, from SKIP %% to 100 - SKIP %% of the received messages (default 0: the whole run; workloads/README.md)",
}


# A run's default size finishes in minutes; the paper's scale is asked for
# (or is the sweep's, whose experiments name every size).  Chat's own
# default, 300 messages per user, is about an hour of host time.
RUN_CHAT_MESSAGES = 10


def default_size(a, program: str):
    """Sizes a run gets when none is given, with a note saying so."""
    if program == "/bin/chat" and getattr(a, "messages", None) is None:
        a.messages = RUN_CHAT_MESSAGES
        return (f"chat: {RUN_CHAT_MESSAGES} messages per user, a run of "
                f"minutes; the paper's size is --messages 300 (about an hour)")
    return None


def check_options_apply(a, program: str) -> None:
    """Refuse an option the chosen workload would silently ignore: a web
    option for chat or roitest, --tasks or --burst for a user program."""
    what = program or "the built-in tasks workload"
    for opt, help_text in WORKLOAD_OPTIONS.items():
        owner = "/bin/" + help_text.split(":")[0]
        if getattr(a, opt, None) is not None and program != owner:
            raise ConfigError(f"--{opt} is an option of --workload "
                              f"{owner[5:]}; it does not apply to {what}")
    for opt in ("tasks", "burst"):
        if program and getattr(a, opt, None) is not None:
            raise ConfigError(f"--{opt} sizes the built-in tasks workload; "
                              f"it does not apply to {program}")


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
    p.add_argument("--tasks", type=_positive_int, default=None,
                   help=f"built-in workload tasks (default {Workload.tasks})")
    g = p.add_argument_group("web and chat workloads (passed to the program; "
                             "workloads/README.md)")
    for opt, what in WORKLOAD_OPTIONS.items():
        # the accept mode is checked here, before anything runs, not by
        # the program in the guest
        g.add_argument(f"--{opt}", help=what,
                       **({"choices": ACCEPT_MODES} if opt == "accept" else
                          {"choices": WORK_MODES} if opt == "work" else {}))
    g.add_argument("--args", default="", help="more program arguments, comma-separated")
    g.add_argument("--client-cpus", type=nonnegative_int, default=None,
                   help="extra CPUs outside the measured machine where the "
                        "program's clients run (web: default "
                        f"{CLIENT_CPUS_DEFAULT['/bin/web']}, the last of them "
                        "driving the wire; 0 puts them on the server's CPUs; "
                        "linux24 kernels: default 0, N boots the client "
                        "partition and the server's cards, no wire delay)")
    g.add_argument("--nic-dma", choices=("on", "off"), default=None,
                   help="the server's network cards move frames by DMA on "
                        "its bus (default: the machine's [network] dma); "
                        "off is a what-if")
    g.add_argument("--client-model", choices=("on", "off"), default=None,
                   help="with --timing: the client CPUs' instructions cost "
                        "the modelled time of the machine's [clients] PCs "
                        "(default: on where the machine has that table); off: "
                        "clients as fast as QEMU's round robin makes them")
    p.add_argument("--burst", type=_positive_int, default=None,
                   help=f"built-in workload: iterations of each task's compute loop "
                        f"between two sleeps (default {Workload.burst}); every burst "
                        f"ends in a schedule(), so this sets how much of the run the "
                        f"scheduler takes (workloads/README.md)")
    p.add_argument("--warmup", type=_positive_int, default=Workload.warmup_ticks, help="ticks before the region of interest")
    p.add_argument("--roi", type=_positive_int, default=Workload.roi_ticks, help="ticks measured")
    p.add_argument("--seed", type=_positive_int, default=Workload.seed, help="allocation-history seed (testbed kernel); on linux24 kernels the web clients' request mix (web --seed)")
    p.add_argument("--engine", default="qemu", help="qemu (default) or gem5 (needs GEM5=path/to/gem5.opt)")
    p.add_argument("--timeout", type=_positive_seconds, default=None,
                   help="seconds a run may take before it is stopped as hung "
                        "(default 900; a chat run larger than that gets 3 times "
                        "its expected host time, and says so)")
    p.add_argument("--max-hours", type=_positive_hours, default=MAX_HOURS_DEFAULT,
                   help=f"refuse, before anything runs, a run expected to take more "
                        f"host time than this (default {MAX_HOURS_DEFAULT:g}; the "
                        f"estimate is the measured cost per request or message)")
    p.add_argument("--out", type=directory, default=None, help="directory for run directories (default runs/)")
    p.add_argument("--force", action="store_true", help="run again even if a complete run exists")
    p.add_argument("--timing", action="store_true",
                   help="modelled time: cycles, lockmeter, throughput (QEMU; machines.toml [x.timing])")
    p.add_argument("--timing-off", action="append", default=[], metavar="COST",
                   help="with --timing: switch off one cost of machines.toml's "
                        "[x.timing] (repeatable): " + ", ".join(TIMING_SWITCHES))


def spec_from_args(a, kernel=None) -> RunSpec:
    """The run the options describe; what-if warnings are shown only for a
    run that is valid, so a refusal stays one line."""
    with warnings.catch_warnings(record=True) as notes:
        warnings.simplefilter("always")
        machine = get_machine(a.machine)
        if a.l2 is not None:     # "" is a mistake, not "the default"
            machine = machine.with_l2(a.l2)
        if a.cpus:
            machine = machine.with_cpus(a.cpus)
        off = getattr(a, "timing_off", None) or []
        if off and not getattr(a, "timing", False):
            raise ConfigError("--timing-off needs --timing")
        if off:
            machine = machine.without_costs(off)
        if getattr(a, "nic_dma", None) is not None:
            machine = machine.with_nic_dma(a.nic_dma == "on")
        if getattr(a, "client_model", None) is not None:
            machine = machine.with_clients(a.client_model == "on")
        variant = parse_variant(kernel or a.kernel, machine)
        program = parse_workload(a.workload)
        check_options_apply(a, program)
        size_note = default_size(a, program)
        cc = getattr(a, "client_cpus", None)
        if cc is None:                 # the program's default, but linux24
            cc = 0 if variant.clients_on_server_cpus else -1   # 2.4: on its CPUs unless asked
        w = Workload(tasks=a.tasks or Workload.tasks,
                     burst=a.burst or Workload.burst, warmup_ticks=a.warmup,
                     roi_ticks=a.roi, seed=a.seed,
                     program=program, args=program_args(a),
                     client_cpus=cc)
        # a run that cannot end in time is refused before any note
        check_host_time(program, w.args, getattr(a, "max_hours", MAX_HOURS_DEFAULT))
        timeout, note = a.timeout, None
        if timeout is None:
            timeout, note = sized_timeout(program, w.args)
        spec = RunSpec(machine, variant, w, engine=a.engine, timeout_s=timeout,
                       timing=getattr(a, "timing", False))
    for n in notes:
        warnings.warn(n.message)
    for n in (size_note, note):
        if n:
            print(f"colorsim: note: {n}", file=sys.stderr)
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
    from colorsim.run.build import ensure_built
    machine = get_machine(a.machine)
    if a.l2 is not None:
        machine = machine.with_l2(a.l2)
    ids = [parse_variant(k, machine).build_id for k in a.kernel]
    ensure_built(ids, image=bool(a.resources))
    if a.resources:
        from colorsim.run.engines.gem5resources import write_resources
        entries = write_resources(a.resources, ids)
        print(f"build: {len(entries)} gem5 resources in {a.resources} "
              f"(GEM5_RESOURCE_JSON={a.resources} lets gem5's obtain_resource "
              f"find them)")


def cmd_run(a):
    from colorsim.run import runner
    spec = spec_from_args(a)
    out = check_out_dir(a.out or runner.RUNS, create=not a.dry_run)
    name = check_run_name(spec.default_name() if a.name is None else a.name)
    # A dry run refuses what a run does (a gem5 one shows its command
    # without gem5, with $GEM5 in it).
    runner.preflight(spec, engine_needed=not (a.dry_run and spec.engine == "gem5"),
                     max_hours=a.max_hours, out=out)
    if a.dry_run:
        if getattr(a, "gem5_dir", None):
            print(gem5_dir_text(spec, a.gem5_dir))
            return
        print(dry_run_text(spec, name, out))
        return
    runner.run(spec, name=name, out=out, force=a.force, max_hours=a.max_hours)


def gem5_dir_text(spec, folder: Path) -> str:
    """Write a gem5 run's spec into ``folder`` and say how to run gem5 on it
    by hand, as gem5 users run stdlib scripts (--dry-run --gem5-dir)."""
    from colorsim.run.engines import get_engine
    if spec.engine != "gem5":
        raise ConfigError("--gem5-dir is for --engine gem5")
    engine = get_engine("gem5")
    folder = Path(folder).resolve()
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"--gem5-dir {folder} is not a folder")
    engine.write_inputs(spec, folder)
    return (engine.describe(spec, folder) +
            f"\nwrote {folder / 'gem5_spec.json'}: run the commands above "
            f"(with GEM5 set) to run gem5 on it by hand")


def dry_run_text(spec, name, out) -> str:
    """What ``run`` would execute, building and running nothing: the paths
    are the partial directory the real run writes into; the plugin's PC
    ranges come from the kernel's layout, so a kernel not built yet shows
    them as a placeholder (a run rebuilds a kernel whose sources changed
    first)."""
    from colorsim.run.engines import get_engine
    engine = get_engine(spec.engine)
    partial = partial_dir(out, name)
    note = (f"writes into {partial}, renamed to {out / name} when complete "
            f"and verified")
    if spec.engine == "qemu":
        engine.check_available()
        layout = (json.loads(spec.layout_file.read_text())
                  if spec.layout_file.is_file() else None)
        return engine.describe(spec, partial, layout) + f"\nrun: {note}"
    return (engine.describe(spec, partial) + f"\nrun: {note}; the spec is "
            f"written by the run (--gem5-dir DIR writes one now, to run gem5 "
            f"by hand)")


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
    from colorsim.results.rundata import find_runs
    return find_runs(paths, notice=lambda m: print(m, file=sys.stderr))


def cmd_plot(a):
    from colorsim.report.plots import IMAGE_SUFFIXES, plot_offsets
    if a.output is not None:
        check_output(a.output, IMAGE_SUFFIXES)
    runs = _runs(a.runs)
    out = a.output or (runs[0].path.parent /
                       f"offsets-{'-vs-'.join(r.name for r in runs)[:120]}.png")
    print(f"plot: {plot_offsets(runs, out, view=a.view)}")


def cmd_summary(a):
    from colorsim.results.rundata import offset_summary, work_units
    runs = _runs(a.runs)
    df = offset_summary(runs, view=a.view)
    df["schedules"] = [work_units(r)["schedule"] for r in runs]
    print_summary(df)


def cmd_table(a):
    from colorsim.results.rundata import counters_table, offset_summary, offsets_table
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
    except OSError as e:      # a folder root may not write in (/proc), a full disk
        raise ConfigError(f"cannot write {a.output}: {e.strerror}") from None
    finally:
        tmp.unlink(missing_ok=True)
    print(f"table: {len(df)} rows from {len(runs)} runs -> {a.output}")


def print_summary(df):
    import pandas as pd
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        cols = ["run", "kernel", "tasks", "peak_offset", "peak_count",
                "colored_lines_sum", "colored_span", "total", "rqloop_l2_miss_ratio"]
        cols += [c for c in ("schedules",) if c in df]   # schedule() calls in the region
        if "verified" in df and not df["verified"].all():
            cols.append("verified")         # an unverified run says so
        d = df[cols].copy()
        d["peak_offset"] = d["peak_offset"].map(lambda x: f"{x:#05x}")
        d["rqloop_l2_miss_ratio"] = d["rqloop_l2_miss_ratio"].map(lambda x: f"{x:.1%}")
        if "schedules" in d:
            d["schedules"] = d["schedules"].map(lambda x: "-" if x != x else f"{x:.0f}")
        print(d.to_string(index=False))


def cmd_verify(a):
    """Check every run, report each, and fail with the count of the
    damaged and unverified ones (not at the first)."""
    from colorsim.results.rundata import find_run_paths, load_run
    paths = find_run_paths(a.runs, notice=lambda m: print(m, file=sys.stderr))
    damaged, unverified = [], []
    for p in paths:
        try:
            r = load_run(p)
        except ResultsError as e:
            damaged.append(str(e))
            print(f"damaged: {e}")
            continue
        if r.verified:
            print(f"ok: {r.path}: {len(r.config['results'])} files and "
                  f"config.json match the run's record")
        else:              # a run that cannot be checked does not pass
            unverified.append(f"{r.path}: {r.unverified}")
            print(f"unverified: {r.path}: {r.unverified}")
    n = len(paths)
    says = ([f"{len(damaged)} of {n} runs are damaged"] if damaged else []) + \
        ([f"{len(unverified)} of {n} runs cannot be verified"] if unverified else [])
    if says:
        raise ResultsError(f"{'; '.join(says)} (listed above); the first: "
                           f"{(damaged + unverified)[0]}")


def cmd_figure1(a):
    """Vanilla and N-color runs on one machine, then the offset plot."""
    from colorsim.report.plots import plot_offsets
    from colorsim.results.rundata import load_run, offset_summary

    from colorsim.run import runner
    family, sep, _ = a.colored.rpartition(":")      # linux24: or linux24-i386:
    family += sep
    specs = [spec_from_args(a, kernel=k) for k in (family + "vanilla", a.colored)]
    # --name NAME: runs NAME-vanilla and NAME-<colored>, files figure1-NAME*
    names = ([check_run_name(f"{a.name}-{s.variant.name}") for s in specs]
             if a.name is not None else [None, None])
    out = check_out_dir(a.out or (runner.RUNS / "figure1"))
    runs = [load_run(runner.run(s, name=n, out=out, force=a.force))
            for s, n in zip(specs, names)]
    # Without --name, named after the colored run, whose name carries every
    # setting: a --timing, --workload or --seed figure never overwrites
    # another's.
    tag = a.name if a.name is not None else runs[1].path.name
    from colorsim.report.common import paper_results
    png = plot_offsets(runs, out / f"figure1-{tag}.png",
                       paper_peak=paper_results()["fig1"]["peak_offset"])
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


DESCRIPTION = ("Cache coloring of the Linux 2.4 task structure, in full-system "
               "simulation: describe, build, run, collect, analyse, report. "
               "'colorsim COMMAND --help' shows a command's options.")


def build_parser():
    ap = _Parser(prog="colorsim", description=DESCRIPTION, epilog=epilog(),
                 formatter_class=lambda prog: argparse.RawDescriptionHelpFormatter(
                     prog, max_help_position=24, width=100))
    sub = ap.add_subparsers(dest="command", required=True, parser_class=_Parser,
                            title="commands", metavar="COMMAND")
    sub.add_parser("machines", help="list machines").set_defaults(func=cmd_machines)

    b = sub.add_parser("build", help="build the plugin and kernel variants")
    b.add_argument("--machine", default="ppro4",
                   help="machine description (configs/machines.toml; default ppro4)")
    b.add_argument("--l2", help="L2 size per CPU, e.g. 512KiB (default: the machine's; "
                                "the kernels' colors depend on it)")
    b.add_argument("--kernel", nargs="+", default=["vanilla", "c32"],
                   help="kernel variants to build (default vanilla c32)")
    b.add_argument("--resources", type=Path, metavar="FILE",
                   help="also write the built kernels and image as a gem5 "
                        "resources JSON (GEM5_RESOURCE_JSON=FILE)")
    b.set_defaults(func=cmd_build)

    r = sub.add_parser("run", help="one run")
    add_run_options(r)
    r.add_argument("--name", help="run directory name (default: derived)")
    r.add_argument("--dry-run", action="store_true", help="print what would run")
    r.add_argument("--gem5-dir", type=Path, metavar="DIR",
                   help="with --dry-run and --engine gem5: write the gem5 spec "
                        "into DIR and print the commands that run gem5 on it "
                        "by hand (configs/gem5/run_fs.py)")
    r.set_defaults(func=cmd_run)

    p = sub.add_parser("plot", help="a figure of runs (offsets)")
    psub = p.add_subparsers(dest="figure", required=True, parser_class=_Parser)
    po = psub.add_parser("offsets", help="bus transactions per page offset")
    po.add_argument("runs", nargs="+", type=Path, help="run directories")
    po.add_argument("--view", choices=["chunk", "line"], default="chunk",
                    help="chunk: 8-byte buckets as the bus tracer saw them; line: summed per cache line (default chunk)")
    po.add_argument("-o", "--output", type=Path, help="image file (default: beside the runs)")
    po.set_defaults(func=cmd_plot)

    s = sub.add_parser("summary", help="offset peaks of runs")
    s.add_argument("runs", nargs="+", type=Path, help="run directories")
    s.add_argument("--view", choices=["chunk", "line"], default="chunk",
                   help="chunk: 8-byte buckets as the bus tracer saw them; line: summed per cache line (default chunk)")
    s.set_defaults(func=cmd_summary)

    t = sub.add_parser("table", help="tidy results table of runs (CSV)")
    t.add_argument("runs", nargs="+", type=Path, help="run directories")
    t.add_argument("--what", choices=["offsets", "counters", "summary"], default="counters",
                   help="offsets: bus transactions per page offset; counters: every "
                        "counter; summary: one row per run (default counters)")
    t.add_argument("-o", "--output", type=Path, help="CSV file (default: stdout)")
    t.set_defaults(func=cmd_table)

    v = sub.add_parser("verify", help="check runs against their manifests")
    v.add_argument("runs", nargs="+", type=Path, help="run directories")
    v.set_defaults(func=cmd_verify)

    f = sub.add_parser("figure1", help="vanilla vs colored offsets + plot")
    add_run_options(f, kernel_required=False)
    f.add_argument("--colored", default="c32", help="colored kernel to compare (default c32)")
    f.add_argument("--name", help="name the two runs NAME-vanilla and "
                                  "NAME-<colored kernel>, and the figure "
                                  "figure1-NAME.png (default: derived)")
    f.set_defaults(func=cmd_figure1)
    compare.add_parser(sub)
    add_studies(sub)
    from colorsim.results import catalog, record, show
    from colorsim.report import command as figures
    from colorsim.orchestrate import sweep
    sweep.add_parser(sub)
    record.add_parser(catalog.add_parsers(sub))
    show.add_parsers(sub)
    figures.add_parser(sub)
    figures.add_shapes_parser(sub)
    sub.help = "the command (each has --help)"
    _describe(sub)
    _group(ap, sub, GROUPS)
    return ap


def add_studies(sub) -> None:
    """The commands that answer one question with a table from their own
    runs (each with --run to make the runs it lacks)."""
    from colorsim.orchestrate import (chatregime, convergence, crosscheck,
                                      interleaving, oppoint, referee, sensitivity,
                                      timing, whatif, wset)
    for mod in (timing, sensitivity, interleaving, convergence, whatif,
                oppoint, chatregime, wset, crosscheck, referee):
        mod.add_parser(sub)


# The top-level --help lists the commands in these groups, in this order.
GROUPS = (
    ("set up and run", ("machines", "build", "run", "figure1", "sweep")),
    ("look at runs", ("runs", "show", "verify", "summary", "table", "plot",
                      "compare")),
    ("catalog and report", ("catalog", "figures", "shapes")),
    ("studies: one question, answered by a table from runs",
     ("timing-table", "timing-sensitivity", "interleaving-sensitivity",
      "convergence", "cost-whatif", "operating-point", "chat-regime",
      "working-set", "crosscheck", "referee")),
)


def _group(ap, sub, groups) -> None:
    """List the commands under the groups' titles in the top-level help
    (argparse has no groups of sub-commands): the listing goes into the
    description and the sub-command action lists none itself."""
    helps = {a.dest: a.help for a in sub._choices_actions}
    grouped = [c for _, cmds in groups for c in cmds]
    if sorted(grouped) != sorted(sub.choices):
        raise AssertionError(f"commands and groups differ: {sorted(grouped)} "
                             f"against {sorted(sub.choices)}")
    lines = []
    for title, cmds in groups:
        lines.append(f"\n{title}:")
        for c in cmds:
            lines.append(f"    {c:<24} {helps[c]}" if len(c) < 24
                         else f"    {c}\n    {'':<24} {helps[c]}")
    ap.description = (ap.description or "") + "\n" + "\n".join(lines)
    sub._choices_actions = []


def _describe(sub) -> None:
    """Every command's --help starts with a description: its one-line
    help as a sentence, where it has none of its own; sub-command choices
    get a help line too."""
    helps = {a.dest: a.help for a in sub._choices_actions}
    for name, parser in sub.choices.items():
        if parser.description is None and helps.get(name):
            h = helps[name]
            parser.description = h[0].upper() + h[1:] + "."
        for a in parser._actions:
            if isinstance(a, argparse._SubParsersAction):
                if a.help is None:
                    a.help = "one of: " + ", ".join(a.choices)
                _describe(a)


def _raise_interrupted(signum, frame):
    raise Interrupted(signal.Signals(signum).name)


def _one_line_warning(message, category, filename, lineno, file=None, line=None):
    print(f"colorsim: warning: {message}", file=sys.stderr)


EXIT_USER = 2          # bad input or damaged results: a one-line message
EXIT_INTERNAL = 70     # a bug in colorsim (EX_SOFTWARE)
EXIT_IO = 74           # the system refused a file: disk full, permissions (EX_IOERR)


def main(argv=None, build=None):
    """Run one command; ``build`` makes the parser (default: the user's
    command line; colorsim.maintain passes its own)."""
    a = (build or build_parser)().parse_args(argv)
    old = {s: signal.signal(s, _raise_interrupted)
           for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("default")
            warnings.showwarning = _one_line_warning
            rc = a.func(a)
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
    except OSError as e:
        # The system refused a file (no space, no permission, a read-only
        # file system): a fault of the environment, not of colorsim.
        where = f" {e.filename}" if e.filename else ""
        print(f"colorsim: error: cannot use{where}: {e.strerror or e}",
              file=sys.stderr)
        return EXIT_IO
    except Exception as e:
        if os.environ.get("COLORSIM_DEBUG"):
            traceback.print_exc()
        print(f"colorsim: internal error: {type(e).__name__}: {e} (a bug: "
              f"COLORSIM_DEBUG=1 shows the traceback)", file=sys.stderr)
        return EXIT_INTERNAL
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    return rc if isinstance(rc, int) else 0   # a command's own status
