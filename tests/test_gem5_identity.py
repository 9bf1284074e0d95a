"""A gem5 run's identity names its engine: the binary (version line and
SHA-256) and the configuration scripts with their parameters, so a run
made by another gem5 or with other assumed latencies is never reused.

No gem5 is needed: a stand-in script prints gem5's banner."""

import copy
import json

import pytest

from colorsim.run.build import ensure_built
from colorsim.run.engines.gem5 import params_module
from colorsim.run.identity import identity_dict, run_id
from colorsim.describe.machine import get_machine
from colorsim.run.runner import differences, identity
from colorsim.describe.runspec import RunSpec, Workload, file_sha256
from colorsim.describe.variants import parse_variant

BANNER = """#!/bin/sh
# {note}
echo "gem5 Simulator System.  https://www.gem5.org"
echo
echo "gem5 version {version}"
echo "gem5 compiled Nov 23 2026 09:28:43"
"""


def fake_gem5(path, version="24.0.0.1", note="one build", probe=False,
              bus=False, tsc=False):
    # the suite's build answers binary_identity's script that it has the
    # loop probe (gem5 patch 0002) and can build a P6 bus (patch 0003); a
    # gem5 of the user's own may not
    path.write_text(BANNER.format(version=version, note=note)
                    + ('echo "colorsim-loop-probe 1"\n' if probe else "")
                    + ('echo "colorsim-p6-bus 1"\n' if bus else "")
                    + ('echo "colorsim-tsc-period 1"\n' if tsc else ""))
    path.chmod(0o755)
    return path


@pytest.fixture(scope="module")
def spec():
    m = get_machine("ppro4").with_cpus(2)
    s = RunSpec(m, parse_variant("vanilla", m), Workload(tasks=16), engine="gem5")
    ensure_built([s.variant.build_id], plugin=False, progress=lambda *_: None)
    return s


def rid(spec):
    return run_id({**spec.to_dict(), **identity(spec)})


def test_the_identity_names_the_binary_and_the_configuration(spec, tmp_path, monkeypatch):
    g = fake_gem5(tmp_path / "gem5.opt")
    monkeypatch.setenv("GEM5", str(g))
    ident = identity(spec)
    assert ident["engine_version"] == "24.0.0.1"
    assert ident["engine_sha256"] == file_sha256(g)
    assert len(ident["engine_config_sha256"]) == 64
    d = identity_dict({**spec.to_dict(), **ident})
    assert d["engine_sha256"] == ident["engine_sha256"]
    assert d["engine_config_sha256"] == ident["engine_config_sha256"]


def test_a_gem5_without_the_loop_probe_runs_without_it(spec, tmp_path, monkeypatch):
    """Only a gem5 with the suite's probe is given the loop's ranges; with
    another the run goes on, its spec's rqloop empty (no miss ratio).  The
    two binaries are other runs by their SHA-256 already."""
    from colorsim.run.engines.gem5 import Gem5Engine, rqloop_ranges
    want = rqloop_ranges(spec.layout_file)
    assert want, "the built kernel's layout names the loop"
    monkeypatch.setenv("GEM5", str(fake_gem5(tmp_path / "plain")))
    assert not Gem5Engine().has_loop_probe()
    assert Gem5Engine().spec_dict(spec)["kernel"]["rqloop"] == []
    monkeypatch.setenv("GEM5", str(fake_gem5(tmp_path / "ours", probe=True)))
    assert Gem5Engine().has_loop_probe()
    assert Gem5Engine().spec_dict(spec)["kernel"]["rqloop"] == want


def test_a_gem5_without_the_bus_patch_builds_its_own_crossbar(spec, tmp_path, monkeypatch):
    """Only a gem5 that can build the P6 bus is given the machine's bus
    costs; another runs with gem5's own crossbar (the spec's bus empty, the
    parameters' P6 buses none), and the configuration's hash tells them
    apart."""
    from colorsim.run.engines.gem5 import Gem5Engine
    monkeypatch.setenv("GEM5", str(fake_gem5(tmp_path / "plain")))
    assert not Gem5Engine().has_p6_bus()
    assert Gem5Engine().spec_dict(spec)["bus"] is None
    assert Gem5Engine().params(spec)["p6_buses"] is None
    plain = Gem5Engine().config_sha256(spec)
    monkeypatch.setenv("GEM5", str(fake_gem5(tmp_path / "ours", bus=True)))
    assert Gem5Engine().has_p6_bus()
    assert Gem5Engine().spec_dict(spec)["bus"]["bus_line"] == 12
    assert Gem5Engine().params(spec)["p6_buses"]["count"] == 1
    assert Gem5Engine().config_sha256(spec) != plain


def test_a_gem5_without_the_tsc_patch_keeps_each_cores_cycles(spec, tmp_path, monkeypatch):
    """Only a gem5 with a constant-rate TSC (patch 0004) is asked for the
    testbed kernel's TSC in ns; another runs with gem5's own TSC, and the
    configuration's hash tells them apart."""
    from colorsim.run.engines.gem5 import TSC_PERIOD_PS, Gem5Engine
    monkeypatch.setenv("GEM5", str(fake_gem5(tmp_path / "plain")))
    assert not Gem5Engine().has_constant_tsc()
    assert Gem5Engine().spec_dict(spec)["tsc_period_ps"] is None
    assert Gem5Engine().params(spec)["processor"]["tsc_period"] is None
    plain = Gem5Engine().config_sha256(spec)
    # and its web clients at the server's clock: the wire's CPU and a
    # client's, each counting its own cycles, would disagree on the time
    m = spec.machine
    web = RunSpec(m, spec.variant, Workload(program="/bin/web", client_cpus=3),
                  engine="gem5")
    assert web.client_core_hz and Gem5Engine().spec_dict(web)["client_clock_hz"] is None
    monkeypatch.setenv("GEM5", str(fake_gem5(tmp_path / "ours", tsc=True)))
    assert Gem5Engine().has_constant_tsc()
    assert Gem5Engine().spec_dict(spec)["tsc_period_ps"] == TSC_PERIOD_PS
    assert Gem5Engine().params(spec)["processor"]["tsc_period"] == "1000ps"
    assert Gem5Engine().config_sha256(spec) != plain
    assert Gem5Engine().spec_dict(web)["client_clock_hz"] == web.client_core_hz


def test_another_binary_or_version_is_another_run(spec, tmp_path, monkeypatch):
    monkeypatch.setenv("GEM5", str(fake_gem5(tmp_path / "a")))
    first = rid(spec)
    assert rid(spec) == first                       # deterministic
    monkeypatch.setenv("GEM5", str(fake_gem5(tmp_path / "b", note="a rebuild")))
    rebuilt = rid(spec)
    monkeypatch.setenv("GEM5", str(fake_gem5(tmp_path / "c", version="24.1.0.0")))
    newer = rid(spec)
    assert len({first, rebuilt, newer}) == 3


def test_other_assumed_latencies_are_another_run(spec, tmp_path, monkeypatch):
    monkeypatch.setenv("GEM5", str(fake_gem5(tmp_path / "gem5.opt")))
    before = rid(spec)
    timing = copy.deepcopy(params_module().DEFAULT_TIMING)
    timing["l2"]["tag_latency"] += 1
    monkeypatch.setattr(params_module(), "DEFAULT_TIMING", timing)
    assert rid(spec) != before


def test_an_existing_run_of_another_gem5_is_refused_by_name(spec, tmp_path, monkeypatch):
    monkeypatch.setenv("GEM5", str(fake_gem5(tmp_path / "a")))
    old = {**spec.to_dict(), **identity(spec), "complete": True}
    monkeypatch.setenv("GEM5", str(fake_gem5(tmp_path / "b", note="a rebuild")))
    diffs = differences(json.loads(json.dumps(old)), spec, identity(spec))
    assert diffs == ["the gem5 binary changed since"]


def test_no_gem5_or_not_gem5(spec, tmp_path, monkeypatch):
    from colorsim.errors import ConfigError
    monkeypatch.delenv("GEM5", raising=False)
    monkeypatch.setenv("COLORSIM_GEM5_CACHE", str(tmp_path))   # no build there
    with pytest.raises(ConfigError, match="GEM5 environment variable is not set"):
        identity(spec)
    other = tmp_path / "other"
    other.write_text("#!/bin/sh\necho hello\n")
    other.chmod(0o755)
    monkeypatch.setenv("GEM5", str(other))
    with pytest.raises(ConfigError, match="printed no 'gem5 version"):
        identity(spec)


def test_qemu_ids_do_not_change(spec):
    """The new keys are covered only where present: a QEMU run's (and an
    older gem5 run's) identity is what it was."""
    cfg = {**spec.to_dict(), "engine": "qemu", "engine_version": "10.2.2",
           "kernel_sha256": "0" * 64, "plugin_sha256": "1" * 64}
    assert set(identity_dict(cfg)) == {"machine", "variant", "workload", "engine",
                                       "engine_version", "kernel_sha256",
                                       "plugin_sha256", "rootfs_sha256"}
