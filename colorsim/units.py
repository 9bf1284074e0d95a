"""Parse human sizes, frequencies and times once, at the boundary."""

import re

from colorsim.errors import ConfigError

_SIZE = {"": 1, "b": 1, "k": 1024, "kb": 1024, "kib": 1024,
         "m": 1024**2, "mb": 1024**2, "mib": 1024**2,
         "g": 1024**3, "gb": 1024**3, "gib": 1024**3}
_FREQ = {"hz": 1, "khz": 10**3, "mhz": 10**6, "ghz": 10**9}
_TIME = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9, "ps": 1e-12}
_NUM = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([a-zA-Z]*)\s*$")


def _split(text, what):
    m = _NUM.match(str(text))
    if not m:
        raise ConfigError(f"cannot read {what} {text!r}: expected a number "
                          f"with an optional unit")
    return float(m.group(1)), m.group(2).lower()


def parse_size(text):
    """'512KiB' -> 524288.  KB/MB are read as binary units, as in the paper."""
    if isinstance(text, int):
        return text
    value, unit = _split(text, "size")
    if unit not in _SIZE:
        raise ConfigError(f"unknown size unit {unit!r} in {text!r} "
                          f"(use B, KiB, MiB or GiB)")
    size = value * _SIZE[unit]
    if size != int(size):
        raise ConfigError(f"size {text!r} is not a whole number of bytes")
    return int(size)


def parse_freq(text):
    value, unit = _split(text, "frequency")
    if unit not in _FREQ:
        raise ConfigError(f"unknown frequency unit {unit!r} in {text!r}")
    return int(value * _FREQ[unit])


def parse_time_ns(text):
    value, unit = _split(text, "time")
    if unit not in _TIME:
        raise ConfigError(f"unknown time unit {unit!r} in {text!r}")
    return value * _TIME[unit] * 1e9


def format_size(n):
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if n >= scale and n % scale == 0:
            return f"{n // scale}{unit}"
    return f"{n}B"


def is_pow2(n):
    return isinstance(n, int) and n > 0 and n & (n - 1) == 0
