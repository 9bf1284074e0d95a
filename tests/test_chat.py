"""The Chat workload (workloads/chat): rooms x users x messages, four
threads per user, server and clients on one machine; natively and in the
guest at small scale, and through `colorsim run --workload chat`."""

import json
import re
import subprocess

import pytest

from colorsim.cli import main as cli_main
from tests.test_userproc import BIN, BUILD, boot, built  # noqa: F401


def roi_messages(out):
    m = re.search(r"chat: roi (\d+) messages \((\d+) sent, (\d+) received\)", out)
    assert m, out[-2000:]
    return tuple(map(int, m.groups()))


def test_chat_runs_natively(built):
    p = subprocess.run([str(BIN / "chat"), "--rooms", "4", "--users", "6",
                        "--messages", "60", "--port", "19671"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "chat: ok (4 rooms x 6 users x 60 messages" in p.stdout
    # every message to every other member: 24 x 60 sent, x 5 received
    assert roi_messages(p.stdout) == (24 * 60 * 6, 24 * 60, 24 * 60 * 5)


def test_chat_reports_throughput_per_window(built):
    # the region's received messages in ten equal windows, each with its
    # rate: what shows whether a short run reached a steady state
    p = subprocess.run([str(BIN / "chat"), "--rooms", "4", "--users", "6",
                        "--messages", "60", "--port", "19673"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr
    m = re.search(r"chat: windows of (\d+) received, messages received per "
                  r"second:((?: \d+)+)\n", p.stdout)
    assert m, p.stdout
    assert int(m.group(1)) == 24 * 60 * 5 // 10
    rates = [int(x) for x in m.group(2).split()]
    assert len(rates) == 10 and all(r > 0 for r in rates)


def test_chat_region_can_be_the_middle_of_the_run(built):
    # --skip 20: the region runs from 20 % to 80 % of the received
    # messages, so the start of every thread and the tail are outside it
    p = subprocess.run([str(BIN / "chat"), "--rooms", "4", "--users", "6",
                        "--messages", "60", "--port", "19674", "--skip", "20"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr
    received = 24 * 60 * 5
    middle = received - 2 * received // 5
    assert roi_messages(p.stdout) == (middle + middle // 5, middle // 5, middle)
    assert f"the middle 20 % to 80 % of {received} received" in p.stdout
    bad = subprocess.run([str(BIN / "chat"), "--skip", "50", "--port", "19675"],
                         capture_output=True, text=True, timeout=30)
    assert bad.returncode == 1 and "chat: FAIL bad value for --skip" in bad.stdout


def test_skip_is_checked_before_a_run_and_reaches_the_program(capsys, tmp_path):
    from colorsim.errors import ConfigError
    with pytest.raises(ConfigError, match="--skip must be between 0 and 49"):
        _spec(capsys, "--skip", "50")
    from colorsim.cli import build_parser, spec_from_args
    a = build_parser().parse_args(["run", "--machine", "piii8", "--kernel", "vanilla",
                                   "--workload", "chat", "--messages", "80",
                                   "--skip", "20"])
    assert spec_from_args(a).workload.args == "--messages,80,--skip,20"
    # in a sweep: only when not 0, so the whole-run points keep their identity
    from colorsim.describe.experiments import workload_args
    assert workload_args("chat", 2400, {"messages": 80, "skip": 20}).endswith(
        "--messages,80,--skip,20")
    assert workload_args("chat", 2400, {}).endswith("--messages,20")


def _spec(capsys, *extra):
    from colorsim.cli import build_parser, spec_from_args
    a = build_parser().parse_args(["run", "--machine", "piii8", "--kernel",
                                   "vanilla", "--workload", "chat", *extra])
    spec = spec_from_args(a)
    return spec.timeout_s, capsys.readouterr().err


def test_a_full_scale_chat_run_gets_a_timeout_sized_from_its_work(capsys):
    from colorsim.describe.programs import (CHAT_HOST_S_FIXED,
                                            CHAT_HOST_S_PER_MESSAGE,
                                            TIMEOUT_MARGIN)
    timeout, err = _spec(capsys, "--messages", "300")
    # 30 rooms x 20 users x 300 messages, each to 19 others: 3.6 M
    assert timeout == TIMEOUT_MARGIN * (CHAT_HOST_S_FIXED +
                                        3_600_000 * CHAT_HOST_S_PER_MESSAGE)
    assert timeout > 900
    assert "3,600,000 messages" in err and "--timeout" in err
    # a run the default covers keeps it, silently
    assert _spec(capsys, "--messages", "20") == (900.0, "")
    # a timeout given is the timeout used
    assert _spec(capsys, "--timeout", "50")[0] == 50.0


def test_a_chat_run_by_default_is_minutes_and_says_so(capsys):
    """Without --messages a run is 10 messages per user (120,000 messages,
    a few minutes) and the note names the paper's size; the guest's own
    default (300) is the sweep's, which names it."""
    from colorsim.cli import build_parser, spec_from_args
    a = build_parser().parse_args(["run", "--machine", "piii8", "--kernel",
                                   "vanilla", "--workload", "chat"])
    spec = spec_from_args(a)
    err = capsys.readouterr().err
    assert "--messages,10" in spec.workload.args
    assert "chat: 10 messages per user" in err and "--messages 300" in err
    assert spec.timeout_s == 900.0


def test_chat_refuses_a_room_of_one(built):
    p = subprocess.run([str(BIN / "chat"), "--users", "1", "--port", "19672"],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 1 and "chat: FAIL" in p.stdout


@pytest.mark.parametrize("kernel,cpus", [("vanilla-l32", 2), ("c32-b17-l32", 4)])
def test_chat_in_the_guest(built, kernel, cpus):
    rc, out = boot(BUILD / "kernels" / kernel / "kernel.mb.elf", "/bin/chat", cpus=cpus,
                   extra="initargs=--rooms,3,--users,5,--messages,30", timeout=120)
    assert "chat: ok (3 rooms x 5 users x 30 messages" in out, out[-3000:]
    assert rc == 1 and "init: exited with status 0" in out
    assert roi_messages(out) == (15 * 30 * 5, 15 * 30, 15 * 30 * 4)
    assert "chat: 3 rooms x 5 users x 30 messages, 60 threads" in out


def test_colorsim_run_chat(built, tmp_path):
    rc = cli_main(["run", "--machine", "ppro4", "--kernel", "vanilla", "--cpus", "2",
                   "--workload", "chat", "--rooms", "2", "--users", "4",
                   "--messages", "20", "--out", str(tmp_path), "--name", "c"])
    assert rc in (0, None)
    run = tmp_path / "c"
    assert json.loads((run / "config.json").read_text())["complete"]
    assert "chat: ok (2 rooms x 4 users x 20 messages" in (run / "console.log").read_text()
    rows = [l.split(",") for l in (run / "counters.csv").read_text().splitlines()[1:]]
    c = {r[3]: float(r[4]) for r in rows if r[1] == "-1"}
    assert abs(c["rq_samples"] - c["schedule_calls"]) <= 4 and c["rq_len_mean"] > 1
    # chat_s's and chat_c's threads block on SysV semaphores and sockets,
    # never on a futex (2.4 had none)
    assert c["wait_samples"] > 0 and c["wait_sem_mean"] > 0, c
    assert c["wait_futex_mean"] == 0, c


SKIPPED = """
[c]
title = "chat middle"
needs = ["counting", "WORKLOAD"]
outputs.fig10 = { needs = ["timing"], what = "x" }
[c.grid]
machine = "piii8"
l2 = ["1MiB"]
cpus = [2]
kernels = ["vanilla"]
workload = "WORKLOAD"
tasks = [TASKS]
seeds = [1]
skip = SKIP
"""


@pytest.mark.parametrize("workload,tasks,skip,msg", [
    ("chat", 80, 50, "0 to 49"),
    ("web", 16, 20, "chat workload only"),
])
def test_bad_skip_in_an_experiment_is_one_line(tmp_path, workload, tasks, skip, msg):
    from colorsim.describe.experiments import load_experiments
    from colorsim.errors import ConfigError
    f = tmp_path / "e.toml"
    f.write_text(SKIPPED.replace("WORKLOAD", workload).replace("TASKS", str(tasks))
                 .replace("SKIP", str(skip)))
    with pytest.raises(ConfigError, match=msg):
        load_experiments(f)

