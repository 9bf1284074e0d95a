"""Parse gem5-style ``stats.txt`` (gem5 v24, and our QEMU plugin's imitation).

One file holds many dumps, each between ``---------- Begin Simulation
Statistics ----------`` (optionally followed by ``: <message>``, as later
gem5 releases write) and ``---------- End Simulation Statistics   ----------``.
Each stat line is ``NAME VALUE [PDF% CDF%] # DESCRIPTION (UNIT)``.

Names follow gem5's conventions: vector elements and distribution fields
are ``base::sub`` (``::total``, ``::samples``, ``::mean``, buckets ``::lo-hi``),
and a SparseHistogram prints one ``base::<key>`` line per distinct key.
gem5 prints those keys as doubles with 6 significant digits, so a key at or
above 1e6 (``1.04864e+06``) is not exact: :class:`Stat` flags it.

Entry points: :func:`parse_stats` (list of :class:`Dump`), :func:`to_frame`
(tidy pandas DataFrame), :func:`sparse_histogram`, :func:`distribution`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

BEGIN = re.compile(r"^-{3,}\s*Begin Simulation Statistics\s*(?P<rest>.*)$")
END = re.compile(r"^-{3,}\s*End Simulation Statistics\s*-*\s*$")
EXACT_KEY_LIMIT = 1e6
_HEX = re.compile(r"^0x[0-9a-fA-F]+$")
_NUMBER = re.compile(r"^[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$")


class StatsFormatError(ValueError):
    """The text is not a gem5-style stats file."""


@dataclass(frozen=True)
class Stat:
    """One line of a dump.

    :ivar name: full stat name, e.g. ``board.mon.readAddrDist::4064``.
    :ivar value: float (``nan`` and ``inf`` included).
    :ivar base: name before the last ``::`` (the name itself if none).
    :ivar key: text after the last ``::`` or ``None``.
    :ivar key_value: ``key`` as a number when it is one, else ``None``.
    :ivar key_exact: False when ``key_value`` >= 1e6: gem5 printed it with
        6 significant digits, so the true key is unknown.
    """

    name: str
    value: float
    base: str
    key: str | None = None
    key_value: float | None = None
    key_exact: bool = True
    pdf: float | None = None
    cdf: float | None = None
    desc: str = ""
    unit: str = ""


@dataclass
class Dump:
    """One Begin/End block, in file order (index 0 is the first)."""

    index: int
    message: str = ""
    stats: list = field(default_factory=list)

    def as_dict(self) -> dict:
        """``{name: value}`` for this dump."""
        return {s.name: s.value for s in self.stats}

    def get(self, name: str, default=None):
        for s in self.stats:
            if s.name == name:
                return s.value
        return default


def parse_value(text: str) -> float:
    """``'12'`` -> 12.0, ``'nan'``/``'-nan'`` -> nan, ``'inf'`` -> inf."""
    t = text.strip().lower()
    if t in ("nan", "-nan", "+nan"):
        return math.nan
    if t in ("inf", "+inf", "-inf"):
        return -math.inf if t.startswith("-") else math.inf
    return float(t)


def _percent(text: str):
    t = text.strip()
    if not t.endswith("%"):
        return None
    try:
        return parse_value(t[:-1])
    except ValueError:
        return None


def _unit(desc: str) -> tuple[str, str]:
    """Split ``'Number of ticks ((Tick/Second))'`` into text and unit."""
    d = desc.rstrip()
    if d.endswith("))") and "((" in d:
        i = d.rfind("((")
        return d[:i].rstrip(), d[i + 2:-2]
    if d.endswith(")") and "(" in d:
        i = d.rfind("(")
        return d[:i].rstrip(), d[i + 1:-1]
    return d, ""


def parse_line(line: str) -> Stat | None:
    """One stat line, or ``None`` for blank or unparseable lines."""
    body, sep, desc = line.partition(" # ")
    if not sep and "#" in line:
        body, _, desc = line.partition("#")
    tokens = body.split()
    if len(tokens) < 2:
        return None
    name = tokens[0]
    try:
        value = parse_value(tokens[1])
    except ValueError:
        return None
    pdf = _percent(tokens[2]) if len(tokens) > 2 else None
    cdf = _percent(tokens[3]) if len(tokens) > 3 else None
    text, unit = _unit(desc.strip())
    base, key, key_value, exact = name, None, None, True
    if "::" in name:
        base, key = name.rsplit("::", 1)
        if _HEX.match(key):            # our plugin's page offsets: 0x030
            key_value = int(key, 16)
        elif _NUMBER.match(key):
            key_value = float(key)
            exact = abs(key_value) < EXACT_KEY_LIMIT
            if exact and key_value == int(key_value):
                key_value = int(key_value)
    return Stat(name, value, base, key, key_value, exact, pdf, cdf, text,
                unit)


def parse_stats(source) -> list[Dump]:
    """Split a stats file into dumps and parse every line.

    :param source: a path, or the file's text (anything with a newline or
        a Begin marker is taken as text).
    :returns: the dumps in file order.  A Begin without End (a run that was
        killed mid-dump) keeps what was read and is still returned.
    :raises StatsFormatError: stat lines outside any dump, or End without
        Begin.
    """
    text = _read(source)
    dumps: list[Dump] = []
    current = None
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip()
        if not line.strip():
            continue
        m = BEGIN.match(line)
        if m:
            message = m.group("rest").strip().strip("-").strip()
            message = message.lstrip(":").strip().rstrip("-").strip()
            current = Dump(len(dumps), message)
            dumps.append(current)
            continue
        if END.match(line):
            if current is None:
                raise StatsFormatError(f"line {lineno}: End without Begin")
            current = None
            continue
        stat = parse_line(line)
        if stat is None:
            continue
        if current is None:
            raise StatsFormatError(f"line {lineno}: stat {stat.name!r} "
                                   f"outside a Begin/End block")
        current.stats.append(stat)
    return dumps


def _read(source) -> str:
    if isinstance(source, Path):
        return source.read_text()
    s = str(source)
    if "\n" in s or "Simulation Statistics" in s:
        return s
    return Path(s).read_text()


def to_frame(dumps):
    """Tidy DataFrame: one row per (dump, stat).

    Columns: dump, name, value, base, key, key_value, key_exact, pdf, cdf,
    desc, unit.
    """
    import pandas as pd

    cols = ["dump", "name", "value", "base", "key", "key_value",
            "key_exact", "pdf", "cdf", "desc", "unit"]
    rows = [(d.index, s.name, s.value, s.base, s.key, s.key_value,
             s.key_exact, s.pdf, s.cdf, s.desc, s.unit)
            for d in dumps for s in d.stats]
    return pd.DataFrame(rows, columns=cols)


# Fields a Distribution/Histogram prints besides its buckets.
DIST_FIELDS = ("samples", "mean", "gmean", "stdev", "underflows",
               "overflows", "min_value", "max_value", "total")


def sparse_histogram(dump: Dump, base: str):
    """A SparseHistogram's buckets: ``({key: count}, samples, inexact)``.

    :returns: the bucket dict (int keys where exact), the ``::samples``
        value (None if absent) and the list of key strings that were
        printed inexactly (>= 1e6).
    """
    buckets, inexact, samples = {}, [], None
    for s in dump.stats:
        if s.base != base:
            continue
        if s.key == "samples":
            samples = s.value
        elif s.key_value is not None:
            buckets[s.key_value] = buckets.get(s.key_value, 0) + s.value
            if not s.key_exact:
                inexact.append(s.key)
    return buckets, samples, inexact


def distribution(dump: Dump, base: str) -> dict:
    """A Distribution/Histogram: its summary fields plus ``buckets``.

    Buckets are keyed by their label (``'0-3'`` or ``'4'``).
    """
    out = {"buckets": {}}
    for s in dump.stats:
        if s.base != base or s.key is None:
            continue
        if s.key in DIST_FIELDS:
            out[s.key] = s.value
        else:
            out["buckets"][s.key] = s.value
    return out


def vector(dump: Dump, base: str) -> dict:
    """A Vector's elements by sub-name, ``total`` included when printed."""
    return {s.key: s.value for s in dump.stats
            if s.base == base and s.key is not None}
