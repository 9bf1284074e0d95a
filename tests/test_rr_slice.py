"""QEMU's smallest and largest round-robin slice (machines.toml
[x.emulation] rr_slice_min and rr_slice_max, our QEMU patches 0005 and
0006): 0 leaves runs as they were, and a value above 0 reaches QEMU and
changes the interleaving."""

import dataclasses
import json

import pytest

from colorsim.describe.machine import get_machine
from colorsim.describe.runspec import RunSpec, Workload
from colorsim.describe.variants import parse_variant
from colorsim.errors import ConfigError
from colorsim.run import runner
from colorsim.run.engines.qemu import QemuEngine


def _spec(slice_min, timing=True, slice_max=0):
    m = get_machine("ppro4")
    m = dataclasses.replace(
        m, emulation=dataclasses.replace(m.emulation, rr_slice_min=slice_min,
                                         rr_slice_max=slice_max))
    return RunSpec(m, parse_variant("vanilla", m),
                   Workload(tasks=64, roi_ticks=2, warmup_ticks=2), timing=timing)


def test_zero_is_qemus_own_slices_and_leaves_run_identities_alone():
    m = get_machine("ppro4")
    assert m.emulation.rr_slice_min == m.emulation.rr_slice_max == 0
    assert m.to_dict()["emulation"] == {"icount_shift": m.emulation.icount_shift}
    assert m.emulation.accel == "tcg,thread=single"
    assert _spec(0).default_name() == RunSpec(
        m, parse_variant("vanilla", m),
        Workload(tasks=64, roi_ticks=2, warmup_ticks=2), timing=True).default_name()


def test_a_slice_is_part_of_the_command_and_the_identity(tmp_path):
    spec = _spec(1000)
    assert spec.machine.to_dict()["emulation"]["rr_slice_min"] == 1000
    layout = runner.prepare(spec, progress=lambda *_: None)
    cmd = QemuEngine().command(spec, tmp_path, layout)
    assert cmd[cmd.index("-accel") + 1] == "tcg,thread=single,rr-slice-min=1000"
    assert QemuEngine().mode(spec)["accel"] == "tcg,thread=single,rr-slice-min=1000"
    assert spec.default_name() != _spec(0).default_name()


def test_qemu_honours_the_slice(tmp_path):
    """The same timing run with QEMU's slices and with a floor of 1000
    instructions: the guest interleaves differently, so the instructions
    it executes differ, and each repeats exactly."""
    insts = {}
    for n in (0, 1000, 1000):
        d = runner.run(_spec(n), name=f"s{n}-{len(insts)}", out=tmp_path,
                       progress=lambda *_: None)
        got = json.loads((d / "busmon.json").read_text())["insts_since_start"]
        cfg = json.loads((d / "config.json").read_text())
        assert cfg["emulation"]["accel"].endswith(",rr-slice-min=1000") == (n > 0)
        insts.setdefault(n, set()).add(got)
    assert len(insts[1000]) == 1, insts          # repeats exactly
    assert insts[0] != insts[1000], insts


def test_a_cap_is_part_of_the_command_and_the_identity(tmp_path):
    spec = _spec(0, slice_max=250)
    assert spec.machine.to_dict()["emulation"]["rr_slice_max"] == 250
    assert "rr_slice_min" not in spec.machine.to_dict()["emulation"]
    layout = runner.prepare(spec, progress=lambda *_: None)
    cmd = QemuEngine().command(spec, tmp_path, layout)
    assert cmd[cmd.index("-accel") + 1] == "tcg,thread=single,rr-slice-max=250"
    both = _spec(100, slice_max=250)
    assert both.machine.emulation.accel == ("tcg,thread=single,rr-slice-min=100,"
                                            "rr-slice-max=250")
    names = {_spec(0).default_name(), spec.default_name(), both.default_name()}
    assert len(names) == 3


def test_a_floor_above_the_cap_is_refused():
    with pytest.raises(ConfigError, match="rr_slice_min 1000 is above rr_slice_max 250"):
        _spec(1000, slice_max=250)
    with pytest.raises(ConfigError, match="rr_slice_max -1 is outside"):
        _spec(0, slice_max=-1)


def test_qemu_honours_the_cap(tmp_path):
    """A cap of 250 instructions: QEMU accepts it, the guest interleaves
    more finely than with QEMU's own slices, so its instruction count
    differs, and the run repeats exactly."""
    insts = {}
    for n in (0, 250, 250):
        d = runner.run(_spec(0, slice_max=n), name=f"m{n}-{len(insts)}",
                       out=tmp_path, progress=lambda *_: None)
        got = json.loads((d / "busmon.json").read_text())["insts_since_start"]
        cfg = json.loads((d / "config.json").read_text())
        assert cfg["emulation"]["accel"].endswith(",rr-slice-max=250") == (n > 0)
        insts.setdefault(n, set()).add(got)
    assert len(insts[250]) == 1, insts
    assert insts[0] != insts[250], insts
