"""`runs` and `show` print the catalog in the units the other commands use:
L2 sizes in KiB/MiB, page offsets in hex, whole-number counts without an
exponent or a decimal point; the catalog's tables keep bytes and numbers."""

import re

import pandas as pd

from colorsim import ROOT
from colorsim.cli import main as cli_main
from colorsim.results.catalog import Catalog
from colorsim.results.show import for_display, format_stat

RECORDED = ROOT / "recorded" / "paper"


def test_runs_prints_sizes_offsets_and_counts_as_people_read_them(capsys):
    assert cli_main(["runs", "--runs", str(RECORDED), "--where", "kernel=c32",
                     "--columns", "run,l2_size,peak_offset,schedule_calls,"
                                  "rqloop_l2_miss_ratio"]) in (0, None)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) > 3
    for line in lines[1:]:
        run, l2, off, sched, ratio = line.split()
        assert l2 in ("256KiB", "512KiB", "1MiB"), line
        assert re.fullmatch(r"0x[0-9a-f]{3}", off), line
        assert re.fullmatch(r"[0-9]+", sched), line
        assert 0 <= float(ratio) <= 1
    # the catalog itself keeps bytes and numbers
    runs = Catalog(RECORDED).runs(recorded=True)
    assert runs["l2_size"].dtype.kind == "i" and runs["peak_offset"].dtype.kind in "if"


def test_display_leaves_fractions_and_missing_values_readable():
    df = pd.DataFrame({"l2_size": [262144, 1048576], "n_rq_len_mean": [298.4, 12.0],
                       "n_insts": [330944000.0, float("nan")]})
    out = for_display(df)
    assert list(out["l2_size"]) == ["256KiB", "1MiB"]
    assert list(out["n_rq_len_mean"]) == [298.4, 12.0]      # a fraction stays
    assert list(out["n_insts"]) == ["330944000", "-"]
    assert format_stat(3.30944e+08) == "330944000"
    assert format_stat(0.25) == "0.25"


def test_show_reads_a_run_directory_without_a_catalog(capsys, tmp_path, monkeypatch):
    """`show PATH` of a run directory needs no catalog: its row and its
    stats dumps come from the directory itself (here a recorded gem5 run,
    from a folder with no runs/ at all)."""
    from colorsim import ROOT
    from colorsim.cli import main as cli_main
    run = sorted((ROOT / "recorded" / "gem5").glob("ppro4-*"))[0]
    monkeypatch.chdir(tmp_path)
    assert cli_main(["show", str(run)]) == 0
    out = capsys.readouterr().out
    assert f"run {run.name}" in out and "l2_size                1MiB" in out
    assert "stats dumps: " in out and "---------- dump 0:" in out
    assert re.search(r"\.numInsts +[0-9]+\n", out)         # gem5's own stats, whole
    assert cli_main(["show", str(tmp_path)]) == 2      # not a run: the catalog's error
