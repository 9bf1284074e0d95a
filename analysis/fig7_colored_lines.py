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

# The colored span (0x20-0x41f) starts at the walk's line; with 32 colors
# it also holds the task's first line (its state, which every wake-up
# reads) that vanilla keeps at 0x00.  Offsets 0x00-0x41f hold both lines
# in both kernels: the like-for-like count.
off = catalog.table(a.runs, "offsets")
off = off[(off["dump"] == 0) & (off["view"] == "bus") & (off["offset"] < 0x420)]
reach = off.groupby("run_id")["count"].sum().rename("reach")
per = per.merge(reach, left_on="run_id", right_index=True)
r = (per["reach"] / per["roi_requests"]).groupby([per["l2"], per["kernel"]]).mean().unstack()
t[("change", "0x00-0x41f %")] = (r["c32"] / r["vanilla"] - 1) * 100
print("bus transactions per request:")
print(t.round(1).to_string())
if a.plot:
    ax = t[["colored", "other"]].plot.bar(stacked=False)
    ax.set_ylabel("transactions per request")
    ax.figure.savefig(a.plot)
