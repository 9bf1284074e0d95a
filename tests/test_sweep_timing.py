"""Sweeps with the timing model, the lockmeter and the user workloads.

A tiny experiments file (COLORSIM_EXPERIMENTS) names its experiments after
the paper's (fig6, fig9, fig10) so that ``figures`` draws them: web with
16 httpd and 4 clients, Chat with 16 threads, on 1-2 CPUs; every point
runs --timing because those experiments' outputs need timing or the
lockmeter.  The runner's refusals are missing points with its reason.
"""

import os

import pytest

from colorsim.report.figures import make_figures
from colorsim import ROOT
from colorsim.results.catalog import Catalog
from colorsim.errors import ConfigError
from colorsim.describe.experiments import load_experiments
from colorsim.orchestrate.sweep import run_sweep
from tests.sweeps import sweep_with

TIMED = """
[defaults]
engine = "qemu"
warmup = 2
roi = 2
burst = 2000
timeout = 120
seeds = [1]
clients = 4
requests = 4
users = 2
messages = 5

[fig6]
title = "Figure 6, tiny"
needs = ["timing", "web"]
outputs.fig6 = { needs = ["timing", "web"], what = "throughput improvement" }
[fig6.grid]
machine = "ppro4"
l2 = ["512KiB"]
cpus = [2]
kernels = ["vanilla", "c32"]
workload = "web"
tasks = [16]
seeds = [1, 2]

[fig9]
title = "Figure 9 and Tables 4-6, tiny"
needs = ["counting", "web"]
outputs.fig9 = { needs = ["timing", "web"], what = "throughput vs CPUs" }
outputs.table4 = { needs = ["timing", "web", "multiqueue"], what = "speed-up" }
outputs.table5 = { needs = ["rqloop"], what = "loop miss ratio" }
outputs.table6 = { needs = ["lockmeter"], what = "lock statistics" }
[fig9.grid]
machine = "piii8"
l2 = ["1MiB"]
cpus = [1, 2]
kernels = ["vanilla", "c32", "mq"]
workload = "web"
tasks = [16]

[fig10]
title = "Figure 10 and Tables 7-8, tiny"
needs = ["counting", "chat"]
outputs.fig10 = { needs = ["timing", "chat"], what = "throughput vs CPUs" }
outputs.table7 = { needs = ["rqloop"], what = "loop miss ratio" }
outputs.table8 = { needs = ["lockmeter"], what = "lock statistics" }
[fig10.grid]
machine = "piii8"
l2 = ["1MiB"]
cpus = [2]
kernels = ["vanilla", "c32"]
workload = "chat"
tasks = [16]
"""

TIMING_COLUMNS = ["modeled_seconds", "throughput", "cycles_per_schedule",
                  "lock_acquisitions", "lock_contention_pct",
                  "lock_hold_mean_us", "lock_hold_max_us", "lock_spin_us"]


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    lines = []
    for root, c in sweep_with(tmp_path_factory, "timed", TIMED, "all", lines.append):
        yield root, c, lines


def test_timed_web_and_chat_points_reach_the_catalog(swept):
    root, c, lines = swept
    assert c["failed"] == 0 and c["lacks"] == 0, lines
    assert c["done"] == 4 + 4 + 2 + 2, lines        # fig6, fig9 (mq too), fig10
    assert c["missing"] == 0, lines
    cat = Catalog(root)
    runs = cat.runs()
    assert len(runs) == c["done"]
    assert runs["timing"].all()
    for col in TIMING_COLUMNS:
        assert runs[col].notna().all() and (runs[col] >= 0).all(), col
    assert (runs["throughput"] > 0).all() and (runs["lock_acquisitions"] > 0).all()
    # every row carries the full configuration, the workload's included
    web = runs[runs["workload_program"] == "/bin/web"]
    chat = runs[runs["workload_program"] == "/bin/chat"]
    assert len(web) == c["done"] - 2 and len(chat) == 2
    assert (web["httpd"] == 16).all() and (web["clients"] == 4).all()
    assert (web["requests"] == 4).all() and (web["roi_requests"] > 0).all()
    assert ((web["throughput"] - web["roi_requests"] / web["modeled_seconds"]).abs()
            < 1e-6 * web["throughput"]).all()
    # chat: 16 threads = 2 rooms x 2 users x 4
    assert (chat["rooms"] == 2).all() and (chat["users"] == 2).all()
    assert (chat["messages"] == 5).all()
    # the region holds all of chat's messages: 2 rooms x 2 users x 5 x 2
    assert (chat["roi_messages"] == 40).all()
    assert (chat["throughput"] == chat["messages_per_modeled_second"]).all()
    for col in ("machine", "cpus", "l2_size", "kernel", "seed", "run_id"):
        assert runs[col].notna().all()


def test_mq_points_run_timed_with_the_lockmeter_on_every_queue(swept):
    # --timing with the multi-queue kernel meters each CPU's run-queue lock
    root, c, lines = swept
    pts = Catalog(root).points("fig9")
    mq = pts[pts["kernel"] == "mq"]
    assert len(mq) == 2 and mq["timing"].all()
    assert (mq["status"] == "done").all(), mq[["status", "reason"]]
    runs = Catalog(root).runs()
    r = runs[runs["kernel"] == "mq"]
    assert len(r) == 2 and (r["lock_acquisitions"] > 0).all()
    assert (r["lock_hold_mean_us"] > 0).all()


def test_figures_from_the_timed_catalog(swept, tmp_path):
    root, c, _ = swept
    out = tmp_path / "fig"
    lines = []
    make_figures("all", root=root, out=out, log=lines.append)
    names = {p.name for p in out.iterdir()}
    for stem in ("fig6", "fig9", "table4", "table6", "fig10", "table8",
                 "table5", "table7"):
        assert f"{stem}.png" in names and f"{stem}.svg" in names, (stem, names)
        assert (out / f"{stem}.png").stat().st_size > 5000
    html = (out / "report.html").read_text()
    assert "23.1" in html                             # Figure 6, the paper's (512 KiB)
    assert "9.2" in html and "133.0" in html          # Table 6, 2 CPUs
    assert "33.0" in html and "352.0" in html         # Table 8, 2 CPUs
    assert "requests per modelled second" in html


def test_a_point_the_runner_refuses_is_missing_not_failed(tmp_path, monkeypatch):
    """A machine without a [timing] table: every timed point is refused
    before anything runs, and is counted and catalogued as missing."""
    text = (ROOT / "configs" / "machines.toml").read_text()
    start = text.index("[ppro4.timing]")
    end = text.index("\n[", start + 1)
    machines = tmp_path / "machines.toml"
    machines.write_text(text[:start] + text[end + 1:])
    monkeypatch.setenv("COLORSIM_MACHINES", str(machines))
    f = tmp_path / "experiments.toml"
    f.write_text(TIMED.split("[fig9]")[0])
    monkeypatch.setenv("COLORSIM_EXPERIMENTS", str(f))
    lines = []
    root = tmp_path / "runs"
    c = run_sweep("fig6", jobs=1, root=root, log=lines.append,
                  progress_stream=open(os.devnull, "w"))
    assert c["missing"] == 4 and c["done"] == 0 and c["failed"] == 0, lines
    assert c["ran"] == 0 and c["runs"] == 0
    assert any("4 missing: refused by the runner: machine ppro4 has no "
               "[timing] table" in l for l in lines), lines
    pts = Catalog(root).points("fig6")
    assert (pts["status"] == "missing").all() and len(pts) == 4
    assert pts["reason"].str.contains("no \\[timing\\] table").all()
    out = tmp_path / "fig"
    flines = []
    make_figures("fig6", root=root, out=out, log=flines.append)
    assert any(l.startswith("fig6 ") and "4 missing" in l for l in flines), flines
    assert "has no [timing] table" in (out / "report.html").read_text()


def test_chat_sizes_that_do_not_divide_are_one_line(tmp_path, monkeypatch):
    f = tmp_path / "experiments.toml"
    f.write_text(TIMED.replace('workload = "chat"\ntasks = [16]',
                              'workload = "chat"\ntasks = [18]'))
    with pytest.raises(ConfigError, match=r"fig10\.grid: chat: tasks 18 .*not a "
                       r"multiple of 4 threads x 2 users"):
        load_experiments(f)


def test_a_timed_point_is_another_run_than_a_counted_one():
    import dataclasses
    from colorsim.describe.experiments import Point
    from colorsim.run.identity import run_id
    p = Point("x", "quick", "ppro4", "512KiB", 2, "c32", "web", "web", 16, 1,
              2, 2, 2000, "qemu", 60, timing=True,
              args="--httpd,16,--clients,4,--requests,4")
    ident = {"kernel_sha256": "k", "plugin_sha256": "p", "rootfs_sha256": "r",
             "engine_version": "qemu-10.2"}
    timed = run_id({**p.spec().to_dict(), **ident})
    counted = run_id({**dataclasses.replace(p, timing=False).spec().to_dict(), **ident})
    other = run_id({**dataclasses.replace(p, args="--httpd,16,--clients,4,--requests,5")
                    .spec().to_dict(), **ident})
    assert len({timed, counted, other}) == 3
    # web and chat run from the image with their arguments
    assert p.spec().workload.program == "/bin/web"
    assert p.spec().timing and p.spec().workload.args == p.args


def test_shapes_table_from_the_timed_catalog(swept, tmp_path):
    """The results page's paper-beside-ours table is a function of the catalog:
    Figure 6's gain is the same-seed ratio of the catalog's throughputs,
    and --write / --check keep a Markdown block in step with it."""
    from colorsim.report import shapes
    from colorsim.report.markdown import check_in, write_into
    from colorsim.errors import ResultsError
    root, c, _ = swept
    cat = Catalog(root)
    rows = shapes.rows(cat)
    claims = [r.claim for r in rows]
    assert claims[0].startswith("Figure 6") and "[quick" not in claims[0]
    assert any(x.startswith("Table 4") for x in claims)
    assert any(x.startswith("Table 6") and "at 2 CPUs" in x for x in claims)
    assert any(x.startswith("Figure 10") for x in claims)
    runs = cat.runs()
    web = runs[(runs["workload_program"] == "/bin/web") & (runs["machine"] == "ppro4")]
    by = web.set_index(["kernel", "seed"])["throughput"]
    want = ((by["c32"] / by["vanilla"]).mean() - 1) * 100
    assert f"512KiB {want:+.1f} %" in rows[0].ours, (rows[0].ours, want)
    assert "+23.1 %" in rows[0].paper
    assert "run queue" in rows[0].why and "schedule()" in rows[0].why
    t6 = next(r for r in rows if r.claim.startswith("Table 6"))
    assert t6.paper == "9.2 % / 2.3 %"              # the paper's, 2 CPUs
    md = tmp_path / "R.md"
    md.write_text(f"x\n{shapes.BEGIN}\nold\n{shapes.END}\ny\n")
    table = shapes.render(rows)
    with pytest.raises(ResultsError, match="shapes"):
        check_in(md, table, shapes.BEGIN, shapes.END, how="shapes")
    write_into(md, table, shapes.BEGIN, shapes.END)
    check_in(md, table, shapes.BEGIN, shapes.END, how="shapes")
    assert md.read_text().startswith("x\n") and md.read_text().endswith("y\n")


def test_shapes_directions_count_noise_as_no_direction():
    from colorsim.report.shapes import _agree
    g = lambda m, lo, hi: {"mean": m, "min": lo, "max": hi}
    assert _agree([g(5, 1, 9), g(20, 10, 30)], [23.1, 42.3]) == "yes"
    assert _agree([g(-5, -9, -1)], [23.1]) == "no"
    assert _agree([g(5, -3, 9)], [23.1]) == "noise"
    assert _agree([g(5, 1, 9), g(5, -3, 9)], [1, 2]) == "partly (rest noise)"
    assert _agree([g(5, 1, 9), g(-5, -9, -1)], [1, 2]) == "partly"
    assert _agree([g(-5, -9, -1), g(5, -3, 9)], [1, 2]) == "no (rest noise)"
    assert _agree([g(5, 1, 9)], [None]) == "-"
    from colorsim.report.shapes import _grows
    assert _grows([1.0, 2.0, 3.0], [None, 23.1, 42.3])
    assert not _grows([1.0, 20.0, 10.0], [None, 23.1, 42.3])


def test_knee_names_the_cpu_counts_it_compared():
    from colorsim.report.common import cpu_counts
    assert cpu_counts(list(range(1, 9))) == "1-8"
    assert cpu_counts([4, 5, 6, 7, 8]) == "4-8"
    assert cpu_counts([1, 2, 4, 5, 6, 8]) == "1, 2, 4, 5, 6, 8"
    assert cpu_counts([4, 6]) == "4, 6" and cpu_counts([1, 2]) == "1, 2"


def test_shapes_multi_queue_tables_from_the_timed_catalog(swept):
    """The multi-queue kernels beside vanilla and c32: Table 4's speed-up
    per CPU count is the same-seed ratio of the catalog's throughputs, the
    lock contention is the catalog's, and the paper's side has a dash where
    it published nothing (mq's contention and knee, every mq-c32 cell).
    The tiny sweep runs no mq-c32 and no mq Chat: those rows come from the
    same runs relabelled, which checks the rows' wiring, not the kernel."""
    import pandas as pd
    from colorsim.report import shapes, shapes_mq
    from colorsim.report.common import paper_results
    root, c, _ = swept
    cat = Catalog(root)
    ds = shapes.data(cat)
    d9, d10 = ds["fig9"], ds["fig10"]
    web = d9.runs.set_index(["kernel", "cpus"])
    tp = web["throughput"]
    want = {n: (tp[("mq", n)] / tp[("vanilla", n)] - 1) * 100 for n in (1, 2)}
    lines = shapes.block(cat).splitlines()
    # Chat at one CPU count: no best CPU count, c32's gain there instead
    [knee] = [l for l in lines if l.startswith("| Figure 10: Chat throughput's best")]
    chat_tp = d10.runs.set_index("kernel")["throughput"]
    g10 = (chat_tp["c32"] / chat_tp["vanilla"] - 1) * 100
    assert "| - (only 2 CPUs swept) | - | c32 over vanilla: 2 CPUs " \
           f"{g10:+.1f} %; " in knee, knee
    assert "| Table 4: web speed-up over vanilla (8-way Xeon) [paper, 6 runs] " \
           "| | 1 CPU | 2 CPU | same direction |" in lines, lines
    assert "| mq | the paper | -3.0 % | +13.6 % | |" in lines
    [ours] = [l for l in lines if l.startswith("| mq | ours |")]
    assert ours.startswith(f"| mq | ours | {want[1]:+.1f} % | {want[2]:+.1f} % | "), \
        (ours, want)
    cont = web["lock_contention_pct"]
    [locks] = [l for l in lines if l.startswith("| mq | —")]
    assert locks == (f"| mq | — / {cont[('mq', 2)]:.1f} % | — / - | "
                     f"— (highest throughput) / - |"), locks
    [van] = [l for l in lines if l.startswith("| vanilla | 9.2 % / ")]
    assert f"/ {cont[('vanilla', 2)]:.1f} % | 33.0 % / " in van, van
    assert shapes_mq.LOCK_NOTE in lines
    # mq-c32 and a Chat mq: the same runs under those names
    as_ = lambda d, k, new: d.view(pd.concat(
        [d.runs, d.runs[d.runs["kernel"] == k].assign(kernel=new)]), "")
    text = shapes_mq.render(as_(d9, "mq", "mq-c32"), as_(d10, "c32", "mq"),
                            paper_results()).splitlines()
    assert "| mq-c32 | the paper | — | — | |" in text, text
    assert f"| mq-c32 | ours | {want[1]:+.1f} % | {want[2]:+.1f} % | — |" in text
    chat = d10.runs.set_index("kernel")["lock_contention_pct"]
    [locks] = [l for l in text if l.startswith("| mq | —")]
    # one CPU count swept: no best CPU count
    assert f"| — / {chat['c32']:.1f} % | — (highest throughput) / - |" in locks
    assert any(l.endswith("the paper / ours (of 2 CPUs swept) |") for l in text), text
    assert any(l.startswith(f"| mq-c32 | — / {cont[('mq', 2)]:.1f} % | — / - |")
               for l in text), text
    # no multi-queue runs: no multi-queue tables
    only = d9.view(d9.runs[d9.runs["kernel"] != "mq"], "")
    assert shapes_mq.render(only, d10, paper_results()) == ""


def test_knee_row_says_why_vanilla_stops_scaling():
    """Figure 10's row compares vanilla's lock and walk at its best CPU
    count with the next count swept, c32's beside them, from the catalog's
    columns: the lock's share of the time held, its hold cycles per message
    (hold cycles over the region's messages), the queue and the walk's
    misses.  No later count, no comparison."""
    import pandas as pd
    from colorsim.report.shapes import knee_why
    def run(kernel, cpus, tp, held, hold, rq, miss, sched):
        return dict(kernel=kernel, cpus=cpus, throughput=tp, lock_held_pct=held,
                    n_lock_hold_cycles=hold * 1000, roi_messages=1000,
                    n_rq_len_mean=rq, rqloop_l2_miss_ratio=miss, sched_share_pct=sched)
    df = pd.DataFrame([run("vanilla", 1, 9.0, 27.0, 2200, 22, 0.02, 27.0),
                       run("vanilla", 2, 4.0, 88.0, 16300, 91, 0.43, 42.0),
                       run("vanilla", 4, 5.0, 95.0, 13900, 83, 0.34, 22.0),
                       run("c32", 1, 9.5, 25.0, 1965, 21, 0.0, 25.0),
                       run("c32", 2, 9.4, 69.0, 5473, 77, 0.03, 33.0)])
    why = knee_why(df, {"vanilla": 1, "c32": 1})
    assert why.startswith("vanilla at 1 -> 2 CPUs: runqueue_lock held 27 -> 88 % of "
                          "the time, 2200 -> 16300 hold cycles per message (run queue "
                          "22 -> 91 tasks, walk L2 miss ratio 2 -> 43 %, schedule() "
                          "27 -> 42 % of cycles); c32 at 1 -> 2 CPUs: runqueue_lock "
                          "held 25 -> 69 %"), why
    # the comparison follows vanilla's best, to the next count swept
    assert knee_why(df, {"vanilla": 2}).startswith("vanilla at 2 -> 4 CPUs: "
                                                   "runqueue_lock held 88 -> 95 %")
    assert "c32" not in knee_why(df, {"vanilla": 2})    # c32 has no 4-CPU run
    assert knee_why(df, {"vanilla": 4}) == ""            # nothing later
    assert knee_why(df, {"c32": 1}) == ""
