"""The client machines of a web run, as a model of modelled time.

The paper's web clients ran on 28 PCs beside the server; the testbed runs
them on client CPUs outside the measured machine (``colorsim run
--client-cpus``).  Without a model their work costs no modelled time and
gets its instructions from QEMU's round-robin turns, so how fast a client
answers is the emulator's choice.  ``[x.clients]`` in machines.toml gives
the PCs instead: how many, their clock and their cycles per instruction.
Each client CPU (the wire's CPU aside) stands for ``pcs / client CPUs`` PCs
working in parallel, so one guest instruction on it costs the server

    server clock x cpi / (client clock x PCs per client CPU)

core cycles of modelled time (busmon's ``clients=COST:SKEW``, COST in
thousandths of a cycle), and busmon keeps every client clock within
``skew`` of the servers' (engine/qemu-plugin/README.md, "The clients").
"""

from __future__ import annotations

from dataclasses import dataclass

from colorsim.errors import ConfigError

MAX_SKEW_US = 1_000_000


@dataclass(frozen=True)
class Clients:
    """``[machine.clients]``: the client PCs a web run's clients stand for."""

    pcs: int                # client PCs
    clock_hz: int           # each PC's core clock
    cpi: float              # its cycles per instruction
    skew_us: int = 100      # most modelled time a client and a server clock
                            # may be apart (busmon holds the one ahead)

    def __post_init__(self):
        if isinstance(self.pcs, bool) or not isinstance(self.pcs, int) or not 1 <= self.pcs <= 10_000:
            raise ConfigError(f"clients.pcs must be a whole number 1..10000, "
                              f"got {self.pcs!r}")
        if not 10**6 <= self.clock_hz <= 10**11:
            raise ConfigError(f"clients.clock must be 1MHz..100GHz, got "
                              f"{self.clock_hz} Hz")
        if isinstance(self.cpi, bool) or not isinstance(self.cpi, (int, float)) \
                or not 0.05 <= self.cpi <= 100:
            raise ConfigError(f"clients.cpi must be a number 0.05..100, got "
                              f"{self.cpi!r}")
        if isinstance(self.skew_us, bool) or not isinstance(self.skew_us, int) \
                or not 1 <= self.skew_us <= MAX_SKEW_US:
            raise ConfigError(f"clients.skew_us must be a whole number "
                              f"1..{MAX_SKEW_US}, got {self.skew_us!r}")

    def inst_cost_milli(self, server_hz: int, client_cpus: int) -> int:
        """Thousandths of a server core cycle that one guest instruction
        on a client CPU costs, with ``client_cpus`` CPUs running clients
        (the wire's not counted): each stands for pcs / client_cpus PCs."""
        _check_client_cpus(client_cpus)
        cost = 1000 * server_hz * self.cpi * client_cpus / (self.clock_hz * self.pcs)
        return max(1, min(1_000_000, round(cost)))

    def core_hz(self, client_cpus: int) -> int:
        """The clock of a core that does the work of pcs / client_cpus
        PCs at ``cpi`` cycles per instruction of its own: how an engine
        that gives each core a clock of its own (gem5) runs a client CPU,
        the same time per instruction as ``inst_cost_milli`` charges."""
        _check_client_cpus(client_cpus)
        return round(self.clock_hz * self.pcs / (client_cpus * self.cpi))

    def skew_cycles(self, server_hz: int) -> int:
        return server_hz * self.skew_us // 1_000_000

    def plugin_arg(self, server_hz: int, client_cpus: int) -> str:
        """busmon's clients= option."""
        return (f"clients={self.inst_cost_milli(server_hz, client_cpus)}:"
                f"{self.skew_cycles(server_hz)}")


def _check_client_cpus(client_cpus: int) -> None:
    """The model's CPUs stand for the PCs: at least one beside the wire's."""
    if client_cpus < 1:
        raise ConfigError("the client model needs at least one client "
                          "CPU beside the wire's")


def clients_from_table(t: dict) -> Clients:
    """A Clients from one ``[x.clients]`` table (keys checked by the caller)."""
    from colorsim.units import parse_freq
    return Clients(t["pcs"], parse_freq(t["clock"]), t["cpi"],
                   t.get("skew_us", 100))
