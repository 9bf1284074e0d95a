"""Engines that run a :class:`colorsim.describe.runspec.RunSpec`.

``ENGINES`` maps the ``--engine`` name to the engine class; every engine
writes the same run-directory tables (``bus_offsets.csv``,
``counters.csv``).  The QEMU engine registers itself here as ``"qemu"``.
"""

from colorsim.errors import ConfigError
from colorsim.run.engines.gem5 import Gem5Engine
from colorsim.run.engines.qemu import QemuEngine

ENGINES = {"qemu": QemuEngine, "gem5": Gem5Engine}


def get_engine(name: str):
    """An engine instance by its ``--engine`` name."""
    if name not in ENGINES:
        raise ConfigError(f"unknown engine {name!r}; choose one of "
                          f"{', '.join(ENGINES)}")
    return ENGINES[name]()


__all__ = ["ENGINES", "Gem5Engine", "QemuEngine", "get_engine"]
