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


def _remembered_linux24():
    """The Linux 2.4 tree set-up was given (scripts/setup.sh remembers it),
    if it is still there: the tests then build from it as if LINUX24_SRC
    named it."""
    from pathlib import Path
    rec = Path(os.environ.get("COLORSIM_LINUX24_RECORD",
                              "/var/cache/colorsim/linux24-src"))
    try:
        tree = Path(rec.read_text().strip())
    except OSError:
        return None
    return tree if (tree / "Makefile").is_file() else None


def pytest_sessionstart(session):
    if not os.environ.get("LINUX24_SRC"):
        tree = _remembered_linux24()
        if tree:
            os.environ["LINUX24_SRC"] = str(tree)


def pytest_report_header(config):
    src = os.environ.get("LINUX24_SRC")
    return f"Linux 2.4 tree: {src}" if src else \
        "Linux 2.4 tree: none (the requires_linux24 tests skip)"


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
                       f"LINUX24_SRC to a Linux 2.4.37.x source tree to run it "
                       f"(set-up run with it remembers the tree)"))
        if "requires_gem5" in item.keywords and not gem5:
            item.add_marker(pytest.mark.skip(
                reason=f"requires_gem5: {item.name} runs gem5; build it with "
                       f"scripts/build-gem5.sh or set GEM5 to a gem5 v24 X86 "
                       f"binary to run it"))
