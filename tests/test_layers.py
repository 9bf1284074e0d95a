"""The package's layers show in its tree and hold in its imports.

describe -> run -> results -> report -> orchestrate -> cli -> maintain: each layer
imports only the layers below it (and the base modules), and no modules
import each other in a circle, lazily or not.  Modules stay small enough to
read."""

import ast
from pathlib import Path

from colorsim import ROOT

PKG = ROOT / "colorsim"
BASE = ("colorsim", "colorsim.errors", "colorsim.units", "colorsim.argtypes",
        "colorsim.envvars")
LAYERS = ("describe", "run", "results", "report", "orchestrate", "cli",
          "maintain", "__main__")
MAX_LINES = 650


def _name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _imports(path: Path, name: str) -> set:
    """Every colorsim module ``path`` imports, at the top or in a function."""
    is_pkg = path.name == "__init__.py"
    out = set()
    for n in ast.walk(ast.parse(path.read_text())):
        if isinstance(n, ast.ImportFrom):
            if n.level:
                base = name.split(".")
                base = base if is_pkg else base[:-1]
                base = base[:len(base) - (n.level - 1)]
                mod = ".".join(base + ([n.module] if n.module else []))
            else:
                mod = n.module or ""
            if mod.split(".")[0] != "colorsim":
                continue
            out.add(mod)
            for a in n.names:             # from colorsim.run import runner
                out.add(f"{mod}.{a.name}")
        elif isinstance(n, ast.Import):
            out |= {a.name for a in n.names if a.name.split(".")[0] == "colorsim"}
    return out


def _graph() -> dict:
    mods = {_name(p): p for p in PKG.rglob("*.py")}
    return {m: {d for d in _imports(p, m) if d in mods and d != m}
            for m, p in mods.items()}, mods


def layer(mod: str) -> int:
    if mod in BASE:
        return 0
    top = mod.split(".")[1]
    assert top in LAYERS, f"{mod} is in no layer: put it in one of {LAYERS}"
    return 1 + LAYERS.index(top)


def test_every_import_goes_down():
    graph, _ = _graph()
    up = [f"{m} imports {d}" for m, deps in sorted(graph.items())
          for d in sorted(deps) if layer(d) > layer(m)]
    assert not up, "imports that go up a layer:\n" + "\n".join(up)


def test_no_import_circles():
    graph, _ = _graph()
    # Tarjan's strongly connected components
    index, low, stack, on, comps = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    assert not comps, f"modules importing each other in a circle: {comps}"


def test_the_checker_sees_a_violation():
    """The two checks above can fail: an upward import is reported."""
    assert layer("colorsim.results.catalog") < layer("colorsim.orchestrate.sweep")
    assert "colorsim.run.runner" in _imports(PKG / "cli.py", "colorsim.cli") or \
        "colorsim.run" in _imports(PKG / "cli.py", "colorsim.cli")


def test_modules_stay_readable():
    _, mods = _graph()
    big = {m: n for m, p in mods.items()
           if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not big, f"modules over {MAX_LINES} lines: {big}"
