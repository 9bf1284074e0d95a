"""Table 2: the run-queue loop's L2 miss ratio, vanilla and 32 colors, per
L2 size (4-way PPro, web at 1024 httpd), beside the measured run queue."""

import catalog

a = catalog.args(__doc__)
df = catalog.experiment(a.runs, "fig6")
df = df[df["tasks"] == 1024]
t = df.groupby(["l2", "kernel"]).agg(miss=("rqloop_l2_miss_ratio", "mean"),
                                     queue=("n_rq_len_mean", "mean"),
                                     seeds=("seed", "nunique"))
t["miss"] *= 100
print(t.unstack("kernel").round(1).to_string())
if a.plot:
    ax = t["miss"].unstack("kernel")[["vanilla", "c32"]].plot.bar()
    ax.set_ylabel("run-queue loop L2 miss ratio (%)")
    ax.figure.savefig(a.plot)
