"""Kernel kinds behind one interface: the testbed kernel and the user's
Linux 2.4 each say how they are built, identified, booted and checked
(colorsim/run/kernels) and what a run of them looks like (their variant
classes), so that nothing else tests which kernel a run boots."""

import re

from colorsim import ROOT
from colorsim.describe.linux24 import Linux24Build
from colorsim.describe.machine import get_machine
from colorsim.describe.variants import KernelVariant, parse_variant
from colorsim.run.kernels import KINDS, KernelKind, kind_of

DESCRIBE_SIDE = ("kernel_dir", "kernel_elf64", "rootfs_image", "for_run",
                 "cmdline_limit", "cmdline", "check_run", "id_dict",
                 "clients_on_server_cpus")


def test_every_variant_has_exactly_one_kind():
    m = get_machine("ppro4")
    for name in ("vanilla", "c8", "c32", "mq", "linux24:vanilla", "linux24:c32"):
        v = parse_variant(name, m)
        owners = [k for k in KINDS if k.owns(v)]
        assert len(owners) == 1 and kind_of(v) is owners[0], name
    assert kind_of(parse_variant("c32", m)).name == "testbed"
    assert kind_of(parse_variant("linux24:c32", m)).name == "linux24"


def test_each_kind_implements_the_run_side():
    required = [n for n, f in vars(KernelKind).items() if callable(f)
                and "raise NotImplementedError" in (f.__doc__ or "") + _source(f)]
    assert {"owns", "prepare_all", "identity", "kernel_image"} <= set(required)
    # one run's builds are a sweep's builds of one spec, for every kind
    assert all(type(k).prepare is KernelKind.prepare for k in KINDS)
    for k in KINDS:
        for n in required:
            assert getattr(type(k), n) is not getattr(KernelKind, n), (k.name, n)


def test_each_variant_class_has_the_describe_side():
    for cls in (KernelVariant, Linux24Build):
        for n in DESCRIBE_SIDE:
            assert hasattr(cls, n), (cls.__name__, n)


def test_nothing_else_asks_which_kernel_it_is():
    """Outside the kinds themselves, no module tests for Linux 2.4."""
    allowed = {ROOT / "colorsim" / "describe" / "linux24.py",
               ROOT / "colorsim" / "run" / "kernels" / "linux24.py"}
    found = [f"{p.relative_to(ROOT)}:{i}"
             for p in sorted((ROOT / "colorsim").rglob("*.py")) if p not in allowed
             for i, line in enumerate(p.read_text().splitlines(), 1)
             if re.search(r"\bis_linux24\b|isinstance\([^)]*Linux24Build", line)]
    assert not found, found


def _source(f) -> str:
    import inspect
    return inspect.getsource(f)
