"""A table row's seeds: its runs per kernel and seed, c32's gain per seed,
and the rule the sensitivity tables share for whether two rows differ by
more than chance (their mean gains differ by more than the wider of their
seed ranges)."""

from __future__ import annotations

import statistics

from colorsim.orchestrate.sensitivity import made_run

KERNELS = ("vanilla", "c32")
SEEDS = (1, 2, 3)


def seeded(spec_of, summarize, out, run, force, missing=None, seeds=SEEDS):
    """{kernel: [summary per seed]} of one row, ``spec_of(kernel, seed)``
    its runs (made first with ``run``); None when one is missing."""
    seeds = tuple(seeds)
    got = {k: [] for k in KERNELS}
    for seed in seeds:
        for k in KERNELS:
            path = made_run(spec_of(k, seed), out, run, force, missing)
            if path is not None:
                got[k].append(summarize(path))
    return got if all(len(v) == len(seeds) for v in got.values()) else None


def gains(got) -> list:
    """c32's gain over vanilla per seed."""
    return [c["rate"] / v["rate"] - 1 if v["rate"] else float("nan")
            for v, c in zip(got["vanilla"], got["c32"])]


def agrees(a, b) -> bool:
    """Two rows' mean gains differ by no more than the wider seed range."""
    ga, gb = gains(a), gains(b)
    spread = max(max(ga) - min(ga), max(gb) - min(gb))
    return abs(statistics.mean(ga) - statistics.mean(gb)) <= spread


def mean_range(values, fmt) -> str:
    return (f"{fmt.format(statistics.mean(values))} "
            f"[{fmt.format(min(values))}..{fmt.format(max(values))}]")


def mean_of(rs, key) -> float:
    return statistics.mean(r[key] for r in rs)


def rate_cells(got) -> str:
    """Both kernels' rates and c32's gain, mean [least..most] over the
    seeds: a row's cells from its second column on."""
    v, c = got["vanilla"], got["c32"]
    g = [100 * x for x in gains(got)]
    return (f"| {mean_range([r['rate'] for r in v], '{:.0f}')} "
            f"| {mean_range([r['rate'] for r in c], '{:.0f}')} "
            f"| {mean_range(g, '{:+.1f}')} % ")


def contention_cell(got) -> str:
    return f"| {mean_of(got['vanilla'], 'contention'):.2f} / {mean_of(got['c32'], 'contention'):.2f} "
