"""gem5's address-form m5 operations, as the testbed kernel issues them.

An 8-byte load from ``M5OP_BASE + (func << 8)`` is executed natively by gem5
(``System.m5ops_base``), reads BIOS ROM on QEMU, and is seen by the QEMU
bus-monitor plugin as a load from that address.  The kernel's copy of these
numbers is kernels/include/m5op.h; tests check that the two agree.
"""

M5OP_BASE = 0xFFFF0000
M5OP_WINDOW = 0x10000

EXIT = 0x21
FAIL = 0x22
RESET_STATS = 0x40
DUMP_STATS = 0x41
DUMP_RESET_STATS = 0x42
CHECKPOINT = 0x43
WORK_BEGIN = 0x5A
WORK_END = 0x5B
# busmon's own, 8-byte stores from the testbed kernel's wire under --timing
# (kernels/include/m5op.h): not gem5 operations
WIRE_ADVANCE = 0x60
WIRE_DELIVERED = 0x61
WIRE_RECEIVED = 0x62
# and the server cards' DMA (nicdma=1): a frame read, written, its start
DMA_READ = 0x63
DMA_WRITE = 0x64
DMA_AT = 0x65

NAMES = {EXIT: "exit", FAIL: "fail", RESET_STATS: "resetstats",
         DUMP_STATS: "dumpstats", DUMP_RESET_STATS: "dumpresetstats",
         CHECKPOINT: "checkpoint", WORK_BEGIN: "workbegin",
         WORK_END: "workend", WIRE_ADVANCE: "wireadvance",
         WIRE_DELIVERED: "wiredelivered", WIRE_RECEIVED: "wirereceived",
         DMA_READ: "dmaread", DMA_WRITE: "dmawrite", DMA_AT: "dmaat"}


def address(func: int) -> int:
    """Physical address whose 8-byte load performs m5 op ``func``."""
    if not 0 <= func <= 0xFF:
        raise ValueError(f"m5 op function {func:#x} does not fit in 8 bits")
    return M5OP_BASE + (func << 8)


def decode(addr: int):
    """Inverse of :func:`address`; None when ``addr`` is outside the window."""
    off = addr - M5OP_BASE
    if not 0 <= off < M5OP_WINDOW:
        return None
    return (off >> 8) & 0xFF
