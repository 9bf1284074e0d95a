"""benchmarks/bench_engine.py on a shared host: the configurations take
turns and each keeps every run's wall and CPU time, so the best of each
comes from the same stretches of host load."""

import importlib.util
import sys

import pytest

from colorsim import ROOT
from colorsim.run.engines.qemu import EXIT_OK


def _bench():
    spec = importlib.util.spec_from_file_location(
        "bench_engine", ROOT / "benchmarks" / "bench_engine.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _mode(log, name, code=EXIT_OK):
    # A stand-in for QEMU: notes its turn and exits as a finished run does.
    return (lambda d: ["sh", "-c", f"echo {name} >> {log}; exit {code}"], False)


def test_modes_alternate_and_keep_every_run(tmp_path):
    log = tmp_path / "order"
    modes = {n: _mode(log, n) for n in ("plain", "counting", "timing")}
    times, cpu, switches, stats = _bench().run_modes(modes, 3, tmp_path)
    assert log.read_text().split() == ["plain", "counting", "timing"] * 3
    assert all(len(times[n]) == 3 and len(cpu[n]) == 3 for n in modes)
    assert sorted(switches) == sorted(modes)
    assert all(t > 0 for n in modes for t in times[n])
    assert stats == {}


def test_a_failed_run_stops_the_bench(tmp_path):
    modes = {"counting": _mode(tmp_path / "o", "counting", code=3)}
    with pytest.raises(SystemExit, match=r"QEMU \(counting\) failed \(3\)"):
        _bench().run_modes(modes, 2, tmp_path)


def test_help_says_why_the_minimum(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["bench_engine.py", "--help"])
    with pytest.raises(SystemExit):
        _bench().main()
    out = " ".join(capsys.readouterr().out.split())
    assert "best (minimum)" in out and "time the host gave to other processes" in out


def test_mode_names_with_commas_make_usable_directories(tmp_path):
    # the directory goes into QEMU's -plugin argument, which commas split
    seen = tmp_path / "dirs"
    modes = {n: (lambda d: ["sh", "-c", f"echo {d} >> {seen}; exit {EXIT_OK}"],
                 False)
             for n in ("timing", "timing, fetch off")}
    _bench().run_modes(modes, 2, tmp_path)
    dirs = seen.read_text().split("\n")[:-1]
    assert len(dirs) == 4 and len(set(dirs)) == 4
    assert not any("," in d or " " in d for d in dirs)


def test_costs_table_gives_what_each_cost_adds_per_instruction(capsys):
    best = {"counting": 0.5, "timing": 1.0, "timing, fetch off": 0.9,
            "timing, all of them off": 0.7}
    stats = {"counting": {"insts_since_start": 50_000_000},
             "timing": {"insts_since_start": 50_000_000},
             "timing, fetch off": {"insts_since_start": 45_000_000},
             "timing, all of them off": {"insts_since_start": 50_000_000}}
    _bench().print_costs(best, stats)
    out = capsys.readouterr().out
    assert "counting 10.0 ns, timing 20.0 ns (+10.0 ns)" in out
    rows = {line.split()[0]: line.split() for line in out.splitlines()[2:]}
    assert rows["fetch"][-2:] == ["20.0", "+0.0"]     # 0.9 s / 45 M: no saving
    assert rows["all"][-2:] == ["14.0", "+6.0"]


def test_slice_table_compares_the_modes_per_run_and_per_instruction(capsys):
    best = {"counting": 0.5, "timing": 1.0,
            "counting with slice": 0.5, "timing with slice": 0.8}
    stats = {"counting": {"insts_since_start": 40_000_000},
             "timing": {"insts_since_start": 50_000_000},
             "counting with slice": {"insts_since_start": 40_000_000},
             "timing with slice": {"insts_since_start": 64_000_000}}
    _bench().print_slices(best, stats, 1000)
    out = capsys.readouterr().out
    assert "timing, 1000 instructions" in out and "64.0" in out
    # 0.8 / 0.5 per run; (0.8 / 64 M) / (0.5 / 40 M) per instruction
    assert "mode 1.60x (ratio of the bests), per guest instruction 1.00x" in out


def test_a_slice_the_machine_cannot_take_is_refused(monkeypatch):
    monkeypatch.setattr(sys, "argv", ["bench_engine.py", "--rr-slice-min", "-1"])
    with pytest.raises(SystemExit, match="--rr-slice-min: rr_slice_min -1 is outside"):
        _bench().main()
