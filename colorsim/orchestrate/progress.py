"""A sweep's progress on stderr: points done and failed, and the time
left, weighted by what each point costs (orchestrate/costs.py)."""

from __future__ import annotations

import sys
import time


class Progress:
    """Points done and failed, and the time left, on stderr: a rich bar
    redrawn in place on a terminal, a line per change otherwise.  The bar
    counts host seconds, not points: each point weighs its cost class's
    estimate (costs.Estimates), so the ETA of a sweep whose points differ
    twentyfold in cost is not a plain mean."""

    def __init__(self, weights: list, stream=None):
        self.total = len(weights)
        self.cost_total = sum(weights)
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.done = self.failed = 0
        self.cost_done = 0.0
        self.t0 = time.monotonic()
        self.bar = None
        if self.tty:                        # rich redraws it in place
            from rich.console import Console
            from rich.progress import BarColumn, Progress as Bar, TextColumn
            self.bar = Bar(TextColumn("sweep"), BarColumn(bar_width=30),
                           TextColumn("{task.description}"),
                           console=Console(file=self.stream), transient=False)
            self.bar.start()
            self.task = self.bar.add_task(self.line(), total=self.cost_total or 1)

    def line(self) -> str:
        finished = self.done + self.failed
        left = self.total - finished
        elapsed = time.monotonic() - self.t0
        if finished and left and self.cost_done > 0:
            eta = f"ETA {_hms(elapsed / self.cost_done * (self.cost_total - self.cost_done))}"
        elif not left:
            eta = f"took {_hms(elapsed)}"
        else:
            eta = "ETA ?"
        return (f"{self.done} done, {self.failed} failed, {left} remaining, {eta}")

    def update(self, ok: bool = None, weight: float = 0.0) -> None:
        if ok is True:
            self.done += 1
        elif ok is False:
            self.failed += 1
        self.cost_done += weight if ok is not None else 0.0
        if self.bar is not None:
            self.bar.update(self.task, completed=self.cost_done,
                            description=self.line())
        else:                               # a log: a line per change
            frac = (min(self.cost_done / self.cost_total, 1.0)
                    if self.cost_total else 1.0)
            print(f"sweep [{'#' * int(frac * 30):<30}] {self.line()}",
                  file=self.stream, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def _hms(s: float) -> str:
    s = int(round(s))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"
