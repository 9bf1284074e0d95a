"""pytest configuration shared by every test directory."""

import os

import pytest


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "requires_gem5: needs a gem5 v24 X86 binary in $GEM5 (skipped "
        "otherwise)")
    config.addinivalue_line(
        "markers",
        "requires_linux24: needs a Linux 2.4.37.x source tree in "
        "$LINUX24_SRC (skipped otherwise)")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "requires_linux24" in item.keywords and not os.environ.get("LINUX24_SRC"):
            item.add_marker(pytest.mark.skip(
                reason=f"requires_linux24: {item.name} builds Linux 2.4; set "
                       f"LINUX24_SRC to a Linux 2.4.37.x source tree to run it"))
        if "requires_gem5" in item.keywords and not os.environ.get("GEM5"):
            item.add_marker(pytest.mark.skip(
                reason=f"requires_gem5: {item.name} runs gem5; set GEM5 to "
                       f"a gem5 v24 X86 binary to run it"))
