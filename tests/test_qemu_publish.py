"""busmon's publish= names a clock array the kernel must size for every slot
the monitor writes (colorsim/run/engines/qemu.py publish_arg)."""

import pytest

from colorsim.errors import ConfigError
from colorsim.run.engines import qemu
from colorsim.run.linux24 import timing_layout


def test_a_clock_array_short_of_the_monitors_slots_is_refused():
    assert qemu.publish_arg(0x1000, 8 * qemu.PUBLISH_SLOTS, "x") == "publish=0x1000"
    # Linux 2.4's array once ended at the floor (65 slots): the machine's
    # time went over the tick length that followed it
    with pytest.raises(ConfigError, match="holds 65 clock slots; the bus monitor writes 66"):
        qemu.publish_arg(0x1000, 8 * 65, "Linux 2.4's colorsim_clock")


def test_a_linux24_layout_carries_its_clock_arrays_size():
    syms = {"colorsim_clock": {"addr": 0xC0100000, "size": 528},
            "colorsim_timing_check": {"addr": 0xC0200000, "size": 64}}
    t = timing_layout(syms, 0xC0000000)
    assert t["publish"] == 0x100000 and t["publish_bytes"] == 528
