"""What one run is: machine x kernel variant x workload x region of interest.

A :class:`RunSpec` is validated plain data.  Engines turn it into a command
line (QEMU or gem5); the run directory stores it as config.json; the results
table carries its flattened form as columns on every row.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from colorsim.errors import ConfigError
from colorsim.describe.machine import Machine
from colorsim.describe.variants import CMDLINE_MAX, KernelVariant, kernel_define  # noqa: F401
from colorsim.units import format_size

ENGINES = ("qemu", "gem5")
HZ = 100
SYNC_QUANTUM_US = 100      # --timing: how far (modelled us) a CPU may lead


# Client CPUs (kernels/kernel/partition.c): extra CPUs outside the
# measured machine where a program's clients run; with two or more the
# last one drives the wire (kernels/kernel/wire.c) and runs no clients.
# web's default: three, two for its clients and one for the wire
# (workloads/README.md, "Where the clients run").  Every other workload has
# none: Chat ran its clients on the server's machine in the paper.
CLIENT_CPUS_DEFAULT = {"/bin/web": 3}
VCPUS_MAX = 16             # kernels/include/param.h NR_CPUS
CLIENT_CPUS_MAX = 8


NAME_MAX = 120             # colorsim/rundir.py MAX_NAME: a run name's limit
ROOTFS_NAME_MAX = 95       # kernels/include/fs.h RFS_NAME_MAX, less the NUL
# The longest initargs= value the testbed kernel keeps (kernels/include/
# param.h, less the NUL; its command line's: variants.CMDLINE_MAX); a longer
# one panics at boot, so it is refused here, before anything is built or booted.
INITARGS_MAX = kernel_define("param.h", "INITARGS_MAX") - 1


def parse_workload(text: str) -> str:
    """``--workload``: ``tasks`` (the built-in workload) gives "", else the
    absolute path of a program in the root-file-system image:
    ``init:/bin/roitest`` or just ``roitest`` (meaning ``/bin/roitest``)."""
    if text == "tasks":
        return ""
    path = text[5:] if text.startswith("init:") else (
        "/bin/" + text if re.fullmatch(r"[A-Za-z0-9_.-]+", text) else None)
    if (not path or not re.fullmatch(r"(/[A-Za-z0-9_.-]+)+", path)
            or len(path.encode()) > ROOTFS_NAME_MAX):
        raise ConfigError(f"--workload must be tasks, init:/path/in/image or "
                          f"a program name, got {text!r}")
    return path


@dataclass(frozen=True)
class Workload:
    """The kernel's built-in task workload (compute, sleep, wake), or a
    user program from the root-file-system image run as init (``program``,
    an absolute path in the image; "" = built-in)."""

    tasks: int = 1024          # workload tasks (the run queue stays ~this long)
    burst: int = 2000          # loop iterations of compute between sleeps
    buffer: int = 256          # bytes of private "user" data each task touches
    warmup_ticks: int = 10     # ticks after all tasks exist before resetstats
    roi_ticks: int = 10        # ticks between resetstats and dumpstats
    seed: int = 1              # allocator fragmentation / placement seed
    program: str = ""          # init=program instead of the built-in tasks
    args: str = ""             # the program's arguments, comma-separated
    client_cpus: int = -1      # client CPUs; -1: the program's default

    def __post_init__(self):
        from colorsim.describe.programs import check_args, check_program
        if self.program:
            parse_workload("init:" + self.program)
            check_program(self.program)
        if self.args and (not self.program or not re.fullmatch(r"[A-Za-z0-9_.=-]+(,[A-Za-z0-9_.=-]+)*", self.args)
                          or len(self.args) > INITARGS_MAX):
            raise ConfigError(f"program arguments need a user program (--workload) and "
                              f"must be words of letters, digits and _.=- "
                              f"(at most {INITARGS_MAX} characters, what the "
                              f"testbed kernel keeps: INITARGS_MAX), got "
                              f"{len(self.args)}: {self.args[:60]!r}...")
        if self.program:            # what the guest itself would refuse
            check_args(self.program, self.args)
        if self.client_cpus == -1:
            object.__setattr__(self, "client_cpus",
                               CLIENT_CPUS_DEFAULT.get(self.program, 0))
        if not 0 <= self.client_cpus <= CLIENT_CPUS_MAX:
            raise ConfigError(f"--client-cpus must be between 0 and "
                              f"{CLIENT_CPUS_MAX}, got {self.client_cpus}")
        if self.client_cpus and not self.program:
            raise ConfigError("--client-cpus is for a user program's clients "
                              "(--workload web); the built-in tasks have none")
        if not 1 <= self.tasks <= 4096:
            raise ConfigError(f"--tasks must be between 1 and 4096, got "
                              f"{self.tasks}")
        # The guest reads these into fixed-width integers (kernels/kernel/
        # cmdline.c: 64 bits, wrapping; the burst is a uint32_t in
        # kernels/workload/tasks.c; warm-up and region are added to the
        # 64-bit tick count): a larger value would be recorded but not used.
        for field_, name, most in (("seed", "seed", 2**64 - 1),
                                   ("burst", "burst", 2**32 - 1),
                                   ("warmup_ticks", "warmup", 2**62),
                                   ("roi_ticks", "roi", 2**62)):
            v = getattr(self, field_)
            if not 1 <= v <= most:
                raise ConfigError(f"{name} must be between 1 and {most} (what "
                                  f"the guest can hold), got {v}")
        if not 8 <= self.buffer <= 4096:
            raise ConfigError(f"buffer must be 8..4096 bytes, got "
                              f"{self.buffer}")


@dataclass(frozen=True)
class RunSpec:
    machine: Machine
    variant: KernelVariant
    workload: Workload = field(default_factory=Workload)
    engine: str = "qemu"
    timeout_s: float = 600.0
    timing: bool = False       # modelled time (busmon timing=), QEMU only

    def __post_init__(self):
        # the image this run boots (Linux 2.4's --timing image)
        object.__setattr__(self, "variant", self.variant.for_run(
            self.timing, self.workload.client_cpus))
        if self.timing and self.engine != "qemu":
            raise ConfigError("--timing is the QEMU engine's modelled time; "
                              "gem5 keeps its own")
        if self.timing and self.machine.timing is None:
            raise ConfigError(f"machine {self.machine.name} has no [timing] "
                              f"table in machines.toml; --timing needs one")
        if self.engine not in ENGINES:
            raise ConfigError(f"unknown engine {self.engine!r}; choose one of "
                              f"{', '.join(ENGINES)}")
        l1, l2 = self.machine.caches.l1d, self.machine.caches.l2
        if l1.size > l2.size:
            warnings.warn(f"L1D {format_size(l1.size)} is larger than L2 "
                          f"{format_size(l2.size)}: the L2 can hold only part "
                          f"of what the L1 does", stacklevel=3)
        self.variant.check_run(self)          # what its kernel cannot run
        if self.vcpus > VCPUS_MAX:
            raise ConfigError(f"{self.cpus} CPUs + {self.workload.client_cpus} "
                              f"client CPUs is more than the {VCPUS_MAX} the "
                              f"testbed brings online")
        if not 0 < self.timeout_s < float("inf"):
            raise ConfigError(f"timeout must be a positive number of seconds, "
                              f"got {self.timeout_s}")

    @property
    def cpus(self) -> int:
        return self.machine.processor.cpus

    @property
    def vcpus(self) -> int:
        """The guest's CPUs: the measured ones, then the client CPUs."""
        return self.cpus + self.workload.client_cpus

    @property
    def kernel_dir(self) -> Path:
        return self.variant.kernel_dir()

    @property
    def kernel_elf64(self) -> Path:
        """ELF64 image with the 64-bit entry point (gem5's loader); for a
        linux24 kernel its bzImage, the file the run's identity hashes."""
        return self.variant.kernel_elf64()

    @property
    def kernel_multiboot(self) -> Path:
        """ELF32 container of the same code, multiboot entry (QEMU -kernel)."""
        return self.kernel_dir / "kernel.mb.elf"

    @property
    def rootfs_image(self) -> Path:
        """The root-file-system image (QEMU -initrd) for user programs; a
        linux24 kernel's ext2 initrd."""
        return self.variant.rootfs_image(self.workload.program)

    @property
    def layout_file(self) -> Path:
        return self.kernel_dir / "layout.json"

    def kernel_cmdline(self, lapic_hz: int) -> str:
        """The kernel's command line, or a ConfigError if the kernel could
        not keep it whole."""
        line = self._kernel_cmdline(lapic_hz)
        most, who = self.variant.cmdline_limit()
        if len(line) > most:
            raise ConfigError(f"the kernel command line would be {len(line)} "
                              f"bytes, more than the {most} {who}: shorten "
                              f"the program's arguments or the seed")
        return line

    def _kernel_cmdline(self, lapic_hz: int) -> str:
        timing = ""
        if self.timing:    # ticks from modelled time (kernels/kernel/timer.c,
            hz = self.machine.processor.clock_hz   # Linux 2.4's patch 0004)
            timing = (f"timing_hz={hz} "
                      f"timing_quantum={hz * SYNC_QUANTUM_US // 1_000_000}")
        return self.variant.cmdline(self, lapic_hz, timing)

    @property
    def wire(self) -> bool:
        """Whether the run has the wire (kernels/kernel/wire.c): client CPUs
        for the clients and one for the wire, and a machine with a
        network."""
        return (self.workload.client_cpus >= 2 and self.variant.wire
                and self.machine.network is not None)

    def _client_pcs(self):
        """The machine's client PCs (describe/clients.py) this run's client
        CPUs stand for: a run with the wire on a machine with the model,
        unless it holds the servers for busy clients instead
        (timing.hold_for_clients); else None."""
        m = self.machine
        if not self.wire or m.clients is None or (
                m.timing is not None and m.timing.hold_for_clients):
            return None
        return m.clients

    @property
    def client_model(self):
        """The client PCs' model a timed run with the wire gives its client
        CPUs, or None: clients as fast as QEMU's round robin makes them, or
        the hold."""
        return self._client_pcs() if self.timing else None

    @property
    def client_core_hz(self):
        """The clock a client CPU runs at on an engine whose cores each
        have a clock (gem5, untimed): the client model's
        (``Clients.core_hz``), its client CPUs but the wire's standing for
        the PCs; None without the model (as for ``client_model``)."""
        pcs = self._client_pcs()
        return None if pcs is None else pcs.core_hz(self.workload.client_cpus - 1)

    @property
    def nic_dma(self) -> bool:
        """Whether the server's cards' DMA is booked on its bus: a run with
        the wire, or with Linux 2.4's cards (client CPUs), on a machine
        whose cards are bus masters."""
        net = self.machine.network
        cards = self.wire or (self.variant.cards and self.workload.client_cpus > 0)
        return bool(cards and net is not None and net.dma)

    @property
    def dma_gap_cycles(self) -> int:
        """Core clocks between two lines of one DMA frame: a card moves a
        frame's lines as its bytes cross the wire, so one line per line
        time of the wire (ppro4: 32 B at 100 Mbit/s at 200 MHz = 512)."""
        m = self.machine
        line_bits = m.caches.l2.line * 8
        return max(1, -(-line_bits * m.processor.clock_hz
                        // m.network.bandwidth_bps))

    def to_dict(self) -> dict:
        d = {"machine": self.machine.to_dict(),
             "variant": dataclasses.asdict(self.variant),
             "workload": dataclasses.asdict(self.workload),
             "engine": self.engine}
        if not self.workload.program:       # runs made before it existed
            del d["workload"]["program"]    # stay comparable
        if not self.workload.args:
            del d["workload"]["args"]
        if not self.workload.client_cpus:   # runs before client CPUs existed
            del d["workload"]["client_cpus"]
        elif self.machine.network is not None:      # the wire's settings
            d["network"] = self.machine.network.to_dict()
            if self.nic_dma and not self.wire:      # Linux 2.4's cards' DMA: its
                d["card_dma"] = True                # runs before it keep their ids
        d["variant"] = self.variant.id_dict(d["variant"])
        d["variant"]["name"] = self.variant.name
        d["variant"]["build_id"] = self.variant.build_id
        if self.timing:                     # absent in counting-only runs,
            d["timing"] = self.machine.timing.identity()   # as before
        if self.client_model is not None:   # runs without it keep their ids
            d["clients"] = dataclasses.asdict(self.client_model)
        return d

    def settings_digest(self) -> str:
        """8 hex digits of SHA-256 over the whole configuration (machine
        table, kernel, workload, engine, timing table)."""
        import json
        text = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:8]

    def default_name(self) -> str:
        """The readable settings, then :meth:`settings_digest`: two runs
        that differ in anything that changes the result (seed, region,
        warm-up, burst, a machines.toml entry...) never share a name, so
        one is never refused or replaced (--force) for the other."""
        w = self.workload
        l2 = self.machine.caches.l2.size // 1024
        what = (f"t{w.tasks}" if not w.program else
                "init_" + w.program.strip("/").replace("/", "_"))
        if w.args:
            what += "-" + w.args.replace("--", "").replace(",", "_")
        if w.client_cpus:
            what += f"-cc{w.client_cpus}"
        readable = (f"{self.machine.name}-{self.cpus}cpu-l2_{l2}k-"
                    f"{self.variant.name}-{what}-s{w.seed}-w{w.warmup_ticks}-"
                    f"r{w.roi_ticks}-b{w.burst}-{self.engine}"
                    + ("-timing" if self.timing else ""))
        return f"{readable[:NAME_MAX - 9]}-{self.settings_digest()}"


def file_digest(path: Path, algorithm: str = "sha256") -> str:
    h = hashlib.new(algorithm)
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 16), b""):
            h.update(chunk)
    return h.hexdigest()


def file_sha256(path: Path) -> str:
    return file_digest(path)
