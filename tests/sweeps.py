"""One way for a test module to sweep its own tiny experiments file."""

import os

import pytest

from colorsim.orchestrate.sweep import run_sweep


def sweep_with(tmp_path_factory, stem, text, name, log=lambda *_: None):
    """Write ``text`` as the experiments file of a fresh folder, point
    COLORSIM_EXPERIMENTS at it, sweep ``name`` into ``folder/runs`` and
    yield (runs folder, counts); the variable is restored when the caller
    (a module fixture: ``yield from sweep_with(...)``) ends."""
    base = tmp_path_factory.mktemp(stem)
    f = base / "experiments.toml"
    f.write_text(text)
    mp = pytest.MonkeyPatch()
    mp.setenv("COLORSIM_EXPERIMENTS", str(f))
    root = base / "runs"
    try:
        with open(os.devnull, "w") as quiet:
            c = run_sweep(name, jobs=2, root=root, log=log, progress_stream=quiet)
        yield root, c
    finally:
        mp.undo()
