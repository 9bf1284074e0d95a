"""The gem5 system a run builds, in words: ``colorsim run --dry-run``
prints these lines (one per component) under the gem5 command lines."""

from colorsim.units import format_size


def describe_params(prm: dict) -> list[str]:
    """One line per component of a gem5 parameter dict."""
    b, pr, mem, mon, bmon = (prm["board"], prm["processor"], prm["memory"],
                             prm["monitor"], prm["bus_monitors"])
    lines = [
        f"board      X86Board clk_freq={b['clk_freq']} "
        f"({b['clock_hz'] / 1e6:g} MHz), cache_line_size={b['cache_line_size']}"
        f", m5ops_base={b['m5ops_base']:#x}",
        f"processor  SimpleProcessor {pr['num_cores']} x {pr['cpu_type']} "
        f"({pr['cpu_class']}), ISA {pr['isa']}, LAPIC timer "
        f"{pr['lapic_hz']} Hz"
        + (f", fetchBufferSize={pr['fetch_buffer_size']}"
           if pr["fetch_buffer_size"] else "")
        + (f", TSC one count per {pr['tsc_period']} on every core"
           if pr.get("tsc_period") else ", TSC in each core's cycles"),
    ]
    if pr.get("client_clock"):
        n = pr["num_cores"] - pr["measured_cpus"]
        mhz = int(pr["client_clock"].removesuffix("Hz")) / 1e6
        lines.append(f"clients    {n} client cores (the wire's among them) at "
                     f"{mhz:g} MHz, the client PCs' model; their LAPIC "
                     f"timers at the board's clock / 16")
    for level in ("l1i", "l1d", "l2"):
        c = prm["caches"][level]
        lines.append(
            f"{level:<10} private per CPU: {format_size(c['size'])} "
            f"{c['assoc']}-way {c['line']} B lines, {c['sets']} sets, "
            f"prefetcher=none, writeback_clean={c['writeback_clean']}, "
            f"tag/data/response {c['tag_latency']}/{c['data_latency']}/"
            f"{c['response_latency']} cycles, {c['mshrs']} MSHRs [latencies "
            f"assumed]")
    io = prm["iocache"]
    lines += [
        f"iocache    {format_size(io['size'])} {io['assoc']}-way, "
        f"prefetcher=none (IDE DMA)",
    ]
    lines += describe_buses(prm)
    lines += [
        f"memory     {mem['kind']} {format_size(mem['size'])}, latency "
        f"{mem['latency']} (load-to-use {mem['load_to_use']} less the "
        f"caches' and the bus's own; var {mem['latency_var']}), bandwidth "
        f"{mem['bandwidth']} [bandwidth assumed]",
        f"bus view   {bmon['count']} x CommMonitor {bmon['name']}[i], "
        f"{bmon['placement']}: disable_addr_dists="
        f"{bmon['disable_addr_dists']}, read_addr_mask="
        f"{bmon['read_addr_mask']:#x}, write_addr_mask="
        f"{bmon['write_addr_mask']:#x} (per CPU, summed in analysis; "
        f"view=bus)",
        f"mem view   CommMonitor {mon['name']}, {mon['placement']}: "
        f"disable_addr_dists="
        f"{mon['disable_addr_dists']}, read_addr_mask="
        f"{mon['read_addr_mask']:#x}, write_addr_mask="
        f"{mon['write_addr_mask']:#x} (keys 0..{mon['max_key']} < 1e6; "
        f"view=memory)",
    ]
    return lines


def describe_buses(prm: dict) -> list[str]:
    """The P6 bus(es) and the chipset's crossbar, or the one SystemXBar."""
    mb, pb = prm["membus"], prm["p6_buses"]
    if not pb:
        return [f"membus     {mb['kind']} coherent at core clock, gem5's "
                f"latencies, width {mb['width']} B [assumed], snoop filter "
                f"max_capacity {format_size(mb['snoop_filter_max_capacity'])}"]
    return [
        f"p6 bus     {pb['count']} x {pb['kind']} {pb['name']}[b], "
        f"{pb['cpus_per_bus']} CPUs each, clock {pb['clock']} "
        f"({pb['clock_hz'] / 1e6:.2f} MHz), width {pb['width']} B, "
        f"request phase {pb['header_latency']} (header and frontend), snoop "
        f"phase {pb['snoop_response_latency']}, forward/response "
        f"{pb['forward_latency']}/{pb['response_latency']} bus clocks, one "
        f"response layer",
        f"membus     {mb['kind']} (the chipset) at the bus clock, latencies "
        f"0 but a crossing's {mb['snoop_response_latency']} bus clocks, no "
        f"snoop filter (snoops go to every bus)",
    ]
