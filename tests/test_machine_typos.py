"""A misspelled or repeated table or key in the machines file is refused in
one line naming the file, the table and the key (with the closest known
name), before anything is built or booted: a setting never vanishes."""

import pytest

from test_cli_errors import MACHINES, RUN, check_refused

# (text of machines.toml, what replaces it, what the one line must say)
TYPOS = [
    ("[ppro4.timing]", "[ppro4.timingx]",
     "[ppro4]: unknown table 'timingx'; did you mean 'timing'?"),
    ("[ppro4.memory]", "[ppro4.memroy]",
     "[ppro4]: unknown table 'memroy'; did you mean 'memory'?"),
    ('description = "4-way', 'descripton = "4-way',
     "[ppro4]: unknown key 'descripton'; did you mean 'description'?"),
    ("instruction_fetch = false", "instruction_fetch = false\nlien = 32",
     "[ppro4.caches]: unknown key 'lien'; did you mean 'line'?"),
    ('l2 = { size = "512KiB", assoc = 4 }', 'l2 = { size = "512KiB", asoc = 4 }',
     "[ppro4.caches.l2]: unknown key 'asoc'; did you mean 'assoc'?"),
    ('replacement = { l1 = "lru", l2 = "lru" }', 'replacement = { l1 = "lru", l3 = "lru" }',
     "[ppro4.caches.replacement]: unknown key 'l3'"),
    ("cards = 4", "cards = 4\ncard = 4", "[ppro4.network]: unknown key 'card'"),
    ("[ppro4.processor]", "[ppro4.processor]\ncpu = 4",
     "[ppro4.processor]: unknown key 'cpu'; did you mean 'cpus'?"),
    ("[piii8]", "[ppro4]\ncpus = 4\n\n[piii8]", "[ppro4] is declared twice"),
    ("[ppro4.memory]", "[ppro4.timing]\ninst = 1\n\n[ppro4.memory]",
     "[ppro4.timing] is declared twice"),
    ("cards = 4", "cards = 4\ncards = 2", "a key is given twice"),
]


@pytest.mark.parametrize("old,new,expect", TYPOS, ids=[t[2] for t in TYPOS])
def test_a_typo_in_the_machines_file_is_refused(old, new, expect, capsys,
                                                tmp_path, monkeypatch):
    assert old in MACHINES
    f = tmp_path / "machines.toml"
    f.write_text(MACHINES.replace(old, new, 1))
    monkeypatch.setenv("COLORSIM_MACHINES", str(f))
    out = tmp_path / "runs"
    out.mkdir()
    check_refused(RUN + ["--machine", "ppro4", "--kernel", "vanilla", "--timing",
                         "--dry-run", "--out", str(out)], expect, capsys, out)


def test_a_typo_in_another_machine_is_warned_about(capsys, tmp_path, monkeypatch):
    """A run on ppro4 still works when piii8's table has a typo, but says
    so: the mistake never passes unseen."""
    from colorsim.cli import main as cli_main
    f = tmp_path / "machines.toml"
    f.write_text(MACHINES.replace("[piii8.timing]", "[piii8.timng]", 1))
    monkeypatch.setenv("COLORSIM_MACHINES", str(f))
    rc = cli_main(RUN + ["--machine", "ppro4", "--kernel", "vanilla", "--dry-run",
                         "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert rc == 0
    assert "warning:" in err and "[piii8]: unknown table 'timng'" in err
    assert "machine ppro4 is not affected" in err
