"""The gem5 parameters built from every machine, without gem5."""

import json
import subprocess
import sys

import pytest

from colorsim import ROOT
from colorsim.run import m5ops
from colorsim.run.engines.gem5 import Gem5Engine, check_config_json, params_module
from colorsim.describe.machine import load_machines
from colorsim.describe.runspec import RunSpec, Workload
from colorsim.describe.variants import parse_variant

P = params_module()


def _cases():
    for name, machine in sorted(load_machines().items()):
        for l2 in machine.l2_choices or (machine.caches.l2.size,):
            yield pytest.param(machine.with_l2(l2), id=f"{name}-l2_{l2 >> 10}k")


def _spec(machine, kernel="vanilla"):
    return RunSpec(machine, parse_variant(kernel, machine), Workload(),
                   engine="gem5")


@pytest.mark.parametrize("machine", list(_cases()))
@pytest.mark.parametrize("cpu", ["timing", "o3", "atomic"])
def test_params_match_machine(machine, cpu):
    prm = Gem5Engine(cpu=cpu).params(_spec(machine))
    caches = machine.caches
    for level, geom in (("l1i", caches.l1i), ("l1d", caches.l1d),
                        ("l2", caches.l2)):
        c = prm["caches"][level]
        assert (c["size"], c["assoc"], c["line"]) == \
            (geom.size, geom.assoc, geom.line)
        assert c["sets"] == geom.sets
        assert c["prefetcher"] is None
        assert c["writeback_clean"] is False
    assert prm["caches"]["l1i"]["is_read_only"] is True
    assert prm["board"]["cache_line_size"] == caches.line == 32
    assert prm["board"]["clock_hz"] == machine.processor.clock_hz
    assert prm["processor"]["num_cores"] == machine.processor.cpus
    assert prm["processor"]["lapic_hz"] == machine.processor.clock_hz // 16
    assert prm["memory"]["size"] == machine.memory.size
    assert prm["memory"]["load_to_use"] == f"{machine.memory.latency_ns:g}ns"
    mon = prm["monitor"]
    assert mon["disable_addr_dists"] is False
    assert mon["read_addr_mask"] == mon["write_addr_mask"] == 0xFE0
    assert mon["max_key"] < 1_000_000
    assert prm["processor"]["cpu_type"] == cpu
    fbs = prm["processor"]["fetch_buffer_size"]
    assert fbs == (32 if cpu == "o3" else None)


def test_boot_phase_is_atomic():
    m = load_machines()["ppro4"]
    prm = Gem5Engine(cpu="o3").params(_spec(m), phase="boot")
    assert prm["processor"]["cpu_type"] == "atomic"
    assert prm["processor"]["fetch_buffer_size"] is None


def test_l2_is_4way_not_stdlib_16way():
    for m in load_machines().values():
        assert Gem5Engine().params(_spec(m))["caches"]["l2"]["assoc"] == 4


@pytest.mark.parametrize("line,mask", [(32, 0xFE0), (64, 0xFC0),
                                       (16, 0xFF0)])
def test_page_offset_mask(line, mask):
    assert P.page_offset_mask(line) == mask


def test_spec_validation_messages():
    m = load_machines()["ppro4"]
    d = Gem5Engine().spec_dict(_spec(m))
    bad = json.loads(json.dumps(d))
    bad["machine"]["caches"]["l2"]["line"] = 64
    with pytest.raises(P.SpecError, match="one line size"):
        P.validate_spec(bad)
    bad = json.loads(json.dumps(d))
    bad["machine"]["memory"]["size"] = 4 * 1024**3
    with pytest.raises(P.SpecError, match="3 GiB"):
        P.validate_spec(bad)
    with pytest.raises(P.SpecError, match="atomic, timing, o3"):
        P.CpuType.from_str("minor")


def test_spec_is_machine_dict():
    """No second copy: the spec carries Machine.to_dict() verbatim."""
    m = load_machines()["piii8"]
    d = Gem5Engine().spec_dict(_spec(m))
    assert d["machine"] == json.loads(json.dumps(m.to_dict()))
    # gem5's LAPIC timer runs at clock / 16; gem5 does not trap SSE on
    # CR0.TS, so the kernel switches FPU state eagerly there
    assert d["kernel"]["cmdline"].endswith(
        f"lapic_hz={m.processor.clock_hz // 16} fpu_eager=1")


def test_run_fs_print_params_without_gem5(tmp_path):
    """run_fs.py's pure part runs under plain python3."""
    m = load_machines()["ppro4"].with_l2("256KiB")
    eng = Gem5Engine(cpu="o3")
    spec = eng.write_inputs(_spec(m), tmp_path)
    out = subprocess.run(
        [sys.executable, str(ROOT / "configs/gem5/run_fs.py"), "--spec",
         str(spec), "--cpu", "o3", "--print-params"],
        check=True, capture_output=True, text=True).stdout
    prm = json.loads(out)
    assert prm["caches"]["l2"]["size"] == 256 * 1024
    assert prm["processor"]["fetch_buffer_size"] == 32
    assert prm == json.loads(json.dumps(eng.params(_spec(m))))


def test_m5op_addresses():
    assert m5ops.address(m5ops.RESET_STATS) == 0xFFFF4000
    assert m5ops.address(m5ops.DUMP_STATS) == 0xFFFF4100
    assert m5ops.address(m5ops.EXIT) == 0xFFFF2100
    assert m5ops.address(m5ops.CHECKPOINT) == 0xFFFF4300
    assert m5ops.M5OP_BASE == P.M5OPS_BASE
    for func in m5ops.NAMES:
        assert m5ops.decode(m5ops.address(func)) == func
    assert m5ops.decode(0xFFFE0000) is None
    with pytest.raises(ValueError):
        m5ops.address(0x100)


def _config_json(prm, **override):
    def cache(level):
        c = prm["caches"][level]
        return {"type": "Cache", "size": c["size"], "assoc": c["assoc"],
                "prefetcher": None, "tags": {"block_size": c["line"]}}
    n = prm["processor"]["num_cores"]
    ch = {f"{lvl}caches": [cache(lvl) for _ in range(n)]
          for lvl in ("l1i", "l1d", "l2")}
    ch["mem_monitor"] = {"read_addr_mask": 0xFE0, "write_addr_mask": 0xFE0,
                         "disable_addr_dists": False}
    cfg = {"board": {"cache_line_size": prm["board"]["cache_line_size"],
                     "cache_hierarchy": ch}}
    for k, v in override.items():
        ch[k] = v
    return cfg


def test_config_json_check():
    prm = Gem5Engine().params(_spec(load_machines()["ppro4"]))
    assert check_config_json(_config_json(prm), prm) == []
    wrong = _config_json(prm)
    for c in wrong["board"]["cache_hierarchy"]["l2caches"]:
        c["assoc"] = 16          # the stdlib trap
        c["prefetcher"] = "board.cache_hierarchy.l2caches.prefetcher"
    problems = check_config_json(wrong, prm)
    assert any("16-way" in p for p in problems)
    assert any("prefetcher" in p for p in problems)


def test_components_file_compiles():
    """The gem5-only module at least parses (it cannot be imported here)."""
    for name in ("testbed_components.py", "run_fs.py", "testbed_params.py"):
        src = (ROOT / "configs/gem5" / name).read_text()
        compile(src, name, "exec")


@pytest.mark.requires_gem5
def test_gem5_builds_and_checks_ppro4(tmp_path):
    """gem5 instantiates the ppro4 system and its config.json matches."""
    import os
    m = load_machines()["ppro4"]
    eng = Gem5Engine()
    eng.check_available()
    spec = _spec(m)
    if not spec.kernel_elf64.is_file():
        pytest.skip(f"kernel image {spec.kernel_elf64} not built")
    eng.checkpoint = False
    eng.write_inputs(spec, tmp_path)
    cmd = eng.command(spec, tmp_path) + ["--max-ticks", "1000000"]
    subprocess.run(cmd, check=True, cwd=ROOT, env=os.environ,
                   capture_output=True)
    cfg = json.loads((tmp_path / "gem5" / "config.json").read_text())
    assert check_config_json(cfg, eng.params(spec)) == []
