#!/usr/bin/env python3
"""Copy a recorded gem5 run folder, keeping only what the suite reads.

    python3 scripts/trim-gem5-recording.py SRC_RUN DEST_RUN

A gem5 run folder (as ``colorsim run --engine gem5`` leaves it) is a few
megabytes, mostly statistics nobody reads.  The repository keeps trimmed
copies (``recorded/gem5/``) so that the cross-engine check and its tests
work on a clone alone.  What stays:

* the suite's own files of the run (config.json, layout.json,
  gem5_spec.json, console.log, bus_offsets.csv, counters.csv);
* in those and gem5's files below, the recording machine's paths become
  placeholders: ``$GEM5`` (the binary), ``<run>`` (the run's folder while
  it ran) and ``<repo>`` (the checkout that ran it), as gem5's command line
  names them;
* from ``gem5/``: config.json (the built machine, which the collect step
  checks against the spec), run_info.json, simout.txt, simerr.txt and the
  serial console;
* from ``gem5/stats.txt``: the Begin/End lines of every dump and the stat
  lines the collect step and the analysis read -- the run-wide scalars, the
  stats named in the gem5 engine's counter and global maps, each core's CPI,
  and every address-distribution (monitor) line.

The boot phase (``boot/``) and gem5's ``config.ini`` are dropped.  The
names come from the engine module itself, so a stat the engine starts to
read is kept by the next trim.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from colorsim.run.engines.gem5stats import (  # noqa: E402
    _COMPONENTS, COUNTER_MAP, GLOBAL_MAP, P6_BUS_DIST)
from colorsim.run.rundir import CONFIG_DIGEST  # noqa: E402

RUN_FILES = ("config.json", "layout.json", "gem5_spec.json", "console.log",
             "bus_offsets.csv", "counters.csv")
GEM5_FILES = ("config.json", "run_info.json", "simout.txt", "simerr.txt",
              "board.pc.com_1.device")
SCALARS = ("simSeconds", "simTicks", "finalTick", "simFreq", "hostSeconds",
           "simInsts", "simOps", "hostInstRate")


def kept_names():
    """A predicate: whether a stat name is one the suite reads."""
    exact = set(SCALARS)
    for _, names in GLOBAL_MAP:
        exact.update(names)
    per_component = {}
    for _, comp, alternatives in COUNTER_MAP:
        for names in alternatives:
            per_component.setdefault(comp, set()).update(names)
    per_component.setdefault("core", set()).add("cpi")
    comps = [(re.compile("^" + _COMPONENTS[c] + "(?P<stat>.+)$"), stats)
             for c, stats in per_component.items()]

    def keep(name: str) -> bool:
        if name in exact or "AddrDist" in name or P6_BUS_DIST.match(name):
            return True
        for rx, stats in comps:
            m = rx.match(name)
            if m and m.group("stat") in stats:
                return True
        return False
    return keep


def trim_stats(src: Path, dest: Path) -> tuple:
    """Write the kept lines of ``src`` to ``dest``; (kept, read) counts."""
    keep = kept_names()
    kept = read = 0
    with open(src) as fin, open(dest, "w") as fout:
        for line in fin:
            read += 1
            words = line.split(None, 1)
            if (not words or line.startswith("-" * 3)
                    or keep(words[0])):
                fout.write(line)
                kept += 1
    return kept, read


def trim_config(path: Path) -> None:
    """The copy is not the run its completion described: its stats.txt
    is shorter.  The manifest of result files and the configuration's
    checksum describe the full recording, so they are left out (the copy
    loads as an imported, unverified run), and the copy says what made it."""
    if not path.is_file():
        return
    config = json.loads(path.read_text())
    if "results" not in config and CONFIG_DIGEST not in config:
        return                      # recorded before manifests existed
    config.pop("results", None)
    config.pop(CONFIG_DIGEST, None)
    config["trimmed_by"] = "scripts/trim-gem5-recording.py"
    path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")


def host_paths(src: Path) -> list:
    """(host path, placeholder) pairs of the machine that made the run,
    from gem5's command line in simout.txt: the binary (``$GEM5``), the
    run's folder while it ran (``<run>``) and the checkout whose
    run_fs.py it ran (``<repo>``), wherever the trim itself runs."""
    simout = src / "gem5" / "simout.txt"
    text = simout.read_text() if simout.is_file() else ""
    m = re.search(r"^command line: (\S+) --outdir=(\S+)/gem5 .*?"
                  r"(\S+)/configs/gem5/run_fs\.py ", text, re.M)
    if not m:
        return []
    return [(m.group(1), "$GEM5"), (m.group(2), "<run>"),
            (m.group(3), "<repo>")]


def scrub(path: Path, pairs: list) -> None:
    """Put placeholders where ``path`` names the recording machine's paths."""
    data = path.read_bytes()            # bytes: CSV lines end in CRLF
    for host, placeholder in pairs:
        data = data.replace(host.encode(), placeholder.encode())
    path.write_bytes(data)


def trim_run(src: Path, dest: Path) -> None:
    if not (src / "gem5" / "stats.txt").is_file():
        sys.exit(f"trim-gem5-recording: {src} has no gem5/stats.txt")
    (dest / "gem5").mkdir(parents=True, exist_ok=True)
    pairs = host_paths(src)
    for name in RUN_FILES:
        if (src / name).is_file():
            shutil.copyfile(src / name, dest / name)
            scrub(dest / name, pairs)
    trim_config(dest / "config.json")
    for name in GEM5_FILES:
        if (src / "gem5" / name).is_file():
            shutil.copyfile(src / "gem5" / name, dest / "gem5" / name)
            scrub(dest / "gem5" / name, pairs)
    kept, read = trim_stats(src / "gem5" / "stats.txt",
                            dest / "gem5" / "stats.txt")
    print(f"{src.name}: stats.txt {kept} of {read} lines kept")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().splitlines()[2].strip())
    trim_run(Path(sys.argv[1]), Path(sys.argv[2]))
