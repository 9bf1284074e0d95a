"""Figure 10: Chat throughput per CPU count, vanilla and 32 colors (8-way
Xeon), over the seeds recorded."""

import catalog

a = catalog.args(__doc__)
df = catalog.experiment(a.runs, "fig10")
t = df.groupby(["cpus", "kernel"])["messages_per_modeled_second"].agg(["mean", "count"])
print("messages per modelled second (mean over seeds, seeds):")
print(t.unstack("kernel").round(0).to_string())
if a.plot:
    ax = t["mean"].unstack("kernel").plot(marker="o")
    ax.set_xlabel("CPUs")
    ax.set_ylabel("messages per modelled second")
    ax.figure.savefig(a.plot)
