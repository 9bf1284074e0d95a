"""Tables 7 and 8: Chat's run-queue loop L2 miss ratio and runqueue_lock
contention and hold time per CPU count, vanilla and 32 colors (8-way Xeon)."""

import catalog

a = catalog.args(__doc__)
df = catalog.experiment(a.runs, "fig10")
df = df[df["kernel"].isin(["vanilla", "c32"])].assign(
    miss=lambda d: d["rqloop_l2_miss_ratio"] * 100)
cols = {"miss": "walk L2 miss %", "lock_contention_pct": "contention %",
        "lock_hold_mean_us": "hold mean µs", "lock_hold_max_us": "hold max µs"}
t = df.pivot_table(index="cpus", columns="kernel", values=list(cols), aggfunc="mean")
t = t.rename(columns=cols, level=0)[list(cols.values())]   # Table 7's, then Table 8's
t = t.reindex(columns=["vanilla", "c32"], level=1)
print("per CPU count, mean over seeds (vanilla, c32):")
print(t.round(1).to_string())
top = t.index.max()
for what in ("walk L2 miss %", "contention %"):
    print(f"at {top} CPUs, {what}: vanilla {t.loc[top, (what, 'vanilla')]:.1f}, "
          f"c32 {t.loc[top, (what, 'c32')]:.1f}")
if a.plot:
    import matplotlib.pyplot as plt
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.5))
    t["walk L2 miss %"].plot(ax=ax1, marker="o", title="Table 7: walk L2 miss (%)")
    t["contention %"].plot(ax=ax2, marker="o", title="Table 8: lock contention (%)")
    for ax in (ax1, ax2):
        ax.set_xlabel("CPUs")
        ax.set_ylim(bottom=0)
    fig.tight_layout()
    fig.savefig(a.plot)
