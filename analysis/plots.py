"""Figures as functions of run results."""

from __future__ import annotations

import os
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter  # noqa: E402

from .results import colored_span, hot_offsets, offset_histogram  # noqa: E402

COLORS = ["#c0392b", "#2471a3", "#229954", "#7d3c98", "#d68910", "#566573"]
IMAGE_SUFFIXES = {"png", "svg", "pdf"}
_HEX = FuncFormatter(lambda x, _: f"{int(x):#05x}")
_THOUSANDS = FuncFormatter(lambda y, _: f"{int(y):,}")


def _page_panel(ax, h, color, title, ymax, view):
    """One run over the whole page, linear: the peak cannot hide."""
    # Stems, not bars: an 8-byte bar is a fraction of a pixel at this scale.
    ax.vlines(h.index, 0, h.values, color=color, lw=1.6)
    if len(h):
        off, n = int(h.idxmax()), int(h.max())
        ax.plot([off], [n], "v", color=color, ms=7)
        ax.annotate(f"peak {n:,} at {off:#05x}", (off, n),
                    xytext=(0.25, 0.80), textcoords="axes fraction",
                    fontsize=9, color=color,
                    arrowprops=dict(arrowstyle="->", color=color, lw=0.8))
    ax.set_xlim(0, 4096)
    ax.set_ylim(0, ymax * 1.12)
    ax.set_xticks(range(0, 4097, 512))
    ax.xaxis.set_major_formatter(_HEX)
    ax.yaxis.set_major_formatter(_THOUSANDS)
    ax.set_ylabel("transactions")
    ax.set_title(title, fontsize=10, loc="left")
    ax.set_xlabel("page offset (" + ("8-byte critical chunk of each fill"
                                     if view == "chunk" else "cache line") + ")",
                  fontsize=8)


def _zoom_panel(ax, runs, lo, hi):
    """The offsets the hot lines can use, per cache line, runs side by side."""
    line = runs[0].layout["variant"]["line"]
    end = hi + 2 * line
    width = line / (len(runs) + 1)
    for i, r in enumerate(runs):
        h = offset_histogram(r, "line")
        h = h[(h.index >= 0) & (h.index < end)]
        ax.bar(h.index + i * width, h.values, width=width, align="edge",
               color=COLORS[i % len(COLORS)], linewidth=0, zorder=3,
               label=f"{r.config['variant']['name']}: "
                     f"{int(h[(h.index >= lo) & (h.index < hi)].sum()):,} "
                     f"in the colored span")
    hot = hot_offsets(runs[0].layout)
    ax.axvspan(hot["line_offset"], hot["line_offset"] + hot["line"],
               color="gold", alpha=0.35, lw=0, zorder=1,
               label=f"vanilla's scheduler-hot line ({hot['line_offset']:#05x})")
    ax.axvspan(lo, hi, color="grey", alpha=0.10, lw=0, zorder=0,
               label=f"where colored hot lines land ({lo:#05x}-{hi - 1:#05x})")
    ax.set_yscale("log")
    ax.set_xlim(0, end)
    ax.set_xticks(range(0, end + 1, 0x80))
    ax.xaxis.set_major_formatter(_HEX)
    ax.set_ylabel("transactions (log)")
    ax.set_xlabel("page offset (cache line)")
    ax.set_title("zoom: the scheduler-hot lines, every run", fontsize=10,
                 loc="left")
    ax.legend(fontsize=8, loc="upper right")


def plot_offsets(runs, out: Path, view: str = "chunk", title: str = None) -> Path:
    """Figure 1: bus transactions per page offset.

    One linear panel per run over the whole 4 KiB page, on a shared scale,
    with the peak marked and labelled; then a log-scale zoom of the offsets
    the scheduler's per-task line can occupy, the runs side by side.
    """
    out = Path(out)
    lo, hi = colored_span([r.layout for r in runs])
    hists = [offset_histogram(r, view) for r in runs]
    ymax = max([int(h.max()) for h in hists if len(h)] or [1])
    fig, axes = plt.subplots(len(runs) + 1, 1,
                             figsize=(10, 2.6 * len(runs) + 3.6),
                             gridspec_kw={"height_ratios": [1] * len(runs) + [1.5]})
    for i, (r, h) in enumerate(zip(runs, hists)):
        _page_panel(axes[i], h, COLORS[i % len(COLORS)],
                    f"{r.label}: {int(h.sum()):,} transactions", ymax, view)
    _zoom_panel(axes[-1], runs, lo, hi)
    cfg = runs[0].config
    fig.suptitle(title or (f"Memory-bus transactions per page offset - "
                           f"{cfg['machine']['name']}, "
                           f"{cfg['workload']['roi_ticks']}-tick region of "
                           f"interest"), fontsize=12)
    fig.tight_layout()
    return save_figure(fig, out)


def save_figure(fig, out: Path) -> Path:
    """Write ``fig`` to ``out`` in one step (a temporary file renamed, so a
    crash leaves no half-written image) without dates, and close it."""
    import matplotlib.pyplot as plt
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.stem}.tmp{os.getpid()}{out.suffix}")
    try:
        fig.savefig(tmp, dpi=110, metadata=_no_dates(out.suffix))
        tmp.replace(out)
    finally:
        plt.close(fig)
        tmp.unlink(missing_ok=True)
    return out


def _no_dates(suffix: str) -> dict:
    """Metadata that keeps the same results giving the same file bytes."""
    s = suffix.lower()
    if s == ".png":
        return {"Software": None}
    if s == ".svg":
        return {"Date": None}
    if s == ".pdf":
        return {"CreationDate": None}
    return {}
