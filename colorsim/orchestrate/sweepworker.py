"""One sweep point in its own process: ``python3 -m colorsim.orchestrate.sweepworker JOB``.

JOB is JSON: ``{"params": Point params + timeout, "name": run id, "out":
folder}``, and ``"force": true`` to replace a damaged run of that id.  The run goes through :func:`colorsim.run.runner.run`, so it is
either a complete verified run directory or ``NAME.failed`` with
failure.txt.  The last line on stdout is a JSON record: ``status`` (done or
failed), ``kind`` (timeout, panic, time-limit, interrupted, refused, crash)
and ``reason``.

SIGUSR1 is the batch system's warning before the wall-time limit (Slurm's
``--signal``): the run is stopped and recorded as killed for time.
"""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

TIME_LIMIT_SIGNAL = signal.SIGUSR1


def classify(reason: str) -> str:
    if reason.startswith("no result after"):
        return "timeout"
    if "panicked" in reason:
        return "panic"
    if reason.startswith(f"interrupted by {TIME_LIMIT_SIGNAL.name}"):
        return "time-limit"
    if reason.startswith("interrupted"):
        return "interrupted"
    return "crash"


def _mark_time_limit(failed: Path) -> None:
    """Say in failure.txt that the batch system's wall time ran out."""
    f = failed / "failure.txt"
    if f.is_file():
        f.write_text("killed for time: the batch system's wall-time limit "
                     f"was near ({TIME_LIMIT_SIGNAL.name} warning)\n"
                     + f.read_text())


def main(argv=None) -> int:
    from colorsim.run import runner
    from colorsim.errors import ConfigError, Interrupted, ResultsError, RunError
    from colorsim.describe.experiments import Point

    argv = sys.argv[1:] if argv is None else argv
    job = json.loads(argv[0])
    prm = dict(job["params"])
    out, name = Path(job["out"]), job["name"]

    def on_signal(signum, frame):
        raise Interrupted(signal.Signals(signum).name)

    for s in (signal.SIGTERM, signal.SIGHUP, TIME_LIMIT_SIGNAL):
        signal.signal(s, on_signal)

    def say(res):
        print(json.dumps(res), flush=True)
        return 0 if res["status"] == "done" else 1

    try:
        point = Point(experiment="", scale="", lacks=(), **prm)
        spec = point.spec()
        runner.run(spec, name=name, out=out, replace_unverified=True,
                   force=bool(job.get("force")),
                   progress=lambda m: print(m, file=sys.stderr, flush=True))
        return say({"status": "done"})
    except RunError as e:
        first = str(e).splitlines()[0]
        reason = first.split(" failed: ", 1)[-1]
        kind = classify(reason)
        fails = [l.strip() for l in str(e).splitlines()
                 if ": FAIL" in l and l.strip() not in reason]
        if fails:             # a user workload's own verdict (web, chat)
            reason += f" ({fails[-1][:200]})"
        if kind == "time-limit":
            _mark_time_limit(out / f"{name}.failed")
            reason = f"killed for time ({reason})"
        return say({"status": "failed", "kind": kind, "reason": reason,
                    "tail": "\n".join(str(e).splitlines()[-20:])})
    except Interrupted as e:
        kind = classify(f"interrupted by {e.signame}")
        if kind == "time-limit":
            _mark_time_limit(out / f"{name}.failed")
        return say({"status": "failed", "kind": kind,
                    "reason": ("killed for time: " if kind == "time-limit"
                               else "") + f"interrupted by {e.signame}"})
    except (ConfigError, ResultsError) as e:
        return say({"status": "failed", "kind": "refused", "reason": str(e)})


if __name__ == "__main__":
    sys.exit(main())
