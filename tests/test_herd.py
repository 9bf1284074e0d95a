"""Web's accept serialisation as an experiment setting, and the herd
experiment (Figures 1 and 7 and Table 2 with an accept lock that wakes
every waiting httpd).

A tiny experiments file (COLORSIM_EXPERIMENTS) with one experiment named
``herd``: 96 httpd behind the pipe lock, 4 clients x 2 requests, on 2 CPUs
of the 4-way PPro at 256 KiB and 1 MiB of L2.  A herd must build run
queues far longer than the clients alone (which needs every server in
place before the clients start), and at 256 KiB, where 96 tasks' hot
lines do not fit vanilla's sets, 32 colors must cut the run-queue loop's
miss ratio.  The clients run on the server's CPUs (client_cpus = 0), the
layout this herd was measured in: with 4 clients outside and nothing
slowing their requests, the lock holder always finds the next connection
waiting and serves the whole region without sleeping (3 schedules).
"""

import pytest

from colorsim.report.figures import make_figures
from colorsim.results.catalog import Catalog
from colorsim.errors import ConfigError
from colorsim.describe.experiments import load_experiments
from tests.sweeps import sweep_with

HTTPD = 96

HERD = f"""
[defaults]
engine = "qemu"
warmup = 2
roi = 2
burst = 2000
timeout = 180
seeds = [1]

[herd]
title = "herd, tiny"
needs = ["counting", "rqloop", "web"]
outputs.fig1_herd = {{ needs = ["counting"], what = "offsets" }}
outputs.fig7_herd = {{ needs = ["counting"], what = "colored vs other lines" }}
outputs.table2_herd = {{ needs = ["rqloop"], what = "loop miss ratio" }}
[herd.grid]
machine = "ppro4"
l2 = ["256KiB", "1MiB"]
cpus = [2]
kernels = ["vanilla", "c32"]
workload = "web"
tasks = [{HTTPD}]
accept = "pipe"
clients = 4
requests = 2
client_cpus = 0
"""


def _load(tmp_path, text):
    f = tmp_path / "experiments.toml"
    f.write_text(text)
    return load_experiments(f)


def test_accept_reaches_the_program_only_when_not_the_default(tmp_path):
    herd = _load(tmp_path, HERD)["herd"]
    args = {p.args for p in herd.points()}
    assert args == {f"--httpd,{HTTPD},--clients,4,--requests,2,--accept,pipe"}
    plain = _load(tmp_path, HERD.replace('accept = "pipe"\n', ""))["herd"]
    # the default (wake-one) keeps the arguments, so its runs keep their ids
    assert {p.args for p in plain.points()} == {
        f"--httpd,{HTTPD},--clients,4,--requests,2"}


def test_bad_accept_settings_are_one_line(tmp_path):
    with pytest.raises(ConfigError, match=r"herd\.grid\.accept: 'all' is not an "
                       r"accept mode; known: none, pipe, sysvsem"):
        _load(tmp_path, HERD.replace('accept = "pipe"', 'accept = "all"'))
    with pytest.raises(ConfigError, match=r"herd\.grid\.accept: applies to the web "
                       r"workload only"):
        _load(tmp_path, HERD.replace('workload = "web"', 'workload = "chat"')
              .replace(f"tasks = [{HTTPD}]", "tasks = [16]"))


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    lines = []
    for root, c in sweep_with(tmp_path_factory, "herd", HERD, "herd", lines.append):
        yield root, c, lines


def test_a_herd_builds_long_queues_and_colors_cut_the_loop_misses(swept):
    root, c, lines = swept
    assert c["done"] == 4 and c["failed"] == 0 and c["missing"] == 0, lines
    runs = Catalog(root).runs()
    assert (runs["accept"] == "pipe").all() and (runs["httpd"] == HTTPD).all()
    # 4 clients alone keep a handful of tasks runnable; each release of the
    # lock wakes every waiting server.  A quarter of the servers on the
    # queue on average needs all of them in place before the clients start.
    assert (runs["n_rq_len_mean"] > HTTPD / 4).all(), runs[["kernel", "n_rq_len_mean"]]
    miss = runs.set_index(["kernel", "l2_size"])["rqloop_l2_miss_ratio"]
    assert miss[("vanilla", 256 * 1024)] > 0.5, miss
    assert miss[("c32", 256 * 1024)] < miss[("vanilla", 256 * 1024)] - 0.3, miss
    # where the walk misses on most steps (256 KiB), vanilla's hottest
    # offset is its first-read line; at 1 MiB it misses on a minority and
    # page-aligned traffic at offset 0 runs as high; c32's hottest offset
    # has left the task structure's first lines at both
    van = runs[(runs["kernel"] == "vanilla") & (runs["l2_size"] == 256 * 1024)]
    assert ((van["peak_offset"] >= 0x20) & (van["peak_offset"] < 0x40)).all(), van
    c32 = runs[runs["kernel"] == "c32"]
    assert (c32["peak_offset"] >= 0x40).all(), c32


def test_herd_figures_are_their_own_items(swept, tmp_path):
    root, _, _ = swept
    out = tmp_path / "fig"
    lines = []
    make_figures("herd", root=root, out=out, log=lines.append)
    for stem in ("fig1_herd", "fig7_herd", "table2_herd"):
        assert (out / f"{stem}.png").stat().st_size > 5000, stem
        assert any(l.startswith(f"{stem} (herd") and "4/4 points done" in l
                   for l in lines), lines
    html = (out / "report.html").read_text()
    assert html.count("with a herd (web accept: pipe; every release wakes all "
                      "waiting httpd)</h2>") == 3
    assert 'id="table2_herd"' in html and "99.7" in html     # the paper beside ours


def test_the_report_says_where_the_httpd_wait(swept, tmp_path):
    """The report's "where tasks wait" table for web runs: from the
    catalog, every sampled task running, runnable or asleep somewhere, and
    behind a pipe lock that wakes every waiter the idle httpd sleep in the
    pipe's read."""
    from colorsim.report.waits import wait_table
    root, _, _ = swept
    out = tmp_path / "fig"
    lines = []
    make_figures("herd", root=root, out=out, log=lines.append)
    assert any(l.startswith("waits_herd (herd") and "4/4 points done" in l
               for l in lines), lines
    html = (out / "report.html").read_text()
    assert 'id="waits_herd"' in html and "Where tasks wait: herd, tiny" in html
    t = wait_table(Catalog(root).runs())
    assert len(t) == 4 and (t["httpd"] == HTTPD).all(), t
    total = t["running"] + t["runnable"] + t["asleep"]
    # a sample reads other CPUs' counts unlocked, so a task mid-wake-up can
    # be counted twice in one of the 2-tick region's few samples
    assert ((total - t["tasks"]).abs() <= 0.5).all(), t
    assert (t["most asleep in"] == "pipe_read").all(), t
    # the run queue at schedule() holds the runnable and running ones
    assert (t["run queue (mean)"] > HTTPD / 4).all(), t


def test_where_tasks_wait_covers_chat_runs():
    """Chat's runs get the same table: its threads by state and channel
    per CPU count, its throughput in messages, and no web-only key (httpd,
    accept mode) as an empty column; a web run's accept mode is not mixed
    up with the accept channel."""
    import pandas as pd
    from colorsim.report.waits import wait_table
    def run(prog, cpus, kernel, **kw):
        r = dict(workload_program=prog, cpus=cpus, l2_size=1 << 20, kernel=kernel,
                 accept="", httpd=None, clients=None, n_wait_samples=10,
                 n_rq_len_mean=5.0, n_wait_tasks_mean=10.0, n_wait_running_mean=1.0,
                 n_wait_runnable_mean=4.0, n_wait_futex_mean=3.0,
                 n_wait_send_accepted_mean=2.0, n_wait_accept_mean=0.0,
                 throughput=100.0 * cpus)
        r.update(kw)
        return r
    chat = pd.DataFrame([run("/bin/chat", c, k) for c in (1, 2) for k in ("vanilla", "c32")])
    t = wait_table(chat)
    assert len(t) == 4 and "messages/s" in t and "requests/s" not in t, t.columns
    assert "httpd" not in t and "accept mode" not in t and "accept" not in t
    assert (t["most asleep in"] == "futex").all()
    assert list(t.loc[t["kernel"] == "c32", "messages/s"]) == [100.0, 200.0]
    # units as the other tables print them: the L2 in KiB/MiB, counts whole
    assert list(t["L2"]) == ["1MiB"] * 4 and "L2 bytes" not in t
    assert str(t["cpus"].dtype) == "Int64" and list(t["seeds"]) == [1] * 4
    web = pd.DataFrame([run("/bin/web", 1, "vanilla", accept="sysvsem", httpd=8,
                            clients=4, n_wait_accept_mean=3.5, n_wait_futex_mean=0.0)])
    w = wait_table(web)
    assert list(w["accept mode"]) == ["sysvsem"] and list(w["accept"]) == [3.5]
    assert "requests/s" in w and "messages/s" not in w
