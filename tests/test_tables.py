"""Terminal tables (issue 25): at COLUMNS=80 no line of any command's table is wider than 80 characters
unless --wide asks for it; numbers are right-aligned with one precision a column; text folds between
the fields of an id; the columns left out are named."""

import re
import shutil
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from harness.cli import cli
from harness.output import text_table, wrap

SHIPPED = Path(__file__).resolve().parent.parent / "results.db"
CASE = "wgmma.mma_async.sp.m64n256k64.s32.u8.s8.RS"


def test_numbers_are_right_aligned_with_one_precision_a_column():
    frame = pd.DataFrame({"case_id": ["a", "b", "c"], "residual": [64.0013, -0.000162281, 2.5],
                          "count": [1, 20, 300]})
    lines = text_table(frame, 80).text.splitlines()
    body = lines[2:]
    assert [line.split()[1] for line in body] == ["64.001300", "-0.000162", "2.500000"]  # five digits for the least
    assert len({line.index(line.split()[1]) + len(line.split()[1]) for line in body}) == 1  # right edges line up
    assert [line.split()[2] for line in body] == ["1", "20", "300"]


def test_a_column_of_tiny_and_huge_values_prints_exponents_not_zeros():
    cells = text_table(pd.DataFrame({"x": [1e-9, 3.0e9, 0.5]}), 80).text.splitlines()[2:]
    assert [c.strip() for c in cells] == ["1.0000e-09", "3.0000e+09", "5.0000e-01"]


def test_ids_fold_between_their_fields():
    assert wrap(CASE, 18).splitlines() == ["wgmma.mma_async.", "sp.m64n256k64.s32.", "u8.s8.RS"]
    assert wrap("issue_interval_cycles", 12).splitlines() == ["issue_", "interval_", "cycles"]
    assert wrap("x" * 25, 10).splitlines() == ["x" * 10, "x" * 10, "x" * 5]


def test_a_wide_frame_fits_by_folding_then_by_leaving_columns_out():
    frame = pd.DataFrame({"case_id": [CASE] * 3, "metric": ["issue_interval_cycles"] * 3, "value": [1.5, 2.25, 3.0],
                          **{f"extra_{i}": [123456.5] * 3 for i in range(8)}})
    table = text_table(frame, 80)
    assert max(map(len, table.text.splitlines())) <= 80
    assert table.hidden and table.hidden == [f"extra_{i}" for i in range(8 - len(table.hidden), 8)]
    assert "2.25" in table.text and "case_id" in table.text
    wide = text_table(frame, 80, wide=True)
    assert wide.hidden == [] and max(map(len, wide.text.splitlines())) > 80
    assert CASE in wide.text  # nothing folded when wide


def test_cells_are_text_not_markup():
    text = text_table(pd.DataFrame({"q": ["[bold]x[/bold]", "a\nb"]}), 80).text
    assert "[bold]x[/bold]" in text and "a b" in text


@pytest.fixture(scope="module")
def shipped(tmp_path_factory):
    if not SHIPPED.exists():
        pytest.skip("no shipped results.db in this checkout")
    copy = tmp_path_factory.mktemp("tables") / "results.db"
    shutil.copy(SHIPPED, copy)
    return str(copy)


COMMANDS = [
    ["runs"], ["sql", "SELECT * FROM results LIMIT 30"], ["compare", "--run", "52", "--exit-zero"],
    ["compare", "--run", "55", "--against", "model", "--exit-zero"],
    ["compare", "--run", "55", "--against", "25", "--exit-zero"], ["model", "--run", "51"], ["model"],
    ["references"], ["references", "--unmapped"], ["fleet"], ["fleet", "--all", "--metric", "sm_clock_mhz"],
]


@pytest.mark.parametrize("args", COMMANDS, ids=" ".join)
def test_no_table_line_is_wider_than_the_terminal(shipped, args):
    result = CliRunner().invoke(cli, [*args, "--db", shipped], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert len(lines) > 2 and max(map(len, lines)) <= 80, max(lines, key=len)
    wide = CliRunner().invoke(cli, [*args, "--db", shipped, "--wide"], env={"COLUMNS": "80"})
    assert wide.exit_code == 0 and "more column" not in wide.stderr


def test_runs_name_their_gpu_as_fleet_does(shipped):
    runs = CliRunner().invoke(cli, ["runs", "--db", shipped, "--format", "csv"]).stdout
    fleet = CliRunner().invoke(cli, ["fleet", "--db", shipped, "--all", "--metric", "sm_clock_mhz",
                                     "--format", "csv"]).stdout
    labels = set(re.findall(r"NVIDIA H[12]00[^,]* [0-9a-f]{8}", fleet))
    assert labels and labels <= set(re.findall(r"NVIDIA H[12]00[^,]* [0-9a-f]{8}", runs))


def test_markdown_keeps_its_columns_when_a_name_or_value_holds_a_pipe():
    """A column named "max |change|" once split a report's Markdown table into more columns than rows."""
    import re

    import pandas as pd

    from harness.output import markdown

    lines = markdown(pd.DataFrame({"max |x|": [1.5], "case": ["a|b"]})).splitlines()
    cells = [len(re.findall(r"(?<!\\)\|", line)) for line in lines]
    assert cells == [3, 3, 3], lines
