"""Beyond the paper: eq. (3) as a prediction on a held-out geometry (2 MiB
L2, 2048 tasks: c >= 2048 / (2048 / 8) = 8 colors), swept and drawn."""

import pytest

from colorsim.report.figures import make_figures
from colorsim.results.catalog import Catalog
from colorsim.describe.experiments import load_experiments
from colorsim.describe.variants import colors_needed
from tests.sweeps import sweep_with

EQ3 = """
[defaults]
engine = "qemu"
warmup = 2
roi = 2
burst = 2000
timeout = 300
seeds = [1]

[eq3]
title = "eq. (3), tiny"
needs = ["counting", "rqloop", "synthetic"]
outputs.eq3 = { needs = ["rqloop"], what = "loop miss ratio vs colors beside eq. (3)" }
[eq3.grid]
machine = "ppro4"
l2 = ["2MiB"]
cpus = [2]
kernels = ["vanilla", "c4", "c8", "c16"]
workload = "synthetic"
tasks = [2048]
"""


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    yield from sweep_with(tmp_path_factory, "eq3", EQ3, "eq3")


def test_the_shipped_eq3_experiment_is_held_out():
    # every geometry lies outside the paper's grid (L2 256 KiB-1 MiB with
    # 256-1024 processes), and eq. (3)'s colors are among the kernels run
    e = load_experiments()["eq3"]
    for p in e.points(False):
        assert p.l2 not in ("256KiB", "512KiB", "1MiB") or p.tasks > 1024, p
    grid = {(p.l2, p.tasks) for p in e.points(False)}
    kernels = {p.kernel for p in e.points(False)}
    size = {"512KiB": 512 << 10, "1MiB": 1 << 20, "2MiB": 2 << 20}
    for l2, tasks in grid:
        need = colors_needed(tasks, size[l2])
        assert need == 1 or f"c{need}" in kernels, (l2, tasks, need)


def test_eq3_predicts_where_colors_start_to_fit(swept):
    root, c = swept
    assert c["done"] == 4 and c["failed"] == 0
    runs = Catalog(root).runs().set_index("kernel")
    miss = runs["rqloop_l2_miss_ratio"]
    assert colors_needed(2048, 2 << 20) == 8
    # below eq. (3) the hot lines do not fit: every walk step still misses
    assert miss["vanilla"] > 0.95 and miss["c4"] > 0.9
    # at eq. (3)'s colors they start to fit, at twice them they do
    assert miss["c8"] < miss["c4"] - 0.2
    assert miss["c16"] < 0.25


def test_eq3_figure_and_report(swept, tmp_path):
    root, _ = swept
    out = tmp_path / "fig"
    lines = []
    make_figures("eq3", root=root, out=out, log=lines.append)
    assert (out / "eq3.png").stat().st_size > 10_000 and (out / "eq3.svg").is_file()
    html = (out / "report.html").read_text()
    assert "eq. (3)" in html and "fewest colors under 50 %" in html
    assert any(l.startswith("eq3 (eq3") and "4/4 points done" in l for l in lines), lines
