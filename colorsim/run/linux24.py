"""Real Linux 2.4 (x86_64, and i386) from the user's own source tree.

The user brings a Linux 2.4.37.x tree (LINUX24_SRC); no Linux code is in
this repository.  What is ours: kernels/linux24/patches (build fixes for
gcc-12, and the task-structure coloring of the paper's Fig. 4b), the
configs for the ppro4 and piii8 machines, and this wrapper, which copies
the tree out of place into build/linux24/<build id>/, patches, configures
and builds it with the compiler flags gcc-12 needs, and checks the result.

x86_64 is the default (the first port the suite ran).  i386, the paper's
architecture (``linux24-i386:``), builds from the same tree with its own
patches and configs (kernels/linux24/patches/i386, configs/i386-*.config)
and runs the tasks workload on QEMU, its init a 32-bit musl program
(Debian's musl-dev:i386); gem5 v24 runs no 32-bit protected-mode kernel.

    python3 -m colorsim.run.linux24 build --machine ppro4 --kernel c32
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from colorsim import ROOT
from colorsim.describe.linux24 import (ARCH, ARCHES, LINE, SRC_ENV, THREAD_SIZE, Linux24Build,
                                       check_tools, check_version, source_tree,
                                       tasks_initrd, variant_for)
from colorsim.errors import ConfigError, RunError










def stamp(b: Linux24Build, version: str) -> str:
    """What the image depends on: our patches, config and flags, the version."""
    h = hashlib.sha256()
    for p in b.patches:
        h.update(p.name.encode() + b"\0" + p.read_bytes())
    h.update(b.config_file.name.encode() + b"\0" + b.config_text().encode())
    h.update("\0".join(b.make_args() + [version]).encode())
    return h.hexdigest()


def _copied(rel: str, arch: str = "x86_64") -> bool:
    """Whether _copy_tree copies the file at ``rel`` (a path relative to
    the tree): everything but .git and the other architectures."""
    parts = rel.split("/")
    if parts[0] == ".git":
        return False
    if parts[0] == "arch" and len(parts) > 1:
        return parts[1] == arch
    if parts[0] == "include" and len(parts) > 1 and parts[1].startswith("asm-"):
        return parts[1] in _asm_dirs(arch)
    return True


def _asm_dirs(arch: str) -> tuple:
    """The include/asm-* folders a build for ``arch`` reads (i386's
    pci-direct.h is x86_64's)."""
    return (f"asm-{arch}", "asm-generic") + (("asm-x86_64",) if arch == "i386" else ())


def _tree_files(src: Path, arch: str = "x86_64") -> list:
    """The files of the user's tree a build for ``arch`` reads, sorted, as
    relative paths."""
    out = []
    for d, dirs, files in os.walk(src):
        rel_d = os.path.relpath(d, src)
        rel_d = "" if rel_d == "." else rel_d + "/"
        dirs[:] = sorted(x for x in dirs if _copied(rel_d + x, arch))
        out += [rel_d + f for f in files if _copied(rel_d + f, arch)]
    return sorted(out)


def source_fingerprint(src: Path, arch: str = "x86_64") -> str:
    """A cheap hash of the tree's file names, sizes and modification
    times: whether the build in a directory is of the tree as it is now."""
    h = hashlib.sha256()
    for rel in _tree_files(src, arch):
        st = os.lstat(src / rel)
        h.update(f"{rel}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def source_sha256(src: Path, arch: str = "x86_64") -> str:
    """The content hash of the tree a build reads: each file's path and
    SHA-256, in order.  It names the user's source in every run made with
    the build (config.json's linux24_source_sha256), so two trees that
    differ give two run identities, and the same tree unpacked anywhere
    gives one."""
    h = hashlib.sha256()
    for rel in _tree_files(src, arch):
        p = src / rel
        body = (os.readlink(p).encode() if p.is_symlink() else p.read_bytes())
        h.update(f"{rel}\0{hashlib.sha256(body).hexdigest()}\n".encode())
    return h.hexdigest()


SOURCE_FILE = "source.json"


def source_record(b: Linux24Build) -> dict:
    """The build's record of the tree it was made from (build/.../source.json):
    version, content hash and fingerprint."""
    f = b.dir / SOURCE_FILE
    try:
        return json.loads(f.read_text())
    except (OSError, ValueError):
        return {}


def _copy_tree(src: Path, dst: Path, arch: str = "x86_64") -> None:
    """The ``arch`` part of the user's tree, copied: the build writes into
    its tree (.config, .depend, objects), and the user's stays untouched."""
    dst.mkdir(parents=True)
    excl = ["--exclude=./arch/*", "--exclude=./include/asm-*", "--exclude=.git"]
    a = subprocess.Popen(["tar", "-C", str(src), "-c", *excl, "."],
                         stdout=subprocess.PIPE)
    b = subprocess.run(["tar", "-C", str(dst), "-x"], stdin=a.stdout)
    a.stdout.close()
    if a.wait() or b.returncode:
        raise RunError(f"copying {src} into {dst} failed")
    a = subprocess.Popen(["tar", "-C", str(src), "-c", f"arch/{arch}",
                          *(f"include/{d}" for d in _asm_dirs(arch))],
                         stdout=subprocess.PIPE)
    b = subprocess.run(["tar", "-C", str(dst), "-x"], stdin=a.stdout)
    a.stdout.close()
    if a.wait() or b.returncode:
        raise RunError(f"copying the {arch} parts of {src} failed")


def apply_patches(tree: Path, patches) -> None:
    for p in patches:
        r = subprocess.run(["patch", "-p1", "--forward", "--batch", "-s",
                            "-i", str(p)], cwd=tree, capture_output=True,
                           text=True)
        if r.returncode:
            first = (r.stdout + r.stderr).strip().splitlines()[:1]
            raise RunError(f"{p.name} does not apply to {tree}: "
                           f"{first[0] if first else 'patch failed'}")


def _make_env() -> dict:
    """The environment of a build: no host date or locale in the image
    (gcc's __DATE__ and __TIME__ follow SOURCE_DATE_EPOCH; patch 0003 takes
    the rest out of the Makefiles)."""
    return dict(os.environ, SOURCE_DATE_EPOCH=str(FIXED_TIME), LC_ALL="C",
                TZ="UTC")


def _make(tree: Path, args: list, log: Path) -> None:
    with open(log, "a") as f:
        r = subprocess.run(["make", *args], cwd=tree, stdout=f,
                           stderr=subprocess.STDOUT, input=b"\n" * 2000,
                           env=_make_env())
    if r.returncode:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-15:])
        raise RunError(f"make {' '.join(a for a in args if '=' not in a)} "
                       f"failed in {tree} (log {log}):\n{tail}")




def prepare(b: Linux24Build, progress=print) -> Path:
    """Everything a run of ``b`` needs: the image, its layout.json, the
    initrd (the bus-monitor plugin is the runner's).  Under the builds'
    lock (colorsim/run/build.py, build_lock("linux24"))."""
    build(b, progress=progress)
    rd = initrd(progress, b.arch)
    lay = b.dir / "layout.json"
    newest = max((b.dir / "stamp").stat().st_mtime, rd.stat().st_mtime)
    if not lay.is_file() or lay.stat().st_mtime < newest:
        write_layout(b)
    return lay


def build(b: Linux24Build, src: Path = None, progress=print) -> Path:
    """Build ``b`` (if its stamp changed); return its directory."""
    src = src or source_tree()
    version = check_version(src, b.arch)
    want = stamp(b, version)
    st = b.dir / "stamp"
    finger = source_fingerprint(src, b.arch)
    if not (st.is_file() and st.read_text().strip() == want and b.bzimage.is_file()
            and source_record(b).get("fingerprint") == finger):
        _build(b, src, version, want, progress)
        rec = {"version": version, "sha256": source_sha256(src, b.arch),
               "fingerprint": finger}
        (b.dir / SOURCE_FILE).write_text(json.dumps(rec, indent=2) + "\n")
    bad = sys_tail_calls(disassemble(b.dir / "vmlinux"))
    if bad:
        raise RunError(f"{b.build_id}: {len(bad)} sys_* functions end in a "
                       f"sibling call (e.g. {bad[0]}): gcc may have "
                       f"overwritten their stack arguments")
    return b.dir


def _build(b: Linux24Build, src: Path, version: str, want: str, progress) -> None:
    check_tools(("make", "patch", "gcc", "tar", "objdump", "nm", "gdb")
                + ARCH[b.arch].boot_tools)
    progress(f"build: Linux {version} {b.build_id} (out of tree, ~2 min)")
    if b.dir.exists():
        shutil.rmtree(b.dir)
    failed = b.dir.with_name(b.dir.name + ".failed")
    try:
        tree = b.dir / "src"
        _copy_tree(src, tree, b.arch)
        apply_patches(tree, b.patches)
        (tree / ".config").write_text(b.config_text())
        log = b.dir / "build.log"
        args = b.make_args()
        # a full config: asks nothing
        _make(tree, ["oldconfig", *ARCH[b.arch].make_config], log)
        _make(tree, [*args, "dep"], log)
        _make(tree, ["-j2", *args, "bzImage"], log)
        for f in ("vmlinux", "System.map", f"arch/{b.arch}/boot/bzImage"):
            shutil.copy(tree / f, b.dir / Path(f).name)
        (b.dir / "stamp").write_text(want + "\n")
    except BaseException:
        # nothing half-made where a build is looked for: the attempt is
        # kept beside it, as a failed run is
        shutil.rmtree(failed, ignore_errors=True)
        if b.dir.exists():
            b.dir.rename(failed)
        raise
    shutil.rmtree(failed, ignore_errors=True)


def disassemble(elf: Path) -> str:
    r = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(elf)],
                       capture_output=True, text=True)
    if r.returncode:
        raise RunError(f"objdump -d {elf} failed: {r.stderr.strip()[:200]}")
    return r.stdout


_FUNC = re.compile(r"^[0-9a-f]+ <([^>]+)>:$")
# A direct jump to a symbol (+ offset).  Not "<_text-0x...>": those are
# BUG()'s line/file words after a ud2, decoded as a jump outside the kernel
# (and named after an absolute symbol below it, such as i386's VM_MASK,
# which sys_tail_calls drops as no function of the text).
_JMP = re.compile(r"\sjmp[a-z]*\s+[0-9a-f]+ <([A-Za-z_.][\w.]*)(\+0x[0-9a-f]+)?>")


def sys_tail_calls(disasm: str) -> list:
    """``sys_x -> target`` for each system-call function (sys_*) that jumps
    into another function: a sibling call, which reuses the caller's
    stack-argument area (the miscompile 2.4's gcc check warned about)."""
    bad, func = [], None
    lines = disasm.splitlines()
    funcs = {m.group(1) for m in map(_FUNC.match, lines) if m}   # the text's labels
    for line in lines:
        m = _FUNC.match(line)
        if m:
            func = m.group(1)
            continue
        if func and func.startswith("sys_"):
            j = _JMP.search(line)
            if j and j.group(1) != func and j.group(1) in funcs:
                bad.append(f"{func} -> {j.group(1)}")
    return bad


def main(argv=None) -> int:
    from colorsim.describe.machine import get_machine
    p = argparse.ArgumentParser(prog="python3 -m colorsim.run.linux24",
                                description="build Linux 2.4.37 images from "
                                f"${SRC_ENV} (vanilla and colored)")
    sub = p.add_subparsers(dest="cmd", required=True)
    bp = sub.add_parser("build", help="build one image into build/linux24/")
    bp.add_argument("--machine", default="ppro4", help="ppro4 or piii8")
    bp.add_argument("--kernel", default="vanilla", help="vanilla or cN")
    bp.add_argument("--arch", default="x86_64", choices=("x86_64", "i386"),
                    help="the architecture (default x86_64; i386 is the paper's)")
    a = p.parse_args(argv)
    try:
        b = variant_for(get_machine(a.machine), a.kernel, a.arch)
        print(build(b, progress=lambda m: print(m, file=sys.stderr)))
    except (ConfigError, RunError) as e:
        print(f"colorsim: {e}", file=sys.stderr)
        return 2
    return 0



# ---- the image's init and the machine ----------------------------------

INIT_SOURCE = ROOT / "workloads" / "linux24" / "l24tasks.c"
EXIT_HEADER = ROOT / "workloads" / "linux24" / "l24exit.h"   # both inits include it
FIXED_TIME = 1023667200            # 2002-06-10, every file and the image


def init_program(arch: str = "x86_64") -> Path:
    """The staged /init of the tasks workload's RAM disk (its symbols:
    compute())."""
    return tasks_initrd(arch).with_suffix(".d") / "init"


# Debian's musl-dev:i386 (multiarch): headers and a static libc for i386.
# musl-gcc's wrapper is the host's (x86_64), so the 32-bit link is spelt out.
MUSL_I386 = Path("/usr/lib/i386-linux-musl")
MUSL_I386_INCLUDE = Path("/usr/include/i386-linux-musl")


def musl_i386_link(out: Path, source: Path) -> list:
    """gcc's command line for a static i386 musl program."""
    if not (MUSL_I386 / "libc.a").is_file():
        raise ConfigError("musl for i386 is not installed: dpkg --add-architecture "
                          "i386 && apt-get update && apt-get install musl-dev:i386 "
                          "(or run scripts/setup.sh; linux24-i386 kernels need it)")
    def gcc_file(*args):
        return subprocess.run(["gcc", "-m32", *args], capture_output=True,
                              text=True, check=True).stdout.strip()
    crt = [str(MUSL_I386 / f) for f in ("crt1.o", "crti.o")]
    return ["gcc", "-m32", "-static", "-nostdinc", "-nostdlib",
            "-isystem", str(MUSL_I386_INCLUDE),
            "-isystem", gcc_file("-print-file-name=include"),
            "-Wl,--build-id=none", "-o", str(out), *crt, str(source),
            f"-L{MUSL_I386}", "-Wl,--start-group", "-lc",
            gcc_file("-print-libgcc-file-name"), "-Wl,--end-group",
            str(MUSL_I386 / "crtn.o")]


def initrd(progress=print, arch: str = "x86_64") -> Path:
    """build/linux24/initrd.ext2 (initrd-i386.ext2): /init
    (workloads/linux24/l24tasks.c, musl, static) and the device nodes it
    needs, as an ext2 RAM-disk image that is byte-identical for the same
    program (fixed times, UUID, hash seed)."""
    sources = (INIT_SOURCE, EXIT_HEADER)
    key = hashlib.sha256(b"".join(p.read_bytes() for p in sources)).hexdigest()
    flags = ["-O2", "-Wall", "-Wextra", "-Werror"]

    def fill(stage: Path) -> None:
        if arch == "i386":
            cmd = musl_i386_link(stage / "init", INIT_SOURCE)
            cmd[1:1] = flags
        else:
            cmd = ["musl-gcc", *flags, "-static", "-Wl,--build-id=none",
                   "-o", str(stage / "init"), str(INIT_SOURCE)]
        subprocess.run(cmd, check=True)
    return build_ramdisk(tasks_initrd(arch), key, fill, 2048,
                         f"the {ARCHES[arch]} initrd (init = l24tasks)", progress)


def build_ramdisk(out: Path, key: str, fill, kib: int, what: str,
                  progress=print) -> Path:
    """An init's RAM disk at ``out``, remade only when ``key`` (a hash of
    everything it is made from) differs from the one it was made with:
    ``fill(stage)`` puts the programs and files into a fresh staging folder
    holding /dev and /proc, the device nodes init needs are added, and the
    folder is packed as ``kib`` KiB of ext2 (pack_ext2: the same bytes for
    the same files)."""
    st = out.with_suffix(".stamp")
    if out.is_file() and st.is_file() and st.read_text().strip() == key:
        return out
    check_tools(("musl-gcc", "mke2fs", "debugfs"))
    progress(f"build: {what}")
    stage = out.with_suffix(".d")
    if stage.exists():
        shutil.rmtree(stage)
    (stage / "dev").mkdir(parents=True)
    (stage / "proc").mkdir()
    fill(stage)
    # char devices: console, mem (the m5-op page), null
    for name, major, minor in (("console", 5, 1), ("mem", 1, 1), ("null", 1, 3)):
        os.mknod(stage / "dev" / name, 0o20600, os.makedev(major, minor))
    pack_ext2(stage, out, kib)
    st.write_text(key + "\n")
    return out


def pack_ext2(stage: Path, out: Path, kib: int, inodes: int = 64) -> None:
    """``stage`` as an ext2 RAM-disk image of ``kib`` KiB at ``out``, the
    same bytes for the same files (fixed times, UUID and hash seed)."""
    for p in [stage, *stage.rglob("*")]:
        os.utime(p, (FIXED_TIME, FIXED_TIME), follow_symlinks=False)
    tmp = out.with_suffix(".tmp")
    tmp.unlink(missing_ok=True)
    env = dict(os.environ, E2FSPROGS_FAKE_TIME=str(FIXED_TIME))
    r = subprocess.run(["mke2fs", "-q", "-t", "ext2", "-b", "1024", "-I", "128",
                        "-O", "^dir_index,^resize_inode,^ext_attr",
                        "-U", "00000000-0000-0000-0000-000000000001",
                        "-E", "hash_seed=00000000-0000-0000-0000-000000000002,"
                              "root_owner=0:0",
                        "-m", "0", "-N", str(inodes), "-d", str(stage), str(tmp),
                        str(kib)],
                       env=env, capture_output=True, text=True)
    if r.returncode:
        raise RunError(f"mke2fs failed: {r.stderr.strip()[:200]}")
    _fix_ctimes(stage, tmp)
    tmp.replace(out)


def _fix_ctimes(stage: Path, image: Path) -> None:
    """mke2fs -d copies each staged file's change time, which no system
    call can set: without this the same files made another time give
    another image (and another rootfs hash).  debugfs rewrites them."""
    paths = ["/", "/lost+found"] + sorted(
        "/" + p.relative_to(stage).as_posix() for p in stage.rglob("*"))
    cmds = "".join(f"sif {p} ctime @{FIXED_TIME}\n" for p in paths)
    r = subprocess.run(["debugfs", "-w", "-f", "-", str(image)], input=cmds,
                       capture_output=True, text=True)
    bad = [l for l in r.stderr.splitlines() if "sif:" in l or "not found" in l]
    if r.returncode or bad:
        raise RunError(f"debugfs could not fix the image's times: "
                       f"{(bad or [r.stderr.strip()])[0][:200]}")




def qemu_args(b: Linux24Build, machine, initrd_path: Path, console: Path,
              append: str, vcpus: int = 0) -> list:
    """QEMU's options for a deterministic run (as the suite's runner: one
    thread round robin, -icount), with paths relative to the image's
    directory, where QEMU runs; ``vcpus``: the machine's CPUs and the
    client CPUs after them (default: the machine's alone)."""
    m = machine
    return ["-display", "none", "-nodefaults", "-machine", "pc",
            "-cpu", ARCH[b.arch].qemu_cpu,
            "-m", f"{m.memory.size // 2**20}M", "-smp", f"{vcpus or m.processor.cpus}",
            "-accel", m.emulation.accel,
            "-icount", f"shift={m.emulation.icount_shift},sleep=off",
            "-rtc", "base=2002-06-10T00:00:00,clock=vm", "-no-reboot",
            "-device", "isa-debug-exit,iobase=0xf4,iosize=4",
            "-serial", f"file:{console}",
            "-kernel", b.bzimage.name,
            "-initrd", os.path.relpath(initrd_path, b.dir),
            "-append", append]


# ---- layout.json: what the bus monitor and the analysis need -----------

# The run-queue walk reads these task_struct fields per task: the list
# link first (list_for_each's prefetch(pos->next) loads it), then
# can_schedule's masks and goodness's fields.
WALK_FIELDS = ("run_list", "cpus_runnable", "cpus_allowed", "policy",
               "counter", "processor", "mm", "nice")
FIRST_TOUCHED = "run_list"
SYMBOLS = ("schedule", "runqueue_lock", "init_tasks", "aligned_data",
           "init_task_union")


def task_fields(vmlinux: Path, names) -> dict:
    """Offsets and sizes of task_struct fields, from the -g sched.o's DWARF
    (gdb reads them; no copy of the structure is kept here)."""
    cmds = ["print sizeof(struct task_struct)"]
    for n in names:
        cmds += [f"print (unsigned long)&((struct task_struct *)0)->{n}",
                 f"print sizeof(((struct task_struct *)0)->{n})"]
    r = subprocess.run(["gdb", "-nx", "-batch", *sum((["-ex", c] for c in cmds), []),
                        str(vmlinux)], capture_output=True, text=True)
    vals = [int(v) for v in re.findall(r"^\$\d+ = (\d+)$", r.stdout, re.M)]
    if len(vals) != 1 + 2 * len(names):
        raise RunError(f"gdb could not read struct task_struct from {vmlinux} "
                       f"(is gdb installed?): {r.stderr.strip()[:200]}")
    return vals[0], {n: {"offset": vals[1 + 2 * i], "size": vals[2 + 2 * i]}
                     for i, n in enumerate(names)}


def _block_lines(lines: list, first: int) -> range:
    """Line numbers (1-based) from ``first`` to the brace that closes the
    block opened on or after it."""
    depth, opened = 0, False
    for i in range(first - 1, len(lines)):
        depth += lines[i].count("{") - lines[i].count("}")
        opened = opened or "{" in lines[i]
        if opened and depth == 0:
            return range(first, i + 2)
    raise RunError(f"no end of the block at kernel/sched.c:{first}")


def walk_lines(sched_c: str) -> set:
    """kernel/sched.c lines of the run-queue walk: the list_for_each loop
    in schedule(), goodness() (inlined into it) and can_schedule()."""
    lines = sched_c.splitlines()
    def find(pattern):
        for i, l in enumerate(lines):
            if re.search(pattern, l):
                return i + 1
        raise RunError(f"kernel/sched.c has no line matching {pattern!r}")
    # (the client partition's image walks its CPU's queue, rq: patch 0006)
    loop = find(r"^\s*list_for_each\(tmp, (&runqueue_head|rq)\)")
    good = find(r"^static inline int goodness\(")
    can = find(r"^#define can_schedule\(p,cpu\) \\$")
    return (set(_block_lines(lines, loop)) | set(_block_lines(lines, good))
            | {can, can + 1})


def loop_ranges(decoded: str, wanted: set, lo: int, hi: int) -> list:
    """[start, end) address ranges in [lo, hi) whose line-table rows are
    sched.c lines in ``wanted`` (objdump --dwarf=decodedline output)."""
    rows = []
    for m in re.finditer(r"^(\S+)\s+(\d+)\s+0x([0-9a-f]+)", decoded, re.M):
        addr = int(m.group(3), 16)
        if lo <= addr < hi:
            rows.append((addr, m.group(1) == "sched.c" and int(m.group(2)) in wanted))
    rows.sort(key=lambda r: r[0])
    # one row per address: the last row at an address says which line it is
    by_addr = {}
    for addr, hit in rows:
        by_addr[addr] = hit
    addrs = sorted(by_addr) + [hi]
    ranges = []
    for a, b in zip(addrs, addrs[1:]):
        if not by_addr[a]:
            continue
        if ranges and ranges[-1][1] == a:
            ranges[-1][1] = b
        else:
            ranges.append([a, b])
    return ranges


def _nm(vmlinux: Path) -> dict:
    r = subprocess.run(["nm", "-S", str(vmlinux)], capture_output=True, text=True)
    syms = {}
    for line in r.stdout.splitlines():
        p = line.split()
        if len(p) == 4:
            syms[p[3]] = {"addr": int(p[0], 16), "size": int(p[1], 16), "kind": p[2]}
        elif len(p) == 3:
            syms.setdefault(p[2], {"addr": int(p[0], 16), "size": 0, "kind": p[1]})
    return syms


# x86_64 2.4 maps the kernel image here (physical 0); gem5 loads it
START_KERNEL_MAP = ARCH["x86_64"].kernel_base
TIMING_SYMBOLS = ("colorsim_clock", "colorsim_timing_check")


def timing_layout(syms: dict, base: int) -> dict:
    """What the bus monitor needs for guest time from modelled time
    (patch 0004): the physical address of the clock array it writes
    (busmon publish=) and the check function it treats as free (free=);
    ``base``: the kernel's virtual address of physical 0 (ArchFacts)."""
    missing = [s for s in TIMING_SYMBOLS if s not in syms]
    if missing:
        raise RunError(f"a --timing image lacks {missing}: was patch "
                       f"0004 applied?")
    clock, check = (syms[s] for s in TIMING_SYMBOLS)
    if not clock["addr"] >= base or not check["size"]:
        raise RunError(f"colorsim_clock at {clock['addr']:#x} is not in the "
                       f"kernel's mapping, or the check has no size")
    return {"publish": clock["addr"] - base, "publish_bytes": clock["size"],
            "free": [check["addr"], check["addr"] + check["size"]]}


def _layout_way_bits(b: Linux24Build) -> int:
    """The coloring bits the layout names.  A vanilla image is one build
    for every L2 size (it has no color bits), so its layout names its
    machine's own L2's: the same file whichever L2 size's run wrote it."""
    if b.colors > 1:
        return b.way_bits
    from colorsim.describe.machine import get_machine
    return get_machine(b.config).caches.l2.way_bits


def write_layout(b: Linux24Build) -> Path:
    """b.dir/layout.json, in the shape of the testbed kernel's."""
    vmlinux = b.dir / "vmlinux"
    syms = _nm(vmlinux)
    missing = [s for s in SYMBOLS if s not in syms]
    if missing:
        raise RunError(f"{b.build_id}: symbols missing from vmlinux: {missing}")
    size, fields = task_fields(vmlinux, WALK_FIELDS + ("state", "need_resched"))
    walk = [fields[f] for f in WALK_FIELDS]
    first = fields[FIRST_TOUCHED]["offset"]
    lo_line = min(f["offset"] for f in walk) & ~(LINE - 1)
    # the words read: run_list.next, not .prev
    facts = ARCH[b.arch]
    hi_word = max(f["offset"] + min(f["size"], facts.pointer) for f in walk)
    # init's compute(): a unit of work for --timing (busmon unit=); the
    # same address in every task, which fork copies from init
    init_syms = _nm(init_program(b.arch))
    if "compute" not in init_syms:
        raise RunError("the linux24 init has no compute symbol (is it "
                       "workloads/linux24/l24tasks.c?)")
    sched = syms["schedule"]
    decoded = subprocess.run(["objdump", "--dwarf=decodedline", str(vmlinux)],
                             capture_output=True, text=True).stdout
    wanted = walk_lines((b.dir / "src" / "kernel" / "sched.c").read_text())
    rq = loop_ranges(decoded, wanted, sched["addr"], sched["addr"] + sched["size"])
    if len(rq) > 16:          # busmon's MAX_RANGES
        raise RunError(f"{b.build_id}: the run-queue loop is {len(rq)} address "
                       f"ranges; the bus monitor takes at most 16")
    if not rq:
        raise RunError(f"{b.build_id}: no run-queue loop code found in "
                       f"schedule()'s line table (was sched.o built with -g?)")
    layout = {
        "variant": {"name": b.name, "build_id": b.build_id, "colors": b.colors,
                    "line": LINE, "way_bits": _layout_way_bits(b),
                    "color_shift": b.color_shift if b.colors > 1 else 0,
                    "color_mask": b.color_mask, "scheduler": "linux-2.4.37"},
        "thread_size": THREAD_SIZE,
        "page_size": 4096,
        "task_struct": {"size": size, "fields": fields},
        "scheduler_hot": {
            # x86_64's 8-byte fields spread the walk over more than one
            # line (2.4.37: counter..mm in one, processor..run_list.next in
            # the next): line_offset is the first, lines_per_task how many
            "line_offset": lo_line, "line_size": LINE,
            "lines_per_task": (hi_word - lo_line + LINE - 1) // LINE,
            "fields_read_per_task": list(WALK_FIELDS),
            "first_touched": FIRST_TOUCHED, "first_touched_offset": first,
            "walk_span": [min(f["offset"] for f in walk),
                          max(f["offset"] + f["size"] for f in walk)]},
        "symbols": {**{k: syms[k] for k in SYMBOLS},
                    "compute": init_syms["compute"]},
        "ranges": {"rqloop": rq, "user": [list(facts.user)],
                   "schedule": [sched["addr"], sched["addr"] + sched["size"]]},
        # 2.4's spinlocks are byte-wide: lock decb takes, a store of 1
        # releases (movb $1, or on i386's M686 build xchgb: spinlock.h's
        # CONFIG_X86_PPRO_FENCE): busmon lockbytes=1
        "lockmeter": {"addr": syms["runqueue_lock"]["addr"], "stride": 4,
                      "count": 1, "bytes": 1,
                      "what": "runqueue_lock, the global lock"},
        "images": {"bzimage": "bzImage", "vmlinux": "vmlinux"},
    }
    if b.timing:
        layout["timing"] = timing_layout(syms, facts.kernel_base)
    if facts.m5base is not None:
        layout["m5base"] = facts.m5base
    if "colorsim_dma_bell" in syms:      # the cards' DMA doorbell (busmon dmabell=)
        layout["dmabell"] = syms["colorsim_dma_bell"]["addr"]
    out = b.dir / "layout.json"
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(layout, indent=2) + "\n")
    tmp.replace(out)
    return out


if __name__ == "__main__":
    sys.exit(main())
