"""Image regression: figures drawn from fixed data must look like their
baselines (tests/baseline/), so a wrong plot fails a test, not only a
missing one.  Regenerate the baselines after an intended change with

    COLORSIM_UPDATE_BASELINES=1 python3 -m pytest -q tests/test_figure_images.py

and look at them before committing."""

import os
import shutil

import numpy as np
import pandas as pd
import pytest
from matplotlib.testing.compare import compare_images

from colorsim import ROOT

BASELINE = ROOT / "tests" / "baseline"
UPDATE = bool(os.environ.get("COLORSIM_UPDATE_BASELINES"))
TOL = 2.0          # RMS of pixel differences (0-255): text and lines moving fail


def _check(png, name):
    base = BASELINE / name
    if UPDATE:
        shutil.copyfile(png, base)
        pytest.skip(f"baseline {base} written")
    assert base.is_file(), f"no baseline {base}: see this module's docstring"
    diff = compare_images(str(base), str(png), tol=TOL)
    assert diff is None, diff


def _hist(peak_at, peak, floor, seed):
    """A made-up chunk histogram: ``floor`` everywhere, ``peak`` at one
    offset, with a little seed noise."""
    rng = np.random.default_rng(seed)
    idx = np.arange(0, 4096, 8)
    vals = floor + rng.integers(0, floor // 5 + 1, len(idx))
    h = pd.Series(vals, index=idx)
    h[peak_at] = peak
    return h


def test_figure1_looks_like_its_baseline(tmp_path):
    from colorsim.report.plots import COLORS, HotLines, OffsetPanel, figure1
    panels = [OffsetPanel("vanilla", COLORS[0],
                          [_hist(0x30, 200000, 40, s) for s in (1, 2)]),
              OffsetPanel("c32", COLORS[1],
                          [_hist(0x1f0, 3000, 40, s) for s in (1, 2)])]
    png = figure1(panels, tmp_path / "figure1.png",
                  HotLines(0x20, 32, 0x20, 0x420), "Figure 1, fixed data",
                  paper_peak=0x30, footer="fixed data | seeds 1, 2")
    _check(png, "figure1.png")


def test_loop_miss_figure_looks_like_its_baseline(tmp_path):
    from colorsim.report.common import _miss_figure, _setup_matplotlib
    plt = _setup_matplotlib()
    sizes = [262144, 524288, 1048576]
    s = pd.DataFrame([{"kernel": k, "l2_size": x, "mean": m, "min": m - 0.02,
                       "max": m + 0.01}
                      for k, ms in (("vanilla", (0.99, 0.99, 0.98)),
                                    ("c32", (0.6, 0.2, 0.05)))
                      for x, m in zip(sizes, ms)])
    paper = {"vanilla": [99.7, 99.6, 99.5], "c32": [82.7, 35.8, 8.2]}
    names = _miss_figure(plt, s, "l2_size", sizes,
                         lambda x: f"{x // 1024} KiB", paper,
                         "Table 2, fixed data", "L2 size", tmp_path, "table2")
    assert names == ["table2.png", "table2.svg"]
    _check(tmp_path / "table2.png", "table2.png")


def test_a_wrong_plot_fails_the_comparison(tmp_path):
    """The comparison is strict enough: the same figure with the peak
    moved by two cache lines is refused."""
    from colorsim.report.plots import COLORS, HotLines, OffsetPanel, figure1
    base = BASELINE / "figure1.png"
    if UPDATE or not base.is_file():
        pytest.skip("baselines being written")
    panels = [OffsetPanel("vanilla", COLORS[0],
                          [_hist(0x70, 200000, 40, s) for s in (1, 2)]),
              OffsetPanel("c32", COLORS[1],
                          [_hist(0x1f0, 3000, 40, s) for s in (1, 2)])]
    png = figure1(panels, tmp_path / "figure1.png",
                  HotLines(0x20, 32, 0x20, 0x420), "Figure 1, fixed data",
                  paper_peak=0x30, footer="fixed data | seeds 1, 2")
    assert compare_images(str(base), str(png), tol=TOL) is not None


def test_the_zoom_shades_every_line_the_walk_reads():
    """A kernel whose walk reads two lines per task (Linux 2.4.37 on x86_64)
    has both shaded and named in Figure 1's zoom, not only the first."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd
    from colorsim.report.plots import HotLines, OffsetPanel, _zoom_panel
    hist = pd.Series({0x40: 10, 0x60: 12, 0x100: 3})
    for per_task, label in ((2, "vanilla's scheduler-hot lines (0x040, 0x060)"),
                            (1, "vanilla's scheduler-hot line (0x040)")):
        fig, ax = plt.subplots()
        _zoom_panel(ax, [OffsetPanel("vanilla", "C0", [hist])],
                    HotLines(0x40, 32, 0x40, 0x440, per_task=per_task))
        assert label in ax.get_legend_handles_labels()[1]
        gold = [p for p in ax.patches if p.get_facecolor()[:3] ==
                matplotlib.colors.to_rgb("gold")]
        assert len(gold) == per_task
        plt.close(fig)


def test_the_readmes_figure_is_what_the_first_command_draws(tmp_path):
    """docs/figure1-offsets.png, the README's image, is what `colorsim
    figure1` (the README's first command) draws today: regenerate it with
    that command (its PNG copied there) when the runs change."""
    import subprocess
    import sys
    p = subprocess.run([sys.executable, "-m", "colorsim", "figure1", "--out",
                        str(tmp_path)], cwd=ROOT, capture_output=True, text=True,
                       timeout=900)
    assert p.returncode == 0, p.stderr[-2000:]
    png = next(tmp_path.glob("figure1-*.png"))
    diff = compare_images(str(ROOT / "docs" / "figure1-offsets.png"), str(png), tol=TOL)
    assert diff is None, diff
