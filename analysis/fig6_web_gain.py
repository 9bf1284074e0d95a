"""Figure 6: web throughput of 32 colors over vanilla (4-way PPro), per L2
size and httpd count, with the run queue the scheduler walked."""

import catalog

a = catalog.args(__doc__)
df = catalog.experiment(a.runs, "fig6")
g = catalog.gain(df, ["l2", "tasks"], "requests_per_modeled_second")
g["queue"] = df.groupby(["l2", "tasks"])["n_rq_len_mean"].mean()
print("c32's throughput gain, % (mean and range over seeds), and the run queue:")
print(g.round(1).reset_index().to_string(index=False))
if a.plot:
    ax = g["mean"].unstack("l2").plot(marker="o")
    ax.set_xlabel("httpd")
    ax.set_ylabel("c32's gain over vanilla (%)")
    ax.figure.savefig(a.plot)
