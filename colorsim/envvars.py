"""Every environment variable the suite reads, with what it does: the one
list behind ``--help``'s epilog and docs/running.md ("Environment"), which a
test holds to the code."""

ENVIRONMENT = {
    "GEM5": "the gem5 binary for --engine gem5 (default: the build "
            "scripts/build-gem5.sh made, if any)",
    "COLORSIM_GEM5_CACHE": "where scripts/build-gem5.sh keeps gem5 builds "
                           "(default /var/cache/colorsim)",
    "LINUX24_SRC": "your Linux 2.4.37.x source tree, for linux24: kernels",
    "COLORSIM_LINUX24_RECORD": "the file in which set-up remembers the "
                               "LINUX24_SRC it was given; the tests use that "
                               "tree when LINUX24_SRC is unset (default "
                               "/var/cache/colorsim/linux24-src)",
    "COLORSIM_MACHINES": "another machines file (default configs/machines.toml)",
    "COLORSIM_EXPERIMENTS": "another experiments file (default "
                            "configs/experiments.toml)",
    "COLORSIM_QEMU": "another qemu-system-x86_64 (>= 10.1, with the suite's "
                     "patches) than the one set-up built",
    "COLORSIM_QEMU_CACHE": "where set-up keeps its QEMU build (default "
                           "/var/cache/colorsim)",
    "COLORSIM_DASK_SCHEDULER": "a Dask scheduler's address for sweep "
                               "--executor dask",
    "COLORSIM_SLURM_ARGS": "extra sbatch arguments for sweep --executor slurm",
    "COLORSIM_SLURM_TIME": "a Slurm job's time limit in minutes",
    "COLORSIM_SLURM_SIGNAL_S": "seconds before the time limit at which Slurm "
                               "warns a job (default 60)",
    "COLORSIM_PREBUILT": "set by a sweep for its runs: the builds are made "
                         "(not for users)",
    "COLORSIM_DEBUG": "1: an internal error prints its traceback",
}


def epilog() -> str:
    """The environment section of ``--help``."""
    import textwrap
    width = max(map(len, ENVIRONMENT))
    lines = ["environment variables:"]
    for name, what in ENVIRONMENT.items():
        text = textwrap.wrap(what, 96 - width - 4)
        lines.append(f"  {name:<{width}}  {text[0]}")
        lines += [" " * (width + 4) + t for t in text[1:]]
    return "\n".join(lines)
