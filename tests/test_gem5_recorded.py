"""The gem5 path on real gem5 outputs: every run folder under recorded/gem5/.

The folders were recorded with gem5 v24.0.0.1 (see that directory's
README.md) and trimmed to what the suite reads
(scripts/trim-gem5-recording.py).  Every folder holding
``gem5/stats.txt`` is tested, so a new recording is tested as it is.  The
numbers checked against were noted when each run was recorded
(recordings.csv, read at test time).
"""

import csv
import json
import re
import shutil
import subprocess
import sys

import pytest

from colorsim.results.rundata import (bus_views, load_run, offset_histogram,
                              offset_summary, work_units)
from colorsim.run.statstxt import parse_stats
from colorsim import ROOT
from colorsim.run.console import parse_roi
from colorsim.run.engines.gem5 import Gem5Engine
from colorsim.run.engines.gem5stats import counter_rows
from colorsim.run.engines.qemu import qemu_binary

RECORDED = ROOT / "recorded" / "gem5"
SHARED = ROOT.parent / "shared" / "gem5"     # where new recordings arrive
GLANCE = RECORDED / "recordings.csv"


def _run_folders():
    if not RECORDED.is_dir():
        return []
    return sorted(p for p in RECORDED.iterdir()
                  if (p / "gem5" / "stats.txt").is_file())


FOLDERS = _run_folders()
NO_RECORDINGS = pytest.mark.skip(
    reason=f"no recorded gem5 outputs: {RECORDED} is absent or holds no "
           f"run folder with gem5/stats.txt")
RUN_PARAMS = ([pytest.param(p, id=p.name) for p in FOLDERS] or
              [pytest.param(None, marks=NO_RECORDINGS, id="no-recordings")])


def glance_table() -> dict:
    """{folder: {column: number}} from recordings.csv, the numbers noted
    when each run was recorded."""
    if not GLANCE.is_file():
        return {}
    with open(GLANCE, newline="") as f:
        return {r.pop("run_folder"): {k: float(v) for k, v in r.items()}
                for r in csv.DictReader(f)}


TABLE = glance_table()


def _col(folder, column):
    """The noted number of ``folder`` in ``column`` of recordings.csv."""
    row = TABLE.get(folder.name)
    assert row is not None, f"{folder.name} has no row in {GLANCE}"
    return row[column]


def _config(folder):
    return json.loads((folder / "config.json").read_text())


def _per_core_insts(dump, cpus):
    names = [f"board.processor.cores{i if cpus > 1 else ''}.core."
             f"commitStats0.numInsts" for i in range(cpus)]
    values = [dump.get(n) for n in names]
    assert None not in values, f"missing per-core numInsts in {names}"
    return values


def _read_csv(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    return rows[0], rows[1:]


def test_recordings_table_covers_the_runs():
    assert FOLDERS, f"no recorded gem5 outputs under {RECORDED}"
    assert set(TABLE) == {p.name for p in FOLDERS}
    for name, row in TABLE.items():
        assert "schedule_calls" in row and "colored_per_schedule" in row, row


# -- the stats parser on both dumps -------------------------------------

@pytest.mark.parametrize("folder", RUN_PARAMS)
def test_stats_parser_both_dumps(folder):
    cfg = _config(folder)
    cpus = cfg["machine"]["processor"]["cpus"]
    dumps = parse_stats(folder / "gem5" / "stats.txt")
    assert len(dumps) == 2, "kernel's dumpstats, then gem5's exit dump"
    roi_s = cfg["workload"]["roi_ticks"] / 100          # HZ = 100
    for d in dumps:
        stats = d.as_dict()
        # Every counter the collect step maps is there for every core
        # (the repository's copies keep only what the suite reads).
        for i in range(cpus):
            core = f"board.processor.cores{i if cpus > 1 else ''}.core."
            assert f"{core}numCycles" in stats and f"{core}cpi" in stats
        insts = _per_core_insts(d, cpus)
        assert all(v > 0 for v in insts)
        # The SparseHistogram keys add up to the printed sample count.
        for kind in ("read", "write"):
            base = f"board.cache_hierarchy.mem_monitor.{kind}AddrDist"
            keys = [s for s in d.stats if s.base == base and
                    s.key_value is not None and s.key != "samples"]
            assert all(s.key_exact and s.key_value % 32 == 0 and
                       0 <= s.key_value <= 0xFE0 for s in keys)
            assert sum(s.value for s in keys) == stats[f"{base}::samples"]
    # Dump 0 is the region of interest: roi_ticks of modeled time.
    assert dumps[0].get("simSeconds") == pytest.approx(roi_s, rel=0.02)
    # The kernel's dumpstats does not reset: gem5's exit dump holds the
    # region plus the few instructions between dumpstats and exit.
    first, last = (sum(_per_core_insts(d, cpus)) for d in dumps)
    assert first <= last < 1.01 * first
    assert dumps[0].get("simSeconds") <= dumps[1].get("simSeconds")


# -- the collect step reproduces the recorded tables --------------------

@pytest.fixture
def recollected(request, tmp_path):
    folder = request.param
    copy = tmp_path / folder.name
    shutil.copytree(folder, copy, ignore=shutil.ignore_patterns("boot"))
    for f in ("bus_offsets.csv", "counters.csv", "console.log"):
        (copy / f).unlink()
    summary = Gem5Engine().collect(copy)
    return folder, copy, summary


@pytest.mark.parametrize("recollected", RUN_PARAMS, indirect=True)
def test_collect_reproduces_recorded_tables(recollected):
    folder, copy, summary = recollected
    assert summary["config_checks"][0] == "config.json matches the spec"
    # bus_offsets.csv: the recorded columns and rows, in order.
    old_h, old = _read_csv(folder / "bus_offsets.csv")
    new_h, new = _read_csv(copy / "bus_offsets.csv")
    assert new_h[:len(old_h)] == old_h
    if "view" not in old_h:           # recorded before the bus view
        assert set(summary["views"]) <= {"memory", "bus"}
        new = [r for r in new if r[new_h.index("view")] == "memory"]
    cols = [new_h.index(c) for c in old_h]
    assert [[r[i] for i in cols] for r in new] == old
    # counters.csv: every recorded row; new stats only add rows.
    old_h, old = _read_csv(folder / "counters.csv")
    new_h, new = _read_csv(copy / "counters.csv")
    assert new_h == old_h
    known = {(r[0], r[1], r[3]) for r in old}
    assert [r for r in new if (r[0], r[1], r[3]) in known] == old
    assert (copy / "console.log").read_bytes() == \
        (folder / "console.log").read_bytes()


@pytest.mark.parametrize("recollected", RUN_PARAMS, indirect=True)
def test_collect_adds_work_and_speed(recollected):
    folder, copy, summary = recollected
    _, rows = _read_csv(copy / "counters.csv")
    glob = {r[3]: float(r[4]) for r in rows if r[0] == "0" and r[1] == "-1"}
    roi = parse_roi((folder / "console.log").read_text())
    assert glob["schedule_calls"] == roi["schedule_calls"] == \
        summary["schedule_calls"]
    dumps = parse_stats(folder / "gem5" / "stats.txt")
    insts = sum(float(r[4]) for r in rows
                if r[0] == "0" and r[3] == "insts" and r[1] != "-1")
    assert glob["host_mips"] == pytest.approx(
        insts / dumps[0].get("hostSeconds") / 1e6, rel=1e-3)
    assert glob["schedules_per_sim_second"] == pytest.approx(
        roi["schedule_calls"] / dumps[0].get("simSeconds"), rel=1e-3)
    # Every request on the bus (by kind) is at least what memory served.
    run = load_run(copy)
    o = run.offsets
    dump0_reads = (o["dump"] == 0) & (o["kind"] == "read")
    memory_reads = o[dump0_reads & (o["view"] == "memory")]["count"].sum() \
        if "view" in o else o[dump0_reads]["count"].sum()
    assert glob["bus_read"] + glob["bus_rfo"] >= memory_reads
    if "view" in o and (o["view"] == "bus").any():
        # and what the CPUs' bus-view monitors saw is what the buses
        # counted as their own requests (reads and reads for ownership)
        bus_reads = o[dump0_reads & (o["view"] == "bus")]["count"].sum()
        assert bus_reads == pytest.approx(glob["bus_read"] + glob["bus_rfo"],
                                          rel=0.01)


# -- console parsing ------------------------------------------------------

@pytest.mark.parametrize("folder", RUN_PARAMS)
def test_console_schedule_count(folder):
    roi = parse_roi((folder / "console.log").read_text())
    assert roi["roi_jiffies"] == _config(folder)["workload"]["roi_ticks"]
    # Most schedule() calls switch; one may pick the task that called it
    # (2.4's goodness() favours the current task on its own CPU).
    assert 0.9 * roi["schedule_calls"] <= roi["context_switches"] <= \
        roi["schedule_calls"] + 1
    assert roi["schedule_calls"] == _col(folder, "schedule_calls")
    # The analysis finds the same count (console fallback for old runs).
    assert work_units(load_run(folder))["schedule"] == roi["schedule_calls"]


def test_console_parser_edges():
    text = ("roi: begin at jiffies 19, nr_running 1022\r\n"
            "roi: end at jiffies 29: schedules 368 switches 369 recalcs 0 "
            "nr_running 1022\r\n")
    assert parse_roi(text) == {"schedule_calls": 368, "context_switches": 369,
                               "counter_recalcs": 0, "roi_jiffies": 10}
    assert parse_roi("boot: ok\nroi: begin at jiffies 3\n") == {}


# -- speed figures --------------------------------------------------------

@pytest.mark.parametrize("folder", RUN_PARAMS)
def test_speed_figures(folder):
    cpus = _config(folder)["machine"]["processor"]["cpus"]
    d0 = parse_stats(folder / "gem5" / "stats.txt")[0]
    insts = sum(_per_core_insts(d0, cpus))
    # v24's simInsts counts each instruction about twice; per-core
    # commitStats0.numInsts is the count (recorded/gem5/README.md).
    assert 1.9 < d0.get("simInsts") / insts < 2.05
    assert d0.get("hostInstRate") > 1.8 * insts / d0.get("hostSeconds")
    assert insts / 1e6 == pytest.approx(_col(folder, "committed_minsts"),
                                        abs=0.051)
    assert d0.get("hostSeconds") == pytest.approx(
        _col(folder, "host_seconds_measure"), abs=0.051)


def test_speed_ppro4_512k_vanilla():
    """The region's instructions and host seconds as noted at recording
    (recordings.csv), and the speed they make."""
    folder = RECORDED / "ppro4-l2_512k-vanilla-t1024"
    if not folder.is_dir():
        pytest.skip(f"{folder} is not recorded")
    d0 = parse_stats(folder / "gem5" / "stats.txt")[0]
    insts = sum(_per_core_insts(d0, 4))
    assert insts / 1e6 == pytest.approx(_col(folder, "committed_minsts"), abs=0.05)
    mips = insts / d0.get("hostSeconds") / 1e6
    noted = _col(folder, "committed_minsts") / _col(folder, "host_seconds_measure")
    assert mips == pytest.approx(noted, rel=0.01)
    rows = counter_rows(parse_stats(folder / "gem5" / "stats.txt"))
    per_core = [r[4] for r in rows if r[0] == 0 and r[3] == "insts"]
    assert len(per_core) == 4 and sum(per_core) == insts


# -- the analysis on recorded runs ------------------------------------------

def _colored_span():
    """[lo, hi) of recordings.csv's "colored_lines_0xA_0xB" column."""
    for h in next(iter(TABLE.values()), {}):
        m = re.match(r"colored_lines_(0x[0-9a-f]+)_(0x[0-9a-f]+)$", h)
        if m:
            return int(m.group(1), 16), int(m.group(2), 16) + 1
    pytest.fail(f"{GLANCE} has no 'colored_lines_0x.._0x..' column")


@pytest.mark.parametrize("folder", RUN_PARAMS)
def test_colored_lines_per_schedule(folder):
    run = load_run(folder)
    assert bus_views(run)[0] in ("bus", "memory")
    lo, hi = _colored_span()
    h = offset_histogram(run, "line")
    colored = h[(h.index >= lo) & (h.index < hi)].sum()
    assert colored == _col(folder, "colored_lines_0x20_0x41f")
    s = offset_summary([run], view="line").iloc[0]
    assert h.sum() == s["total"]
    per = colored / work_units(run)["schedule"]
    want = _col(folder, "colored_per_schedule")
    assert per == pytest.approx(want, abs=0.051 if want < 10 else 0.51)
    assert offset_histogram(run).sum() == s["total"]


# -- the cross-engine comparison, on fresh QEMU runs ---------------------

def _cli(*args):
    return subprocess.run([sys.executable, "-m", "colorsim", *map(str, args)],
                          cwd=ROOT, capture_output=True, text=True,
                          timeout=600)


@pytest.fixture(scope="module")
def qemu_512k(tmp_path_factory):
    """Fresh QEMU runs of the recorded 512 KiB configuration."""
    qemu_binary()            # set-up builds it: missing is a failure, not a skip
    out = tmp_path_factory.mktemp("qemu")
    runs = {}
    for kernel in ("vanilla", "c32"):
        p = _cli("run", "--machine", "ppro4", "--l2", "512KiB", "--kernel",
                 kernel, "--tasks", "1024", "--out", out, "--name", kernel)
        assert p.returncode == 0, p.stderr
        runs[kernel] = out / kernel
    return runs


def _gem5_512k(kernel):
    folder = RECORDED / f"ppro4-l2_512k-{kernel}-t1024"
    if not folder.is_dir():
        pytest.skip(f"{folder} is not recorded")
    return folder


def _totals(stdout):
    """{label: (qemu, qemu/sched, gem5, gem5/sched, ratio)} of the totals."""
    out = {}
    for line in stdout.splitlines():
        m = re.match(r"\s*(colored lines \S+|all offsets)\s+(\S+)\s+(\S+)\s+"
                     r"(\S+)\s+(\S+)\s+(\S+)$", line)
        if m:
            out[m.group(1).split()[0]] = tuple(float(x) for x in m.groups()[1:])
    return out


@pytest.mark.parametrize("kernel", ["vanilla", "c32"])
def test_compare_recorded_gem5_with_fresh_qemu(qemu_512k, kernel):
    gem5 = _gem5_512k(kernel)
    qemu = qemu_512k[kernel]
    # The QEMU collect step put the kernel's count into counters.csv.
    q = load_run(qemu)
    c = q.counters
    sched = c[(c["stat"] == "schedule_calls") & (c["cpu"] == -1)]["value"]
    assert list(sched) == [parse_roi((qemu / "console.log").read_text())
                           ["schedule_calls"]]
    assert set(q.offsets["view"]) == {"bus"}
    p = _cli("compare", qemu, gem5)
    assert p.returncode == 0, p.stderr
    totals = _totals(p.stdout)
    qn, qps, gn, gps, ratio = totals["colored"]
    g_sched = _col(gem5, "schedule_calls")
    assert gn == _col(gem5, "colored_lines_0x20_0x41f")
    assert gps == pytest.approx(gn / g_sched, abs=0.006)
    assert qps == pytest.approx(qn / float(sched.iloc[0]), abs=0.006)
    assert ratio == pytest.approx(gps / qps, abs=0.002)
    # Per-offset rows add up to the totals.
    rows = [line.split() for line in p.stdout.splitlines()
            if re.match(r"\s+0x[0-9a-f]{4}\s", line)]
    assert sum(float(r[1]) for r in rows) == totals["all"][0]
    assert sum(float(r[3]) for r in rows) == totals["all"][2]
    if kernel == "vanilla":
        # The engines agree per schedule() for vanilla (within 2 %).
        assert 0.95 < ratio < 1.05


def test_compare_refuses_other_configurations(qemu_512k):
    gem5_c32 = _gem5_512k("c32")
    for args, what in (((qemu_512k["vanilla"], gem5_c32), "variant"),
                       ((qemu_512k["vanilla"], qemu_512k["c32"]), "one QEMU"),
                       ((qemu_512k["c32"], RECORDED / "nonexistent"),
                        "not a run directory")):
        p = _cli("compare", *args)
        assert p.returncode == 2, p.stdout
        assert "Traceback" not in p.stderr
        assert p.stderr.startswith("colorsim: error:") and what in p.stderr
        assert len(p.stderr.strip().splitlines()) == 1
    other_l2 = RECORDED / "ppro4-l2_256k-c32-t1024"
    if other_l2.is_dir():
        p = _cli("compare", qemu_512k["c32"], other_l2)
        assert p.returncode == 2 and "l2 (524288" in p.stderr


# -- the repository's copies are the shared recordings, trimmed ------------

def _shared_recording(folder):
    """The full recording ``folder`` was trimmed from: a folder of that name
    in the shared recordings or in one of their dated sets, made by the
    same run (its config.json's start time is ours)."""
    started = _config(folder).get("started")
    for full in [SHARED / folder.name, *sorted(SHARED.glob(f"*/{folder.name}"))]:
        if (full / "gem5" / "stats.txt").is_file() and \
                json.loads((full / "config.json").read_text()).get("started") == started:
            return full
    return None


@pytest.mark.skipif(not SHARED.is_dir(),
                    reason=f"no full recordings in {SHARED} to trim again")
@pytest.mark.parametrize("folder", RUN_PARAMS)
def test_trimmed_copy_is_the_shared_recording(folder, tmp_path):
    full = _shared_recording(folder)
    if full is None:
        pytest.skip(f"{folder.name}: this recording is not in {SHARED}")
    p = subprocess.run([sys.executable, str(ROOT / "scripts" /
                                            "trim-gem5-recording.py"),
                        str(full), str(tmp_path / folder.name)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    ours = sorted(f.relative_to(folder) for f in folder.rglob("*") if f.is_file())
    again = sorted(f.relative_to(tmp_path / folder.name)
                   for f in (tmp_path / folder.name).rglob("*") if f.is_file())
    assert ours == again
    for rel in ours:
        assert (folder / rel).read_bytes() == \
            (tmp_path / folder.name / rel).read_bytes(), rel
    # The trim keeps every dump and drops most lines.
    text = (folder / "gem5" / "stats.txt").read_text()
    assert text.count("Begin Simulation Statistics") == \
        (full / "gem5" / "stats.txt").read_text().count("Begin Simulation Statistics")
