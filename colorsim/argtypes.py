"""Command-line value types shared by every command (argparse ``type=``):
a mistake is argparse's one-line usage error, before anything runs."""

from __future__ import annotations

import argparse


def positive_int(text):
    try:
        v = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least 1")
    return v


def seeds_count(text):
    """How many seeds a table's row runs: at least 2, since a row's chance
    is the spread of its seeds."""
    v = positive_int(text)
    if v < 2:
        raise argparse.ArgumentTypeError(f"{text!r}: a row needs at least 2 "
                                         "seeds to have a spread")
    return v


def _positive(text, unit):
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of {unit}") from None
    if not v > 0 or v == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} must be a positive, finite "
                                         f"number of {unit}")
    return v


def positive_seconds(text):
    return _positive(text, "seconds")


def positive_hours(text):
    return _positive(text, "hours")


def nonnegative_int(text):
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be 0 or more")
    return v


def directory(text):
    """A folder name.  An empty one is refused: Path("") is the current
    directory, which nobody means by ``--out ""`` (an unset variable)."""
    from pathlib import Path
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty folder name (give a path, "
                                         "or leave the option out)")
    return Path(text)


def name_list(text):
    """Comma-separated names, none empty: ``--kernels ""`` or ``a,,b`` is a
    mistake, not a request for the defaults."""
    names = [n.strip() for n in text.split(",")]
    if not all(names):
        raise argparse.ArgumentTypeError(f"{text!r}: an empty name in the list")
    return tuple(names)
