"""The built kernels: task layout, coloring parameters, symbols."""

import json
import re

import pytest

from colorsim import ROOT
from colorsim.run import m5ops
from colorsim.run.build import ensure_built
from colorsim.describe.machine import get_machine
from colorsim.describe.variants import parse_variant

VARIANTS = ["vanilla", "c4", "c32", "mq", "mq-c32"]   # mq: tests/test_mq.py too


@pytest.fixture(scope="module")
def layouts():
    m = get_machine("ppro4")
    vs = {k: parse_variant(k, m) for k in VARIANTS}
    ensure_built([v.build_id for v in vs.values()], plugin=False,
                 progress=lambda *_: None)
    out = {}
    for k, v in vs.items():
        out[k] = json.loads((ROOT / "build/kernels" / v.build_id / "layout.json").read_text())
    return out


def test_walk_fields_share_one_line_at_0x20(layouts):
    for lay in layouts.values():
        f = lay["task_struct"]["fields"]
        hot = lay["scheduler_hot"]
        assert hot["line_offset"] == 0x20 and hot["line_size"] == 32
        for name in hot["fields_read_per_task"]:
            assert 0x20 <= f[name]["offset"] < 0x40, name
            assert f[name]["offset"] + f[name]["size"] <= 0x40, name
        assert hot["first_touched"] == "has_cpu"
        assert hot["first_touched_offset"] == 0x30


def test_linux_244_field_order(layouts):
    f = layouts["vanilla"]["task_struct"]["fields"]
    expect = {"state": 0x00, "need_resched": 0x14, "counter": 0x20,
              "nice": 0x24, "policy": 0x28, "mm": 0x2c, "has_cpu": 0x30,
              "processor": 0x34, "cpus_allowed": 0x38, "run_list.next": 0x3c,
              "run_list.prev": 0x40, "sleep_time": 0x44, "next_task": 0x48}
    assert {k: f[k]["offset"] for k in expect} == expect


def test_task_struct_size_and_stack_room(layouts):
    from colorsim.describe.variants import TASK_STRUCT_SIZE
    for lay in layouts.values():
        size = lay["task_struct"]["size"]
        assert size == TASK_STRUCT_SIZE      # the validator's rule uses it
        v = lay["variant"]
        worst = (v["colors"] - 1) * v["line"] + size
        assert lay["thread_size"] - worst >= 4096


def test_coloring_parameters(layouts):
    for k in ("vanilla", "c32"):          # the scheduler does not change coloring
        assert layouts[f"mq-{k}".replace("-vanilla", "")]["variant"] == {
            **layouts[k]["variant"], "scheduler": "mq",
            "name": "mq" if k == "vanilla" else "mq-c32",
            "build_id": "mq-" + layouts[k]["variant"]["build_id"]}
    assert layouts["vanilla"]["variant"]["color_mask"] == 0
    assert layouts["c4"]["variant"]["color_mask"] == 0x60
    assert layouts["c32"]["variant"]["color_mask"] == 0x3e0
    assert layouts["c32"]["variant"]["color_shift"] == 12


def test_symbol_ranges(layouts):
    for lay in layouts.values():
        lo, hi = lay["ranges"]["rqloop"]
        assert lay["symbols"]["runqueue_walk"]["addr"] == lo and hi > lo
        (ulo, uhi), (vlo, vhi) = lay["ranges"]["user"]
        assert uhi > ulo and not (lo <= ulo < hi)
        # ring-3 programs: the user half of every address space (mm.h)
        assert (vlo, vhi) == (0x8000000000, 0x800000000000)
        if lay["variant"]["scheduler"] == "mq":    # one lock per CPU queue
            locks = [l["addr"] for l in lay["scheduler"]["runqueue_locks"]]
        else:
            locks = [lay["symbols"]["runqueue_lock"]["addr"]]
            assert locks[0] % 32 == 0
        for r in ("spin_lock", "spin_unlock"):
            lo, hi = lay["ranges"][r]
            assert hi > lo == lay["symbols"][r]["addr"]


def test_m5op_numbers_agree_with_the_kernel():
    h = (ROOT / "kernels/include/m5op.h").read_text()
    defs = {m.group(1): int(m.group(2), 16)
            for m in re.finditer(r"#define M5OP_(\w+)\s+(0x[0-9A-Fa-f]+)", h)}
    assert defs["BASE"] == m5ops.M5OP_BASE
    for name in ("EXIT", "FAIL", "RESET_STATS", "DUMP_STATS", "CHECKPOINT"):
        assert defs[name] == getattr(m5ops, name), name
    assert m5ops.address(m5ops.RESET_STATS) == 0xFFFF4000
    assert m5ops.decode(0xFFFF4100) == m5ops.DUMP_STATS


def test_images_have_both_entries():
    # ELF64 for gem5 (64-bit entry), ELF32 container for QEMU's multiboot.
    d = ROOT / "build/kernels/vanilla-l32"
    assert (d / "kernel.elf").read_bytes()[4] == 2       # ELFCLASS64
    assert (d / "kernel.mb.elf").read_bytes()[4] == 1    # ELFCLASS32
    sym = (d / "kernel.sym").read_text()
    entry64 = int(re.search(r"^([0-9a-f]+) (?:[0-9a-f]+ )?T entry64$", sym, re.M).group(1), 16)
    e_entry = int.from_bytes((d / "kernel.elf").read_bytes()[24:32], "little")
    assert e_entry == entry64 and e_entry >= 0x100000
