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
from harness.texttable import text_table, wrap

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


def test_a_table_keeps_the_columns_that_answer_and_drops_empty_ones_first():
    """Issue 35, item 1: at 80 columns `bench compare --run 47` left out the verdict while empty columns
    (family, n, operands, model) kept their space, and case ids cut to 16 characters read the same."""
    ids = [f"cp.async.bulk.tensor.2d.shared::cluster.global.tile.b16.box64x{r}.sw128" for r in (16, 32, 64, 128)]
    frame = pd.DataFrame({"case_id": ids, "family": [None] * 4, "n": [None] * 4, "metric": ["latency_cycles"] * 4,
                          "value": [270.0, 274.0, 320.0, 429.0], "paper": [300.0] * 4, "ratio": [0.9, 0.91, 1.07, 1.43],
                          "verdict": ["agrees"] * 3 + ["DISAGREES"], "launch": ['{"source":"L2"}'] * 4,
                          "model": [None] * 4, "note": ["", "", "", "a reason, with its numbers"]})
    table = text_table(frame, 80, keep=("case_id", "metric", "value", "paper", "ratio", "verdict"), below="note")
    lines = table.text.splitlines()
    assert max(map(len, lines)) <= 80 and "verdict" in lines[0] and table.text.count("DISAGREES") == 1
    assert not {"family", "n", "model"} & set(table.hidden)  # empty: dropped silently, before any other
    width = lines[0].index("metric")
    column = "".join(line[:width].strip() for line in lines[2:] if not line.startswith("    "))
    assert all(case in column for case in ids) and "…" not in table.text  # whole ids, four of them
    assert "    a reason, with its numbers" in lines  # under its row


def test_a_header_folds_between_words():
    frame = pd.DataFrame({"unmapped_reason": ["x " * 40], "value": [1.5], **{f"c{i}": ["y" * 20] for i in range(3)}})
    header = text_table(frame, 60, keep=("unmapped_reason",)).text.splitlines()[:2]
    assert "unmapped_rea" not in " ".join(header).replace("unmapped_reason", "") or "unmapped_" in header[0]
    assert not any(line.strip().startswith("son") for line in header)


@pytest.mark.parametrize("args,most", [(["--run", "47"], 24), (["--run", "52"], 24),
                                       (["--run", "58", "--against", "57"], 24), ([], 24)])
def test_compare_leads_with_the_summary_in_one_screen(shipped, args, most):
    """Issue 35, item 2: 2622 and 3314 lines before, the counts on stderr on one 248-character line."""
    result = CliRunner().invoke(cli, ["compare", *args, "--db", shipped], env={"COLUMNS": "80", "LINES": "24"})
    lines = result.stdout.splitlines()
    assert lines[0].startswith("run ") and lines[1].startswith("against ")
    assert re.match(r"^\s+\d+ \S", lines[2])  # the first count
    assert len(lines) <= most and max(map(len, lines)) <= 80, (len(lines), max(lines, key=len))
    every = CliRunner().invoke(cli, ["compare", *args, "--db", shipped, "--all"], env={"COLUMNS": "80"})
    assert len(every.stdout.splitlines()) > len(lines)


def test_power_is_not_speed_and_the_runs_of_record_pass_their_gate(shipped):
    """Issue 35, item 3: run 58 against 57 exited 3 for one board drawing 283 W where another drew 259 W."""
    run = lambda *args: CliRunner().invoke(cli, ["compare", "--run", "58", "--against", "57", *args,  # noqa: E731
                                                 "--db", shipped], env={"COLUMNS": "80"})
    default = run()
    assert default.exit_code == 0, default.output
    assert re.search(r"^\s+3 more energy", default.stdout, re.M) and "slower" not in default.stdout
    assert "power_mean_w" in default.stdout  # reported, as its own class
    assert run("--gate-energy").exit_code == 3
