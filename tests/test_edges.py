"""The rough edges of issue 35 (items 12-19): each gets one clear line, the right exit status, and
leaves the files as they were."""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import cli
from helpers import digest, make_db, one_error_line

ROOT = Path(__file__).resolve().parent.parent


def bench(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def wal_db(path: Path) -> Path:
    """make_db's database in WAL mode (as every written one is), with no -wal/-shm beside it."""
    make_db(path)
    with closing(sqlite3.connect(path)) as con:
        con.execute("PRAGMA journal_mode=WAL")
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]
    return path


# -- 12: a store the test suite (or a notebook) never closes, and the runs-of-record check ------------

def test_a_reading_store_never_closed_leaves_no_wal(tmp_path):
    db = wal_db(tmp_path / "r.db")
    script = ("import sys; from harness.db.store import Store; "
              "s = Store.open(sys.argv[1], read_only=True); s.query('SELECT COUNT(*) FROM runs'); keep = [s]")
    subprocess.run([sys.executable, "-c", script, str(db)], check=True, cwd=ROOT)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.db"]


def test_runs_of_record_check_leaves_no_wal(tmp_path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("runs_of_record", ROOT / "scripts" / "runs_of_record.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    db = wal_db(tmp_path / "r.db")
    (tmp_path / "runs").mkdir()
    module.check(db, tmp_path / "runs")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.db", "runs"]


# -- 13: a read-only command on a truncated or malformed file ------------------------------------------

@pytest.mark.parametrize("damage", ["truncated", "garbage"])
@pytest.mark.parametrize("command", [("runs",), ("sql", "SELECT 1"), ("compare",), ("fleet",)])
def test_a_damaged_file_is_refused_and_left_alone(tmp_path, damage, command):
    whole = wal_db(tmp_path / "whole.db").read_bytes()
    db = tmp_path / "r.db"
    db.write_bytes(whole[:4096 + 100] if damage == "truncated" else whole[:100] + b"\x07" * 20000)
    (tmp_path / "whole.db").unlink()
    before = digest(db)
    one_error_line(bench(*command, "--db", db), 4, "r.db")
    assert digest(db) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.db"]


# -- 14: bench report of a run without measurements, and where the report cannot be written --------------

def db_with_an_empty_run(tmp_path) -> tuple[Path, int]:
    from harness.db.store import Store
    from harness.provenance import Provenance
    from helpers import fake_device

    db = make_db(tmp_path / "r.db")
    with Store.open(str(db)) as store:
        prov = Provenance("bench run", "h", "abc", False, "0.1.0", "3.12", "14.2", "13.0")
        run = store.start_run(fake_device(), prov, "wgmma", None)
        store.finish_run(run, "complete")
    return db, run


def test_a_comparison_of_a_run_without_measurements_fails_instead_of_passing_on_nothing(tmp_path):
    """Issue 46, item 16: `bench compare --run N` on a run interrupted before its first case said "no row differs
    beyond the noise" and exited 0, so a CI gate passed on nothing; it is one line and exit 4, as `bench report`."""
    db, run = db_with_an_empty_run(tmp_path)
    for against in ("paper", "model"):
        one_error_line(bench("compare", "--run", run, "--against", against, "--db", db), 4,
                       f"run {run} has no measurements to compare")


def test_a_report_of_a_run_without_measurements_fails_and_writes_nothing(tmp_path):
    db, run = db_with_an_empty_run(tmp_path)
    one_error_line(bench("report", "--run", run, "--db", db, "--out", tmp_path / "out"), 4, f"run {run} has no measurements")
    assert not (tmp_path / "out").exists()


def test_a_report_that_cannot_be_written_says_so(tmp_path):
    db = make_db(tmp_path / "r.db")
    one_error_line(bench("report", "--run", 1, "--db", db, "--out", "/dev/full"), 2, "cannot write the report")
    (tmp_path / "link").symlink_to("/dev/full")
    one_error_line(bench("report", "--run", 1, "--db", db, "--out", tmp_path / "link"), 2, "cannot write the report")


def test_a_report_replaces_an_old_one_whose_report_md_is_a_folder_and_says_nothing_else(tmp_path):
    import warnings

    db = make_db(tmp_path / "r.db")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a warning (numpy's on a NaN comparison) is not part of the output
        first = bench("report", "--run", 1, "--db", db, "--out", tmp_path / "out")
    assert first.exit_code == 0 and first.output.count("\n") == 1, first.output
    folder, = (tmp_path / "out").iterdir()
    (folder / "report.md").unlink()
    (folder / "report.md").mkdir()
    again = bench("report", "--run", 1, "--db", db, "--out", tmp_path / "out")
    assert again.exit_code == 0 and (folder / "report.md").is_file()


# -- 15: a FIFO, a device, a /proc file or a symbolic link loop as the database ---------------------------

@pytest.mark.parametrize("kind, said", [("fifo", "is a FIFO"), ("device", "is a device"),
                                        ("proc", "virtual file system"), ("loop", "symbolic links form a loop")])
def test_a_database_that_is_no_file_is_named_for_what_it_is(tmp_path, kind, said):
    import os

    if kind == "fifo":
        os.mkfifo(tmp_path / "x.db")
        db = tmp_path / "x.db"
    elif kind == "loop":
        (tmp_path / "a.db").symlink_to(tmp_path / "b.db")
        (tmp_path / "b.db").symlink_to(tmp_path / "a.db")
        db = tmp_path / "a.db"
    else:
        db = Path("/dev/null" if kind == "device" else "/proc/self/status")
    for args in (("runs", "--db", db), ("sql", "SELECT 1", "--db", db), ("merge", db, "--into", tmp_path / "m.db")):
        one_error_line(bench(*args), 4, said)
    assert not (tmp_path / "m.db").exists()  # a merge that cannot start creates no target
    if kind == "loop":
        make_db(tmp_path / "r.db")
        one_error_line(bench("merge", tmp_path / "r.db", "--into", db), 4, said)


# -- 16: bench merge says when it upgrades its target, and what a full stdout cost -------------------------

def test_merge_into_an_older_target_says_it_upgraded_it(tmp_path):
    from helpers import copy_fixture

    target = copy_fixture("schema_v5.db", tmp_path)
    source = make_db(tmp_path / "r.db")
    result = bench("merge", source, "--into", target)
    assert result.exit_code == 0, result.output
    assert re.search(r"note: upgraded .*schema_v5.db from schema 5 to \d+; the old file is kept as .*\.bak",
                     result.output), result.output


def test_merge_whose_stdout_is_full_says_the_merge_was_committed(tmp_path):
    from helpers import bench_process

    source = make_db(tmp_path / "r.db")
    with open("/dev/full", "w") as full:
        process = bench_process("merge", str(source), "--into", str(tmp_path / "m.db"), stdout=full,
                                stderr=subprocess.PIPE)
        _, err = process.communicate(timeout=60)
    assert process.returncode == 1
    assert err.strip().splitlines() == [f"error: merged into {tmp_path / 'm.db'} (committed), but its report "
                                        "could not be printed: No space left on device"], err
    from harness.db.store import Store

    with Store.open(str(tmp_path / "m.db"), read_only=True) as store:
        assert len(store.query("SELECT id FROM runs")) == 1


# -- 17: bench sql ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("query", ["-- just a comment", "/* a /* nested */ one */", " ; -- and a semicolon\n"])
def test_sql_of_comments_alone_is_refused(tmp_path, query):
    one_error_line(bench("sql", query, "--db", make_db(tmp_path / "r.db")), 2, "only comments")


def test_sql_columns_of_one_name_stay_apart_in_every_format(tmp_path):
    import json

    db = make_db(tmp_path / "r.db")
    query = "SELECT 1 AS a, 2 AS a, 3 AS a_2"
    header = bench("sql", query, "--db", db, "--format", "csv").output.splitlines()[0].split(",")
    assert len(set(header)) == 3 and header[0] == "a" and header[2] == "a_2", header
    record = json.loads(bench("sql", query, "--db", db, "--format", "json").output)[0]
    assert sorted(record.values()) == [1, 2, 3]


def test_sql_markdown_keeps_a_row_on_one_line(tmp_path):
    out = bench("sql", "SELECT 'x' || char(10) || 'y|z' AS a, 2 AS b", "--db", make_db(tmp_path / "r.db"),
                "--format", "markdown").output
    assert out.splitlines() == ["| a | b |", "|---|---|", "| x<br>y\\|z | 2 |"]


def read_terminal(controller: int, terminal: int) -> bytes:
    """Everything a finished process wrote to the pseudo-terminal (controller, terminal); both ends closed."""
    import os

    os.close(terminal)
    shown = b""
    while True:
        try:
            piece = os.read(controller, 65536)
        except OSError:
            break
        if not piece:
            break
        shown += piece
    os.close(controller)
    return shown


def on_a_terminal(args: list[str]) -> bytes:
    """What `bench ARGS` writes to a terminal (a pseudo-terminal as its stdout)."""
    import os
    import pty

    controller, terminal = pty.openpty()
    process = subprocess.run([sys.executable, "-m", "harness", *args], stdout=terminal, stderr=subprocess.PIPE,
                             env={**os.environ, "NO_COLOR": "1"}, timeout=60)
    shown = read_terminal(controller, terminal)
    assert process.returncode == 0, process.stderr
    return shown


def test_escape_sequences_in_the_database_never_reach_the_terminal_raw(tmp_path):
    db = make_db(tmp_path / "r.db")
    query = "SELECT 'x' || char(27) || '[2J' || char(155) || 'y' AS a"
    assert "\x1b" not in bench("sql", query, "--db", db).output  # the table, into a pipe too
    assert "\x1b" not in bench("sql", query, "--db", db, "--format", "markdown").output
    assert "\x1b" in bench("sql", query, "--db", db, "--format", "csv").output  # a file gets the value whole
    for fmt in ("table", "csv", "json"):
        shown = on_a_terminal(["sql", query, "--db", str(db), "--format", fmt])
        assert b"\x1b" not in shown and "\x9b".encode() not in shown, (fmt, shown)
        assert b"x" in shown and b"y" in shown


def test_a_gpu_name_with_escape_sequences_is_shown_not_run(tmp_path, capsys):
    """Issue 46, item 18: a stored GPU name with terminal escapes (ESC, the 8-bit CSI) and a <script> tag was printed
    raw in the headings of `compare` (and its note on two GPU models), in the heading of a model's fits, in the
    planner's prose (`say`), and report.md kept it raw (the HTML escaped it)."""
    import pandas as pd

    from harness.cli.app import say
    from harness.cli.modelling import _model_summary

    name = "H100\x1b[2J\x9b31m<script>alert(1)</script>"
    db = make_db(tmp_path / "r.db")
    with closing(sqlite3.connect(db)) as con, con:
        con.execute("UPDATE devices SET name = ?", (name,))
    shown = [bench("compare", "--db", db).output, bench("compare", "--db", db, "--against", "1").output]
    say(f"planner of {name}")
    _model_summary("mma", pd.DataFrame({"gpu": [name, name], "F_tc": [1024.0, 1000.0]}), pd.DataFrame(), False,
                   "in sample", "in sample")
    shown.append(capsys.readouterr().out)
    for text in shown:
        assert "\x1b" not in text and "\x9b" not in text and "H100\\x1b[2J\\x9b31m" in text, text
    shown = on_a_terminal(["runs", "--db", str(db), "--format", "csv"])  # written out, as `bench sql`'s csv is
    assert b"\x1b" not in shown and "\x9b".encode() not in shown and b"H100\\x1b[2J" in shown, shown
    report = bench("report", "--db", db, "--out", tmp_path / "reports")
    assert report.exit_code == 0, report.output
    markdown = next((tmp_path / "reports").glob("*/report.md")).read_text()
    assert "\x1b" not in markdown and "\x9b" not in markdown and "<script>" not in markdown
    assert markdown.startswith("# H100\\x1b[2J\\x9b31m&lt;script>alert(1)&lt;/script>: run 1"), markdown[:200]


# -- 18: bench model, bench list, did you mean, the unknown command's hint, harness.results(5) --------------

def test_model_of_a_run_no_model_covers_fails(tmp_path):
    db, run = db_with_an_empty_run(tmp_path)
    one_error_line(bench("model", "--run", run, "--db", db), 2, f"run {run} has no measurements that a family's model fits")


@pytest.mark.parametrize("extra, said", [(("--gpu", "H20"), "--gpu and --run do not go together"),
                                         (("--clock", "1500"), "--clock and --run do not go together")])
def test_model_refuses_a_datasheet_option_beside_run(tmp_path, extra, said):
    one_error_line(bench("model", "--run", 1, *extra, "--db", make_db(tmp_path / "r.db")), 2, said)
    one_error_line(bench("model", "--residuals"), 2, "--residuals needs --run")


def test_list_with_a_filter_that_matches_nothing_fails():
    one_error_line(bench("list", "--suite", "wgmma", "--filter", "zzz*"), 2, "matches none")


@pytest.mark.parametrize("args, said", [
    (("list", "--suite", "wgmm"), "unknown suite 'wgmm' \\(did you mean 'wgmma'\\?\\)"),
    (("show", "wgmm.mma_async.m64n8k16.f32.f16.f16.SS"), "did you mean 'wgmma.mma_async.m64n8k16.f32.f16.f16.SS'"),
    (("show", "ldmatrix.sync.m8n8.x4.shared.b61"), "did you mean 'ldmatrix.sync.m8n8.x4.shared.b16'"),
])
def test_a_misspelled_suite_or_case_gets_did_you_mean(args, said):
    one_error_line(bench(*args), 2, said)


@pytest.mark.parametrize("args, hint", [(("nosuch",), "`bench --help`"), (("db", "upgrad"), "`bench db --help`"),
                                        (("model", "--bogus"), "`bench model --help`")])
def test_the_hint_names_a_help_that_exists(args, hint):
    line = one_error_line(bench(*args), 2)
    assert line.endswith(f"(see {hint})"), line
    assert bench(*hint.strip("`").split()[1:]).exit_code == 0


def test_results_of_a_run_id_says_what_db_is():
    import harness

    with pytest.raises(TypeError, match=r"db is int 5: give a file path, a database URL or a Store "
                                        r"\(a run is a filter: results\(db, run_id=5\)\)"):
        harness.results(5)


# -- 19: Ctrl-C during a report (or while the command loads) is one line and nothing else -----------------

INTERRUPTED_REPORT = """
import logging, os, signal, sys, time, warnings
import harness.analysis.report as report

def build(*args, **kwargs):  # a report interrupted while matplotlib draws; its unwinding warns
    try:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(30)
    finally:
        warnings.warn("Glyph 8722 missing from current font.", UserWarning)
        logging.getLogger("matplotlib").warning("a figure half drawn")

report.build = build
sys.argv = ["bench", "report", "--db", sys.argv[1], "--out", sys.argv[2]]
from harness.cli import main
main()
"""


def test_ctrl_c_during_a_report_prints_one_line(tmp_path):
    db = make_db(tmp_path / "r.db")
    done = subprocess.run([sys.executable, "-c", INTERRUPTED_REPORT, str(db), str(tmp_path / "out")], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 130
    assert done.stdout == "" and done.stderr == "error: interrupted\n", (done.stdout, done.stderr)
    assert not (tmp_path / "out").exists()


def test_ctrl_c_while_the_command_loads_prints_one_line():
    code = ("import builtins, os, signal\n"
            "real = builtins.__import__\n"
            "def interrupting(name, *a, **k):\n"
            "    if name == 'harness.cli.measuring' or (name == 'harness.cli' and a[2] and 'measuring' in a[2]):\n"
            "        os.kill(os.getpid(), signal.SIGINT)\n"
            "    return real(name, *a, **k)\n"
            "builtins.__import__ = interrupting\n"
            "import sys; sys.argv = ['bench', '--version']\n"
            "from harness.cli import main\nmain()\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout, done.stderr) == (130, "", "error: interrupted\n")


# -- 9: bench site shows its progress -----------------------------------------------------------------------

def test_site_build_reports_each_step(tmp_path):
    from harness.analysis.site import build
    from harness.db.store import Store

    seen = []
    with Store.open(str(make_db(tmp_path / "r.db")), read_only=True) as store:
        build(store, tmp_path / "site", progress=lambda step, done, steps: seen.append((step, done, steps)))
    steps = seen[0][2]
    assert [done for _, done, _ in seen] == list(range(steps + 1))
    assert {"against the paper", "history", "the page"} <= {step for step, _, _ in seen} and seen[-1][0] == "done"


def test_bench_site_shows_progress_on_a_terminal_and_says_how_long_it_took(tmp_path):
    import os
    import pty

    db = make_db(tmp_path / "r.db")
    controller, terminal = pty.openpty()
    done = subprocess.run([sys.executable, "-m", "harness", "site", "--db", str(db), "--out", str(tmp_path / "site")],
                          stdout=subprocess.PIPE, stderr=terminal, text=True, timeout=120, cwd=tmp_path,
                          env={**os.environ, "COLUMNS": "100"})
    shown = read_terminal(controller, terminal)
    assert done.returncode == 0
    assert b"site: " in shown, shown  # the bar, naming its step (rich erases it when done)
    assert re.fullmatch(r"wrote \S+index.html \(\d+ sections\) in \d+\.\d s\n", done.stdout), done.stdout


def test_a_relative_sqlite_url_works_as_a_path_does(tmp_path, monkeypatch):
    """`sqlite:///rel.db` (SQLAlchemy's relative form) is the file rel.db of the working directory: a merge into it
    and a reading command on it work, as with the bare path (issue 46: it was an internal error, exit 70)."""
    source = make_db(tmp_path / "source.db")
    monkeypatch.chdir(tmp_path)
    merged = CliRunner().invoke(cli, ["merge", str(source), "--into", "sqlite:///rel.db"])
    assert merged.exit_code == 0, merged.output
    listed = CliRunner().invoke(cli, ["runs", "--db", "sqlite:///rel.db", "--format", "csv"])
    assert listed.exit_code == 0 and len(listed.output.strip().splitlines()) == 2, listed.output
    through_env = CliRunner().invoke(cli, ["runs", "--format", "csv"], env={"HOPPER_BENCH_DB": "sqlite:///rel.db"})
    assert through_env.output == listed.output
