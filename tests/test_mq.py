"""The multi-queue kernel variants (mq, mq-cN): IBM's MQ scheduler for
Linux 2.4 (kernels/kernel/sched_mq.c), alone and with coloring.

The same layout file, workloads and instruments as vanilla and cN: the
built-in workload on 1-8 CPUs with every CPU getting its share, the user
programs, the offset histogram and the run-queue loop's miss ratio.
"""

import json

import pytest

from colorsim.results.rundata import counter_totals, load_run, offset_histogram, offset_summary
from colorsim import BUILD, ROOT
from colorsim.run import runner
from colorsim.run.build import ensure_built
from colorsim.cli import main as cli_main
from colorsim.describe.machine import get_machine
from colorsim.describe.variants import parse_variant, variant_from_build_id

from test_runs import QUIET, assert_cpus_share_the_time, spec
from test_userproc import assert_passed, boot

MQ, MQC = "mq-vanilla-l32", "mq-c32-b17-l32"


def test_names_build_ids_and_flags():
    m = get_machine("ppro4")
    mq, mqc = parse_variant("mq", m), parse_variant("mq-c32", m)
    assert (mq.name, mq.build_id, mq.scheduler) == ("mq", MQ, "mq")
    assert (mqc.name, mqc.build_id) == ("mq-c32", MQC)
    assert variant_from_build_id(MQC) == mqc
    assert "-DCONFIG_SCHED_MQ=1" in mq.cflags()
    # linux24 builds keep their ids and flags (so their images are unchanged)
    van, c32 = parse_variant("vanilla", m), parse_variant("c32", m)
    assert (van.build_id, c32.build_id) == ("vanilla-l32", "c32-b17-l32")
    assert not any("SCHED_MQ" in f for f in van.cflags() + c32.cflags())
    assert mqc.color_offset(0x20000) == c32.color_offset(0x20000) == 0x20


@pytest.mark.parametrize("kernel, expect", [
    ("mq-c1", "use 'mq' for one"),
    ("mq-c3", "power of two"),
    ("mq-c128", "mq-c2..mq-c64"),
    ("mqc4", "unknown kernel"),
    ("mq-", "unknown kernel"),
])
def test_bad_mq_names_are_one_line(kernel, expect, capsys, tmp_path):
    rc = cli_main(["run", "--kernel", kernel, "--tasks", "16", "--out", str(tmp_path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and expect in err[0], err
    assert not any(tmp_path.iterdir())


@pytest.fixture(scope="module")
def layouts():
    ensure_built([MQ, MQC, "vanilla-l32"], plugin=False, progress=lambda *_: None)
    return {k: json.loads((BUILD / "kernels" / k / "layout.json").read_text())
            for k in (MQ, MQC)}


def test_mq_layout_describes_queues_locks_and_loop(layouts):
    nr_cpus = int(next(l.split()[2] for l in
                       (ROOT / "kernels/include/param.h").read_text().splitlines()
                       if l.startswith("#define NR_CPUS")))
    for bid, lay in layouts.items():
        assert lay["variant"]["scheduler"] == "mq" and lay["variant"]["build_id"] == bid
        hot = lay["scheduler_hot"]
        # the local walk reads neither processor nor cpus_allowed, and still
        # only the one line 0x20-0x3f, first has_cpu at 0x30
        assert hot["line_offset"] == 0x20 and hot["first_touched_offset"] == 0x30
        assert "processor" not in hot["fields_read_per_task"]
        sched = lay["scheduler"]
        assert sched["name"] == "mq"
        rqd = sched["runqueue_data"]
        assert rqd["element_size"] == 32 and rqd["count"] == nr_cpus
        assert rqd["addr"] == lay["symbols"]["runqueue_data"]["addr"]
        locks = [l["addr"] for l in sched["runqueue_locks"]]
        assert len(set(locks)) == nr_cpus
        assert all(rqd["addr"] <= a < rqd["addr"] + 32 * nr_cpus for a in locks)
        assert sorted({a // 32 for a in locks}) == [a // 32 for a in locks]  # a line each
        assert "runqueue_lock" not in lay["symbols"]     # no global lock
        lo, hi = lay["ranges"]["rqloop"]
        assert lay["symbols"]["runqueue_walk"]["addr"] == lo and hi > lo
        for r in ("steal_remote", "reschedule_idle", "load_balance", "spin_lock"):
            a, b = lay["ranges"][r]
            assert b > a and (b <= lo or a >= hi), r


def test_mq_image_has_no_global_runqueue_lock(layouts):
    sym = (BUILD / "kernels" / MQ / "kernel.sym").read_text()
    assert " runqueue_data" in sym and " runqueue_lock\n" not in sym
    van = (BUILD / "kernels/vanilla-l32/kernel.sym").read_text()
    assert " runqueue_lock\n" in van and " runqueue_data" not in van


@pytest.mark.parametrize("cpus", [1, 2, 4, 8])
def test_every_cpu_gets_its_share(cpus, tmp_path):
    r = runner.run(spec("mq", machine="piii8", cpus=cpus, tasks=1024, roi_ticks=3),
                   out=tmp_path, **QUIET)
    log = (r / "console.log").read_text()
    assert "sched: multi-queue" in log and "roi: end" in log
    assert_cpus_share_the_time(load_run(r), cpus)


@pytest.fixture(scope="module")
def four(tmp_path_factory):
    out = tmp_path_factory.mktemp("mqruns")
    return [load_run(runner.run(spec(k), out=out, **QUIET))
            for k in ("vanilla", "mq", "mq-c32")]


def test_mq_peak_is_the_scheduler_line_and_shorter_walks(four):
    van, mq, _ = four
    h = offset_histogram(mq)
    assert h.idxmax() == 0x30 and h.drop(0x30).max() * 10 < h[0x30]
    # each CPU walks its own queue (about N/4 on 4 CPUs), not all N tasks
    per = {r.config["variant"]["name"]: offset_histogram(r)[0x30] / sched_calls(r)
           for r in (van, mq)}
    assert per["mq"] < 0.5 * per["vanilla"], per


def sched_calls(run):
    line = next(l for l in (run.path / "console.log").read_text().splitlines()
                if l.startswith("roi: end"))
    return int(line.split("schedules ")[1].split()[0])


def test_mq_c32_spreads_the_hot_lines(four):
    df = offset_summary(four[1:])
    mq, col = df.iloc[0], df.iloc[1]
    assert col.peak_count * 4 < mq.peak_count
    assert col.colored_lines_sum < mq.colored_lines_sum
    h = offset_histogram(four[2])
    hot = h[(h.index >= 0x20) & (h.index < 0x420) & (h.index % 32 == 0x10)]
    assert (hot > 0).sum() >= 16


def test_mq_loop_miss_ratio(four):
    _, mq, col = (counter_totals(r) for r in four)
    ratio = lambda c: c["rqloop_l2_read_misses"] / c["rqloop_l2_read_accesses"]
    assert ratio(mq) > 0.9
    assert ratio(col) < 0.5 * ratio(mq)
    for r in four[1:]:
        assert_cpus_share_the_time(r, 4)


@pytest.fixture(scope="module")
def mq_built():
    ensure_built([MQ, MQC], plugin=False, image=True, progress=lambda *_: None)


@pytest.mark.parametrize("kernel", [MQ, MQC])
def test_init_runs_every_program_on_four_cpus(mq_built, kernel):
    rc, out = boot(BUILD / "kernels" / kernel / "kernel.mb.elf", "/init", cpus=4)
    assert "init: all tests passed" in out, out[-3000:]
    assert "sched: multi-queue" in out and rc == 1


@pytest.mark.parametrize("name, cpus", [("threads", 1), ("threads", 4), ("forktest", 2)])
def test_programs_on_mq(mq_built, name, cpus):
    rc, out = boot(BUILD / "kernels" / MQ / "kernel.mb.elf", f"/bin/{name}", cpus=cpus)
    assert_passed(rc, out, name)
