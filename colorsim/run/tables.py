"""Small, idempotent edits of the run-directory tables every engine writes.

``bus_offsets.csv`` (dump, cpu, mode, kind, offset, count[, view]) and
``counters.csv`` (dump, cpu, mode, stat, value).  The collect steps use these
to add what the engine's own writer does not know: the view column of the
offsets and the kernel's region numbers (``colorsim.run.console``).
"""

from __future__ import annotations

import csv
from pathlib import Path

ALL_CPUS, ALL_MODES, ROI_DUMP = -1, "all", 0
# Which traffic a bus_offsets row counts: "bus" = every request a CPU's
# cache puts on the shared bus (QEMU's busmon, gem5's per-L2 monitors),
# "memory" = only what memory serves (gem5's monitor before the memory).
VIEWS = ("bus", "memory")


def _read(path: Path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    return rows[0], rows[1:]


def write_rows(path: Path, header, rows) -> None:
    """A CSV file in one step: written beside, then renamed over ``path``."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)
    tmp.replace(path)


def add_to_counters(counters_csv: Path, values: dict,
                    dump: int = ROI_DUMP) -> int:
    """Append (or replace) these cpu -1 stats in an existing counters.csv.

    Idempotent: rows of the same stat names with cpu -1 are replaced, so a
    collect step may run twice.  Returns the number of rows written.
    """
    counters_csv = Path(counters_csv)
    header, body = _read(counters_csv)
    idx = {name: i for i, name in enumerate(header)}
    keep = [r for r in body
            if not (r[idx["stat"]] in values and r[idx["cpu"]] == str(ALL_CPUS))]
    new = []
    for stat, value in values.items():
        row = {"dump": dump, "cpu": ALL_CPUS, "mode": ALL_MODES,
               "stat": stat, "value": value}
        new.append([row.get(name, "") for name in header])
    write_rows(counters_csv, header, keep + new)
    return len(new)


def add_view_column(offsets_csv: Path, view: str) -> None:
    """Give every row of a bus_offsets.csv without a view column ``view``."""
    if view not in VIEWS:
        raise ValueError(f"view must be one of {VIEWS}, not {view!r}")
    offsets_csv = Path(offsets_csv)
    header, body = _read(offsets_csv)
    if "view" in header:
        return
    write_rows(offsets_csv, header + ["view"], [r + [view] for r in body])
