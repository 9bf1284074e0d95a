"""The counted rows of the paper-beside-ours table (Figures 1, 3 and 7 of
the web runs) are functions of the catalog: each number is recomputed here
from the catalog's own columns of a tiny sweep (16 httpd, 4 clients)."""

import pytest

from colorsim.results.catalog import Catalog
from tests.sweeps import sweep_with

COUNTED = """
[defaults]
engine = "qemu"
warmup = 2
roi = 2
burst = 2000
timeout = 180
seeds = [1]
clients = 4
requests = 4

[fig1]
title = "Figure 1, tiny"
needs = ["counting", "web"]
outputs.fig1 = { needs = ["counting"], what = "offsets" }
[fig1.grid]
machine = "ppro4"
l2 = ["512KiB"]
cpus = [2]
kernels = ["vanilla", "c32"]
workload = "web"
tasks = [16]

[fig3]
title = "Figure 3, tiny"
needs = ["counting", "web"]
outputs.fig3 = { needs = ["counting", "timing"], what = "0x30 and throughput" }
[fig3.grid]
machine = "ppro4"
l2 = ["512KiB"]
cpus = [2]
kernels = ["vanilla"]
workload = "web"
tasks = [8, 32]

[fig7]
title = "Figure 7, tiny"
needs = ["counting", "web"]
outputs.fig7 = { needs = ["counting"], what = "colored lines" }
[fig7.grid]
machine = "ppro4"
l2 = ["256KiB", "512KiB"]
cpus = [2]
kernels = ["vanilla", "c32"]
workload = "web"
tasks = [16]
"""


@pytest.fixture(scope="module")
def counted(tmp_path_factory):
    lines = []
    for root, c in sweep_with(tmp_path_factory, "counted", COUNTED, "all",
                              lines.append):
        assert c["failed"] == 0 and c["missing"] == 0, lines
        yield Catalog(root)


def _rows(cat):
    from colorsim.report import shapes
    return {r.claim.split(":")[0]: r for r in shapes.rows(cat)}


def test_figure1_row_is_the_catalogs_peak_and_share(counted):
    runs = counted.runs()
    # fig1's points are fig7's at 512 KiB: the same runs
    r = runs[(runs["l2_size"] == 512 * 1024) & (runs["tasks"] == 16)
             & ~runs["timing"].astype(bool)].set_index("kernel")
    v, c = r.loc["vanilla"], r.loc["c32"]
    row = _rows(counted)["Figure 1"]
    share = c["peak_count"] / v["peak_count"] * 100
    peak = int(v["peak_offset"])
    assert row.ours == f"{peak:#05x}; {share:.1f} %", row
    assert row.paper.startswith("0x030")
    assert row.agree == ("yes" if peak == 0x30 else "no")


def test_figure3_row_grows_from_the_catalogs_offsets_per_request(counted):
    row = _rows(counted)["Figure 3"]
    runs = counted.runs()
    v = runs[(runs["kernel"] == "vanilla") & runs["timing"].astype(bool)]
    per = {}
    for _, r in v.iterrows():
        off = counted.offsets(r["run_id"])
        off = off[off["dump"] == 0]
        if "bus" in set(off["view"]):
            off = off[off["view"] == "bus"]
        at30 = off[off["offset"] == 0x30]["count"].sum()
        per[int(r["tasks"])] = (at30 / r["roi_requests"], r["throughput"])
    grow = per[32][0] / per[8][0]
    assert f"x{grow:.1f} from 8 to 32 httpd" in row.ours, (row.ours, per)
    assert f"throughput {(per[32][1] / per[8][1] - 1) * 100:+.1f} %" in row.ours
    assert "8:" in row.why and "32:" in row.why


def test_figure7_row_is_the_colored_change_per_request(counted):
    row = _rows(counted)["Figure 7"]
    runs = counted.runs()
    r = runs[~runs["timing"].astype(bool)]
    for size, name in ((256 * 1024, "256KiB"), (512 * 1024, "512KiB")):
        k = r[r["l2_size"] == size].set_index("kernel")
        per = k["colored_lines_sum"] / k["roi_requests"]
        want = (per["c32"] / per["vanilla"] - 1) * 100
        assert f"{name} {want:+.1f} %" in row.ours, (row.ours, want)
    assert "512KiB -33.3 %" in row.paper and "256KiB" not in row.paper
    assert "all transactions per request at 256KiB" in row.why
    k = r[r["l2_size"] == 512 * 1024].set_index("kernel")
    share = k["n_rqloop_l2_read_misses"] / k["colored_lines_sum"] * 100
    assert f"512KiB {share['vanilla']:.0f} / {share['c32']:.0f} %" in row.why, row.why


def test_walk_miss_causes_are_shares_of_the_summed_counters():
    import pandas as pd
    from colorsim.report.shapes import miss_causes
    df = pd.DataFrame({"n_rqloop_l2_read_evicted_user": [1, 3],
                       "n_rqloop_l2_read_evicted_kernel": [10, 10],
                       "n_rqloop_l2_read_evicted_loop": [0, 0],
                       "n_rqloop_l2_read_invalidated": [50, 25],
                       "n_rqloop_l2_read_first": [1, 0]})
    # 4 + 20 + 0 + 75 + 1 = 100 misses over the two runs; a cause under
    # half a percent is left out
    assert miss_causes(df) == ("user lines 4 %, kernel lines 20 %, "
                               "another CPU's write 75 %, first load 1 %")
    assert miss_causes(df.iloc[:0]) == "-"
    assert miss_causes(df.drop(columns="n_rqloop_l2_read_first")) == "-"


def test_figure6_takes_the_best_httpd_count_per_l2_as_the_papers_up_to():
    """The paper gives Figure 6's gains as "up to": per L2 ours is the
    httpd count with the largest mean same-seed gain; the next row gives
    every count."""
    import pandas as pd
    from types import SimpleNamespace
    from colorsim.report.shapes import fig6_counts_row, fig6_row
    from colorsim.report.common import paper_results
    rows = []
    # gains (c32 / vanilla - 1) per (L2, httpd): 512 KiB best at 512 httpd,
    # 1 MiB best at 1024
    want = {(512 * 1024, 256): 0.05, (512 * 1024, 512): 0.30,
            (512 * 1024, 1024): 0.20, (1 << 20, 256): 0.02,
            (1 << 20, 512): 0.10, (1 << 20, 1024): 0.40}
    for (l2, t), g in want.items():
        for seed in (1, 2):
            base = 1000.0 + seed
            rows += [{"l2_size": l2, "tasks": t, "seed": seed, "kernel": "vanilla",
                      "throughput": base, "n_rq_len_mean": t / 4},
                     {"l2_size": l2, "tasks": t, "seed": seed, "kernel": "c32",
                      "throughput": base * (1 + g), "n_rq_len_mean": t / 4}]
    df = pd.DataFrame(rows)
    row = fig6_row(SimpleNamespace(runs=df), paper_results())
    assert "the best of 256, 512, 1024 httpd" in row.claim
    assert row.ours == "512KiB +30.0 % at 512, 1MiB +40.0 % at 1024", row.ours
    assert row.agree == "yes"                 # both up, and growing with the L2
    counts = fig6_counts_row(df)
    assert counts.ours.startswith("256: 512KiB +5.0 %, 1MiB +2.0 %; 512: ")
    assert counts.why == "vanilla's run queue per httpd count: 256: 64, 512: 128, 1024: 256"
    assert fig6_counts_row(df[df["tasks"] == 1024]) is None


def test_the_paper_scale_block_has_its_rows_and_names_the_rest(counted, tmp_path,
                                                               monkeypatch):
    from colorsim.report import shapes
    # the tiny sweep ran its grids at the paper's scale: all three rows
    text = shapes.block(counted)
    assert [l.split(":")[0] for l in text.splitlines()[2:5]] == \
        ["| Figure 1", "| Figure 3", "| Figure 7"], text
    assert "Not yet swept" not in text
    # an experiment the file adds but no sweep ran is named, not drawn
    extra = COUNTED + """
[fig6]
title = "Figure 6, tiny"
needs = ["timing", "web"]
outputs.fig6 = { needs = ["timing", "web"], what = "throughput" }
[fig6.grid]
machine = "ppro4"
l2 = ["512KiB"]
cpus = [2]
kernels = ["vanilla", "c32"]
workload = "web"
tasks = [16]
"""
    f = tmp_path / "experiments.toml"
    f.write_text(extra)
    monkeypatch.setenv("COLORSIM_EXPERIMENTS", str(f))
    text = shapes.block(counted)
    assert "| Figure 6" not in text
    assert "Not yet swept at the paper's scale: fig6 (" in text, text
    # the quick block draws every experiment, swept or not
    assert "not swept: python3 -m colorsim sweep fig6 --quick" in shapes.block(counted, True)


def test_runs_whose_servers_idled_are_named_in_the_context():
    import pandas as pd
    from colorsim.report.shapes import context
    runs = pd.DataFrame({"kernel": ["vanilla", "c32", "c32"],
                         "busy_fraction": [1.0, 0.999, 0.8],
                         "n_rq_len_mean": [250.0, 230.0, 10.0]})
    text = context(runs)
    assert "server CPUs busy 100 %" in text          # vanilla's, as before
    assert "1 of 3 runs' servers idle over 5 % of the region" in text
    assert "idle over" not in context(runs.iloc[:2])
    assert "client CPUs" not in text                  # no column: not said
    runs["client_busy_fraction"] = [0.5, 0.6, 1.0]
    assert "client CPUs busy 70 %" in context(runs)   # every kernel's runs


def test_a_herd_context_says_no_task_sleeps_rather_than_naming_a_channel():
    """Behind a wake-all accept lock every httpd is runnable: the context
    says under 1 % sleep, not "0 % of tasks asleep in" some channel."""
    import pandas as pd
    from colorsim.report.shapes import context
    runs = pd.DataFrame({"kernel": ["vanilla"] * 2, "n_wait_tasks_mean": [1030.0] * 2,
                         "n_wait_wait4_mean": [1.0] * 2, "n_wait_accept_mean": [0.0] * 2})
    assert "under 1 % of tasks asleep anywhere" in context(runs)
    runs["n_wait_accept_mean"] = 700.0
    assert "68 % of tasks asleep in accept" in context(runs)


def test_runs_that_recalculated_every_slice_are_counted_per_kernel():
    """A run whose region held 2.4's recalculation of every time slice is
    named per kernel, with its schedule() calls per request against the
    other runs'; no recalculation, nothing said."""
    import pandas as pd
    from colorsim.report.shapes import context, recalc_runs
    runs = pd.DataFrame({"kernel": ["vanilla", "vanilla", "c32", "c32"],
                         "n_counter_recalcs": [0, 19, 0, 0],
                         "n_schedule_calls": [1200, 19755, 1100, 1300],
                         "roi_requests": [1024] * 4})
    text = context(runs)
    assert ("runs that recalculated every time slice in the region: "
            "c32 0 of 2, vanilla 1 of 2") in text, text
    # 19755 / 1024 in the one; (1200 + 1100 + 1300) / 1024 / 3 in the others
    assert "schedule() per unit of work 19.3 in them, 1.2 in the others" in text
    runs["n_counter_recalcs"] = 0
    assert recalc_runs(runs) == ""
    assert "recalculated" not in context(runs)


def test_each_seeds_pair_says_whether_a_run_recalculated():
    """Figure 6's dots: one same-seed gain per seed, flagged where either
    run of the pair recalculated every time slice in its region."""
    import pandas as pd
    from colorsim.report.common import seed_gains
    runs = pd.DataFrame({"l2_size": [512] * 4, "tasks": [1024] * 4,
                         "kernel": ["vanilla", "c32"] * 2, "seed": [1, 1, 2, 2],
                         "throughput": [200.0, 300.0, 1000.0, 1100.0],
                         "n_counter_recalcs": [3, 0, 0, 0]})
    s = seed_gains(runs, ["l2_size", "tasks"], "c32").set_index("seed")
    assert list(s["gain"].round(1)) == [50.0, 10.0]
    assert list(s["recalc"]) == [True, False]
    assert not seed_gains(runs.drop(columns="n_counter_recalcs"),
                          ["l2_size", "tasks"], "c32")["recalc"].any()


def test_the_context_says_how_steady_the_marked_regions_were():
    import pandas as pd
    from colorsim.report.shapes import context
    runs = pd.DataFrame({"kernel": ["vanilla", "vanilla"], "n_rq_len_mean": [1000.0, 990.0],
                         "n_quarter_rq_mean_lo": [998.0, 950.4],
                         "n_quarter_rq_mean_hi": [1003.0, 1010.6],
                         "n_quarter_rate_lo": [0.95, 0.25], "n_quarter_rate_hi": [1.04, 1.9]})
    text = context(runs)
    assert ("run queue 995.0 tasks on average (its quarters 950 to 1011; "
            "a quarter's rate 0.25 to 1.90 of its region's)") in text, text
    assert "quarters" not in context(runs.drop(columns=["n_quarter_rq_mean_lo"]))


def test_figure6s_steady_row_keeps_the_runs_that_never_recalculated():
    import pandas as pd
    from colorsim.report.shapes import fig6_steady_row
    rows = []
    for seed, (v, c, rv) in enumerate([(1000, 1200, 0), (200, 1000, 5), (1000, 1180, 0)], 1):
        rows += [{"tasks": 1024, "l2_size": 512 * 1024, "kernel": "vanilla", "seed": seed,
                  "throughput": float(v), "n_counter_recalcs": rv},
                 {"tasks": 1024, "l2_size": 512 * 1024, "kernel": "c32", "seed": seed,
                  "throughput": float(c), "n_counter_recalcs": 0}]
    runs = pd.DataFrame(rows + [{**r, "tasks": 256} for r in rows])
    row = fig6_steady_row(runs)
    # run by run: vanilla's seed 2 is left out, c32's seed 2 (steady) kept;
    # c32 (1200 + 1000 + 1180) / 3 over vanilla 1000, range 1000/1000 to 1200/1000
    assert row.ours == ("512KiB +12.7 % [+0..+20] (vanilla 2 of 3, c32 3 of 3 runs)"), row.ours
    assert row.claim.startswith("Figure 6 at 1024 httpd")
    runs["n_counter_recalcs"] = 0
    assert fig6_steady_row(runs) is None       # nothing to leave out


def test_table2_and_figure7_are_made_again_from_the_runs_that_never_recalculated():
    """A row made again from the steady runs only: the recalculating run's
    miss ratio leaves the mean, the count says how many runs stayed, and
    nothing is added where no run recalculated."""
    import pandas as pd
    from colorsim.report.common import ExpData
    from colorsim.report.shapes import loop_miss_row, paper_results, steady_rows
    runs = pd.DataFrame({"tasks": [1024] * 4 + [256], "l2_size": [512 * 1024] * 5,
                         "kernel": ["vanilla", "vanilla", "c32", "c32", "c32"],
                         "rqloop_l2_miss_ratio": [0.99, 0.90, 0.40, 0.10, 0.0],
                         "n_counter_recalcs": [0, 0, 0, 7, 0]})
    d = ExpData.__new__(ExpData)
    d.runs, d.tag = runs, ""
    paper = paper_results()
    [row] = steady_rows(d, loop_miss_row, paper)
    assert "512KiB 94.5 / 40.0 %" in row.ours, row.ours      # c32's 10 % run left out
    assert "512KiB 94.5 / 25.0 %" in loop_miss_row(d, paper).ours
    assert row.why.startswith("3 of 4 runs; "), row.why
    assert row.claim.endswith("runs whose regions never recalculated every time slice")
    d.runs = runs.assign(n_counter_recalcs=0)
    assert steady_rows(d, loop_miss_row, paper) == []


def test_the_reports_figure7_gives_the_change_from_the_steady_runs_too():
    import pandas as pd
    from colorsim.report.counting import steady_changes
    runs = pd.DataFrame({"l2_size": [512 * 1024] * 4, "kernel": ["vanilla", "vanilla", "c32", "c32"],
                         "x": [100.0, 300.0, 50.0, 60.0], "n_counter_recalcs": [0, 4, 0, 0]})
    [note] = steady_changes(runs, "x")
    assert note.startswith("From the 3 of 4 runs") and "512KiB -45.0 %" in note, note
    assert steady_changes(runs.assign(n_counter_recalcs=0), "x") == []
