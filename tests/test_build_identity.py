"""A run is the run of the builds it ran: the kernel image, the root
file-system image, the bus-monitor plugin and (Linux 2.4) the user's tree.

Their hashes are in the content id a sweep names runs by and checks
"done" by (colorsim/run/identity.py), and a run named by its settings
(``colorsim run``, the headline) is not reused for other builds
(colorsim/run/runner.py, ``differences``)."""

import json

import pytest

from colorsim.describe.machine import get_machine
from colorsim.describe.runspec import RunSpec, Workload
from colorsim.describe.variants import parse_variant
from colorsim.run.identity import run_id
from colorsim.run.runner import BUILD_HASHES, differences

IDENT = {"kernel_sha256": "a" * 64, "plugin_sha256": "b" * 64,
         "rootfs_sha256": "c" * 64, "linux24_source_sha256": "d" * 64,
         "layout_sha256": "f" * 64, "firmware_sha256": "0" * 64,
         "engine_version": "10.2.2"}


def _spec(kernel):
    m = get_machine("ppro4")
    return RunSpec(m, parse_variant(kernel, m), Workload(tasks=64))


@pytest.mark.parametrize("kernel", ["c32", "linux24:c32"])
@pytest.mark.parametrize("key", [k for k, _ in BUILD_HASHES])
def test_another_build_is_another_run(kernel, key):
    """One byte of a build changes its hash: the content id changes (a
    sweep does not count the old run as done) and a run of the same name
    is refused as made of other builds, not reused."""
    spec = _spec(kernel)
    old = json.loads(json.dumps({**spec.to_dict(), **IDENT}))
    assert differences(old, spec, IDENT) == []
    now = {**IDENT, key: "e" * 64}
    assert run_id({**spec.to_dict(), **now}) != run_id(old)
    what = dict(BUILD_HASHES)[key]
    assert differences(old, spec, now) == [f"the {what} changed since"]


def test_every_hashed_build_is_compared():
    """Each *_sha256 a QEMU run's identity records is one differences()
    compares (a build added to the identity but not there would let a run
    of the old build be reused)."""
    from colorsim.run.identity import ID_KEYS, LAYOUT_KEYS, SOURCE_KEYS
    hashed = {k for k in ID_KEYS + SOURCE_KEYS + LAYOUT_KEYS if k.endswith("_sha256")}
    assert hashed == {k for k, _ in BUILD_HASHES}


def _web_spec(machine="ppro4", **wire):
    import dataclasses
    m = get_machine(machine)
    if wire:
        m = dataclasses.replace(m, network=dataclasses.replace(m.network, **wire))
    return RunSpec(m, parse_variant("c32", m),
                   Workload(tasks=64, program="/bin/web", client_cpus=2))


@pytest.mark.parametrize("spec", [
    _spec("c32"), _spec("linux24:c32"), _web_spec(),
    RunSpec(get_machine("ppro4"), parse_variant("vanilla", get_machine("ppro4")),
            Workload(tasks=64, program="/bin/web"), timing=True)],
    ids=["builtin", "linux24", "web-outside-clients", "web-timed"])
def test_every_setting_a_run_records_is_in_its_identity(spec):
    """Every part of the configuration a run's config.json records is
    hashed into its content id: a setting recorded but not hashed would let
    a sweep count a run of other settings as done."""
    from colorsim.run.identity import identity_dict
    cfg = json.loads(json.dumps({**spec.to_dict(), **IDENT}))
    assert set(cfg) <= set(identity_dict(cfg))


@pytest.mark.parametrize("wire", [{"bandwidth_bps": 10**9}, {"latency_ns": 5000},
                                  {"dma": False}])
def test_another_wire_is_another_run(wire):
    """The same web run over another wire (bandwidth, latency, the cards'
    DMA) has
    another content id, and a run of the same name is refused."""
    old_spec, new_spec = _web_spec(), _web_spec(**wire)
    old = json.loads(json.dumps({**old_spec.to_dict(), **IDENT}))
    new = {**new_spec.to_dict(), **IDENT}
    assert run_id(old) != run_id(new)
    (key,) = wire
    assert any(d.startswith(f"network.{key} ") for d in differences(old, new_spec, IDENT))


def test_another_client_model_is_another_run():
    """A timed web run with another client model (or none) has another
    content id."""
    import dataclasses
    spec = RunSpec(get_machine("ppro4"), parse_variant("vanilla", get_machine("ppro4")),
                   Workload(tasks=64, program="/bin/web"), timing=True)
    m = spec.machine
    slower = dataclasses.replace(spec, machine=dataclasses.replace(
        m, clients=dataclasses.replace(m.clients, clock_hz=m.clients.clock_hz // 2)))
    none = dataclasses.replace(spec, machine=m.with_clients(False))
    ids = {run_id({**s.to_dict(), **IDENT}) for s in (spec, slower, none)}
    assert len(ids) == 3


def test_another_layout_is_another_run(tmp_path, monkeypatch):
    """The bus monitor's address ranges come from the kernel's layout.json,
    which build code can change without changing the kernel image: a run
    hashes it, so another layout is another run."""
    from colorsim.describe import runspec
    from colorsim.run.runner import identity
    spec = _spec("c32")
    lay = json.loads(spec.layout_file.read_text())
    kdir = tmp_path / spec.kernel_dir.name
    kdir.mkdir()
    for f in spec.kernel_dir.iterdir():
        if f.is_file():
            (kdir / f.name).write_bytes(f.read_bytes())
    monkeypatch.setattr(runspec.RunSpec, "kernel_dir", property(lambda s: kdir))
    before = run_id({**spec.to_dict(), **identity(spec)})
    lay["ranges"]["user"] = [[0, 4096]]
    (kdir / "layout.json").write_text(json.dumps(lay))
    now = identity(spec)
    assert run_id({**spec.to_dict(), **now}) != before
