"""The user programs of the root-file-system image and the arguments the
guest accepts, checked on the host before anything is built or run.

The image holds /init and one /bin/<name> per program source
(disk-images/SConscript, workloads/SConscript), so the list comes from the
source tree and needs no build.  The web and chat programs parse their own
options in the guest and fail after the machine has booted; the checks
below are theirs (workloads/web/web.c, workloads/chat/chat.c), made here
so that a mistake is one line and no failed run.
"""

from __future__ import annotations

import re

from colorsim import ROOT
from colorsim.errors import ConfigError
from colorsim.describe.variants import c_define

WORKLOADS_SRC = ROOT / "workloads"
INIT_ARGS_MAX = 15          # kernels/kernel/exec.c INIT_ARGS_MAX less argv[0];
                            # the kernel drops the words past it silently
WORKLOAD_PROCS_MAX = 4096   # kernels/include/param.h NR_WORKLOAD_MAX: the
                            # largest run queue the suite is built for
LONG_MAX = 2**63 - 1        # web.c parses with strtol into a long
INT_MAX = 2**31 - 1         # chat.c keeps its sizes in ints


REQUESTS_MAX = c_define(WORKLOADS_SRC / "web" / "client.h", "REQUESTS_MAX")
MESSAGES_MAX = c_define(WORKLOADS_SRC / "chat" / "chat.h", "MESSAGES_MAX")
ROOMS_MAX = c_define(WORKLOADS_SRC / "chat" / "chat.h", "ROOMS_MAX")
PORT_MAX = 65535            # both pass the port through htons()
CHAT_CONNECTIONS_MAX = 1000  # chat.c: rooms x users
CHAT_DEFAULTS = {"--rooms": 30, "--users": 20, "--messages": 300}  # chat.c

DEFAULT_TIMEOUT_S = 900.0   # `run --timeout` when the work is small
# Host time of a Chat run, measured with --timing on the 8-way PIII
# (workloads/README.md, Chat, "Sizes, and how long a run takes"): about a
# minute of boot, connections and 2400 thread starts, then half a
# millisecond of host time per message (sent + received) for short runs,
# growing to 0.85 ms at 160 messages per user as vanilla switches more
# per message; 1 ms keeps the paper's size inside its timeout.  The timeout
# a run gets when none is given is TIMEOUT_MARGIN times that, so a host
# busy with other work does not stop a run that is still making progress.
CHAT_HOST_S_FIXED = 60.0
CHAT_HOST_S_PER_MESSAGE = 1.0e-3
TIMEOUT_MARGIN = 3.0
# Host time of a web run, measured with --timing on Figure 9's 8-CPU point
# (2048 requests, 92-94 s a run: engine/qemu-plugin/README.md, "What the
# emulator's interleaving moves"): about 45 ms a request, boot included;
# 50 ms and half a minute of boot are an upper estimate.
WEB_HOST_S_FIXED = 30.0
WEB_HOST_S_PER_REQUEST = 50e-3
MAX_HOURS_DEFAULT = 24.0    # `run --max-hours`: longer runs are refused


def image_programs() -> set:
    """The programs in the image, as absolute paths in it."""
    progs = {"/init"}
    progs |= {f"/bin/{p.stem}" for p in (WORKLOADS_SRC / "tests").glob("*.c")
              if p.stem != "init"}
    progs |= {f"/bin/{d}" for d in ("web", "chat")
              if any((WORKLOADS_SRC / d).glob("*.c"))}
    return progs


def check_program(path: str) -> None:
    """``path`` is a program the image holds."""
    progs = image_programs()
    if path not in progs:
        names = sorted(p.rsplit("/", 1)[1] for p in progs if p.startswith("/bin/"))
        raise ConfigError(f"--workload: the root-file-system image has no "
                          f"program {path}; it has /init and /bin/"
                          f"{{{','.join(names)}}}")


# option -> (kind, low, high); kind "int" is a decimal integer, "word" a
# string (with its allowed values, or None for any).
WEB_OPTIONS = {
    "--httpd": ("int", 1, WORKLOAD_PROCS_MAX),
    "--clients": ("int", 1, WORKLOAD_PROCS_MAX),
    "--requests": ("int", 1, REQUESTS_MAX),
    "--warmup": ("int", 0, LONG_MAX),
    "--measure": ("int", 1, LONG_MAX),
    "--keepalive": ("int", 1, REQUESTS_MAX),
    "--seed": ("int", 0, LONG_MAX),
    "--port": ("int", 1, PORT_MAX),
    "--accept": ("word", ("none", "pipe", "sysvsem", "fcntl", "flock"), None),
    "--work": ("word", ("apache", "minimal"), None),
    "--wset": ("int", 0, 1),
    "--root": ("word", None, None),
}
CHAT_OPTIONS = {
    "--rooms": ("int", 1, ROOMS_MAX),
    "--users": ("int", 2, CHAT_CONNECTIONS_MAX),
    "--messages": ("int", 1, MESSAGES_MAX),
    "--port": ("int", 1, PORT_MAX),
    "--skip": ("int", 0, 49),
}
PROGRAM_OPTIONS = {"/bin/web": WEB_OPTIONS, "/bin/chat": CHAT_OPTIONS}


def _parse(program: str, words: list, table: dict) -> dict:
    """{option: value} of ``words``, each value checked against ``table``."""
    name = program.rsplit("/", 1)[1]
    got = {}
    i = 0
    while i < len(words):
        opt = words[i]
        if opt not in table:
            raise ConfigError(f"{name}: unknown option {opt!r}; it takes "
                              f"{', '.join(table)}")
        if i + 1 >= len(words):
            raise ConfigError(f"{name}: {opt} needs a value")
        if opt in got:
            raise ConfigError(f"{name}: {opt} is given twice")
        text = words[i + 1]
        kind, lo, hi = table[opt]
        if kind == "word":
            if lo is not None and text not in lo:
                raise ConfigError(f"{name}: {opt} must be one of "
                                  f"{', '.join(lo)}, got {text!r}")
            got[opt] = text
        else:
            if not re.fullmatch(r"[0-9]+", text):
                raise ConfigError(f"{name}: {opt} must be a whole number, "
                                  f"got {text!r}")
            v = int(text)
            if not lo <= v <= hi:
                raise ConfigError(f"{name}: {opt} must be between {lo} and "
                                  f"{hi}, got {v}")
            got[opt] = v
        i += 2
    return got


def _check_web(v: dict) -> None:
    httpd, clients = v.get("--httpd", 256), v.get("--clients", 256)
    if httpd + clients > WORKLOAD_PROCS_MAX:
        raise ConfigError(f"web: --httpd {httpd} + --clients {clients} "
                          f"processes is more than the {WORKLOAD_PROCS_MAX} "
                          f"the testbed is built for")
    total = clients * v.get("--requests", 20)
    warmup = v.get("--warmup", total // 4)
    measure = v.get("--measure", total // 2)
    if measure < 1 or warmup + measure > total:
        raise ConfigError(f"web: the region of interest (requests "
                          f"{warmup}..{warmup + measure}) must hold at least "
                          f"one of the {total} requests (--clients x "
                          f"--requests)")


def _check_chat(v: dict) -> None:
    rooms, users = v.get("--rooms", 30), v.get("--users", 20)
    if rooms * users > CHAT_CONNECTIONS_MAX:
        raise ConfigError(f"chat: --rooms {rooms} x --users {users} is "
                          f"{rooms * users} connections; chat takes at most "
                          f"{CHAT_CONNECTIONS_MAX}")


def chat_messages(args: str) -> int:
    """The messages a chat run's region counts (sent + received, as
    chat_c does): rooms x users x messages x users."""
    words = args.split(",") if args else []
    v = dict(CHAT_DEFAULTS)
    v.update(_parse("/bin/chat", words, CHAT_OPTIONS))
    return v["--rooms"] * v["--users"] * v["--messages"] * v["--users"]


def web_requests(args: str) -> int:
    """Every request a web run makes (clients x requests)."""
    words = args.split(",") if args else []
    v = _parse("/bin/web", words, WEB_OPTIONS)
    return v.get("--clients", 256) * v.get("--requests", 20)


def expected_host_s(program: str, args: str):
    """(seconds, what they are made of) of host time a run of ``program``
    is expected to take, from the measured costs above; None for programs
    whose cost nothing here measures."""
    if program == "/bin/chat":
        n = chat_messages(args)
        return (CHAT_HOST_S_FIXED + n * CHAT_HOST_S_PER_MESSAGE,
                f"{n:,} messages at {CHAT_HOST_S_PER_MESSAGE * 1e3:g} ms each")
    if program == "/bin/web":
        n = web_requests(args)
        return (WEB_HOST_S_FIXED + n * WEB_HOST_S_PER_REQUEST,
                f"{n:,} requests at {WEB_HOST_S_PER_REQUEST * 1e3:g} ms each")
    return None


def check_host_time(program: str, args: str, max_hours: float) -> None:
    """ConfigError for a run expected to take more than ``max_hours`` of
    host time: refused before anything is built or booted."""
    if not 0 < max_hours < float("inf"):
        raise ConfigError(f"--max-hours must be a positive number, got {max_hours}")
    est = expected_host_s(program, args)
    if est and est[0] > max_hours * 3600:
        hours = est[0] / 3600
        span = (f"{hours:,.0f} hours" if hours < 24 * 365 else
                f"{hours / (24 * 365):,.0f} years")
        raise ConfigError(f"this run would take about {span} of host time "
                          f"({est[1]}, measured), more than --max-hours "
                          f"{max_hours:g}: make it smaller, or raise --max-hours")


def sized_timeout(program: str, args: str):
    """(timeout in seconds, note) for a run given no --timeout: the default,
    or for a chat run whose work outgrows it, the expected host time from
    the measured cost per message times TIMEOUT_MARGIN, with a note that
    says so (None when the default stands)."""
    if program != "/bin/chat":
        return DEFAULT_TIMEOUT_S, None
    n = chat_messages(args)
    expect = expected_host_s(program, args)[0]
    timeout = TIMEOUT_MARGIN * expect
    if timeout <= DEFAULT_TIMEOUT_S:
        return DEFAULT_TIMEOUT_S, None
    return timeout, (f"chat: {n:,} messages take about {expect / 60:.0f} min "
                     f"of host time ({CHAT_HOST_S_PER_MESSAGE * 1e3:g} ms "
                     f"each, measured); with no --timeout the run may take "
                     f"{timeout / 60:.0f} min before it is stopped as hung "
                     f"(fewer --messages keep the 2400 threads, but vanilla's "
                     f"throughput has not settled below 300: workloads/"
                     f"README.md, Chat)")


def check_args(program: str, args: str) -> None:
    """The arguments ``args`` (comma-separated) are ones ``program``
    accepts; other programs are only held to the kernel's word limit."""
    words = args.split(",") if args else []
    if len(words) > INIT_ARGS_MAX:
        raise ConfigError(f"{len(words)} program arguments: the kernel "
                          f"passes at most {INIT_ARGS_MAX}")
    table = PROGRAM_OPTIONS.get(program)
    if table is None:
        return
    values = _parse(program, words, table)
    (_check_web if program == "/bin/web" else _check_chat)(values)
