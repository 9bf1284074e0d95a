"""`colorsim timing-table`'s reader on a real --timing run: every counter a
run writes (region-wide ones too, some not integers) is read."""

import pytest

from colorsim.run import runner
from colorsim.orchestrate.timing import timing_summary

from test_runs import QUIET, spec


@pytest.fixture(scope="module")
def timed(tmp_path_factory):
    s = spec("c32", cpus=2, tasks=128, warmup_ticks=2, roi_ticks=3)
    s = type(s)(s.machine, s.variant, s.workload, timeout_s=s.timeout_s, timing=True)
    return runner.run(s, out=tmp_path_factory.mktemp("timed"), **QUIET)


def test_timing_summary_reads_a_timing_run(timed):
    t = timing_summary(timed)
    assert (t["machine"], t["cpus"], t["kernel"]) == ("ppro4", 2, "c32")
    assert t["schedule_calls"] > 0 and t["work_units"] > 0
    assert t["lock_acquisitions"] >= t["schedule_calls"]
    assert 0 <= t["lock_contention"] <= 1 and t["lock_hold_mean_us"] > 0
    assert t["work_per_modeled_second"] > 0 and t["modeled_seconds"] > 0
    assert [c["cpu"] for c in t["per_cpu"]] == [0, 1]
    # the run also carries the run-queue report's float mean (cpu -1 rows)
    assert "rq_len_mean" in (timed / "counters.csv").read_text()


def test_timing_summary_refuses_a_counting_run(tmp_path):
    from colorsim.errors import ConfigError
    run = runner.run(spec("vanilla", cpus=2, tasks=64, warmup_ticks=2, roi_ticks=2),
                     out=tmp_path, **QUIET)
    with pytest.raises(ConfigError, match="not a timing run"):
        timing_summary(run)
