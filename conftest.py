"""pytest configuration shared by every test directory."""

import os

import pytest


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "requires_gem5: needs a gem5 v24 X86 binary in $GEM5 or built by "
        "scripts/build-gem5.sh (skipped otherwise)")
    config.addinivalue_line(
        "markers",
        "requires_linux24: needs a Linux 2.4.37.x source tree in "
        "$LINUX24_SRC (skipped otherwise)")


def _have_gem5() -> bool:
    if os.environ.get("GEM5"):
        return True
    from colorsim.describe.gem5build import cached_gem5
    return cached_gem5() is not None


def pytest_collection_modifyitems(config, items):
    gem5 = _have_gem5()
    for item in items:
        if "requires_linux24" in item.keywords and not os.environ.get("LINUX24_SRC"):
            item.add_marker(pytest.mark.skip(
                reason=f"requires_linux24: {item.name} builds Linux 2.4; set "
                       f"LINUX24_SRC to a Linux 2.4.37.x source tree to run it"))
        if "requires_gem5" in item.keywords and not gem5:
            item.add_marker(pytest.mark.skip(
                reason=f"requires_gem5: {item.name} runs gem5; build it with "
                       f"scripts/build-gem5.sh or set GEM5 to a gem5 v24 X86 "
                       f"binary to run it"))
