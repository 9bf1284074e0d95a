"""The web server's working set per request, by kind of per-request work.

``python3 -m colorsim working-set [--run]`` runs (with --run) and prints,
for the web server with Apache 1.3's per-request work (``--work apache``,
the default) and with only the system calls (``--work minimal``), the
distinct cache lines one request touches: user data, user code, kernel
data and kernel code (the bus monitor's working-set windows, one per
connection from accept to close: ``web --wset 1``), with its instructions.
The server has one httpd and one client on one CPU, so a window holds one
request and nothing else; the requests are the SPECweb96 file mix, so the
kernel's data lines include each file's bytes three times over (page
cache, the server's buffer, the packets).  ``--write FILE`` / ``--check
FILE`` put the table into, or compare it with, FILE's ``wset`` block
(workloads/README.md).
"""

from __future__ import annotations

from pathlib import Path

from colorsim.orchestrate.sensitivity import (add_table_run_options, emit_table,
                                             kernel_rows)

MACHINE, KERNEL = "ppro4", "c32"
REQUESTS = 200                  # the region holds the middle half
ROWS = {"apache": "apache: Apache 1.3's core path (the default)",
        "minimal": "minimal: the system calls only"}
KINDS = ("user_data", "user_code", "kernel_data", "kernel_code")


def spec_for(kernel: str, work: str, requests: int = REQUESTS):
    from colorsim.describe.experiments import PROGRAMS
    from colorsim.describe.machine import get_machine
    from colorsim.describe.runspec import RunSpec, Workload
    from colorsim.describe.variants import parse_variant
    m = get_machine(MACHINE).with_cpus(1)
    w = Workload(tasks=1, program=PROGRAMS["web"],
                 args=f"--httpd,1,--clients,1,--requests,{requests},--work,{work},--wset,1")
    return RunSpec(m, parse_variant(kernel, m), w, timing=True)


def summary(path: Path) -> dict:
    """Per request: lines of each kind, instructions by mode."""
    from colorsim.results.rundata import load_run
    ct = load_run(path).counters
    roi = ct[(ct["dump"] == 0) & (ct["cpu"] >= 0)].groupby("stat")["value"].sum()
    n = float(roi.get("wset_windows", 0))
    if not n:
        raise ValueError(f"{path}: no working-set windows (web --wset 1)")
    mode = ct[(ct["dump"] == 0) & (ct["cpu"] >= 0) & (ct["stat"] == "insts")]
    insts = mode.groupby("mode")["value"].sum()
    out = {k: float(roi.get(f"wset_{k}_lines", 0)) / n for k in KINDS}
    out.update(windows=n, left_out=float(roi.get("wset_full_lines", 0)),
               user_insts=float(insts.get("user", 0)) / n,
               kernel_insts=float(insts.get("kernel", 0)) / n)
    return out


HEADER = ("| per-request work | user data | user code | kernel data | kernel code "
          "| user instructions | kernel instructions | requests |\n"
          "|---|---|---|---|---|---|---|---|")


def render(got_rows, line: int = 32) -> str:
    kib = lambda n: f"{n:.0f} lines ({n * line / 1024:.1f} KiB)"
    lines = [f"The web server's working set per request: distinct {line}-byte lines "
             f"one request touches, mean over the region's requests ({MACHINE}, one "
             f"CPU, {KERNEL}, one httpd and one client, {REQUESTS} requests of the "
             f"SPECweb96 file mix, --timing for the code lines).", "", HEADER]
    for row, got in got_rows:
        g = got[KERNEL]
        lines.append(f"| {ROWS[row]} | " + " | ".join(kib(g[k]) for k in KINDS)
                     + f" | {g['user_insts']:.0f} | {g['kernel_insts']:.0f} "
                     f"| {g['windows']:.0f} |")
    left = sum(got[KERNEL]["left_out"] for _, got in got_rows)
    if left:                    # a window larger than the monitor's set
        lines += ["", f"{left:.0f} lines did not fit in the monitor's sets and "
                      f"are not counted."]
    return "\n".join(lines) + "\n"


def cmd_working_set(a):
    from colorsim.report.markdown import check_block_files
    for work in ROWS:                   # refuse what the runner refuses,
        spec_for(KERNEL, work)          # before any run
    check_block_files(a, "wset")
    emit_table(a, "wset", "working-set",
               lambda missing: kernel_rows(ROWS, spec_for, summary, a.out, a.run,
                                           a.force, missing, (KERNEL,)),
               render)
    return 0


def add_parser(sub):
    from colorsim.report.markdown import add_block_options
    t = sub.add_parser("working-set",
                       help="the web server's working set per request")
    add_table_run_options(t, "wset")
    add_block_options(t, "wset")
    t.set_defaults(func=cmd_working_set)
