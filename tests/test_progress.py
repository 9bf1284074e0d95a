"""A long run says how far it is, at least once a minute: the guest's
instructions and modelled time, read from the bus monitor's .progress
(which the guest never sees), and the time left by the measured cost."""

from colorsim.describe.machine import get_machine
from colorsim.describe.runspec import RunSpec, Workload
from colorsim.describe.variants import parse_variant
from colorsim.run import runner


def test_a_run_prints_its_progress_and_keeps_no_progress_file(tmp_path, monkeypatch):
    monkeypatch.setattr(runner, "PROGRESS_EVERY_S", 1.0)   # a minute, for a test
    m = get_machine("ppro4").with_cpus(2)
    w = Workload(program="/bin/web", client_cpus=2,
                 args="--httpd,32,--clients,32,--requests,20")
    s = RunSpec(m, parse_variant("vanilla", m), w, timeout_s=300, timing=True)
    lines = []
    run = runner.run(s, name="p", out=tmp_path, progress=lines.append)
    notes = [l for l in lines if l.startswith("  run: ")]
    assert notes, lines
    assert all("elapsed" in l and "left by the measured cost estimate" in l
               or "past the" in l for l in notes), notes
    late = [l for l in notes if "G instructions" in l and "modelled" in l]
    assert late, notes               # the monitor's numbers reached the runner
    assert not (run / ".progress").exists()


def test_progress_line_reads_the_monitors_numbers(tmp_path):
    m = get_machine("ppro4")
    s = RunSpec(m, parse_variant("vanilla", m), Workload())
    (tmp_path / ".progress").write_text("insts 3000000000\ncycles 100000000\n")
    got = runner.read_progress(tmp_path)
    assert got == {"insts": 3_000_000_000, "cycles": 100_000_000}
    line = runner.progress_line(s, 150.0, got, 600.0)
    assert line == ("  run: 2:30 elapsed, guest 3.00 G instructions (20 M/s), "
                    "modelled 0.500 s, about 7:30 left by the measured cost estimate")
