"""The timing model's switchable costs: the store buffer and the DTLB reach
the plugin from machines.toml, each cost can be switched off by name
without editing it (run --timing-off, timing-sensitivity), and a timed
run's DTLB walks the guest's page tables."""
import csv
import json

import pytest

from colorsim.describe.machine import TIMING_SWITCHES, get_machine
from tests.test_cache_model import needs_qemu
from tests.test_cli_errors import RUN, check_refused


@pytest.mark.parametrize("name", ["ppro4", "piii8"])
def test_each_switch_turns_its_cost_off(name):
    m = get_machine(name)
    cpus = m.processor.cpus
    for cost in TIMING_SWITCHES:
        if cost == "two_buses" and name == "ppro4":
            assert not m.timing.is_on(cost, cpus)     # one bus of 4 already
            continue
        assert m.timing.is_on(cost, cpus), cost
        off = m.without_costs([cost]).timing
        assert not off.is_on(cost, cpus), cost
        if cost != "fetch":     # fetch is the engine's l1i= (test_timing)
            assert off.plugin_args() != m.timing.plugin_args(), cost
    assert "storebuf=0" in m.without_costs(["store_buffer"]).timing.plugin_args()
    assert "dtlb=0" in m.without_costs(["dtlb"]).timing.plugin_args()
    assert "itlb=0" in m.without_costs(["itlb"]).timing.plugin_args()
    # overlap: off by default (an upper bound), a what-if row switches it on
    assert "overlap=0" in m.timing.plugin_args()
    assert "overlap=4" in m.timing.adding("overlap").plugin_args()


@pytest.mark.parametrize("args, expect", [
    (["--timing", "--timing-off", "bogus"], "unknown timing cost 'bogus'"),
    (["--timing-off", "fetch"], "--timing-off needs --timing"),
])
def test_timing_off_refusals(args, expect, capsys, tmp_path):
    check_refused(RUN + ["--kernel", "c32", "--dry-run", *args,
                         "--out", str(tmp_path)], expect, capsys, tmp_path)


def test_sensitivity_refuses_unknown_costs(capsys, tmp_path):
    check_refused(["timing-sensitivity", "--costs", "fetch,nope", "--out",
                   str(tmp_path)], "unknown timing cost 'nope'", capsys, tmp_path)


def _run(tmp_path, *extra):
    from colorsim.cli import main
    out = tmp_path / "runs"
    out.mkdir(exist_ok=True)
    assert main(RUN + ["--kernel", "c32", "--timing", "--out", str(out),
                       *extra]) in (0, None)
    run = max(out.iterdir(), key=lambda p: p.stat().st_mtime)
    with open(run / "counters.csv", newline="") as f:
        stats = {r["stat"] for r in csv.DictReader(f)}
    return json.loads((run / "busmon.json").read_text()), stats, run


@needs_qemu
def test_dtlb_walks_the_guest_tables(tmp_path):
    """The kernel's accesses miss the DTLB (its tasks lie far apart in the
    2 MiB identity map) and every walk reads the guest's tables; switched
    off, there are no walks and no counter."""
    js, stats, run = _run(tmp_path)
    assert js["tlb"]["dtlb"] == 64 and js["tlb"]["walk_errors"] == 0
    with open(run / "counters.csv", newline="") as f:
        misses = sum(int(r["value"]) for r in csv.DictReader(f)
                     if r["stat"] == "dtlb_misses")
    assert misses > 0
    assert "store_stall_cycles" in stats
    assert js["tlb"]["itlb"] == 32 and "itlb_misses" in stats
    js, stats, _ = _run(tmp_path, "--timing-off", "dtlb",
                        "--timing-off", "store_buffer", "--timing-off", "itlb")
    assert js["tlb"]["dtlb"] == 0 and js["store_buffer"]["entries"] == 0
    assert js["tlb"]["itlb"] == 0
    assert "dtlb_misses" not in stats and "store_stall_cycles" not in stats
    assert "itlb_misses" not in stats


# A guest that maps 4 GiB with 2 MiB pages (4-level tables, long mode),
# except 0x600000-0x7fffff, whose 512 4 KiB pages map onto 512 pages at
# 0x400000, each starting with a `ret`; then it calls N of those pages in
# turn, twice over.  Every call fetches code from another page (each its
# own physical page too: QEMU shares a TB between virtual aliases of one
# physical page); the loop itself runs from one large page.
ITLB_GUEST = """
\tmov $0x80000, %esp
\tmov $0x300000, %edi            /* PML4, PDPT, 4 PDs, one PT: zeroed */
\txor %eax, %eax
\tmov $(0x7000 / 4), %ecx
\trep stosl
\tmovl $0x301003, 0x300000       /* PML4[0] -> PDPT */
\tmovl $0x302003, 0x301000       /* PDPT[0..3] -> PDs */
\tmovl $0x303003, 0x301008
\tmovl $0x304003, 0x301010
\tmovl $0x305003, 0x301018
\tmov $0x302000, %edi            /* identity map, 2 MiB pages */
\tmov $0x83, %eax
1:\tmov %eax, (%edi)
\tadd $0x200000, %eax
\tadd $8, %edi
\tcmp $0x306000, %edi
\tjb 1b
\tmovl $0x306003, 0x302018       /* 0x600000: 4 KiB pages, the PT */
\tmov $0x306000, %edi            /* page j -> 0x400000 + 4 KiB j */
\tmov $0x400003, %eax
2:\tmov %eax, (%edi)
\tmovb $0xc3, -3(%eax)           /* a `ret` at the page's start */
\tadd $0x1000, %eax
\tadd $8, %edi
\tcmp $0x307000, %edi
\tjb 2b
\tmov %cr4, %eax                 /* PAE, CR3, EFER.LME, paging */
\tor $0x20, %eax
\tmov %eax, %cr4
\tmov $0x300000, %eax
\tmov %eax, %cr3
\tmov $0xC0000080, %ecx
\trdmsr
\tor $0x100, %eax
\twrmsr
\tmov %cr0, %eax
\tor $0x80000000, %eax
\tmov %eax, %cr0
\tlgdt gdtr
\tljmp $8, $long64
\t.code64
long64:
\tmov $0x80000, %rsp
\tmov $0xFFFF4000, %eax          /* resetstats */
\tmovq (%rax), %mm0
\tmov $2, %ebx                   /* two passes */
3:\tmov $0x600000, %eax
4:\tcall *%rax
\tadd $0x1000, %eax
\tcmp $(0x600000 + NPAGES * 0x1000), %eax
\tjb 4b
\tdec %ebx
\tjnz 3b
\tmov $0xFFFF4100, %eax          /* dumpstats */
\tmovq (%rax), %mm0
\tmov $0xFFFF2100, %eax          /* exit (noted only) */
\tmovq (%rax), %mm0
\temms
\tmov $0xf4, %dx
\txor %eax, %eax
\tout %eax, %dx
5:\thlt
\tjmp 5b
\t.code32                        /* the common tail: never reached */
"""

ITLB_AFTER = """
\t.align 8
gdt:\t.quad 0, 0x00209A0000000000       /* null, 64-bit code */
gdtr:\t.word 15
\t.long gdt
"""


@needs_qemu
@pytest.mark.parametrize("pages, misses", [(32, 32), (40, 80)])
def test_itlb_misses_of_a_known_fetch_pattern(tmp_path, pages, misses):
    """The PPro's ITLB: 32 entries for 4 KiB pages, 4-way (8 sets), and 2
    for large pages.  Calling code on 32 consecutive pages twice misses
    32 times (4 pages per set: the second pass hits); on 40 pages, 5 per
    set, LRU evicts each page before its next call: all 80 miss.  The
    loop's own large page stays in the large-page ITLB (no miss)."""
    from tests.test_cache_model import build_guest, counters, run_guest
    from tests.test_timing import TIMING
    elf, _ = build_guest(tmp_path, ITLB_GUEST.replace("NPAGES", str(pages)),
                         after=ITLB_AFTER)
    out = run_guest(tmp_path, elf, TIMING, "itlb=32", "itlblarge=2")
    c = counters(out)
    assert c[(0, 0, "kernel", "itlb_misses")] == misses
    assert c[(0, 0, "user", "itlb_misses")] == 0
    assert json.loads((out / "busmon.json").read_text())["tlb"]["walk_errors"] == 0


# Between the two passes over 32 pages, INVLPG two of them: 0x605000 by
# (%rcx), 0x60a000 by a SIB operand with a displacement.
INVLPG_BETWEEN_PASSES = """
\tcmp $2, %ebx
\tjne 6f
\tmov $0x605000, %ecx
\tinvlpg (%rcx)
\tmov $0x600000, %ecx
\tmov $0x1000, %edx
\tinvlpg 0x2000(%rcx,%rdx,8)
6:\tdec %ebx
"""


@needs_qemu
def test_invlpg_drops_its_page_from_the_itlb(tmp_path):
    """32 pages called twice miss the 32-entry ITLB 32 times (above);
    INVLPG of two of them between the passes makes exactly those two miss
    again.  Without it dropping entries the count stays 32."""
    from tests.test_cache_model import build_guest, counters, run_guest
    from tests.test_timing import TIMING
    guest = ITLB_GUEST.replace("NPAGES", "32")
    assert guest.count("\tdec %ebx\n") == 1
    guest = guest.replace("\tdec %ebx\n", INVLPG_BETWEEN_PASSES)
    elf, _ = build_guest(tmp_path, guest, after=ITLB_AFTER)
    out = run_guest(tmp_path, elf, TIMING, "itlb=32", "itlblarge=2")
    assert counters(out)[(0, 0, "kernel", "itlb_misses")] == 32 + 2
    tlb = json.loads((out / "busmon.json").read_text())["tlb"]
    assert tlb["invlpg"] == 2 and tlb["invlpg_whole_flushes"] == 0
    assert tlb["walk_errors"] == 0


def _stores_then(tmp_path, insn):
    """Eight stores that miss (RFOs posted in the store buffer), then
    `insn`, then dumpstats: the CPU's counters."""
    from tests.test_cache_model import build_guest, counters, run_guest
    from tests.test_timing import TIMING
    elf, _ = build_guest(tmp_path, f"""
\txor %eax, %eax
\tm5 0x40                       /* resetstats */
\tmov $0x200000, %esi
3:\tmovl $1, (%esi)
\tadd $32, %esi
\tcmp $0x200100, %esi
\tjb 3b
\t{insn}
\tm5 0x41                       /* dumpstats */
""")
    out = run_guest(tmp_path, elf, TIMING, "storebuf=12")
    c = counters(out)
    return {s: c[(0, 0, "kernel", s)] for s in
            ("cycles", "store_stall_cycles", "bus_wait_cycles", "bus_rfo")}, \
        json.loads((out / "busmon.json").read_text())


@needs_qemu
def test_a_serializing_instruction_drains_the_store_buffer(tmp_path):
    """A P6 drains its store buffer at a serializing instruction (SDM vol.
    3A 11.10).  After eight posted store misses a `cpuid` waits for the
    last one's line (a memory fill, less the 3 instructions since it was
    stored); a `nop` in its place does not wait.  The difference in
    modelled cycles is exactly that wait."""
    from tests.test_timing import T
    (tmp_path / "cpuid").mkdir()
    (tmp_path / "nop").mkdir()
    drained, js = _stores_then(tmp_path / "cpuid", "cpuid")
    posted, _ = _stores_then(tmp_path / "nop", "nop")
    assert drained["bus_rfo"] == posted["bus_rfo"] == 8
    assert posted["store_stall_cycles"] == 0
    assert drained["store_stall_cycles"] >= T["mem"] - 3 * T["inst"]
    assert (drained["cycles"] - posted["cycles"]
            == drained["store_stall_cycles"]
            + drained["bus_wait_cycles"] - posted["bus_wait_cycles"])
    assert js["store_buffer"]["drains"] >= 1


def test_the_plugin_readme_cost_table_is_machines_toml():
    """engine/qemu-plugin/README.md's cost table has a row for every
    [x.timing] key, with each machine's value as machines.toml gives it,
    and a switch for every switchable cost."""
    import dataclasses
    import re

    from colorsim import ROOT
    text = (ROOT / "engine" / "qemu-plugin" / "README.md").read_text()
    rows = {m.group(1): [c.strip() for c in m.group(2).split("|")]
            for m in re.finditer(r"^\| `(\w+)` \|(.*)\|$", text, re.M)}
    keys = [f.name for f in dataclasses.fields(get_machine("ppro4").timing)]
    assert set(keys) <= set(rows), set(keys) - set(rows)
    for col, name in ((1, "ppro4"), (2, "piii8")):
        t = get_machine(name).timing
        for k in keys:
            want = getattr(t, k)
            want = str(want).lower() if isinstance(want, bool) else str(want)
            assert rows[k][col] == want, (name, k, rows[k][col], want)
    switches = {c for r in rows.values() for c in re.findall(r"`(\w+)`", r[-1])}
    assert set(TIMING_SWITCHES) <= switches, set(TIMING_SWITCHES) - switches


# 100 passes of a 10-trip loop.  The inner branch's 4-bit history cannot
# tell the tenth trip from the others, so its exit is mispredicted every
# pass; every other trip, and the outer branch until its own exit, is
# predicted (a new backward branch is predicted taken).
BRANCH_GUEST = """
\tm5 0x40                       /* resetstats */
\tmov $100, %edx
outer:\tmov $10, %ecx
1:\tdec %ecx
\tjnz 1b
\tdec %edx
\tjnz outer
\tm5 0x41                       /* dumpstats */
"""


@needs_qemu
def test_branch_mispredicts_of_a_known_loop(tmp_path):
    """With branch=15:512 the loop nest's branches resolve 1100 times and
    miss 101 times (each inner exit and the outer exit); each miss costs
    15 cycles more than the same run without the model, and no more."""
    from tests.test_cache_model import build_guest, counters, run_guest
    from tests.test_timing import TIMING
    elf, _ = build_guest(tmp_path, BRANCH_GUEST)
    cycles, stats = {}, {}
    for arg in ("branch=0:512", "branch=15:512"):
        d = tmp_path / arg.replace(":", "-").replace("=", "")
        d.mkdir()
        out = run_guest(d, elf, TIMING, arg)
        cycles[arg] = counters(out)[(0, 0, "kernel", "cycles")]
        stats[arg] = dict(line.split()[:2] for line in
                          (out / "stats.txt").read_text().splitlines()
                          if ".branch." in line)
    s = stats["branch=15:512"]
    assert stats["branch=0:512"] == {}      # off: no branch stats at all
    assert s["system.branch.missCycles"] == "15"
    assert s["system.branch.btbEntries"] == "512"
    assert s["system.cpu0.branch.resolved"] == "1100", s
    assert s["system.cpu0.branch.mispredicted"] == "101", s
    assert cycles["branch=15:512"] - cycles["branch=0:512"] == 15 * 101


def test_branch_model_refusals(tmp_path):
    """A BTB size the model cannot take is refused before anything runs."""
    import dataclasses

    from colorsim.describe.machine import ConfigError
    t = get_machine("ppro4").timing
    for bad in (500, 2, 8192):
        with pytest.raises(ConfigError, match="timing.btb must be a power of two"):
            dataclasses.replace(t, btb=bad)
    assert "branch=15:512" in t.adding("branch_miss").plugin_args()
    assert not any(a.startswith("branch=") for a in t.plugin_args())
