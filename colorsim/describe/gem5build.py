"""Where the suite's own gem5 build is: scripts/build-gem5.sh builds gem5
into a cache (default /var/cache/colorsim, or COLORSIM_GEM5_CACHE) and
names its last good build in the cache's ``current-gem5`` file.  Describing
which experiments a machine can run needs to know whether one exists, as
the engine needs its path to run it."""

from __future__ import annotations

import os
from pathlib import Path

GEM5_CACHE_ENV = "COLORSIM_GEM5_CACHE"


def cached_gem5():
    """The gem5.fast scripts/build-gem5.sh built last, or None."""
    cache = Path(os.environ.get(GEM5_CACHE_ENV) or "/var/cache/colorsim")
    try:
        name = (cache / "current-gem5").read_text().strip()
    except OSError:
        return None
    if not name:
        return None
    # a build keeps its own copy of the binary; builds made before source
    # trees were shared kept it only in their tree
    for path in (cache / name / "gem5.fast",
                 cache / name / "src" / "build" / "X86C" / "gem5.fast"):
        if path.is_file() and os.access(path, os.X_OK):
            return path
    return None
