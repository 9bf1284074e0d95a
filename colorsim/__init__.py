"""colorsim: full-system experiments on task-structure cache coloring.

Pipeline: kernels/ -> configs/ -> engine (QEMU + bus-monitor plugin, or gem5)
-> runs/ -> analysis/.  See README.md.
"""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "build"

__all__ = ["ROOT", "BUILD"]
