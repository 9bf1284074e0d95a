"""The README starts with how: its first lines say how to set up, run one
experiment, sweep and read the report, it stays short, and the long
generated result tables live in docs/results.md."""

from colorsim import ROOT

README = ROOT / "README.md"
MOST_LINES = 300
HOW_LINES = 80


def test_the_readme_is_short_and_starts_with_how():
    lines = README.read_text().splitlines()
    assert len(lines) <= MOST_LINES, len(lines)
    first = "\n".join(lines[:HOW_LINES])
    for how in ("scripts/setup.sh", "python3 -m colorsim run ",
                "python3 -m colorsim sweep ", "python3 -m colorsim figures "):
        assert how in first, how
    assert "docs/results.md" in README.read_text()


def test_no_table_cell_is_longer_than_a_sentence():
    for line in README.read_text().splitlines():
        if line.startswith("| "):
            for cell in line.strip().strip("|").split("|"):
                assert cell.count(". ") == 0 and len(cell) < 200, cell


def test_the_results_page_holds_the_generated_shapes():
    text = (ROOT / "docs" / "results.md").read_text()
    for block in ("shapes", "shapes-paper", "linux24"):
        assert f"<!-- {block}:begin -->" in text, block
        assert f"<!-- {block}:begin -->" not in README.read_text(), block
