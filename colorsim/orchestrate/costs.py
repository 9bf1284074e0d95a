"""What a sweep's points cost in host time, for its dry run's estimate and
its progress bar's ETA.

A run's wall time depends on its cost class (describe.experiments.cost_class: machine,
CPUs, workload and its size, --timing, the region), not on the kernel
variant or the seed, and classes differ some twentyfold (a Figure 10
point at paper scale takes about an hour, a Figure 6 point minutes).  An
estimate per class comes from, in this order:

* the runs of that class already in the runs folder (their ``wall_s``),
  the median: this machine's own speed;
* the recorded paper-scale runs (``recorded/paper``: its recorded.json
  keeps the median wall time per cost class of the runs it was recorded
  from): another machine's speed, so a fresh clone can estimate a
  paper-scale sweep before it has run anything.

A class neither has is counted as unknown, never guessed; the progress
bar weighs it as the mean of the known ones.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from colorsim.describe.experiments import cost_key
from colorsim.errors import ConfigError

HERE, RECORDED = "here", "recorded"


def wall_s(run_dir: Path):
    """A finished run's wall time (its config.json), or None."""
    try:
        return float(json.loads((Path(run_dir) / "config.json").read_text())["wall_s"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def recorded_costs(root=None) -> dict:
    """{cost class key: host seconds} of the recorded paper-scale runs
    (recorded/paper's recorded.json), or {} when there are none."""
    from colorsim.results.catalog import CATALOG, MARK
    from colorsim.results.record import COSTS, PAPER
    try:
        info = json.loads((Path(root or PAPER) / CATALOG / MARK).read_text())
    except (OSError, ValueError):
        return {}
    return {k: float(v) for k, v in info.get(COSTS, {}).items()}


EMULATOR_MIB = 1024     # QEMU, the plugin's tables and Python beside the guest


def point_mem_mib(params: dict) -> int:
    """The memory a point's run needs on a cluster node, MiB: its guest's
    RAM (the machine's) and the emulator's own."""
    from colorsim.describe.machine import get_machine
    try:
        return get_machine(params["machine"]).memory.size // 2**20 + EMULATOR_MIB
    except (ConfigError, KeyError):
        return None


class Estimates:
    """Per cost class, the seconds a point takes and where that figure
    comes from (HERE, RECORDED or None: unknown)."""

    def __init__(self, measured_here: dict, recorded: dict = None):
        self.here = {k: statistics.median(v) for k, v in measured_here.items() if v}
        # keyed as recorded.json keys them
        self.recorded = recorded if recorded is not None else recorded_costs()

    def of(self, params: dict):
        """(seconds, source) of one point; (None, None) if unknown."""
        k = cost_key(params)
        if k in self.here:
            return self.here[k], HERE
        if k in self.recorded:
            return self.recorded[k], RECORDED
        return None, None

    def weights(self, params_list) -> list:
        """Each point's weight for a progress bar: its estimate, an unknown
        one weighed as the mean of the known (1 if none is known)."""
        got = [self.of(p)[0] for p in params_list]
        known = [g for g in got if g is not None]
        mean = sum(known) / len(known) if known else 1.0
        return [g if g is not None else mean for g in got]
