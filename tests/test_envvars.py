"""Every environment variable the suite reads is listed once
(colorsim/envvars.py), in --help's epilog and in docs/running.md."""

import re

from colorsim import ROOT
from colorsim.cli import build_parser
from colorsim.envvars import ENVIRONMENT

NOT_OURS = {"PYTHONPATH"}      # extended for Dask's workers, not a setting


def read_in_code() -> set:
    names = set()
    # the package, and the tests' own configuration (the remembered tree)
    for f in [*(ROOT / "colorsim").rglob("*.py"), ROOT / "conftest.py"]:
        text = f.read_text()
        consts = dict(re.findall(r'^(\w+_ENV)\s*=\s*"([A-Z0-9_]+)"', text, re.M))
        for arg in re.findall(r"os\.environ(?:\.get)?[\[(]\s*([^,\])]+)", text):
            arg = arg.strip()
            if arg.startswith('"'):
                names.add(arg.strip('"'))
            elif arg in consts:
                names.add(consts[arg])
        names |= set(consts.values())
    return names - NOT_OURS


def test_every_variable_read_is_listed():
    read = read_in_code()
    assert {"GEM5", "LINUX24_SRC", "COLORSIM_EXPERIMENTS"} <= read  # the scan works
    assert read - set(ENVIRONMENT) == set()


def test_every_listed_variable_is_read_and_documented():
    assert set(ENVIRONMENT) - read_in_code() == set()
    doc = (ROOT / "docs" / "running.md").read_text()
    help_text = build_parser().format_help()
    for name in ENVIRONMENT:
        assert f"`{name}`" in doc, name
        assert name in help_text, name
