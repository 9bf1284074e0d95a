"""Figure 3: vanilla's bus transactions at page offset 0x30 per request, and
its web throughput, as the httpd count grows (4-way PPro, 512 KiB L2)."""

import catalog

a = catalog.args(__doc__)
runs = catalog.experiment(a.runs, "fig3")
runs = runs[runs["kernel"] == "vanilla"]
offs = catalog.table(a.runs, "offsets")
offs = offs[offs["run_id"].isin(runs["run_id"]) & (offs["dump"] == 0)    # the region
            & (offs["view"] == "bus") & (offs["offset"] == 0x30)]
at30 = offs.groupby("run_id")["count"].sum().rename("at30")
runs = runs.merge(at30, left_on="run_id", right_index=True, how="left").fillna({"at30": 0})
runs["0x30 per request"] = runs["at30"] / runs["roi_requests"]
t = runs.groupby("tasks").agg(**{"0x30 per request": ("0x30 per request", "mean"),
                                 "requests/s": ("requests_per_modeled_second", "mean"),
                                 "run queue": ("n_rq_len_mean", "mean"),
                                 "seeds": ("seed", "nunique")})
print("vanilla, mean over seeds, per httpd count:")
print(t.round(1).to_string())
lo, hi = t.index.min(), t.index.max()
print(f"from {lo} to {hi} httpd: 0x30 per request "
      f"x{t.loc[hi, '0x30 per request'] / t.loc[lo, '0x30 per request']:.1f}, "
      f"throughput {(t.loc[hi, 'requests/s'] / t.loc[lo, 'requests/s'] - 1) * 100:+.1f} %")
if a.plot:
    ax = t["0x30 per request"].plot(marker="o", logx=True, logy=True)
    ax.set_xlabel("httpd")
    ax.set_ylabel("transactions at 0x30 per request")
    ax2 = ax.twinx()
    t["requests/s"].plot(ax=ax2, marker="s", color="tab:orange", logx=True)
    ax2.set_ylabel("requests per modelled second")
    ax.figure.savefig(a.plot)
