"""pytest configuration shared by every test directory."""

import os

import pytest


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "requires_gem5: needs a gem5 v24 X86 binary in $GEM5 (skipped "
        "otherwise)")


def pytest_collection_modifyitems(config, items):
    if os.environ.get("GEM5"):
        return
    for item in items:
        if "requires_gem5" in item.keywords:
            item.add_marker(pytest.mark.skip(
                reason=f"requires_gem5: {item.name} runs gem5; set GEM5 to "
                       f"a gem5 v24 X86 binary to run it"))
