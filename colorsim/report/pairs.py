"""Vanilla/colored pairs of counting runs, picked from a catalog: the
README's headline table (the testbed at the paper's three L2 sizes) and the
Linux 2.4 tables beside it (colorsim/report/linux24.py) read the same pairs.
The maintainer's commands that write those tables
(colorsim/orchestrate/headline.py, linux24table.py) make the runs."""

from __future__ import annotations

from colorsim.errors import ResultsError

L2S = ("256KiB", "512KiB", "1MiB")
KERNELS = ("vanilla", "c32")
TASKS = 1024


def pick_runs(cat, kernels=KERNELS, tasks=TASKS, how="headline",
              engine="qemu", machine="ppro4", l2s=L2S) -> list:
    """Per L2 size of ``l2s``, {kernel: its catalog row}: ``machine`` with
    all its CPUs, on ``engine``, counting only, the built-in (or linux24
    init's) tasks workload, seed 1.  ``how`` names the command that makes
    missing runs."""
    from colorsim.describe.machine import get_machine
    from colorsim.units import parse_size
    runs = cat.table("runs")
    need = {"machine", "kernel", "l2_size", "tasks", "workload_program"}
    if not len(runs) or not need <= set(runs.columns):
        raise ResultsError(f"the catalog of {cat.root} has no runs: make them "
                           f"with 'python3 -m colorsim.maintain {how} --run'")
    cpus = get_machine(machine).processor.cpus
    sel = runs[(runs["machine"] == machine) & (runs["tasks"] == tasks) &
               (runs["engine"] == engine) & (runs["workload_program"] == "") &
               (runs["cpus"] == cpus) & (runs["seed"] == 1) &
               ~runs["timing"].fillna(False).astype(bool)]
    out = []
    for l2 in l2s:
        size = parse_size(l2)
        pick = {}
        for k in kernels:
            r = sel[(sel["l2_size"] == size) & (sel["kernel"] == k)]
            if not len(r):
                raise ResultsError(
                    f"no {machine} {l2} {k} run of {tasks} tasks on {engine} in the catalog of "
                    f"{cat.root}: run 'python3 -m colorsim.maintain {how} --run'")
            pick[k] = r.sort_values("run_id").iloc[0]
        out.append(pick)
    return out


def pair_numbers(v, c) -> dict:
    """What the tables say of one vanilla/colored pair of catalog rows."""
    return {"peak": int(v["peak_offset"]),
            "c32_peak_share": c["peak_count"] / max(v["peak_count"], 1),
            "colored_change": (c["colored_lines_sum"] - v["colored_lines_sum"])
            / max(v["colored_lines_sum"], 1),
            "miss_vanilla": v["rqloop_l2_miss_ratio"],
            "miss_c32": c["rqloop_l2_miss_ratio"]}


def per_kinst_pair(v, c) -> dict:
    """pair_numbers with the colored-line change per instruction:
    Linux's region is init's sleep, which ends at the first tick boundary
    after its timer (a tick more or less between two runs), where the
    testbed's kernel ends its region on the tick itself."""
    d = pair_numbers(v, c)
    key = "colored_lines_sum_per_kinst"
    d["colored_change"] = (c[key] - v[key]) / max(v[key], 1e-12)
    return d
