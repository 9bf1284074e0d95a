"""Figure 7: bus transactions on the colored lines and on the others,
vanilla against 32 colors, per L2 size (web at 1024 httpd)."""

import catalog

a = catalog.args(__doc__)
df = catalog.experiment(a.runs, "fig7")
per = df.assign(colored=df["colored_lines_sum"] / df["roi_requests"],
                other=df["other_lines_sum"] / df["roi_requests"])
t = per.groupby(["l2", "kernel"])[["colored", "other"]].mean().unstack("kernel")
t[("change", "colored %")] = (t[("colored", "c32")] / t[("colored", "vanilla")] - 1) * 100
t[("change", "all %")] = ((t[("colored", "c32")] + t[("other", "c32")])
                          / (t[("colored", "vanilla")] + t[("other", "vanilla")]) - 1) * 100
print("bus transactions per request:")
print(t.round(1).to_string())
if a.plot:
    ax = t[["colored", "other"]].plot.bar(stacked=False)
    ax.set_ylabel("transactions per request")
    ax.figure.savefig(a.plot)
