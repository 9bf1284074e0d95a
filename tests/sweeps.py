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


DEFAULTS = {"engine": "qemu", "warmup": 2, "roi": 2, "burst": 2000,
            "timeout": 120, "seeds": [1]}


def _toml(v) -> str:
    if isinstance(v, str):
        return f'"{v}"'
    if isinstance(v, list):
        return "[" + ", ".join(_toml(x) for x in v) + "]"
    return str(v).lower() if isinstance(v, bool) else str(v)


def experiment(name, outputs, grid, title=None, needs=("counting",),
               quick=None, **extra) -> str:
    """One experiment's TOML: ``outputs`` {id: needs}, ``grid`` the axes
    (machine, l2, cpus, kernels, workload, tasks, ...), ``quick`` its small
    grid's overrides; ``extra`` top-level keys such as stand_in."""
    lines = [f"[{name}]", f'title = "{title or name}"',
             f"needs = {_toml(list(needs))}"]
    lines += [f"{k} = {_toml(v)}" for k, v in extra.items()]
    lines += [f'outputs.{o} = {{ needs = {_toml(list(n))}, what = "{o}" }}'
              for o, n in outputs.items()]
    lines += [f"[{name}.grid]"] + [f"{k} = {_toml(v)}" for k, v in grid.items()]
    if quick:
        lines += [f"[{name}.quick]"] + [f"{k} = {_toml(v)}" for k, v in quick.items()]
    return "\n".join(lines) + "\n"


def experiments_file(*exps, **defaults) -> str:
    """A whole experiments file: [defaults] (DEFAULTS, overridden by
    ``defaults``) and the experiments' texts (:func:`experiment`)."""
    d = {**DEFAULTS, **defaults}
    return "\n".join(["[defaults]"] + [f"{k} = {_toml(v)}" for k, v in d.items()]) \
        + "\n\n" + "\n".join(exps)
