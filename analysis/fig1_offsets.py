"""Figure 1: bus transactions per page offset, vanilla against 32 colors
(4-way PPro, 512 KiB L2, web at 256 httpd)."""

import catalog

a = catalog.args(__doc__)
runs = catalog.experiment(a.runs, "fig1")
offs = catalog.table(a.runs, "offsets")
offs = offs[offs["run_id"].isin(runs["run_id"]) & (offs["dump"] == 0)]   # the region
offs = offs.merge(runs[["run_id", "kernel", "seed"]])
per = offs.groupby(["kernel", "offset"])["count"].sum() / offs.groupby("kernel")["seed"].nunique()
for kernel in ("vanilla", "c32"):
    s = per[kernel]
    print(f"{kernel:8} peak at 0x{s.idxmax():03x}: {s.max():,.0f} transactions a run "
          f"({100 * s.max() / s.sum():.1f} % of all)")
print(f"c32's largest offset is {100 * per['c32'].max() / per['vanilla'].max():.1f} % "
      f"of vanilla's peak")
if a.plot:
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(2, 1, sharex=True, sharey=True, figsize=(8, 5))
    for ax, kernel in zip(axes, ("vanilla", "c32")):
        ax.bar(per[kernel].index, per[kernel].values, width=32)
        ax.set_title(kernel)
    axes[1].set_xlabel("page offset (bytes)")
    fig.savefig(a.plot)
