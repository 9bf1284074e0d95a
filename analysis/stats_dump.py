"""A stats dump as a table: gem5's stats.txt (or the bus monitor's, in the
same format) of one run, as name, value and description rows in pandas."""

import argparse
import re
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parent.parent
p = argparse.ArgumentParser(description=__doc__)
p.add_argument("stats", type=Path, nargs="?",
               default=REPO / "recorded" / "gem5" / "ppro4-l2_512k-c32-t1024" / "gem5" / "stats.txt")
p.add_argument("--grep", default="", help="only the stats whose name holds this")
a = p.parse_args()
rows, dump = [], -1
for line in a.stats.read_text().splitlines():
    if line.startswith("---------- Begin Simulation Statistics"):
        dump += 1
    m = re.match(r"^(\S+)\s+(-?[0-9.eE+-]+|nan|inf)\s+(?:#\s*(.*))?$", line)
    if m and dump >= 0:
        rows.append((dump, m.group(1), float(m.group(2)), (m.group(3) or "").strip()))
df = pd.DataFrame(rows, columns=["dump", "name", "value", "description"])
df = df[df["name"].str.contains(a.grep, regex=False)]
print(f"{len(df)} stats in {df['dump'].nunique()} dumps of {a.stats}")
print(df.head(20).to_string(index=False))
