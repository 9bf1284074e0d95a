"""QEMU's smallest round-robin slice (machines.toml [x.emulation]
rr_slice_min, our QEMU patch 0005): 0 leaves runs as they were, and a
value above 0 reaches QEMU and changes the interleaving."""

import dataclasses
import json

from colorsim.describe.machine import get_machine
from colorsim.describe.runspec import RunSpec, Workload
from colorsim.describe.variants import parse_variant
from colorsim.run import runner
from colorsim.run.engines.qemu import QemuEngine


def _spec(slice_min, timing=True):
    m = get_machine("ppro4")
    m = dataclasses.replace(
        m, emulation=dataclasses.replace(m.emulation, rr_slice_min=slice_min))
    return RunSpec(m, parse_variant("vanilla", m),
                   Workload(tasks=64, roi_ticks=2, warmup_ticks=2), timing=timing)


def test_zero_is_qemus_own_slices_and_leaves_run_identities_alone():
    m = get_machine("ppro4")
    assert m.emulation.rr_slice_min == 0
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
