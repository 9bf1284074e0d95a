"""Figure 6: web throughput of 32 colors over vanilla (4-way PPro), per L2
size and httpd count, with the run queue the scheduler walked."""

import catalog

a = catalog.args(__doc__)
df = catalog.experiment(a.runs, "fig6")
g = catalog.gain(df, ["l2", "tasks"], "requests_per_modeled_second")
g["queue"] = df.groupby(["l2", "tasks"])["n_rq_len_mean"].mean()
print("c32's throughput gain, % (mean and range over seeds), and the run queue:")
print(g.round(1).reset_index().to_string(index=False))

# The first state alone: runs whose regions never recalculated every time
# slice (the others fell into a convoy on the accept lock), kept run by run;
# c32's mean over vanilla's per point.
steady = df[df["n_counter_recalcs"].fillna(0) == 0]
if len(steady) == len(df):
    print("\nEvery region stayed steady (none recalculated every time slice): "
          "the gains above are the steady runs' own.")
else:
    m = steady.groupby(["l2", "tasks", "kernel"])["requests_per_modeled_second"].agg(
        ["mean", "count"])
    s = m["mean"].unstack("kernel")
    s = ((s["c32"] / s["vanilla"] - 1) * 100).rename("steady gain").to_frame()
    s["runs (vanilla / c32)"] = m["count"].unstack("kernel").apply(
        lambda r: f"{r['vanilla']} / {r['c32']}", axis=1)
    print("\nc32's gain from the steady runs only, %:")
    print(s.round(1).reset_index().to_string(index=False))
if a.plot:
    ax = g["mean"].unstack("l2").plot(marker="o")
    ax.set_xlabel("httpd")
    ax.set_ylabel("c32's gain over vanilla (%)")
    ax.figure.savefig(a.plot)
