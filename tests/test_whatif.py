"""The base costs' what-if table: the web points with one cost of
[x.timing] changed per row, three seeds each."""

from colorsim.orchestrate.convergence import at_point
from colorsim.orchestrate.interleaving import POINT
from colorsim.orchestrate.whatif import CHANGES, POINTS, applies, render, spec_for
from tests.test_interleaving import refuses_missing_runs


def _at(name):
    return at_point(name, dict(POINT, seed=1))


def test_each_row_changes_only_its_cost():
    for name in POINTS:
        at = _at(name)
        base = spec_for(at, "vanilla", None, 1)
        assert base == at.spec_of("vanilla", None, 1)      # as configured
        t0 = base.machine.timing
        for change in CHANGES:
            if change is None or not applies(at.machine, change):
                continue
            sp = spec_for(at, "c32", change, 2)
            t = sp.machine.timing
            differ = {f for f in t0.__dataclass_fields__ if getattr(t, f) != getattr(t0, f)}
            assert differ == {change}, (name, change, differ)
            assert getattr(t, change) > getattr(t0, change)
            assert sp.workload.seed == 2 and sp.machine.caches == base.machine.caches


def test_the_crossing_row_is_only_where_there_are_two_buses():
    assert applies(_at("fig9").machine, "cross_bus")        # piii8, 8 CPUs
    assert not applies(_at("fig6").machine, "cross_bus")    # ppro4: one bus


def test_a_row_that_moves_beyond_chance_is_marked():
    mk = lambda xs: [{"rate": x, "contention": 0.5} for x in xs]
    row = lambda v, c: {"vanilla": mk(v), "c32": mk(c)}
    base = row([100] * 3, [150, 160, 155])                  # 50..60 %
    near = row([100] * 3, [158, 162, 160])
    far = row([100] * 3, [200, 201, 202])
    at = _at("fig6")
    text = render([("fig6", at, None, base), ("fig6", at, "mem", near),
                   ("fig6", at, "hitm", far)], 5)
    lines = [l for l in text.splitlines() if l.startswith("| Figure")]
    assert "| — |" in lines[0] and "| no |" in lines[1] and "| yes |" in lines[2]
    assert "every clock held within 5 µs" in text


def test_missing_runs_are_refused_and_the_file_kept(tmp_path):
    refuses_missing_runs(tmp_path, "cost-whatif", "whatif")
