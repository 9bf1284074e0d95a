"""Experiments as data: configs/experiments.toml -> grids of run points.

Each experiment names the paper's figures and tables it feeds, what every
point needs, a paper-scale grid and a ``--quick`` grid of the same shape.
:func:`load_experiments` checks the whole file (a mistake is one
:class:`ConfigError` line naming the experiment and key); :func:`expand`
turns one experiment into :class:`Point` s, each either runnable today or
marked with what it lacks.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from colorsim import ROOT
from colorsim.errors import ConfigError, read_user_text
from colorsim.describe.tomlcheck import did_you_mean, duplicate_message

EXPERIMENTS_FILE = ROOT / "configs" / "experiments.toml"
EXPERIMENTS_ENV = "COLORSIM_EXPERIMENTS"

# Everything an experiment may need, and what it is.
NEEDS = {
    "counting": "bus transactions per page offset and cache counters",
    "rqloop": "the run-queue loop's L2 miss ratio",
    "synthetic": "the kernel's built-in task workload",
    "timing": "modeled time and throughput (the timing model)",
    "lockmeter": "run-queue lock statistics",
    "web": "the WebBench/httpd workload",
    "chat": "the Chat workload",
    "multiqueue": "the multi-queue scheduler kernel",
    "gem5": "a gem5 binary in $GEM5",
    "linux24": "a Linux 2.4.37 source tree in $LINUX24_SRC",
}
# What the suite can do today.
AVAILABLE = frozenset({"counting", "rqloop", "synthetic", "multiqueue",
                       "timing", "lockmeter", "web", "chat"})
# A point of an experiment (or of one of its outputs) needing one of these
# runs with --timing (modelled time, the lockmeter).
TIMING_NEEDS = frozenset({"timing", "lockmeter"})
# The user programs of the web and chat workloads (workloads/README.md).
PROGRAMS = {"web": "/bin/web", "chat": "/bin/chat"}
CHAT_THREADS_PER_USER = 4   # client send/receive, server receive/send
WORKLOADS = ("synthetic", "web", "chat")
KERNEL_NEEDS = {"mq": "multiqueue"}   # by scheduler: mq and mq-cN


def kernel_need(kernel: str):
    """What a kernel name needs beyond the suite's basics, or None:
    mq kernels the multi-queue scheduler, linux24:... kernels the user's
    Linux 2.4 source tree."""
    if kernel.startswith(("linux24:", "linux24-i386:")):
        return "linux24"
    return KERNEL_NEEDS.get(kernel.split("-")[0])

AXES = ("machine", "l2", "cpus", "kernels", "workload", "tasks", "seeds")
SCALARS = {"warmup": int, "roi": int, "burst": int, "engine": str,
           "timeout": (int, float),
           # web: closed-loop clients (at most one per httpd) and requests
           # per client; chat: users per room and messages per user
           "clients": int, "requests": int, "users": int, "messages": int,
           # chat: the region is the middle, skip % of the received
           # messages left out at each end (workloads/README.md)
           "skip": int,
           # web: accept serialisation (workloads/README.md): "none", the
           # kernel's wake-one accept; "pipe", a lock that wakes every
           # waiting child at each release (a herd); or "sysvsem", a SysV
           # semaphore whose release wakes one
           "accept": str,
           # web: the server's per-request work (workloads/README.md):
           # "apache", Apache 1.3's core path, or "minimal"
           "work": str,
           # web: client CPUs outside the measured machine (0: the clients
           # on the server's CPUs; absent: the program's default)
           "client_cpus": int}
SIZE_DEFAULTS = {"clients": 256, "requests": 8, "users": 20, "messages": 20,
                 "accept": "none", "work": "apache", "skip": 0}
ACCEPT_MODES = ("none", "pipe", "sysvsem", "fcntl", "flock")
WORK_MODES = ("apache", "minimal")
TOP_KEYS = {"title", "needs", "stand_in", "outputs", "grid", "quick"}
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


def available() -> frozenset:
    """The needs the suite meets on this machine."""
    from colorsim.describe.gem5build import cached_gem5
    have = set(AVAILABLE)
    if os.environ.get("GEM5") or cached_gem5():     # the user's, or our build
        have.add("gem5")
    if os.environ.get("LINUX24_SRC"):
        have.add("linux24")
    return frozenset(have)


@dataclass(frozen=True)
class Point:
    """One run of an experiment's grid (before builds give it an id)."""

    experiment: str
    scale: str
    machine: str
    l2: str
    cpus: int
    kernel: str
    workload: str           # what the paper ran
    workload_run: str       # what we run: the workload, or its stand-in
    tasks: int
    seed: int
    warmup: int
    roi: int
    burst: int
    engine: str
    timeout: float
    lacks: tuple = ()
    timing: bool = False    # runs with --timing (modelled time, lockmeter)
    args: str = ""          # the user program's arguments (web, chat)
    client_cpus: int = -1   # client CPUs; -1: the program's default

    @property
    def runnable(self) -> bool:
        return not self.lacks

    @property
    def stand_in(self) -> bool:
        return self.workload_run != self.workload

    def params(self) -> dict:
        return {k: getattr(self, k) for k in
                ("machine", "l2", "cpus", "kernel", "workload",
                 "workload_run", "tasks", "seed", "warmup", "roi", "burst",
                 "engine", "timing", "args", "client_cpus")}

    def spec(self):
        """The :class:`RunSpec` of a runnable point (a ConfigError if the
        runner refuses the combination, e.g. --timing with a kernel the
        lockmeter cannot meter)."""
        if self.workload_run not in ("synthetic",) + tuple(PROGRAMS):
            raise ConfigError(f"workload {self.workload_run!r} cannot run")
        from colorsim.describe.machine import get_machine
        from colorsim.describe.runspec import RunSpec, Workload
        from colorsim.describe.variants import parse_variant
        import warnings
        machine = get_machine(self.machine)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            machine = machine.with_l2(self.l2).with_cpus(self.cpus)
        variant = parse_variant(self.kernel, machine)
        # web and chat drive their own region of interest: the built-in
        # workload's warmup/roi ticks stay at their defaults for them
        # (the kernel's tick-driven region with small values breaks them:
        # README, "Sweeps ...")
        user = self.workload_run in PROGRAMS
        cc = self.client_cpus if user else -1
        if cc == -1 and variant.clients_on_server_cpus:   # 2.4 by default:
            cc = 0                             # the clients share its CPUs
        w = Workload(tasks=self.tasks, burst=self.burst,
                     warmup_ticks=Workload.warmup_ticks if user else self.warmup,
                     roi_ticks=Workload.roi_ticks if user else self.roi,
                     seed=self.seed,
                     program=PROGRAMS.get(self.workload_run, ""),
                     args=self.args if self.workload_run in PROGRAMS else "",
                     client_cpus=cc)
        return RunSpec(machine, variant, w, engine=self.engine,
                       timeout_s=float(self.timeout), timing=self.timing)

    def refusal(self):
        """The runner's reason for refusing this point, or None."""
        try:
            self.spec()
        except ConfigError as e:
            return str(e)
        return None


def workload_args(workload: str, tasks: int, s: dict) -> str:
    """The user program's arguments for a grid point: the ``tasks`` axis is
    the workload's size.  web: ``tasks`` httpd processes, min(tasks,
    clients) clients of ``requests`` requests each.  chat: ``tasks``
    threads = rooms x users x 4, with ``users`` per room (tasks must be a
    multiple of 4 x users).  web's ``accept`` mode is named only when it
    is not the default, so the default's runs keep their identity."""
    g = {k: s.get(k, v) for k, v in SIZE_DEFAULTS.items()}
    if workload == "web":
        accept = ("" if g["accept"] == SIZE_DEFAULTS["accept"]
                  else f",--accept,{g['accept']}")
        work = "" if g["work"] == SIZE_DEFAULTS["work"] else f",--work,{g['work']}"
        return (f"--httpd,{tasks},--clients,{min(tasks, g['clients'])},"
                f"--requests,{g['requests']}{accept}{work}")
    if workload == "chat":
        per_room = CHAT_THREADS_PER_USER * g["users"]
        if tasks % per_room:
            raise ConfigError(f"chat: tasks {tasks} (threads) is not a "
                              f"multiple of 4 threads x {g['users']} users "
                              f"per room = {per_room}")
        skip = f",--skip,{g['skip']}" if g["skip"] else ""
        return (f"--rooms,{tasks // per_room},--users,{g['users']},"
                f"--messages,{g['messages']}{skip}")
    return ""


def needs_timing(exp) -> bool:
    """A point runs with --timing if its experiment, or one of the
    experiment's outputs, needs the timing model or the lockmeter."""
    needs = set(exp.needs)
    for o in exp.outputs.values():
        needs |= set(o.needs)
    return bool(needs & TIMING_NEEDS)


@dataclass(frozen=True)
class Output:
    id: str
    what: str
    needs: tuple


@dataclass
class Experiment:
    name: str
    title: str
    needs: tuple
    stand_in: str | None
    outputs: dict
    grid: dict
    quick: dict
    defaults: dict = field(default_factory=dict)

    def settings(self, quick: bool) -> dict:
        s = {**self.defaults, **self.grid}
        if quick:
            s.update(self.quick)
        return s

    def output_lacks(self, out: Output) -> tuple:
        have = available()
        return tuple(n for n in out.needs if n not in have)

    def points(self, quick: bool = False) -> list:
        return expand(self, quick)


def cost_class(params: dict) -> tuple:
    """What a point's host time depends on: machine, CPUs, workload and its
    size, --timing and the region; not the kernel variant or the seed."""
    return (params["machine"], int(params["cpus"]), int(params["tasks"]),
            int(params["warmup"]) + int(params["roi"]), params["workload_run"],
            params.get("args") or "", bool(params.get("timing")))


def cost_key(params: dict) -> str:
    """The cost class as one string (a JSON key)."""
    return "|".join(str(v) for v in cost_class(params))


def experiments_file() -> Path:
    return Path(os.environ.get(EXPERIMENTS_ENV) or EXPERIMENTS_FILE)


def _err(path, where, msg) -> ConfigError:
    return ConfigError(f"{path}: {where}: {msg}")


def _as_list(v):
    return list(v) if isinstance(v, list) else [v]


def _check_settings(path, where, t: dict, partial: bool) -> dict:
    if not isinstance(t, dict):
        raise _err(path, where, "must be a table")
    out = {}
    for k, v in t.items():
        if k in AXES:
            vals = _as_list(v)
            if not vals:
                raise _err(path, f"{where}.{k}", "is an empty list")
            want = int if k in ("cpus", "tasks", "seeds") else str
            for x in vals:
                if isinstance(x, bool) or not isinstance(x, want):
                    raise _err(path, f"{where}.{k}",
                               f"{x!r} must be {'an integer' if want is int else 'a string'}")
                if want is int and x < 1:
                    raise _err(path, f"{where}.{k}", f"{x!r} must be at least 1")
            if len(set(vals)) != len(vals):
                raise _err(path, f"{where}.{k}", "lists a value twice")
            if k == "workload":
                for x in vals:
                    if x not in WORKLOADS:
                        raise _err(path, f"{where}.{k}",
                                   f"unknown workload {x!r}; known: "
                                   f"{', '.join(WORKLOADS)}")
            out[k] = vals
        elif k == "burst" and isinstance(v, list):
            # the built-in workload's burst length as an axis: how the
            # results change with the scheduler's share of the work
            if not v or len(set(v)) != len(v):
                raise _err(path, f"{where}.{k}", "must list distinct values")
            for x in v:
                if isinstance(x, bool) or not isinstance(x, int) or x < 1:
                    raise _err(path, f"{where}.{k}",
                               f"{x!r} must be a positive integer")
            out[k] = list(v)
        elif k in SCALARS:
            typ = SCALARS[k]
            if isinstance(v, bool) or not isinstance(v, typ):
                raise _err(path, f"{where}.{k}", f"{v!r} has the wrong type")
            if k == "accept" and v not in ACCEPT_MODES:
                raise _err(path, f"{where}.{k}", f"{v!r} is not an accept "
                           f"mode; known: {', '.join(ACCEPT_MODES)}")
            if k == "work" and v not in WORK_MODES:
                raise _err(path, f"{where}.{k}", f"{v!r} is not a kind of "
                           f"per-request work; known: {', '.join(WORK_MODES)}")
            if k == "skip" and not 0 <= v < 50:
                raise _err(path, f"{where}.{k}", f"{v!r} must be 0 to 49 (%)")
            if typ is not str and k != "skip" and not (v > 0 or (k == "client_cpus" and v == 0)):
                raise _err(path, f"{where}.{k}", f"{v!r} must be positive")
            out[k] = v
        else:
            raise _err(path, where, f"unknown key {k!r}"
                       f"{did_you_mean(k, AXES + tuple(SCALARS))} (known: "
                       f"{', '.join(AXES + tuple(SCALARS))})")
    if not partial:
        missing = [k for k in AXES if k not in out]
        if missing:
            raise _err(path, where, f"missing {', '.join(missing)}")
    return out


def _check_needs(path, where, v) -> tuple:
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise _err(path, where, "must be a list of names")
    for n in v:
        if n not in NEEDS:
            raise _err(path, where, f"unknown need {n!r}; known: "
                       f"{', '.join(NEEDS)}")
    return tuple(v)


def _check_points(path, name, exp: Experiment) -> None:
    """Every runnable point must describe a valid run (machine, L2 size,
    CPUs, kernel, workload sizes); checked without building anything."""
    for quick in (False, True):
        scale = "quick" if quick else "grid"
        try:
            pts = expand(exp, quick)
        except ConfigError as e:
            raise _err(path, f"{name}.{scale}", str(e)) from None
        for p in pts:
            if kernel_need(p.kernel) not in available() | {None}:
                continue
            # machine, L2, CPUs, kernel, sizes.  Without --timing: the
            # runner refusing --timing for a point is not a mistake in this
            # file but a missing point, recorded with the runner's reason.
            try:
                dataclasses.replace(p, timing=False).spec()
            except ConfigError as e:
                raise _err(path, f"{name}.{scale}", str(e)) from None


def load_experiments(path: Path = None, check_points: bool = True) -> dict:
    """{name: Experiment} of the experiments file, or a one-line
    ConfigError naming the file, the experiment and the key."""
    path = Path(path or experiments_file())
    text = read_user_text(path)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        twice = duplicate_message(e)
        raise ConfigError(f"{path}: {twice}" if twice else
                          f"{path}: TOML syntax error: {e}") from None
    defaults = _check_settings(path, "defaults", data.pop("defaults", {}), True)
    exps = {}
    for name, t in data.items():
        if not _NAME.match(name):
            raise _err(path, name, "an experiment name is lower-case "
                       "letters, digits and _")
        if not isinstance(t, dict):
            raise _err(path, name, "must be a table [" + name + "]")
        unknown = set(t) - TOP_KEYS
        if unknown:
            bad = sorted(unknown)[0]
            raise _err(path, name, f"unknown key {bad!r}"
                       f"{did_you_mean(bad, TOP_KEYS)} (known: "
                       f"{', '.join(sorted(TOP_KEYS))})")
        for k in ("title", "grid", "outputs"):
            if k not in t:
                raise _err(path, name, f"missing {k!r}")
        if not isinstance(t["title"], str):
            raise _err(path, f"{name}.title", "must be a string")
        stand_in = t.get("stand_in")
        if stand_in is not None and stand_in not in WORKLOADS:
            raise _err(path, f"{name}.stand_in", f"unknown workload "
                       f"{stand_in!r}; known: {', '.join(WORKLOADS)}")
        outputs = {}
        if not isinstance(t["outputs"], dict) or not t["outputs"]:
            raise _err(path, f"{name}.outputs", "must name at least one "
                       "figure or table")
        for oid, o in t["outputs"].items():
            if not isinstance(o, dict) or set(o) - {"needs", "what"}:
                raise _err(path, f"{name}.outputs.{oid}",
                           "must be { needs = [...], what = \"...\" }")
            outputs[oid] = Output(oid, str(o.get("what", oid)),
                                  _check_needs(path, f"{name}.outputs.{oid}.needs",
                                               o.get("needs", [])))
        grid = _check_settings(path, f"{name}.grid", t["grid"], True)
        quick = _check_settings(path, f"{name}.quick", t.get("quick", {}), True)
        exp = Experiment(name, t["title"],
                         _check_needs(path, f"{name}.needs", t.get("needs", [])),
                         stand_in, outputs, grid, quick, defaults)
        missing = [k for k in AXES if k not in exp.settings(False)]
        if missing:
            raise _err(path, f"{name}.grid", f"missing {', '.join(missing)} "
                       f"(give it in the grid or in [defaults])")
        for scale in (False, True):
            st = exp.settings(scale)
            if (isinstance(st.get("burst"), list)
                    and _as_list(st["workload"]) != ["synthetic"]):
                raise _err(path, f"{name}.{'quick' if scale else 'grid'}.burst",
                           "a list of burst lengths applies to the synthetic "
                           "workload only")
            if st.get("skip") and "chat" not in _as_list(st["workload"]):
                raise _err(path, f"{name}.{'quick' if scale else 'grid'}.skip",
                           "applies to the chat workload only")
            if (st.get("accept", "none") != "none"
                    and "web" not in _as_list(st["workload"])):
                raise _err(path, f"{name}.{'quick' if scale else 'grid'}.accept",
                           "applies to the web workload only")
        if check_points:
            _check_points(path, name, exp)
        exps[name] = exp
    if not exps:
        raise ConfigError(f"{path}: no experiments")
    return exps


def select(exps: dict, name: str) -> list:
    """The experiments ``name`` ("all" or one name) stands for."""
    if name == "all":
        return list(exps.values())
    if name not in exps:
        raise ConfigError(f"unknown experiment {name!r}; known: "
                          f"{', '.join(exps)}, all")
    return [exps[name]]


def expand(exp: Experiment, quick: bool = False) -> list:
    """Every point of the grid, in a stable order, each marked with what
    it lacks (missing instruments, workloads or kernels)."""
    s = exp.settings(quick)
    have = available()
    scale = "quick" if quick else "paper"
    timing = needs_timing(exp)
    pts = []
    bursts = _as_list(s.get("burst", 2000))
    for machine, l2, cpus, kernel, workload, tasks, seed, burst in itertools.product(
            *(s[k] if isinstance(s[k], list) else [s[k]] for k in AXES), bursts):
        lacks = [n for n in exp.needs if n not in have]
        run_wl = workload
        if exp.stand_in and exp.stand_in in have:
            run_wl = exp.stand_in         # a declared substitution
        elif workload not in have:
            lacks.append(workload)
        kneed = kernel_need(kernel)
        if kneed and kneed not in have:
            lacks.append(kneed)
        engine = s.get("engine", "qemu")
        if engine == "gem5" and "gem5" not in have:
            lacks.append("gem5")
        pts.append(Point(exp.name, scale, machine, l2, cpus, kernel, workload,
                         run_wl, tasks, seed, s.get("warmup", 10),
                         s.get("roi", 10), burst, engine,
                         s.get("timeout", 900), tuple(dict.fromkeys(lacks)),
                         timing, workload_args(run_wl, tasks, s),
                         s.get("client_cpus", -1)))
    return pts
