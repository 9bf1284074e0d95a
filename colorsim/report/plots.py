"""Figures as functions of run results."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.ticker import FuncFormatter  # noqa: E402

from colorsim.results.rundata import colored_span, hot_offsets, offset_histogram  # noqa: E402

# Every figure is drawn in this style whatever was drawn before it, and the
# SVG ids are salted so that the same figure gives the same bytes.
STYLE = {"font.size": 9, "svg.hashsalt": "colorsim"}
COLORS = ["#c0392b", "#2471a3", "#229954", "#7d3c98", "#d68910", "#566573"]
IMAGE_SUFFIXES = {"png", "svg", "pdf"}
_HEX = FuncFormatter(lambda x, _: f"{int(x):#05x}")
_THOUSANDS = FuncFormatter(lambda y, _: f"{int(y):,}")


@dataclass
class OffsetPanel:
    """One kernel's bus transactions per page offset, for Figure 1.

    ``hists`` holds one Series per run (a placement seed): page offset of
    the 8-byte critical chunk -> transactions.  With several, the panel
    draws their mean and their min-max."""

    label: str
    color: str
    hists: list = field(default_factory=list)

    def frame(self, line: int = 0) -> pd.DataFrame:
        """Offsets x runs (0 where a run had none); ``line`` > 0 keys each
        transaction by its cache line's base instead of its chunk."""
        cols = []
        for i, h in enumerate(self.hists):
            if line:
                h = h.groupby(h.index - h.index % line).sum()
            cols.append(h.rename(i))
        if not cols:
            return pd.DataFrame()
        return pd.concat(cols, axis=1).fillna(0).sort_index()


@dataclass
class HotLines:
    """Where the scheduler-hot line is for vanilla and where colored copies
    of it can land: [span_lo, span_hi) page offsets, lines of ``line`` bytes."""

    line_offset: int
    line: int
    span_lo: int
    span_hi: int
    per_task: int = 1          # lines the walk reads per task (Linux on x86_64: 2)


def _page_panel(ax, panel, ymax, view, paper_peak):
    """One kernel over the whole page, linear: the peak cannot hide."""
    f = panel.frame()
    mean = f.mean(axis=1) if len(f) else pd.Series(dtype=float)
    # Stems, not bars: an 8-byte bar is a fraction of a pixel at this scale.
    if len(f.columns) > 1:
        ax.vlines(f.index, f.min(axis=1), f.max(axis=1), color=panel.color,
                  lw=4, alpha=0.25)
    ax.vlines(mean.index, 0, mean.values, color=panel.color, lw=1.6)
    if paper_peak is not None:
        ax.axvline(paper_peak, color="k", ls=":", lw=0.9, zorder=0)
        ax.annotate(f"the paper's peak ({paper_peak:#05x})", (paper_peak, 0),
                    xytext=(paper_peak + 40, ymax * 1.02), fontsize=8,
                    color="k")
    if len(mean):
        off, n = int(mean.idxmax()), float(mean.max())
        ax.plot([off], [n], "v", color=panel.color, ms=7)
        ax.annotate(f"peak {n:,.0f} at {off:#05x}", (off, n),
                    xytext=(0.45, 0.80), textcoords="axes fraction",
                    fontsize=9, color=panel.color,
                    arrowprops=dict(arrowstyle="->", color=panel.color, lw=0.8))
    ax.set_xlim(0, 4096)
    ax.set_ylim(0, ymax * 1.15)
    ax.set_xticks(range(0, 4097, 512))
    ax.xaxis.set_major_formatter(_HEX)
    ax.yaxis.set_major_formatter(_THOUSANDS)
    ax.set_ylabel("transactions")
    runs = len(panel.hists)
    what = (f"{mean.sum():,.0f} transactions" + (
        f", mean of {runs} seeds (band: min-max)" if runs > 1 else ""))
    ax.set_title(f"{panel.label}: {what}", fontsize=10, loc="left")
    ax.set_xlabel("page offset (" + ("8-byte critical chunk of each fill"
                                     if view == "chunk" else "cache line") + ")",
                  fontsize=8)


def _zoom_panel(ax, panels, hot: HotLines):
    """The offsets the hot lines can use, per cache line, kernels side by
    side (mean of seeds; whiskers: min-max)."""
    end = hot.span_hi + 2 * hot.line
    width = hot.line / (len(panels) + 1)
    for i, p in enumerate(panels):
        f = p.frame(hot.line)
        f = f[(f.index >= 0) & (f.index < end)]
        mean = f.mean(axis=1)
        colored = mean[(mean.index >= hot.span_lo) & (mean.index < hot.span_hi)]
        yerr = None
        if len(f.columns) > 1:
            yerr = [mean - f.min(axis=1), f.max(axis=1) - mean]
        ax.bar(mean.index + i * width, mean.values, width=width, align="edge",
               color=p.color, linewidth=0, zorder=3, yerr=yerr,
               error_kw=dict(lw=0.6, capsize=0, ecolor="0.3"),
               label=f"{p.label}: {colored.sum():,.0f} in the colored span")
    hot_lines = [hot.line_offset + k * hot.line for k in range(hot.per_task)]
    for k, lo in enumerate(hot_lines):        # every line the walk reads per task
        ax.axvspan(lo, lo + hot.line, color="gold", alpha=0.35, lw=0, zorder=1,
                   label=None if k else
                   f"vanilla's scheduler-hot line{'s' if len(hot_lines) > 1 else ''} "
                   f"({', '.join(f'{x:#05x}' for x in hot_lines)})")
    ax.axvspan(hot.span_lo, hot.span_hi, color="grey", alpha=0.10, lw=0,
               zorder=0, label=f"where colored hot lines land "
                               f"({hot.span_lo:#05x}-{hot.span_hi - 1:#05x})")
    ax.set_yscale("log")
    ax.set_xlim(0, end)
    ax.set_xticks(range(0, end + 1, 0x80))
    ax.xaxis.set_major_formatter(_HEX)
    ax.set_ylabel("transactions (log)")
    ax.set_xlabel("page offset (cache line)")
    ax.set_title("zoom: the scheduler-hot lines, every kernel", fontsize=10,
                 loc="left")
    # below the axes, not over the bars
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.28),
              ncol=2, frameon=False)


def figure1(panels, out, hot: HotLines, title: str,
            view: str = "chunk", paper_peak: int = None, footer: str = "") -> Path:
    """Figure 1, the one renderer (the README's command and the sweep's
    figure): one linear panel per kernel over the whole 4 KiB page on a
    shared scale, the peak marked and the paper's peak offset dotted; then
    a log-scale zoom of the offsets the scheduler's per-task line can
    occupy, the kernels side by side."""
    with plt.rc_context(STYLE):
        return _figure1(panels, out, hot, title, view, paper_peak, footer)


def _figure1(panels, out, hot, title, view, paper_peak, footer) -> Path:
    ymax = 1.0
    for p in panels:
        f = p.frame()
        if len(f):
            ymax = max(ymax, float(f.max(axis=1).max()))
    n = len(panels)
    fig, axes = plt.subplots(n + 1, 1, figsize=(10, 2.6 * n + 4.2),
                             gridspec_kw={"height_ratios": [1] * n + [1.5]})
    for ax, p in zip(axes, panels):
        _page_panel(ax, p, ymax, view, paper_peak)
    _zoom_panel(axes[-1], panels, hot)
    fig.suptitle(title, fontsize=12)
    if footer:
        fig.text(0.01, 0.005, footer, fontsize=8, color="0.35")
    fig.tight_layout(rect=(0, 0.02 if footer else 0, 1, 1))
    return save_figure(fig, out)


def plot_offsets(runs, out: Path, view: str = "chunk", title: str = None,
                 paper_peak: int = None) -> Path:
    """Figure 1 of loaded runs (``colorsim.results.rundata.Run``), one panel each."""
    lo, hi = colored_span([r.layout for r in runs])
    h0 = hot_offsets(runs[0].layout)
    panels = [OffsetPanel(r.label, COLORS[i % len(COLORS)],
                          [offset_histogram(r, "chunk" if view == "chunk"
                                            else "line")])
              for i, r in enumerate(runs)]
    cfg = runs[0].config
    title = title or (f"Memory-bus transactions per page offset - "
                      f"{cfg['machine']['name']}, "
                      f"{cfg['workload']['roi_ticks']}-tick region of interest")
    return figure1(panels, out, HotLines(h0["line_offset"], h0["line"], lo, hi,
                                         h0["per_task"]),
                   title, view=view, paper_peak=paper_peak)


def engines_figure(grid, out, title: str, footer: str = "") -> Path:
    """Figure 1's zoom for the same kernels on several engines, side by
    side: ``grid`` is [(row label, {engine: [runs]})], one row per kernel
    pair (loaded runs, vanilla first), one column per engine, each panel
    the hot lines' offsets per cache line on a log scale."""
    with plt.rc_context(STYLE):
        engines = list(grid[0][1])
        fig, axes = plt.subplots(len(grid), len(engines), squeeze=False,
                                 figsize=(5.2 * len(engines), 3.6 * len(grid)))
        for (label, by_engine), row in zip(grid, axes):
            for ax, engine in zip(row, engines):
                runs = by_engine[engine]
                lo, hi = colored_span([r.layout for r in runs])
                h0 = hot_offsets(runs[0].layout)
                panels = [OffsetPanel(r.config["variant"]["name"].rsplit("-", 1)[-1],
                                      COLORS[i % len(COLORS)],
                                      [offset_histogram(r, "line")])
                          for i, r in enumerate(runs)]
                _zoom_panel(ax, panels, HotLines(h0["line_offset"], h0["line"],
                                                 lo, hi, h0["per_task"]))
                ax.set_title(f"{label}: {engine}", fontsize=10, loc="left")
                ax.set_xlabel("page offset (cache line)", fontsize=8)
                ax.set_xticks(range(0, int(ax.get_xlim()[1]) + 1, 0x100))
                ax.legend(fontsize=6.5, loc="upper right", frameon=False)
        # one scale for every panel, with room above the bars for the legend
        top = max(ax.get_ylim()[1] for ax in axes.flat)
        for ax in axes.flat:
            ax.set_ylim(0.8, top * 60)
        fig.suptitle(title, fontsize=12)
        if footer:
            fig.text(0.01, 0.005, footer, fontsize=8, color="0.35")
        fig.tight_layout(rect=(0, 0.02 if footer else 0, 1, 1))
        return save_figure(fig, out)


def save_figure(fig, out) -> Path:
    """Write ``fig`` to ``out`` (a path, or a list of paths: one file per
    format) in one step each (a temporary file renamed, so a crash leaves
    no half-written image) without dates, and close it.  Returns the first
    path."""
    import matplotlib.pyplot as plt
    outs = [Path(o) for o in (out if isinstance(out, (list, tuple)) else [out])]
    try:
        for o in outs:
            o.parent.mkdir(parents=True, exist_ok=True)
            tmp = o.with_name(f".{o.stem}.tmp{os.getpid()}{o.suffix}")
            try:
                fig.savefig(tmp, dpi=110, metadata=_no_dates(o.suffix))
                tmp.replace(o)
            finally:
                tmp.unlink(missing_ok=True)
    finally:
        plt.close(fig)
    return outs[0]


def _no_dates(suffix: str) -> dict:
    """Metadata that keeps the same results giving the same file bytes."""
    s = suffix.lower()
    if s == ".png":
        return {"Software": None}
    if s == ".svg":
        return {"Date": None, "Creator": None}
    if s == ".pdf":
        return {"CreationDate": None}
    return {}
