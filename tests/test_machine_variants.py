"""Machine descriptions, kernel variants and the coloring arithmetic."""

import pytest

from colorsim.errors import ConfigError
from colorsim.describe.machine import CacheGeometry, get_machine, load_machines
from colorsim.units import parse_size
from colorsim.describe.variants import (KernelVariant, colors_needed, parse_variant,
                               variant_from_build_id)


def test_sizes_are_binary():
    assert parse_size("512KiB") == parse_size("512KB") == 524288
    assert parse_size("1MiB") == 1 << 20
    with pytest.raises(ConfigError, match="unknown size unit"):
        parse_size("3 parsecs")


def test_machines_match_the_paper():
    ms = load_machines()
    p = ms["ppro4"]
    assert p.processor.cpus == 4
    assert (p.caches.l1d.size, p.caches.l1d.assoc) == (8192, 2)
    assert (p.caches.l2.size, p.caches.l2.assoc, p.caches.l2.line) == (512 << 10, 4, 32)
    assert [s >> 10 for s in p.l2_choices] == [256, 512, 1024]
    x = ms["piii8"]
    assert x.processor.cpus == 8 and x.caches.l2.size == 1 << 20


@pytest.mark.parametrize("l2,b", [("256KiB", 16), ("512KiB", 17), ("1MiB", 18)])
def test_eq1_way_bits(l2, b):
    m = get_machine("ppro4").with_l2(l2)
    assert m.caches.l2.way_bits == b
    v = parse_variant("c32", m)
    assert v.color_shift == b - 5
    assert v.color_mask == 0x3e0


def test_paper_masks():
    m = get_machine("ppro4")
    assert parse_variant("c4", m).color_mask == 0x60
    assert parse_variant("c8", m).color_mask == 0xe0
    assert parse_variant("vanilla", m).color_mask == 0


def test_figure5_example():
    # 32 KiB direct-mapped, 4 colors: blocks at 8K, 40K, 72K, 104K get
    # offsets 0, 0x20, 0x40, 0x60 (the paper's "72K -> 72K + 0x40").
    v = KernelVariant(colors=4, line=32, way_bits=15)
    assert [v.color_offset(k * 1024) for k in (8, 40, 72, 104)] == [0, 0x20, 0x40, 0x60]


def test_colors_needed_eq3():
    assert [colors_needed(p, 512 << 10) for p in (256, 512, 1024)] == [4, 8, 16]
    assert [colors_needed(p, 1 << 20) for p in (256, 512, 1024)] == [2, 4, 8]


def test_build_id_round_trip():
    m = get_machine("ppro4")
    for k in ("vanilla", "c2", "c32"):
        v = parse_variant(k, m)
        assert variant_from_build_id(v.build_id).build_id == v.build_id


@pytest.mark.parametrize("kernel,msg", [
    ("c7", "power of two"),
    ("c256", "past the end of its 8192 B block"),
    ("c128", "leaving 2464 B of kernel stack"),
    ("c1", "at least 2 colors"),
    ("colored", "unknown kernel"),
])
def test_bad_kernels_are_refused(kernel, msg):
    with pytest.raises(ConfigError, match=msg):
        parse_variant(kernel, get_machine("ppro4"))


def test_bad_machines_are_refused():
    with pytest.raises(ConfigError, match="unknown machine 'vax'.*ppro4"):
        get_machine("vax")
    with pytest.raises(ConfigError, match="has 4 CPUs; cannot run with 5"):
        get_machine("ppro4").with_cpus(5)
    with pytest.raises(ConfigError, match="power of two"):
        get_machine("ppro4").with_l2("500KiB")
    with pytest.raises(ConfigError, match="power of two"):
        CacheGeometry(3000, 4, 32)


def test_the_color_rule_comes_from_the_kernel_headers():
    from colorsim.describe.variants import (KERNEL_STACK_MIN, TASK_STRUCT_SIZE,
                                   THREAD_SIZE, colors_rule, max_colors)
    assert (THREAD_SIZE, KERNEL_STACK_MIN, TASK_STRUCT_SIZE) == (8192, 4096, 1664)
    # (N-1) x line + 1664 <= 4096
    assert max_colors(32) == 64 and max_colors(64) == 32 and max_colors(16) == 128
    assert parse_variant("c64", get_machine("ppro4")).colors == 64
    assert "c2..c64" in colors_rule(32)


def test_cache_behaviour_is_machine_data(tmp_path):
    # configs/machines.toml states replacement, inclusion and fetches for
    # every machine; the QEMU engine passes them to the bus monitor.
    from colorsim.run.engines.qemu import QemuEngine
    from colorsim.describe.runspec import RunSpec, Workload
    for m in load_machines().values():
        p = m.cache_policy
        assert (p.l1_replacement, p.l2_replacement) == ("lru", "lru")
        assert p.inclusion == "non-inclusive" and p.instruction_fetch is False
    m = get_machine("ppro4")
    layout = {"ranges": {"rqloop": [1, 2], "user": []}}
    args = QemuEngine().plugin_args(RunSpec(m, parse_variant("c32", m), Workload()),
                                    tmp_path, layout).split(",")
    assert {"l1repl=lru", "l2repl=lru", "inclusive=0"} <= set(args)
    assert not any(a.startswith("l1i=") for a in args)
    text = (tmp_path.parent / "m.toml")
    src = open(__import__("colorsim").ROOT / "configs" / "machines.toml").read()
    text.write_text(src.replace('l2 = "lru" }', 'l2 = "plru" }')
                       .replace("instruction_fetch = false", "instruction_fetch = true")
                       .replace('inclusion = "non-inclusive"', 'inclusion = "inclusive"'))
    m2 = get_machine("ppro4", text)
    args = QemuEngine().plugin_args(RunSpec(m2, parse_variant("c32", m2), Workload()),
                                    tmp_path, layout).split(",")
    assert {"l2repl=plru", "inclusive=1", "l1i=8192:4:32"} <= set(args)


@pytest.mark.parametrize("change, msg", [
    (('l2 = "lru" }', 'l2 = "fifo" }'), "l2 replacement 'fifo'"),
    (('inclusion = "non-inclusive"', 'inclusion = "exclusive"'), "inclusion 'exclusive'"),
    (("instruction_fetch = false", 'instruction_fetch = "yes"'), "instruction_fetch must be"),
])
def test_bad_cache_behaviour_is_refused(change, msg, tmp_path):
    src = open(__import__("colorsim").ROOT / "configs" / "machines.toml").read()
    f = tmp_path / "m.toml"
    f.write_text(src.replace(*change))
    with pytest.raises(ConfigError, match=msg):
        get_machine("ppro4", f)
