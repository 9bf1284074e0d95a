"""The catalog's declared Parquet schema.

Every catalog table has the same columns with the same types whatever runs
are present, so a notebook, a DuckDB query or two catalogs compared side by
side never meet a column that exists only when some run had it.  A run
without a number has a null there (NaN for floats).

The ``runs`` table's counter columns ``n_<stat>`` are declared too: one per
counter the engines write (the cache model's counters in
``engine/qemu-plugin/cachemodel.c``, busmon's timing and lockmeter rows,
the kernel's region report read from the console, the gem5 engine's
extra counters).  A counter that is not declared here stays in the long
``counters`` table (every counter of every run is there); a test keeps this
list in step with the plugin's and the kernel's names.
"""

from __future__ import annotations

import pyarrow as pa

S, I, F, B = pa.string(), pa.int64(), pa.float64(), pa.bool_()
SEED = pa.uint64()     # a placement seed: any 64-bit value the guest takes
LIST = pa.list_(pa.string())

# The cache model's counters (cachemodel.c, cm_counter_name), in its order.
CACHE_COUNTERS = (
    "insts", "l1d_read_accesses", "l1d_read_misses", "l1d_write_accesses",
    "l1d_write_misses", "l2_accesses", "l2_misses", "l2_writebacks",
    "bus_read", "bus_rfo", "bus_writeback", "bus_invalidate", "hitm",
    "rqloop_l1d_read_accesses", "rqloop_l1d_read_misses",
    "rqloop_l2_read_accesses", "rqloop_l2_read_misses",
    "rqloop_l2_read_hitm", "rqloop_l2_read_shared", "rqloop_l2_read_first",
    "rqloop_l2_read_invalidated", "rqloop_l2_read_evicted_loop",
    "rqloop_l2_read_evicted_kernel", "rqloop_l2_read_evicted_user",
    "l1i_accesses", "l1i_misses", "cycles", "bus_wait_cycles",
    "store_stall_cycles", "dtlb_misses", "itlb_misses", "overlap_stall_cycles")
# busmon's other rows (fill_counters_csv): work, the scheduler's share,
# the lockmeter, the modelled clock.
BUSMON_COUNTERS = (
    "work_units", "sched_insts", "sched_cycles", "lock_acquisitions",
    "lock_contended", "lock_spin_cycles", "lock_hold_cycles",
    "lock_hold_max_cycles", "elapsed_cycles", "max_skew_cycles",
    "bus_max_lag_cycles",
    # the wire in modelled time (busmon wire_op): deliveries, the late ones
    "wire_deliveries", "wire_late_deliveries", "wire_late_cycles",
    "wire_late_max_cycles", "wire_idle_advances",
    # and at the server CPU that took each packet
    "wire_received", "wire_rx_late", "wire_rx_late_cycles",
    "wire_rx_late_max_cycles",
    # the client CPUs, not the wire's (busmon clients_load): how many,
    # their busy modelled cycles and their instructions in the region, and
    # the server turns ended while they had work (clienthold=), and with
    # the client model (clients=) the server turns ended for a lagging
    # client and the client turns ended for leading the servers, and the
    # turns sat out for the same (skipheld=)
    "client_cpus", "client_busy_cycles", "client_insts",
    "client_held_server_turns", "client_lag_server_turns",
    "client_lead_client_turns", "client_lag_server_skips",
    "client_lead_client_skips",
    # the server cards' DMA (dma=1): lines read and written, reads a CPU's
    # Modified copy answered, writes that removed a CPU's copy, and
    # (timing) their bus queueing
    "dma_read_lines", "dma_write_lines", "dma_hitm", "dma_invalidated",
    "dma_wait_cycles",
    # working-set windows (web --wset 1): how many, their distinct lines by
    # kind summed, and the lines a full window left out
    "wset_windows", "wset_user_data_lines", "wset_user_code_lines",
    "wset_kernel_data_lines", "wset_kernel_code_lines", "wset_full_lines")
# The kernel's region report (colorsim/run/console.py): roi, rq and wait.
RQ_BUCKETS = ("0", "1", "2", "3_4", "5_8", "9_16", "17_32", "33_64",
              "65_128", "129_256", "257_512", "513_1024", "1025_2048",
              "2049_4096", "4097_up")
WAIT_WORDS = ("tasks", "running", "runnable", "other", "accept", "connect",
              "recv_accepted", "recv_connected", "send_accepted",
              "send_connected", "pipe_read", "pipe_write", "poll", "futex",
              "sem", "wait4", "sleep", "exited", "lock")
CONSOLE_COUNTERS = (
    ("schedule_calls", "context_switches", "counter_recalcs", "roi_jiffies",
     "rq_samples", "rq_len_sum", "rq_len_max", "rq_len_mean")
    + tuple(f"rq_len_{b}" for b in RQ_BUCKETS)
    + ("wait_samples",) + tuple(f"wait_{w}_mean" for w in WAIT_WORDS)
    + ("kernel_lock_acquisitions", "kernel_lock_contended",
       "kernel_lock_hold_tsc", "kernel_region_tsc")
    # the region's quarters, where a user program marked them
    + ("window_quarters", "quarters_recalculated", "quarter_rq_mean_lo",
       "quarter_rq_mean_hi", "quarter_sched_per_request_lo",
       "quarter_sched_per_request_hi", "quarter_rate_lo", "quarter_rate_hi"))
# The gem5 engine's counters that busmon has no row for (gem5stats.py).
GEM5_COUNTERS = ("l1d_accesses", "l1d_misses", "l2_read_misses",
                 "l2_write_misses", "sim_seconds", "host_seconds",
                 "host_mips", "schedules_per_sim_second")

COUNTERS = tuple(dict.fromkeys(CACHE_COUNTERS + BUSMON_COUNTERS
                               + CONSOLE_COUNTERS + GEM5_COUNTERS))

# The runs table: identity and parameters first (in this order), then the
# derived numbers, then the counters.
RUN_FIELDS = (
    ("run_id", S), ("run", S), ("path", S), ("engine", S),
    ("engine_version", S), ("machine", S), ("cpus", I), ("l2_size", I),
    ("l2_assoc", I), ("line", I), ("kernel", S), ("colors", I), ("tasks", I),
    ("burst", I), ("buffer", I), ("warmup", I), ("roi", I), ("seed", SEED),
    # where the run came from
    ("recorded", B), ("source_commit", S), ("source_dirty", B),
    ("kernel_sha256", S), ("plugin_sha256", S), ("build_id", S),
    ("way_bits", I), ("verified", B), ("id_matches_name", B), ("dumps", I),
    # bus transactions per page offset
    ("peak_offset", I), ("peak_count", I), ("first_touched", I),
    ("hot_line_count", I), ("colored_lo", I), ("colored_hi", I),
    ("colored_lines_sum", I), ("other_lines_sum", I), ("total", I),
    # miss ratios and the units of work
    ("rqloop_l2_miss_ratio", F), ("rqloop_l1d_miss_ratio", F),
    ("l2_miss_ratio", F), ("schedule_calls", F), ("kinst", F),
    ("sim_seconds", F))
RUN_FIELDS += tuple((f"{c}_per_{per}", F) for per in ("schedule", "kinst")
                    for c in ("peak_count", "hot_line_count",
                              "colored_lines_sum", "other_lines_sum", "total"))
RUN_FIELDS += (
    # the workload (runrows.timing_columns)
    ("timing", B), ("workload_program", S), ("workload_args", S),
    ("accept", S), ("work", S), ("client_model", S),
    ("roi_requests", F), ("roi_messages", F),
    ("roi_first_request", F), ("roi_late", B),
    ("httpd", F), ("clients", F), ("requests", F), ("rooms", F),
    ("users", F), ("messages", F),
    # modelled time and the lockmeter (--timing runs)
    ("modeled_seconds", F), ("work_units", F), ("work_per_modeled_second", F),
    ("requests_per_modeled_second", F), ("messages_per_modeled_second", F),
    ("throughput", F), ("cycles_per_schedule", F), ("lock_acquisitions", F),
    ("lock_contention", F), ("lock_contention_pct", F),
    ("lock_hold_mean_us", F), ("lock_hold_max_us", F), ("lock_spin_us", F),
    ("cycles_spread", F), ("busy_fraction", F), ("max_skew_us", F),
    ("wire_late_mean_us", F), ("wire_rx_late_mean_us", F),
    ("client_busy_fraction", F),
    # runqueue_lock as the kernel counted it, on either engine
    ("kernel_lock_contention", F), ("kernel_lock_hold_mean_us", F),
    # the scheduler's share of the region (run/schedshare.py)
    ("sched_share_basis", S), ("sched_share_pct", F), ("lock_held_pct", F),
    ("lock_spin_pct", F))
RUN_FIELDS += tuple((f"n_{c}", F) for c in COUNTERS)

SCHEMAS = {
    "runs": pa.schema(RUN_FIELDS),
    # runs recorded outside the runs folder (recorded/gem5, ../shared/gem5)
    "recorded": pa.schema(RUN_FIELDS),
    "offsets": pa.schema([("run_id", S), ("dump", I), ("view", S),
                          ("cpu", I), ("mode", S), ("kind", S),
                          ("offset", I), ("count", I)]),
    "counters": pa.schema([("run_id", S), ("dump", I), ("cpu", I),
                           ("mode", S), ("stat", S), ("value", F)]),
    # gem5's description and unit of each stat are kept (ours: "" if none)
    "stats": pa.schema([("run_id", S), ("dump", I), ("name", S),
                        ("value", F), ("unit", S), ("desc", S)]),
    "points": pa.schema([("experiment", S), ("scale", S), ("point", I),
                         ("machine", S), ("l2", S), ("cpus", I),
                         ("kernel", S), ("workload", S),
                         ("workload_run", S), ("tasks", I), ("seed", SEED),
                         ("warmup", I), ("roi", I), ("burst", I),
                         ("engine", S), ("stand_in", B), ("timing", B),
                         ("args", S), ("client_cpus", I), ("run_id", S),
                         ("lacks", LIST),
                         ("status", S), ("reason", S)]),
    "outputs": pa.schema([("experiment", S), ("scale", S), ("output", S),
                          ("what", S), ("needs", LIST), ("lacks", LIST)]),
}


def conform(name: str, df):
    """``df`` with exactly the declared columns of table ``name``, in their
    order (a missing one all null), as a pyarrow Table of the declared
    types.  A column that is not declared is an error in the code that
    made it, not something to drop quietly; ``n_<stat>`` columns of
    undeclared counters are the exception (the ``counters`` table has
    them)."""
    import pandas as pd
    schema = SCHEMAS[name]
    extra = [c for c in df.columns if c not in schema.names
             and not (name in ("runs", "recorded")
                                 and c.startswith("n_"))]
    if extra:
        raise ValueError(f"catalog table {name}: undeclared column(s) "
                         f"{', '.join(extra)} (declare them in "
                         f"colorsim/results/schema.py)")
    cols = {}
    for f in schema:
        col = df[f.name] if f.name in df.columns else pd.Series(
            [None] * len(df), dtype=object)
        cols[f.name] = pa.array(_cells(col, f.type), type=f.type,
                                from_pandas=True)
    return pa.Table.from_pydict(cols, schema=schema)


def _cells(col, typ):
    """A column's values as Python objects of ``typ`` (None for missing),
    so that an integer column with gaps stays integer, not float."""
    def missing(x):
        return x is None or (isinstance(x, float) and x != x)
    vals = col.tolist()
    if pa.types.is_integer(typ):
        return [None if missing(x) else int(x) for x in vals]
    if pa.types.is_boolean(typ):
        return [None if missing(x) else bool(x) for x in vals]
    if pa.types.is_floating(typ):
        return [None if x is None else float(x) for x in vals]
    if pa.types.is_list(typ):
        return [[] if missing(x) else list(x) for x in vals]
    return [None if missing(x) else str(x) for x in vals]
