"""The stats.txt parser on gem5-format text."""

import math
from pathlib import Path

import pytest

from colorsim.run.statstxt import (
    StatsFormatError,
    distribution,
    parse_line,
    parse_stats,
    sparse_histogram,
    to_frame,
    vector,
)

DATA = Path(__file__).parent / "data" / "gem5"
SAMPLE = DATA / "stats_two_dumps.txt"

# The boot contract's illustration (host-reproduced gem5 stream settings).
CONTRACT = """
---------- Begin Simulation Statistics ----------
board.mon.readAddrDist::samples                   12                       # Read address distribution (Count)
board.mon.readAddrDist::524224                     5                       # Read address distribution (Count)
board.mon.readAddrDist::1.04864e+06                7                       # Read address distribution (Count)

---------- End Simulation Statistics   ----------
"""


def test_sample_splits_into_dumps():
    dumps = parse_stats(SAMPLE)
    assert [d.index for d in dumps] == [0, 1]
    assert dumps[0].get("simTicks") == 100000000000
    assert dumps[1].get("simTicks") == 100000000
    assert dumps[0].get("simFreq") == 1e12


def test_units_and_formula():
    d = parse_stats(SAMPLE)[0]
    ipc = next(s for s in d.stats
               if s.name == "board.processor.cores0.core.ipc")
    assert ipc.value == pytest.approx(4123456 / 20000000, abs=1e-6)
    assert ipc.unit == "Count/Cycle"
    freq = next(s for s in d.stats if s.name == "simFreq")
    assert freq.unit == "Tick/Second"
    assert freq.desc == "The number of ticks per simulated second"


def test_nan_and_pdf_columns():
    d = parse_stats(SAMPLE)[1]
    mean = d.get("board.cache_hierarchy.mem_monitor.writeBurstLengthHist::mean")
    assert math.isnan(mean)
    s = next(s for s in d.stats if s.name.endswith(
        "writeBurstLengthHist::32-63"))
    assert s.value == 0 and math.isnan(s.pdf) and math.isnan(s.cdf)
    s = next(s for s in parse_stats(SAMPLE)[0].stats if s.name.endswith(
        "readBurstLengthHist::32-63"))
    assert s.pdf == 100.0 and s.cdf == 100.0


def test_sparse_histogram_keys():
    d = parse_stats(SAMPLE)[0]
    buckets, samples, inexact = sparse_histogram(
        d, "board.cache_hierarchy.mem_monitor.readAddrDist")
    assert samples == 27230 == sum(buckets.values())
    assert buckets[1664] == 20500 and buckets[4064] == 750
    assert all(isinstance(k, int) for k in buckets)
    assert inexact == []


def test_inexact_keys_are_flagged():
    (d,) = parse_stats(CONTRACT)
    buckets, samples, inexact = sparse_histogram(d, "board.mon.readAddrDist")
    assert samples == 12
    assert buckets == {524224: 5, 1.04864e+06: 7}
    assert inexact == ["1.04864e+06"]
    s = d.stats[-1]
    assert s.key_value == 1048640.0 and s.key_exact is False


def test_distribution_and_vector():
    d = parse_stats(SAMPLE)[0]
    dist = distribution(
        d, "board.cache_hierarchy.mem_monitor.readBurstLengthHist")
    assert dist["samples"] == 27230 and dist["mean"] == 32
    assert dist["buckets"] == {"0-31": 0, "32-63": 27230}
    assert dist["total"] == 27230
    v = vector(d, "board.cache_hierarchy.l2caches0.writebacks")
    assert v == {"total": 7000}


def test_begin_with_message_suffix():
    text = CONTRACT.replace("Statistics ----------\n",
                            "Statistics ---------- : roi end\n", 1)
    (d,) = parse_stats(text)
    assert d.message == "roi end"
    alt = CONTRACT.replace("Begin Simulation Statistics ----------",
                           "Begin Simulation Statistics : after boot")
    assert parse_stats(alt)[0].message == "after boot"


def test_frame():
    df = to_frame(parse_stats(SAMPLE))
    assert list(df.columns[:3]) == ["dump", "name", "value"]
    assert set(df["dump"]) == {0, 1}
    row = df[(df.dump == 0) & (df.name == "simInsts")]
    assert row.value.item() == 8111110


def test_errors():
    with pytest.raises(StatsFormatError):
        parse_stats("simTicks 1 # x\n---------- Begin Simulation "
                    "Statistics ----------\n")
    assert parse_line("   ") is None
    assert parse_line("name notanumber # d") is None


def test_truncated_dump_is_kept():
    text = CONTRACT.split("---------- End")[0]
    (d,) = parse_stats(text)
    assert len(d.stats) == 3


def test_plugin_stats_txt_hex_page_offsets(tmp_path):
    # the QEMU bus monitor writes page offsets as hex keys
    text = ("\n---------- Begin Simulation Statistics ----------\n"
            "system.bus.pageOffset::0x030                  93740                       # Bus transactions (Count)\n"
            "system.bus.pageOffset::0x3f8                     12                       # Bus transactions (Count)\n"
            "\n---------- End Simulation Statistics   ----------\n")
    (tmp_path / "stats.txt").write_text(text)
    dumps = parse_stats(tmp_path / "stats.txt")
    buckets, _, inexact = sparse_histogram(dumps[0], "system.bus.pageOffset")
    assert buckets == {0x30: 93740, 0x3f8: 12} and not inexact
