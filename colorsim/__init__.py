"""colorsim: full-system experiments on task-structure cache coloring.

The package is layered as the pipeline is: ``describe`` (machines,
variants, run specs, experiments) -> ``run`` (build, engines, run
directories, the runner) -> ``results`` (run data, the catalog) ->
``report`` (figures, the HTML report) -> ``orchestrate`` (sweeps and the
commands that make many runs) -> ``cli``.  Each imports only the layers
before it (tests/test_layers.py checks).  See README.md.
"""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "build"

__all__ = ["ROOT", "BUILD"]
