"""Table 5: the run-queue loop's L2 miss ratio per CPU count, vanilla and
32 colors (8-way Xeon, 1 MiB L2, web at 256 httpd)."""

import catalog

a = catalog.args(__doc__)
df = catalog.experiment(a.runs, "fig9")
df = df[df["kernel"].isin(["vanilla", "c32"])]
t = df.pivot_table(index="cpus", columns="kernel", values="rqloop_l2_miss_ratio",
                   aggfunc="mean") * 100
t["run queue"] = df.groupby("cpus")["n_rq_len_mean"].mean()
print("run-queue loop L2 miss ratio, % (mean over seeds), and the mean run queue:")
print(t[["vanilla", "c32", "run queue"]].round(1).to_string())
if a.plot:
    ax = t[["vanilla", "c32"]].plot(marker="o")
    ax.set_xlabel("CPUs")
    ax.set_ylabel("run-queue loop L2 miss ratio (%)")
    ax.set_ylim(bottom=0)
    ax.figure.savefig(a.plot)
