"""Figures as functions of run results."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from .results import colored_span, hot_offsets, offset_histogram  # noqa: E402

COLORS = ["#c0392b", "#2471a3", "#229954", "#7d3c98", "#d68910", "#566573"]


def _bars(ax, h, color, label, width, alpha):
    ax.bar(h.index, h.values, width=width, color=color, alpha=alpha,
           label=label, align="edge", linewidth=0)


def plot_offsets(runs, out: Path, view: str = "chunk", title: str = None) -> Path:
    """Figure 1: bus transactions per page offset, runs overlaid.

    Top panel: the whole 4 KiB page.  Bottom panel: the offsets the
    scheduler's per-task line can occupy (vanilla: one line; N colors: N
    lines), with the first-touched word of the vanilla layout marked.
    """
    out = Path(out)
    width = 8 if view == "chunk" else runs[0].layout["variant"]["line"]
    lo, hi = colored_span([r.layout for r in runs])
    fig, (top, zoom) = plt.subplots(2, 1, figsize=(10, 7.5))
    for i, r in enumerate(runs):
        h = offset_histogram(r, view)
        c = COLORS[i % len(COLORS)]
        lbl = f"{r.label}: peak {int(h.max()) if len(h) else 0} at {int(h.idxmax()) if len(h) else 0:#05x}"
        _bars(top, h, c, lbl, width, 0.75)
        z = h[(h.index >= 0) & (h.index < hi + 0x40)]
        _bars(zoom, z, c, r.label, width, 0.6)
    for ax in (top, zoom):
        hot = hot_offsets(runs[0].layout)
        ax.axvspan(hot["line_offset"], hot["line_offset"] + hot["line"],
                   color="gold", alpha=0.25, label="scheduler-hot line (vanilla)")
        ax.axvline(hot["first_touched"], color="k", ls="--", lw=0.8,
                   label=f"first word the run-queue walk reads ({hot['first_touched']:#04x})")
        ax.set_ylabel("bus transactions")
    zoom.axvspan(lo, hi, color="grey", alpha=0.08, label="where colored hot lines land")
    zoom.set_yscale("log")   # the colored runs' spread is orders below the peak
    zoom.set_ylabel("bus transactions (log)")
    top.set_xlim(0, 4096)
    top.set_xticks(range(0, 4097, 512))
    top.set_xticklabels([f"{x:#05x}" for x in range(0, 4097, 512)])
    zoom.set_xlim(0, hi + 0x40)
    ticks = range(0, hi + 0x41, 0x80)
    zoom.set_xticks(list(ticks))
    zoom.set_xticklabels([f"{x:#05x}" for x in ticks])
    zoom.set_xlabel("page offset (" + ("8-byte critical chunk of each fill"
                                       if view == "chunk" else "cache line") + ")")
    top.legend(fontsize=8, loc="upper right")
    zoom.legend(fontsize=7, loc="upper right")
    cfg = runs[0].config
    top.set_title(title or (f"Bus transactions per page offset - "
                            f"{cfg['machine']['name']}, region of interest "
                            f"{cfg['workload']['roi_ticks']} ticks"))
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.stem + ".tmp" + out.suffix)
    fig.savefig(tmp, dpi=110, metadata={"Software": None})
    plt.close(fig)
    tmp.replace(out)
    return out
