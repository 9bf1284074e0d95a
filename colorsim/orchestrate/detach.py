"""A sweep that does not wait: ``sweep EXP --executor slurm --detach``.

A paper-scale sweep on a cluster takes days (Figure 10: about an hour per
point), longer than a login session should keep a driver alive.  Detached,
the sweep plans and builds as always, submits every point that is not
done as Slurm array jobs (at most ``--jobs`` running at once), submits a
collection job that runs once they have all ended (``afterany``: however
they ended), prints the job ids and returns.  The collection job is
``sweep EXP --collect``: it rebuilds the runs folder's catalog and prints
what every experiment has, as an attached sweep's last step does; anyone
can run it again at any time.

What a detached sweep does not do: retry a point whose process crashed
(an attached sweep's driver does that).  ``sweep EXP`` again runs what is
still missing.
"""

from __future__ import annotations

import sys

from colorsim.errors import ConfigError


def check_detach(executor: str) -> None:
    """--detach needs a scheduler that keeps the jobs: Slurm."""
    if executor != "slurm":
        raise ConfigError(f"--detach needs --executor slurm (the {executor} "
                          f"executor's points die with the sweep's process)")


def collect_command(names: str, quick: bool, root, only_texts=()) -> list:
    """The collection job's command line."""
    cmd = [sys.executable, "-m", "colorsim", "sweep", names, "--collect",
           "--runs", str(root)]
    for t in only_texts:
        cmd += ["--only", t]
    return cmd + (["--quick"] if quick else [])


def submit(todo, ex, names: str, quick: bool, root, queue, only_texts=(),
           log=print) -> dict:
    """Queue ``todo``'s points on the Slurm executor ``ex`` (``queue(t)``:
    the sweep's own submission of a point), submit them and the collection
    job; return what was submitted."""
    for t in todo:
        queue(t)
    arrays, collect, collect_log = ex.submit_detached(
        collect_command(names, quick, root, only_texts))
    log(f"sweep: detached: {len(todo)} points submitted as Slurm array "
        f"job{'s' * (len(arrays) != 1)} {', '.join(arrays)} (at most {ex.jobs} "
        f"running at once); collection job {collect} runs "
        f"'sweep {names} --collect' after them (log: {collect_log}). "
        f"'squeue --me' shows them; 'sweep {names} --collect --runs {root}' "
        f"gathers what has finished at any time")
    return {"detached": True, "points": len(todo), "arrays": arrays,
            "collect_job": collect, "collect_log": str(collect_log)}
