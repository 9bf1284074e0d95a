"""Tables 4 and 6: web speed-up of 32 colors over vanilla and run-queue
lock contention per CPU count (8-way Xeon)."""

import catalog

a = catalog.args(__doc__)
df = catalog.experiment(a.runs, "fig9")
df = df[df["kernel"].isin(["vanilla", "c32"])]
g = catalog.gain(df, ["cpus"], "requests_per_modeled_second")
g["contention vanilla %"] = df[df.kernel == "vanilla"].groupby("cpus")["lock_contention_pct"].mean()
g["contention c32 %"] = df[df.kernel == "c32"].groupby("cpus")["lock_contention_pct"].mean()
print("c32's speed-up, % (mean and range over seeds), and lock contention:")
print(g.round(1).reset_index().to_string(index=False))
if a.plot:
    ax = g["mean"].plot(marker="o")
    ax.set_xlabel("CPUs")
    ax.set_ylabel("c32's speed-up (%)")
    ax.figure.savefig(a.plot)
