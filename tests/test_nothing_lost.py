"""Nothing lost, nothing leaked, files left as they were (issue 22): each test here failed before its fix.
PostgreSQL's twins are in tests/test_postgres.py; concurrency in tests/test_concurrency.py."""

from contextlib import closing
import signal
import socket
import sqlite3
import subprocess
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from helpers import bench_process, copy_fixture, digest, fake_device, fake_result, make_db, one_error_line
from harness.cli import cli
from harness.db.merge import merge
from harness.db.store import Store
from harness.errors import StoreError, redact
from harness.provenance import Provenance


def bench(*args, env=None):
    return CliRunner().invoke(cli, [str(a) for a in args], env=env)


def journal_mode(path) -> str:
    with closing(sqlite3.connect(path)) as con:
        return con.execute("PRAGMA journal_mode").fetchone()[0]


def rollback_journal_db(path):
    """A database in SQLite's default (rollback journal) mode, as a user's copy may be."""
    make_db(path)
    with closing(sqlite3.connect(path)) as con:
        con.execute("PRAGMA journal_mode=DELETE")
    assert journal_mode(path) == "delete"
    return path


# -- merge keeps every measurement ----------------------------------------------------------------------

# Ctrl-C stops a statement while it runs, not after it: the statements of these tests never end (ENDLESS streams
# rows forever, SLOW counts to 10^18 in one step), so a process that exits 130 on "interrupted" was stopped by the
# signal, however loaded the machine. No wall-clock bound (a loaded 2-core CI machine once took 1.43 s against
# one of 1 s): a process that ignores Ctrl-C never ends, and communicate() gives up on it after this.
STOP_TIMEOUT_S = 60
PROVENANCE = Provenance("bench run --suite wgmma", "node7", "abc123", False, "0.1.0", "3.12", "14.2", "13.0")
CASES = ["wgmma.mma_async.m64n8k16.f32.f16.f16.SS", "wgmma.mma_async.m64n64k16.f32.f16.f16.SS",
         "wgmma.mma_async.m64n128k16.f32.f16.f16.SS", "wgmma.mma_async.m64n256k16.f32.f16.f16.SS"]


def test_a_merge_of_a_resumed_run_brings_its_new_measurements_and_status(tmp_path):
    node, central = tmp_path / "node.db", tmp_path / "central.db"
    with Store.open(node, create=True) as store:
        run = store.start_run(fake_device(), PROVENANCE, "wgmma", None)
        for case in CASES[:2]:
            store.record_case(run, fake_result(case, 18.0))
        store.finish_run(run, "interrupted", "interrupted with 2 of 4 cases stored")
    first = merge([str(node)], str(central))[0]
    assert first.added == [1] and first.measurements == 4
    with Store.open(node) as store:  # `bench run --resume 1` on the node
        store.resume_run(run)
        for case in CASES[2:]:
            store.record_case(run, fake_result(case, 64.0))
        store.finish_run(run, "complete")
    second = merge([str(node)], str(central))[0]
    assert second.added == [] and second.updated == [1] and second.measurements == 4 and second.samples == 16
    assert "1 run brought up to date (1); 4 measurements, 16 samples" in second.line()
    with Store.open(central, read_only=True) as store:
        runs = store.query("SELECT status, resumes, error FROM runs")
        assert runs.values.tolist() == [["complete", 1, None]]
        assert sorted(set(store.query("SELECT case_id FROM results").case_id)) == sorted(CASES)
        assert store.query("SELECT COUNT(*) AS n FROM samples").n[0] == 32
    third = merge([str(node)], str(central))[0]  # idempotent still
    assert third.updated == [] and third.already == [1] and third.measurements == 0


def test_a_merge_never_takes_an_older_state_of_a_run(tmp_path):
    """The central copy is further on than the source: the source's measurements it lacks come,
    its status stays."""
    node, central = tmp_path / "node.db", tmp_path / "central.db"
    with Store.open(node, create=True) as store:
        run = store.start_run(fake_device(), PROVENANCE, "wgmma", None)
        store.record_case(run, fake_result(CASES[0], 18.0))
        store.finish_run(run, "interrupted")
    stale = tmp_path / "stale.db"
    stale.write_bytes(node.read_bytes())
    with Store.open(node) as store:
        store.resume_run(run)
        store.record_case(run, fake_result(CASES[1], 18.0))
        store.finish_run(run, "complete")
    merge([str(node)], str(central))
    report = merge([str(stale)], str(central))[0]
    assert report.updated == [] and report.already == [1]
    with Store.open(central, read_only=True) as store:
        assert store.query("SELECT status FROM runs").status.tolist() == ["complete"]


def test_a_merge_reads_commits_still_in_an_older_sources_wal(tmp_path):
    """A crashed writer's schema-1 file: its newest run is only in the -wal beside it."""
    source = copy_fixture("schema_v1.db", tmp_path)
    writer = sqlite3.connect(source)
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("PRAGMA wal_autocheckpoint=0")
    columns = [row[1] for row in writer.execute("PRAGMA table_info(runs)") if row[1] != "id"]
    copied = ", ".join("'2026-01-02 03:04:05'" if c == "started_at" else c for c in columns)
    writer.execute(f"INSERT INTO runs ({', '.join(columns)}) SELECT {copied} FROM runs")
    writer.commit()
    crashed = tmp_path / "crashed"  # the files as a crash leaves them: the main file does not hold the run
    crashed.mkdir()
    for suffix in ("", "-wal"):
        (crashed / f"r.db{suffix}").write_bytes(Path(f"{source}{suffix}").read_bytes())
    writer.close()
    with sqlite3.connect(crashed / "r.db") as check:
        assert check.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 2  # SQLite sees the -wal's run
    before = {p.name: digest(p) for p in crashed.iterdir()}
    report = merge([str(crashed / "r.db")], str(tmp_path / "into.db"))[0]
    assert report.upgraded_from == 1 and len(report.added) == 2
    assert {p.name: digest(p) for p in crashed.iterdir() if p.name in before} == before  # only read


def test_merge_into_a_path_with_url_characters_makes_that_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    make_db(tmp_path / "a.db")
    result = bench("merge", "a.db", "--into", "my?results#1%41.db")
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.db", "my?results#1%41.db"]


def test_merge_names_a_damaged_source_not_the_target(tmp_path):
    target = make_db(tmp_path / "into.db")
    damaged = tmp_path / "damaged.db"
    damaged.write_bytes(b"SQLite format 3\x00" + bytes(range(256)) * 8)
    before = digest(target)
    line = one_error_line(bench("merge", damaged, "--into", target), 4, "damaged.db")
    assert "into.db" not in line and line.isprintable()
    assert digest(target) == before


# -- passwords ------------------------------------------------------------------------------------------

SECRET = "hunter2"
SECRET_URLS = [f"postgresql+psycopg://bench:{SECRET}@127.0.0.1:9/x",
               f"postgresql+psycopg://bench:{SECRET}/x y@127.0.0.1:9/x",
               f"postgresql+psycopg://bench:{SECRET} x:y@127.0.0.1:9/x",
               f"postgresql+psycopg://bench@127.0.0.1:9/x?password={SECRET}",
               f"postgresql+psycopg://bench@127.0.0.1:9/x?sslmode=disable&password={SECRET}&x=1",
               f"postgresql+psycopg://bench@/x?host=/tmp&password={SECRET}"]


@pytest.mark.parametrize("url", SECRET_URLS)
def test_no_command_prints_a_password_in_any_url_form(url, tmp_path):
    make_db(tmp_path / "a.db")
    for args in (["runs", "--db", url], ["sql", "SELECT 1", "--db", url], ["merge", tmp_path / "a.db", "--into", url],
                 ["merge", url, "--into", tmp_path / "b.db"], ["report", "--db", url], ["db", "upgrade", "--db", url]):
        result = bench(*args)
        assert result.exit_code != 0 and SECRET not in result.output, (args, result.output)
    with pytest.raises(StoreError) as raised:
        Store.open(url, read_only=True)
    assert SECRET not in str(raised.value) and SECRET not in repr(raised.value)


@pytest.mark.parametrize("url", SECRET_URLS)
def test_redact_masks_every_form(url):
    assert SECRET not in redact(f"cannot open {url}: refused") and "***" in redact(url)


def test_a_connect_timeout_ends_a_silent_server(monkeypatch):
    """A server that accepts the connection and never answers: the command ends, it does not hang."""
    import harness.db.connections as store_module

    pytest.importorskip("psycopg")
    monkeypatch.setattr(store_module, "CONNECT_TIMEOUT_S", 2)
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    held = []
    threading.Thread(target=lambda: [held.append(server.accept()) for _ in range(8)], daemon=True).start()
    started = time.monotonic()
    with pytest.raises(StoreError, match="timeout|timed out|cannot"):
        Store.open(f"postgresql+psycopg://bench:{SECRET}@127.0.0.1:{server.getsockname()[1]}/x", read_only=True)
    assert time.monotonic() - started < 15
    server.close()


# -- bench sql: bounded, interruptible, limited in time ----------------------------------------------------

ENDLESS = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x, printf('%0200d', x) AS pad FROM c"
SLOW = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000000000000000000) SELECT COUNT(*) FROM c"


@pytest.fixture
def processes():
    """Processes a test starts, killed when it ends however it ends (a failed test must not leave an
    endless statement running)."""
    started = []
    yield started
    for proc in started:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads memory from /proc")
def test_an_endless_result_streams_in_bounded_memory_and_stops_on_ctrl_c(tmp_path, processes):
    db = make_db(tmp_path / "r.db")
    proc = bench_process("sql", ENDLESS, "--format", "csv", "--max-rows", "0", "--db", str(db),
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    processes.append(proc)
    # the rows go nowhere, as fast as they come
    peak, deadline = 0.0, time.monotonic() + 4
    while time.monotonic() < deadline and proc.poll() is None:
        peak = max(peak, rss_mb(proc.pid))
        time.sleep(0.1)
    assert proc.poll() is None, "an endless statement ended by itself"
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=STOP_TIMEOUT_S)  # the statement never ends: only Ctrl-C ends it
    assert proc.returncode == 130 and "error: interrupted" in err, err
    assert peak < 200, f"{peak:.0f} MB"


def test_a_busy_statement_stops_on_ctrl_c_promptly(tmp_path, processes):
    db = make_db(tmp_path / "r.db")
    proc = bench_process("sql", SLOW, "--db", str(db))
    processes.append(proc)
    time.sleep(2.0)  # python, imports, then SQLite counting
    assert proc.poll() is None
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=STOP_TIMEOUT_S)  # in the statement: after it would be never
    assert proc.returncode == 130 and out.strip().splitlines() == ["error: interrupted"], out


def test_a_statement_stops_at_its_time_limit(tmp_path):
    db = make_db(tmp_path / "r.db")
    started = time.monotonic()
    one_error_line(bench("sql", SLOW, "--timeout", "0.5", "--db", db), 4, "time limit")
    assert time.monotonic() - started < 5


def test_rows_past_the_bound_are_left_with_a_note(tmp_path):
    db = make_db(tmp_path / "r.db")
    result = CliRunner().invoke(cli, ["sql", ENDLESS, "--max-rows", "25", "--db", str(db)])
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert len(lines) == 27 and lines[-1].split()[0] == "25"  # header, rule, 25 rows
    assert "stopped after 25 rows" in result.stderr


def test_a_huge_value_is_refused_not_built(tmp_path):
    db = make_db(tmp_path / "r.db")
    one_error_line(bench("sql", "SELECT zeroblob(200000000)", "--db", db), 4, "too big")


def test_csv_and_json_stream_what_the_table_shows(tmp_path):
    import json

    db = make_db(tmp_path / "r.db")
    csv_out = bench("sql", "SELECT 1 AS a, 2 AS a, 1e999 AS big, -1e999 AS small, x'00ff' AS b", "--format", "csv",
                    "--db", db)
    assert csv_out.output.splitlines() == ["a,a_2,big,small,b", "1,2,inf,-inf,x'00ff'"]
    json_out = bench("sql", "SELECT 1 AS a, 2 AS a, 1e999 AS big, NULL AS n", "--format", "json", "--db", db)
    assert json.loads(json_out.output) == [{"a": 1, "a_2": 2, "big": "Infinity", "n": None}]
    assert "Infinity" not in json.dumps(json.loads(json_out.output)).replace('"Infinity"', "")  # strict JSON
    many = bench("sql", "SELECT case_id, metric FROM results ORDER BY case_id, metric", "--format", "json",
                 "--db", db)
    table = Store.open(db, read_only=True).query("SELECT case_id, metric FROM results ORDER BY case_id, metric")
    assert json.loads(many.output) == table.to_dict("records")


def test_sql_that_starts_with_a_comment_is_sql(tmp_path):
    db = make_db(tmp_path / "r.db")
    result = bench("sql", "-- the runs\nSELECT COUNT(*) AS n FROM runs", "--db", db)
    assert result.exit_code == 0 and result.output.split()[-1] == "1", result.output


# -- files left as they were ---------------------------------------------------------------------------

@pytest.mark.parametrize("statement", [
    "INSERT INTO measurement_rows (run_id) VALUES (999)",  # NOT NULL
    "UPDATE measurement_rows SET run_id = 999",  # foreign key
    "UPDATE runs SET host = 'x'; UPDATE runs SET host = 'y'",  # two statements
    "UPDATE nope SET x = 1",
])
def test_a_failed_write_changes_no_byte(tmp_path, statement):
    db = rollback_journal_db(tmp_path / "r.db")
    before = digest(db)
    result = bench("sql", "--write", statement, "--db", db)
    assert result.exit_code == 4, result.output
    assert digest(db) == before and journal_mode(db) == "delete"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.db"]


def test_a_write_that_succeeds_keeps_the_files_mode(tmp_path):
    db = rollback_journal_db(tmp_path / "r.db")
    result = bench("sql", "--write", "UPDATE runs SET host = 'x'", "--db", db)
    assert result.exit_code == 0 and result.output.strip() == "1 row changed"
    assert journal_mode(db) == "delete"


def test_a_newer_schema_is_refused_before_any_byte_changes(tmp_path):
    db = rollback_journal_db(tmp_path / "r.db")
    with closing(sqlite3.connect(db)) as con:
        con.execute("UPDATE alembic_version SET version_num = '9999'")
        con.commit()
    before = digest(db)
    for args in (["sql", "--write", "UPDATE runs SET host='x'"], ["db", "upgrade"], ["merge", make_db(tmp_path / "s.db"), "--into"]):
        result = bench(*args, db) if args[0] == "merge" else bench(*args, "--db", db)
        assert result.exit_code == 4 and "schema version 9999" in result.output, (args, result.output)
    assert digest(db) == before and journal_mode(db) == "delete"


def test_db_upgrade_refuses_a_damaged_file(tmp_path):
    db = rollback_journal_db(tmp_path / "r.db")
    with closing(sqlite3.connect(db)) as con:
        page = con.execute("PRAGMA page_size").fetchone()[0]
        root = con.execute("SELECT rootpage FROM sqlite_master WHERE name = 'measurement_rows'").fetchone()[0]
    data = bytearray(db.read_bytes())
    data[(root - 1) * page: (root - 1) * page + 12] = b"\xff" * 12  # the table's b-tree page header
    db.write_bytes(bytes(data))
    before = digest(db)
    one_error_line(bench("db", "upgrade", "--db", db), 4, "damaged")
    assert digest(db) == before and journal_mode(db) == "delete"


def test_reading_commands_leave_no_wal_files(tmp_path):
    db = make_db(tmp_path / "r.db")
    assert journal_mode(db) == "wal" and sorted(p.name for p in tmp_path.iterdir()) == ["r.db"]
    for args in (["runs"], ["sql", "SELECT COUNT(*) FROM results"], ["compare"], ["references"], ["fleet"]):
        assert bench(*args, "--db", db).exit_code == 0, args
        assert sorted(p.name for p in tmp_path.iterdir()) == ["r.db"], args
    import harness

    harness.results(db)  # the Python API takes a pathlib.Path, and tidies up too
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.db"]


def test_a_report_never_writes_through_a_link(tmp_path):
    db = make_db(tmp_path / "r.db")
    out = tmp_path / "reports"
    first = bench("report", "--out", out, "--db", db)
    assert first.exit_code == 0, first.output
    folder = next(out.iterdir())
    (folder / "report.md").unlink()
    (folder / "report.md").symlink_to(db)  # someone's link, pointing at the database
    before = digest(db)
    again = bench("report", "--out", out, "--db", db)
    assert again.exit_code == 0, again.output
    assert digest(db) == before and not (folder / "report.md").is_symlink()
    assert (folder / "report.md").read_text().startswith("# ")
    folder_link = tmp_path / "target"
    folder_link.mkdir()
    name = folder.name
    import shutil

    shutil.rmtree(folder)
    (out / name).symlink_to(folder_link)  # the report's own folder is a link
    assert bench("report", "--out", out, "--db", db).exit_code == 0
    assert list(folder_link.iterdir()) == [] and (out / name).is_dir() and not (out / name).is_symlink()


def test_a_report_keeps_what_someone_else_put_in_its_folder(tmp_path):
    """Issue 46, item 17: writing a run's report again replaced its folder whole, deleting the notes, folders and
    figures a user had put beside the report. Now they move into the new folder; a file of theirs that the new
    report would overwrite is refused, and nothing changes."""
    db = make_db(tmp_path / "r.db")
    out = tmp_path / "reports"
    assert bench("report", "--out", out, "--db", db).exit_code == 0
    folder = next(out.iterdir())
    figures = sorted(p.name for p in folder.glob("*.png"))
    assert figures, list(folder.iterdir())
    (folder / "notes.txt").write_text("mine")
    (folder / "mine").mkdir()
    (folder / "mine" / "plot.png").write_bytes(b"mine")
    (folder / "extra.png").write_bytes(b"mine too")
    (out / "beside.txt").write_text("beside")
    again = bench("report", "--out", out, "--db", db)
    assert again.exit_code == 0, again.output
    assert (folder / "notes.txt").read_text() == "mine" and (folder / "mine" / "plot.png").read_bytes() == b"mine"
    assert (folder / "extra.png").read_bytes() == b"mine too" and (out / "beside.txt").read_text() == "beside"
    assert (folder / "report.md").read_text().startswith("# ") and sorted(p.name for p in out.iterdir()) == \
        ["beside.txt", folder.name]
    markdown = folder / "report.md"  # a figure the earlier report does not show is not one bench wrote there
    markdown.write_text("".join(line for line in markdown.read_text().splitlines(keepends=True)
                                if f"]({figures[0]})" not in line))
    before = {p.name: digest(p) for p in folder.iterdir() if p.is_file()}
    one_error_line(bench("report", "--out", out, "--db", db), 4, f"{figures[0]} is not a file bench wrote")
    assert {p.name: digest(p) for p in folder.iterdir() if p.is_file()} == before
    assert sorted(p.name for p in out.iterdir()) == ["beside.txt", folder.name]


def test_an_interrupted_report_leaves_nothing(tmp_path, monkeypatch):
    import harness.analysis.report as report

    db = make_db(tmp_path / "r.db")

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(report, "html_page", interrupted)
    result = bench("report", "--out", tmp_path / "reports", "--db", db)
    assert result.exit_code == 130
    assert list((tmp_path / "reports").iterdir()) == []


def test_a_full_disk_is_no_fault_of_out_and_leaves_no_partial_page(tmp_path, monkeypatch):
    """Issue 46, item 18: a full disk under `bench report`/`bench site` was "Invalid value for '--out'" (exit 2, the
    option's fault), and the site left its half-written temporary page in the folder."""
    import errno
    import harness.analysis.report as report

    db = make_db(tmp_path / "r.db")

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(report, "html_page", full)
    line = one_error_line(bench("report", "--out", tmp_path / "reports", "--db", db), 1, "No space left on device")
    assert "Invalid value" not in line and list((tmp_path / "reports").iterdir()) == []
    monkeypatch.undo()
    written = Path.write_text

    def half(self, text, *args, **kwargs):  # the page's temporary file fills the disk half way
        if self.name.startswith(".index."):
            written(self, text[: len(text) // 2])
            raise OSError(errno.ENOSPC, "No space left on device")
        return written(self, text, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", half)
    site = tmp_path / "site"
    line = one_error_line(bench("site", "--out", site, "--db", db), 1, "No space left on device")
    assert "Invalid value" not in line and list(site.iterdir()) == []
    monkeypatch.undo()
    (tmp_path / "file").write_text("")  # a file where --out's folder should be: that is the option's fault
    one_error_line(bench("site", "--out", tmp_path / "file" / "site", "--db", db), 2, "Invalid value for --out")


def test_a_report_of_a_run_without_measurements_is_one_line(tmp_path):
    db = tmp_path / "r.db"
    with Store.open(db, create=True) as store:
        store.finish_run(store.start_run(fake_device(), PROVENANCE, "wgmma", None), "complete")
    one_error_line(bench("report", "--run", "1", "--out", tmp_path / "reports", "--db", db), 4, "no measurements")
    assert not (tmp_path / "reports").exists() or list((tmp_path / "reports").iterdir()) == []


# -- paths, the environment, late errors ----------------------------------------------------------------

@pytest.mark.parametrize("db", ["", "sqlite://", "sqlite:///:memory:"])
def test_a_database_that_keeps_nothing_is_refused_by_every_command(db):
    for args in (["runs"], ["run", "--suite", "wgmma-quick"], ["merge", "x.db", "--into"]):
        result = bench(*args, db) if args[0] == "merge" else bench(*args, "--db", db)
        assert result.exit_code in (2, 4) and result.output.startswith("error: "), (args, result.output)


def test_run_checks_the_database_before_it_starts_a_gpu_worker(tmp_path, processes):
    text = tmp_path / "notes.db"
    text.write_text("not a database")
    started = time.monotonic()
    proc = bench_process("run", "--suite", "wgmma", "--db", str(text), env={"HOPPER_BENCH_BACKEND": "fake"})
    processes.append(proc)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 4 and "not a hopper-bench database" in out and "GPU" not in out, out
    assert time.monotonic() - started < 30


@pytest.mark.parametrize("name, value", [
    ("HOPPER_BENCH_FAKE_DELAY", "abc"), ("HOPPER_BENCH_FAKE_DELAY", "nan"), ("HOPPER_BENCH_FAKE_DELAY", "-1"),
    ("HOPPER_BENCH_FAKE_GPUS", "two"), ("HOPPER_BENCH_FAKE_GPUS", "0"), ("HOPPER_BENCH_BACKEND", "quantum"),
    ("HOPPER_BENCH_GIT_COMMIT", "not hex!"), ("HOPPER_BENCH_GIT_DIRTY", "yes"),
])
def test_a_bad_environment_variable_is_one_line_before_any_work(tmp_path, name, value):
    env = {"HOPPER_BENCH_BACKEND": "fake", "HOPPER_BENCH_GIT_COMMIT": "abc123", name: value}
    result = bench("run", "--suite", "mma", "--filter", "*m16n8k16*", "--db", tmp_path / "r.db", env=env)
    one_error_line(result, 2, name)
    assert not (tmp_path / "r.db").exists()


def test_a_cache_that_is_a_file_is_one_line(tmp_path):
    cache = tmp_path / "cache"
    cache.write_text("")
    one_error_line(bench("show", CASES[0], env={"HOPPER_BENCH_CACHE": str(cache)}), 2, "HOPPER_BENCH_CACHE")


def test_bare_bench_lists_the_commands():
    result = bench()
    assert result.exit_code == 0 and "Commands:" in result.output and "run " in result.output


def test_a_huge_number_in_a_case_id_is_one_line():
    one_error_line(bench("show", "wgmma.mma_async.m64n" + "9" * 5000 + "k16.f32.f16.f16.SS"), 2, "case id")


def test_a_killed_reports_folder_goes_with_the_next_report_and_nothing_else_does(tmp_path):
    """A `bench report` killed while writing (SIGKILL: no handler runs) left its hidden staging folder in the
    output folder for good. The next report of that run removes such a folder when its mark names this host and a
    process that is gone; a folder without the mark, or whose writer still runs, stays."""
    import os
    import socket
    import subprocess
    import sys

    from harness.analysis.report import STAGING_MARK

    db = make_db(tmp_path / "r.db")
    out = tmp_path / "reports"
    assert bench("report", "--out", out, "--db", db).exit_code == 0
    name = next(out.iterdir()).name
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    killed, running, unmarked = out / f".{name}.dead1", out / f".{name}.live1", out / f".{name}.old.x1"
    for folder, pid in ((killed, int(gone.stdout)), (running, os.getpid()), (unmarked, None)):
        folder.mkdir()
        (folder / "report.md").write_text("half")
        if pid is not None:
            (folder / STAGING_MARK).write_text(f"{socket.gethostname()} {pid}\n")
    again = bench("report", "--out", out, "--db", db)
    assert again.exit_code == 0, again.output
    assert not killed.exists() and running.is_dir() and (unmarked / "report.md").read_text() == "half"
    assert not (out / name / STAGING_MARK).exists()
