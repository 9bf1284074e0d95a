#!/usr/bin/env python3
"""Write a kernel's layout.json from its build products.

Inputs: the assembly of tools/layout_offsets.c (field offsets of the task
structure), `nm -S` of the linked ELF (symbol addresses and sizes), and the
variant's build id.  The file tells every tool where the task structure's
fields are, which of them the run-queue walk reads per task, where the
run-queue loop and runqueue_lock are, and how the variant colors -- so that
nothing outside the kernel hard-codes an offset.
"""

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from colorsim.describe.variants import variant_from_build_id  # noqa: E402

# The fields runqueue_walk() reads for every task, in program order (the
# first one is the first word of the line the walk touches).


def user_half():
    """USER_BASE and USER_END from kernels/include/mm.h: the user half of
    every address space."""
    text = (ROOT / "kernels/include/mm.h").read_text()
    vals = {k: int(v, 16) for k, v in re.findall(
        r"#define (USER_BASE|USER_END)\s+(0x[0-9a-fA-F]+)UL", text)}
    if set(vals) != {"USER_BASE", "USER_END"}:
        raise SystemExit("mklayout: USER_BASE/USER_END not found in mm.h")
    return vals["USER_BASE"], vals["USER_END"]


WALK_FIELDS = ["has_cpu", "cpus_allowed", "policy", "counter", "processor",
               "mm", "nice", "run_list.next"]
# The multi-queue scheduler's local walk reads neither processor nor
# cpus_allowed (kernels/kernel/sched_mq.c; mq-scheduler-facts.md §10).
MQ_WALK_FIELDS = ["has_cpu", "policy", "counter", "mm", "nice",
                  "run_list.next"]
KEY_SYMBOLS = ["entry64", "mb_entry", "kmain", "schedule", "runqueue_walk",
               "runqueue_lock", "tasklist_lock", "runqueue_head",
               "aligned_data", "init_task_union", "jiffies", "trap",
               "__user_text_start", "__user_text_end", "__kernel_end",
               "spin_lock", "spin_unlock", "modeled_clock", "timing_check",
               "modeled_time", "compute"]
# mq has no global runqueue_lock/runqueue_head: runqueue_data[NR_CPUS]
# holds each CPU's queue and lock.
MQ_KEY_SYMBOLS = [s for s in KEY_SYMBOLS
                  if s not in ("runqueue_lock", "runqueue_head")] + [
                      "runqueue_data", "steal_remote", "reschedule_idle",
                      "load_balance"]


# The scheduler's code for busmon's sched= ranges: schedule() and the
# functions of its own that the compiler did not inline (recalculate and
# prepare_switch are inlined; switch_context is a few assembly
# instructions without a size).  Not the wake-up path (try_to_wake_up,
# reschedule_idle) and not spin_lock, shared by every lock (the lockmeter
# times the run-queue lock).  Names a build lacks are left out.
SCHED_FUNCTIONS = ["schedule", "runqueue_walk", "schedule_tail", "rqstat_sample",
                   "waitstat_sleep", "steal_remote", "load_balance"]


def parse_offsets(text):
    fields, size = {}, None
    for m in re.finditer(r"@@LAYOUT (\S+) (\d+) (\d+)", text):
        fields[m.group(1)] = {"offset": int(m.group(2)), "size": int(m.group(3))}
    m = re.search(r"@@SIZE task_struct (\d+)", text)
    if m:
        size = int(m.group(1))
    if not fields or size is None:
        raise SystemExit("mklayout: no @@LAYOUT markers in the offsets file")
    return fields, size


def parse_rq_offsets(text):
    """The multi-queue scheduler's struct runqueue_data, or SystemExit."""
    fields = {m.group(1): {"offset": int(m.group(2)), "size": int(m.group(3))}
              for m in re.finditer(r"@@RQLAYOUT (\S+) (\d+) (\d+)", text)}
    m = re.search(r"@@SIZE runqueue_data (\d+)", text)
    if not fields or not m:
        raise SystemExit("mklayout: no @@RQLAYOUT markers in the offsets "
                         "file of an mq kernel")
    return fields, int(m.group(1))


def mq_scheduler(syms, text):
    """Where the multi-queue kernel's per-CPU queues and locks are: for
    the lock meter (one lock word per CPU) and the bus monitor."""
    fields, size = parse_rq_offsets(text)
    base, total = syms["runqueue_data"]["addr"], syms["runqueue_data"]["size"]
    if size == 0 or total % size:
        raise SystemExit(f"mklayout: runqueue_data is {total} B, not a "
                         f"multiple of its {size} B element")
    lock = fields["runqueue_lock"]["offset"]
    return {"name": "mq",
            "runqueue_data": {"addr": base, "element_size": size,
                              "count": total // size, "fields": fields},
            "runqueue_locks": [{"cpu": i, "addr": base + i * size + lock}
                               for i in range(total // size)]}


def parse_nm(text):
    syms = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 4:
            addr, size, kind, name = parts
        elif len(parts) == 3:
            addr, kind, name = parts
            size = "0"
        else:
            continue
        syms[name] = {"addr": int(addr, 16), "size": int(size, 16),
                      "kind": kind}
    return syms


def hot_block(fields, line, walk=WALK_FIELDS):
    offs = [fields[f]["offset"] for f in walk]
    ends = [fields[f]["offset"] + fields[f]["size"] for f in walk]
    base = min(offs) & ~(line - 1)
    if max(ends) > base + line:
        raise SystemExit(f"mklayout: the run-queue walk's fields span more "
                         f"than one {line}-byte line: {offs}")
    return {"line_offset": base, "line_size": line,
            "fields_read_per_task": walk,
            "first_touched": walk[0],
            "first_touched_offset": fields[walk[0]]["offset"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--offsets", required=True)
    ap.add_argument("--nm", required=True)
    ap.add_argument("--build-id", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    v = variant_from_build_id(a.build_id)
    offsets_text = Path(a.offsets).read_text()
    fields, size = parse_offsets(offsets_text)
    syms = parse_nm(Path(a.nm).read_text())
    mq = v.scheduler == "mq"
    key_symbols = MQ_KEY_SYMBOLS if mq else KEY_SYMBOLS
    missing = [s for s in key_symbols if s not in syms]
    if missing:
        raise SystemExit(f"mklayout: symbols missing from the kernel: {missing}")
    def span(name):
        return [syms[name]["addr"], syms[name]["addr"] + syms[name]["size"]]

    layout = {
        "variant": {"name": v.name, "build_id": v.build_id,
                    "colors": v.colors, "line": v.line,
                    "way_bits": v.way_bits,
                    "color_shift": v.color_shift if v.colors > 1 else 0,
                    "color_mask": v.color_mask,
                    "scheduler": v.scheduler},
        "thread_size": 8192,
        "page_size": 4096,
        "task_struct": {"size": size, "fields": fields},
        "scheduler_hot": hot_block(fields, v.line,
                                   MQ_WALK_FIELDS if mq else WALK_FIELDS),
        "symbols": {k: syms[k] for k in key_symbols},
        "ranges": {
            "rqloop": span("runqueue_walk"),
            # user-mode code: the built-in workload's .user_text, and the
            # user half of every address space (kernels/include/mm.h), where
            # ring-3 programs run; the kernel never executes there, so a PC
            # in it is user mode (see kernels/README.md, "Bus monitor")
            "user": [[syms["__user_text_start"]["addr"],
                      syms["__user_text_end"]["addr"]],
                     list(user_half())],
            # where spin_lock and spin_unlock are (the lockmeter itself
            # needs no PC ranges: it watches the lock words, "lockmeter")
            "spin_lock": span("spin_lock"),
            "spin_unlock": span("spin_unlock"),
            "sched": [span(f) for f in SCHED_FUNCTIONS
                      if f in syms and syms[f]["size"]],
        },
        "images": {"elf64": "kernel.elf", "multiboot": "kernel.mb.elf"},
    }
    if mq:
        # the local walk is ranges.rqloop (as linux24's whole-queue walk);
        # the MQ-only paths that read other CPUs' queue lines get ranges of
        # their own, and each CPU's lock word is listed for the lock meter
        layout["scheduler"] = mq_scheduler(syms, offsets_text)
        layout["ranges"]["steal_remote"] = span("steal_remote")
        layout["ranges"]["reschedule_idle"] = span("reschedule_idle")
        layout["ranges"]["load_balance"] = span("load_balance")
    # The run-queue lock words the plugin's lockmeter meters (busmon's
    # lock=ADDR:STRIDE:COUNT): the one global runqueue_lock, or every
    # CPU's lock in runqueue_data[NR_CPUS].
    if mq:
        rqd = layout["scheduler"]["runqueue_data"]
        layout["lockmeter"] = {
            "addr": layout["scheduler"]["runqueue_locks"][0]["addr"],
            "stride": rqd["element_size"], "count": rqd["count"],
            "what": "runqueue_data[i].runqueue_lock, one per CPU"}
    else:
        layout["lockmeter"] = {"addr": syms["runqueue_lock"]["addr"],
                               "stride": 4, "count": 1,
                               "what": "runqueue_lock, the global lock"}
    tmp = Path(a.out + ".tmp")
    tmp.write_text(json.dumps(layout, indent=2) + "\n")
    tmp.replace(a.out)


if __name__ == "__main__":
    main()
