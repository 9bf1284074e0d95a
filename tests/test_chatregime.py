"""Chat's regime table (docs/operating-point.md, block chat-regime): the
paper's 2400 threads per CPU count, vanilla and c32, written from runs and
checked against them."""

from colorsim import ROOT
from colorsim.orchestrate.chatregime import POINT, THREADS, spec_for
from tests.test_cache_model import needs_qemu
from tests.test_interleaving import refuses_missing_runs
from tests.test_oppoint import _cli, _docs
from tests.test_oppoint import _rows as _block_rows

DOC = ROOT / "docs" / "operating-point.md"


def _rows(text: str) -> list:
    return _block_rows(text, "chat-regime")


def test_each_row_is_the_paper_s_thread_count_at_its_cpus():
    names = set()
    for cpus in POINT["cpus"]:
        s = spec_for("c32", cpus)
        args = dict(zip(s.workload.args.split(",")[::2], s.workload.args.split(",")[1::2]))
        assert int(args["--rooms"]) * int(args["--users"]) * 4 == THREADS
        assert args["--messages"] == str(POINT["messages"])
        assert args["--skip"] == str(POINT["skip"])
        assert s.machine.processor.cpus == cpus and s.machine.caches.l2.size == 1 << 20
        assert s.timing
        names.add(s.default_name())
    assert len(names) == len(POINT["cpus"])


def test_bad_options_and_missing_runs_are_refused_and_the_file_kept(tmp_path):
    doc, text = refuses_missing_runs(tmp_path, "chat-regime", "chat-regime")
    p = _cli("chat-regime", "--skip", "50", "--out", tmp_path / "empty")
    assert p.returncode == 2 and "--skip must be 0 to 49" in p.stderr, p.stderr
    assert doc.read_text() == text


@needs_qemu
def test_the_table_is_written_from_runs(tmp_path):
    """One CPU, 2 messages per user (about a minute a run): the row has the
    paper's Table 7 beside ours, the threads sleep on semaphores and
    sockets, never on a futex, and --check agrees."""
    doc = tmp_path / "doc.md"
    doc.write_text("<!-- chat-regime:begin -->\n<!-- chat-regime:end -->\n")
    small = ["--cpus", "1", "--messages", "2", "--skip", "0", "--out", tmp_path / "runs"]
    p = _docs("chat-regime", "--run", *small, "--write", doc)
    assert p.returncode == 0, p.stderr
    (row,) = _rows(doc.read_text())
    assert row[0] == "1" and row[3] == "99.7 / 3.2 %" and row[5] == "- / - %"
    assert "futex" not in row[10] and "semaphore" in row[10], row
    assert int(row[10].split(":")[0]) <= 2400 + 3, row     # threads, init, chat, server
    assert _docs("chat-regime", *small, "--check", doc).returncode == 0


def test_the_doc_has_a_row_per_cpu_count():
    rows = _rows(DOC.read_text())
    assert [int(r[0]) for r in rows] == list(POINT["cpus"])
    for r in rows:
        vanilla, c32 = (float(x) for x in r[2].rstrip(" %").split("/"))
        assert c32 < vanilla, r              # coloring shortens the walk's misses
        assert "futex" not in r[10] and "semaphore" in r[10], r
