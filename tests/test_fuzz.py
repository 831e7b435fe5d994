"""The CLI against random input (Hypothesis): every call ends with exit 0, or with one line that starts
with "error: " and a non-zero status, never a traceback or an internal error; and the database file
stays byte-identical unless the command was `run` or `sql --write`."""

import shutil
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import digest, make_db
from harness.cli import cli

INTERNAL_ERROR = 70  # harness/cli/app.py: what a bug exits with

# Values a hostile or careless user types into numeric and text options.
NUMBERS = st.one_of(
    st.integers(min_value=-2**70, max_value=2**70).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(str),
    st.sampled_from(["nan", "-inf", "1e309", "0x10", "", " ", "1_000", "٣", "0", "-1", "9223372036854775808"]),
)
TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=40)
CASE_IDS = st.one_of(TEXT, st.sampled_from([
    "wgmma.mma_async.m64n64k16.f32.f16.f16.SS", "wgmma.mma_async.m64n63k16.f32.f16.f16.SS",
    "mma.sync.m16n8k16.row.col.f32.f16.f16.f32", "mma.sp.sync.m16n8k7.row.col.f32.f16.f16.f32",
    "ldmatrix.sync.m8n8.x3.shared.b16", "mma.sync.m8n8k4.row.col.f16.f16.f16.f32+hang", "+trap", "wgmma.",
]))
SQL = st.one_of(TEXT, st.sampled_from([
    "SELECT * FROM results", "SELECT 1 AS a, 2 AS a", "SELECT x'00ff'", "PRAGMA query_only=OFF",
    "PRAGMA journal_mode=WAL", "ATTACH DATABASE 'fuzz-attached.db' AS x", "DELETE FROM runs",
    "DROP VIEW results", "VACUUM", "SELECT 1; SELECT 2", "SELECT zeroblob(10)", "SELECT 1e999",
    "SELECT * FROM runs WHERE id = 99999999999999999999", "CREATE TABLE t(x)", "BEGIN", "COMMIT",
]))
SECRET_URL = "postgresql://u:secret@127.0.0.1:9/x"
PATHS = st.one_of(TEXT, st.sampled_from(["~nosuchuser/r.db", "/proc/nope/r.db", "/", "", ".", "bogus://::",
                                         SECRET_URL, "sqlite:///:memory:"]))
FORMATS = st.sampled_from(["table", "csv", "json", "markdown", "yaml", ""])


def command():
    """(arguments, whether the command may write the database)."""
    reading = st.one_of(
        st.tuples(st.just(["runs"]), st.lists(st.sampled_from(["--format"]), max_size=1), FORMATS)
        .map(lambda t: t[0] + (t[1] + [t[2]] if t[1] else [])),
        st.tuples(st.just(["sql"]), SQL, FORMATS).map(lambda t: t[0] + [t[1], "--format", t[2]]),
        st.tuples(st.just(["compare"]), st.one_of(NUMBERS, st.sampled_from(["paper", "model", "1"])), NUMBERS,
                  st.one_of(st.none(), TEXT))
        .map(lambda t: t[0] + ["--against", t[1], "--tolerance", t[2]] + (["--metric", t[3]] if t[3] else [])),
        st.tuples(st.just(["compare", "--run"]), NUMBERS).map(lambda t: t[0] + [t[1]]),
        st.tuples(st.just(["model"]), st.one_of(TEXT, st.sampled_from(["H200", "H100 SXM5", "h20"])))
        .map(lambda t: t[0] + ["--gpu", t[1]]),
        st.tuples(st.just(["model", "--run"]), NUMBERS).map(lambda t: t[0] + [t[1]]),
        st.tuples(st.just(["advise", "swapab"]), NUMBERS, NUMBERS, NUMBERS)
        .map(lambda t: t[0] + ["--m", t[1], "--n", t[2], "--k", t[3]]),
        st.tuples(st.just(["references"]), st.booleans()).map(lambda t: t[0] + (["--unmapped"] if t[1] else [])),
        st.tuples(st.just(["show"]), CASE_IDS).map(lambda t: t[0] + [t[1]]),
        st.tuples(st.just(["list", "--suite"]), TEXT).map(lambda t: t[0] + [t[1]]),
        st.tuples(st.just(["report", "--run"]), NUMBERS).map(lambda t: t[0] + [t[1], "--out", "OUT"]),
    ).map(lambda args: (args, False))
    writing = st.one_of(
        st.tuples(st.just(["sql", "--write"]), SQL).map(lambda t: t[0] + [t[1]]),
        st.tuples(st.just(["run"]), st.one_of(TEXT, st.sampled_from(["wgmma", "mma", "loaders"])), NUMBERS, NUMBERS,
                  NUMBERS).map(lambda t: t[0] + ["--suite", t[1], "--gpu", t[2], "--watchdog", t[3], "--seed", t[4]]),
    ).map(lambda args: (args, True))
    return st.one_of(reading, writing)


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    return make_db(tmp_path_factory.mktemp("fuzz") / "template.db")


def check(result, may_write: bool, db: Path, before: str) -> None:
    output = result.output
    assert "Traceback" not in output, output
    assert result.exit_code != INTERNAL_ERROR, output
    if result.exit_code == 3:  # bench compare's verdict (rows differ): a table, never an error
        assert "error:" not in output, output
    elif result.exit_code != 0:
        lines = output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), output
        assert "secret" not in output  # passwords never printed
    if not may_write or result.exit_code != 0:  # a failed command changes nothing either
        assert digest(db) == before, output
    if not may_write:  # and a reading one leaves nothing beside the file
        assert not Path(f"{db}-wal").exists() and not Path(f"{db}-shm").exists(), output


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(call=command())
def test_every_command_survives_random_input(template, call, monkeypatch):
    args, may_write = call
    with tempfile.TemporaryDirectory() as scratch:
        db = Path(scratch) / "r.db"
        shutil.copy(template, db)
        monkeypatch.chdir(scratch)
        monkeypatch.setenv("HOPPER_BENCH_BACKEND", "none")  # `run` must not find a GPU here either
        args = [a.replace("OUT", str(Path(scratch) / "out")) if a == "OUT" else a for a in args]
        before = digest(db)
        check(CliRunner().invoke(cli, [*args, "--db", str(db)]), may_write, db, before)
        assert not (Path(scratch) / "fuzz-attached.db").exists() or may_write


def run_on_copy(template, args, may_write, monkeypatch):
    with tempfile.TemporaryDirectory() as scratch:
        db = Path(scratch) / "r.db"
        shutil.copy(template, db)
        monkeypatch.chdir(scratch)
        before = digest(db)
        check(CliRunner().invoke(cli, [*args, "--db", str(db)]), may_write, db, before)
        assert may_write or not (Path(scratch) / "fuzz-attached.db").exists()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=SQL, fmt=FORMATS, write=st.booleans())
def test_any_sql_in_any_format(template, query, fmt, write, monkeypatch):
    run_on_copy(template, ["sql", query, "--format", fmt] + (["--write"] if write else []), write, monkeypatch)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(option=st.sampled_from([["compare", "--run"], ["compare", "--against"], ["compare", "--tolerance"],
                               ["model", "--run"], ["advise", "swapab", "--m", "16", "--n", "64", "--k"],
                               ["advise", "swapab", "--k", "16", "--n", "64", "--m"],
                               ["advise", "swapab", "--m", "16", "--k", "64", "--n"], ["run", "--resume"],
                               ["run", "--suite", "wgmma-quick", "--watchdog"], ["run", "--suite", "mma", "--gpu"],
                               ["run", "--suite", "loaders", "--jobs"], ["run", "--suite", "wgmma", "--seed"]]),
       value=NUMBERS)
def test_any_number_in_any_numeric_option(template, option, value, monkeypatch):
    monkeypatch.setenv("HOPPER_BENCH_BACKEND", "none")
    run_on_copy(template, [*option, value], option[0] == "run", monkeypatch)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(path=PATHS, args=st.sampled_from([["runs"], ["sql", "SELECT 1"], ["compare"], ["references"]]))
def test_any_db_path_or_url_is_one_line(path, args, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, [*args, "--db", path])
    assert "Traceback" not in result.output and result.exit_code != INTERNAL_ERROR, result.output
    if result.exit_code:
        lines = result.output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and "secret" not in result.output, result.output


URL_CHARACTERS = st.text(st.sampled_from("ab?#%&=:@;+ 41F~"), min_size=1, max_size=12)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=URL_CHARACTERS)
def test_a_file_name_with_url_characters_is_that_file(template, name, monkeypatch):
    """A path is never parsed as a URL: `?`, `#`, `%41`, `@` and `:` are characters of the name."""
    with tempfile.TemporaryDirectory() as scratch:
        monkeypatch.chdir(scratch)
        target = Path(scratch) / f"{name}.db"
        shutil.copy(template, target)
        before = digest(target)
        result = CliRunner().invoke(cli, ["runs", "--db", f"{name}.db"])
        assert result.exit_code == 0 and "wgmma" in result.output, result.output
        merged = CliRunner().invoke(cli, ["merge", f"{name}.db", "--into", f"{name}.merged.db"])
        assert merged.exit_code == 0, merged.output
        assert sorted(p.name for p in Path(scratch).iterdir()) == sorted([f"{name}.db", f"{name}.merged.db"])
        assert digest(target) == before


ENVIRONMENT = st.sampled_from(["HOPPER_BENCH_FAKE_DELAY", "HOPPER_BENCH_FAKE_GPUS", "HOPPER_BENCH_BACKEND",
                               "HOPPER_BENCH_GIT_COMMIT", "HOPPER_BENCH_GIT_DIRTY", "HOPPER_BENCH_CACHE",
                               "HOPPER_BENCH_DB"])


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=ENVIRONMENT, value=st.one_of(NUMBERS, TEXT, st.sampled_from(["fake", "cuda", "1", "0", "/", "deadbeef"])),
       args=st.sampled_from([["runs"], ["list"], ["run", "--suite", "mma", "--filter", "*m16n8k16.row.col.f32.f16*"],
                             ["run", "--suite", "mma", "--gpus", "all", "--filter", "*m8n8k4.row.col.f16.f16*"]]))
def test_any_environment_value_is_one_line_or_works(template, name, value, args, monkeypatch, compile_cache):
    """The HOPPER_BENCH_* variables: a bad value is one line before any work, never a worker's
    traceback or every case stored as a fault. (The session's compile cache, unless the example sets
    HOPPER_BENCH_CACHE: the same few probes, compiled once.)"""
    with tempfile.TemporaryDirectory() as scratch:
        db = Path(scratch) / "r.db"
        shutil.copy(template, db)
        monkeypatch.chdir(scratch)
        monkeypatch.setenv("HOPPER_BENCH_BACKEND", "fake")
        monkeypatch.setenv("HOPPER_BENCH_CACHE", str(compile_cache))
        monkeypatch.setenv(name, value)
        before = digest(db)
        result = CliRunner().invoke(cli, [*args] + ([] if name == "HOPPER_BENCH_DB" else ["--db", str(db)]))
        assert "Traceback" not in result.output and result.exit_code != INTERNAL_ERROR, result.output
        if result.exit_code:
            lines = result.output.strip().splitlines()
            assert lines[-1].startswith("error: ") and digest(db) == before, result.output
            if "--gpus" not in args:
                assert len(lines) == 1, result.output
        elif args[0] == "run" and "--gpus" not in args:
            assert " 0 faults" in result.output, result.output


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(db=st.one_of(PATHS, URL_CHARACTERS, st.just(None)), as_path=st.booleans(),
       filters=st.dictionaries(st.one_of(TEXT, st.sampled_from(["family", "metric", "case_id", "valid", "run_id"])),
                               st.one_of(TEXT, st.integers(), st.none(), st.lists(TEXT, max_size=3)), max_size=3))
def test_the_python_api_raises_only_its_own_errors(template, db, as_path, filters, monkeypatch):
    """harness.results / harness.references: a DataFrame, or a HarnessError whose message names no
    password, for any database argument (str, pathlib.Path, None) and any filters."""
    import harness
    from harness.errors import HarnessError

    with tempfile.TemporaryDirectory() as scratch:
        monkeypatch.chdir(scratch)
        shutil.copy(template, Path(scratch) / "results.db")
        before = digest(Path(scratch) / "results.db")
        argument = Path(db) if as_path and db else db
        for view in (harness.results, harness.references):
            try:
                frame = view(argument, **filters)
            except HarnessError as exc:
                assert len(str(exc).splitlines()) <= 1
                if argument == SECRET_URL:  # the URL's password is never shown (a file, or a Path, may be named anything)
                    assert ":secret@" not in str(exc)
            else:
                assert hasattr(frame, "columns")
        assert digest(Path(scratch) / "results.db") == before
        assert sorted(p.name for p in Path(scratch).iterdir()) == ["results.db"]
