"""The code passes the checked-in lint (pyproject.toml [tool.ruff]:
syntax errors and pyflakes' checks), as set-up installs it."""

import subprocess
import sys

from colorsim import ROOT


def test_ruff_finds_nothing():
    p = subprocess.run([sys.executable, "-m", "ruff", "check", "--output-format",
                        "concise", "."], cwd=ROOT, capture_output=True, text=True,
                       timeout=300)
    assert "No module named ruff" not in p.stderr, \
        "ruff is missing: scripts/setup.sh installs it (pyproject.toml's test extra)"
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-1000:]
