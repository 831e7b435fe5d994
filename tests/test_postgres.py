"""The store, the migrations, the views, the analyses, merge, concurrency and the CLI against a real
PostgreSQL server (conftest.postgres_server: initdb and pg_ctl on a temporary directory). Each test
has its twin on SQLite elsewhere in the suite; here the same calls must give the same answers."""

import sqlite3
import subprocess
import sys

import pytest
from click.testing import CliRunner

import harness
from helpers import make_db
from harness.analysis.compare import compare
from harness.analysis.run_verdicts import against_run
from harness.analysis.fleet import table as fleet_table
from harness.cli import cli
from harness import migrations
from harness.db.merge import merge
from harness.db.store import Store
from harness.db.tables import register_functions

# One pytest-xdist process runs this module (--dist loadgroup): the session's PostgreSQL server (conftest.postgres_server:
# initdb, then a server) is started once, not once in each process that happens to run one of these tests.
pytestmark = pytest.mark.xdist_group("postgres")


def bench(*args):
    return CliRunner().invoke(cli, list(args))


def test_a_new_database_is_built_by_the_migrations_and_holds_a_run(pg_url):
    make_db(pg_url)
    store = Store.open(pg_url, read_only=True)
    assert store.query("SELECT version_num FROM alembic_version").version_num[0] == migrations.head()
    rows = store.query("SELECT case_id, metric, value, warpgroups, ilp, flagged FROM results ORDER BY case_id, metric")
    assert len(rows) == 6 and rows.warpgroups.dropna().astype(int).isin([1, 2]).all()
    assert not rows.flagged.any()
    assert int(store.query("SELECT total_memory_bytes FROM devices").total_memory_bytes[0]) == 80 << 30  # 64-bit


def test_the_analyses_give_the_same_answers_as_on_sqlite(pg_url, tmp_path):
    make_db(pg_url)
    lite = make_db(tmp_path / "r.db")
    pg, sq = Store.open(pg_url, read_only=True), Store.open(str(lite), read_only=True)
    for frame_pg, frame_sq in ((compare(pg, 1), compare(sq, 1)), (against_run(pg, 1, 1), against_run(sq, 1, 1))):
        assert frame_pg.drop(columns=["spread"], errors="ignore").astype(str).values.tolist() == \
            frame_sq.drop(columns=["spread"], errors="ignore").astype(str).values.tolist()
    assert fleet_table(pg)[0].shape == fleet_table(sq)[0].shape
    assert sorted(harness.results(pg_url, metric="issue_interval_cycles", valid=True).value) == [18.0, 128.0]


def test_read_only_means_read_only(pg_url):
    make_db(pg_url)
    result = bench("sql", "WITH d AS (DELETE FROM runs RETURNING id) SELECT * FROM d", "--db", pg_url)
    assert result.exit_code == 4 and "read-only transaction" in result.output
    refused = bench("sql", "DELETE FROM runs", "--db", pg_url)
    assert refused.exit_code == 4 and "pass --write" in refused.output
    assert Store.open(pg_url, read_only=True).query("SELECT COUNT(*) AS n FROM runs").n[0] == 1
    written = bench("sql", "--write", "UPDATE runs SET host = 'x'", "--db", pg_url)
    assert written.exit_code == 0 and written.output.strip() == "1 row changed"


def test_the_cli_reports_merges_and_masks_passwords(pg_url, tmp_path):
    make_db(pg_url)
    for args in (["runs"], ["compare"], ["references"], ["model", "--run", "1"], ["fleet"],
                 ["report", "--out", str(tmp_path / "rep")], ["sql", "SELECT case_id FROM results WHERE case_id LIKE '%SS'"]):
        result = bench(*args, "--db", pg_url)
        assert result.exit_code == 0, (args, result.output)
    lite = tmp_path / "copy.db"
    assert [r.added for r in merge([pg_url], str(lite))] == [[1]]
    assert [r.already for r in merge([str(lite)], pg_url)] == [[1]]  # idempotent both ways
    with sqlite3.connect(lite) as con:
        register_functions(con)  # JSON arrays from PostgreSQL, packed on SQLite (schema 10)
        assert con.execute("SELECT COUNT(*) FROM samples").fetchone()[0] == 16
        assert {row[0] for row in con.execute("SELECT typeof(samples) FROM sample_arrays")} <= {"blob", "null"}
    secret = pg_url.replace("bench@", "bench:hunter2@").replace("/t_", "/no_such_db_")
    failed = bench("runs", "--db", secret)
    assert failed.exit_code == 4 and "hunter2" not in failed.output and "bench:***@" in failed.output


def test_two_processes_write_runs_at_once(pg_url):
    """Concurrency: two writers (real processes) each store a run; both land, neither is lost."""
    script = ("import sys; sys.path.insert(0, 'tests'); from helpers import make_db; make_db(sys.argv[1])")
    writers = [subprocess.Popen([sys.executable, "-c", script, pg_url]) for _ in range(2)]
    assert [w.wait(timeout=120) for w in writers] == [0, 0]
    store = Store.open(pg_url, read_only=True)
    assert store.query("SELECT COUNT(*) AS n FROM runs").n[0] == 2
    assert store.query("SELECT COUNT(*) AS n FROM measurements").n[0] == 12


ESCAPES = ["ROLLBACK; BEGIN READ WRITE; UPDATE runs SET host='x' WHERE id=1; COMMIT",
           "COMMIT; UPDATE runs SET host='x'", "SELECT 1; UPDATE runs SET host='x'",
           "UPDATE runs SET host='x'", "WITH w AS (UPDATE runs SET host='x' RETURNING id) SELECT * FROM w",
           "SELECT set_config('default_transaction_read_only', 'off', false)",
           "SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE", "BEGIN READ WRITE", "COMMIT",
           "/* a comment */ COPY (SELECT 1) TO PROGRAM 'touch {marker}'", "CALL nothing()", "DO $$ BEGIN END $$"]


def test_read_only_holds_against_every_way_out(pg_url):
    """One statement per `bench sql`, in a read-only transaction: a statement that ends the
    transaction or changes the session cannot open the door for the next one."""
    import tempfile
    from pathlib import Path

    make_db(pg_url)
    marker = Path(tempfile.mkdtemp()) / "ran"
    for statement in ESCAPES:
        result = bench("sql", statement.format(marker=marker), "--db", pg_url)
        assert result.exit_code in (0, 4), (statement, result.output)
        assert "internal error" not in result.output
        after = bench("sql", "UPDATE runs SET host='x'", "--db", pg_url)
        assert after.exit_code == 4 and "read-only" in after.output, (statement, after.output)
    assert Store.open(pg_url, read_only=True).query("SELECT host FROM runs").host.tolist() == ["testhost"]
    assert not marker.exists()  # COPY ... TO PROGRAM never reached the server
    shown = bench("sql", "-- the server\nSHOW server_version", "--db", pg_url)  # a comment first: still SHOW
    assert shown.exit_code == 0 and "server_version" in shown.output, shown.output
    assert bench("sql", "/* a /* nested */ comment */ SELECT 1 AS one", "--db", pg_url).output.split()[0] == "one"
    for args in (["SELECT 1; UPDATE runs SET host='x'"], ["--write", "UPDATE runs SET host='a'; UPDATE runs SET host='b'"]):
        several = bench("sql", *args, "--db", pg_url)
        assert several.exit_code == 4 and "multiple commands" in several.output, several.output
    assert Store.open(pg_url, read_only=True).query("SELECT host FROM runs").host.tolist() == ["testhost"]


def test_a_statement_on_postgresql_stops_on_ctrl_c_and_at_its_time_limit(pg_url, request):
    import signal
    import time

    from helpers import bench_process

    make_db(pg_url)
    proc = bench_process("sql", "SELECT pg_sleep(60)", "--db", pg_url)
    request.addfinalizer(proc.kill)
    time.sleep(3.0)
    assert proc.poll() is None
    proc.send_signal(signal.SIGINT)
    stopped = time.monotonic()
    out, _ = proc.communicate(timeout=10)
    assert time.monotonic() - stopped < 1.0 and proc.returncode == 130, out
    timed = bench("sql", "SELECT pg_sleep(60)", "--timeout", "0.5", "--db", pg_url)
    assert timed.exit_code == 4 and "statement timeout" in timed.output


def test_a_large_result_on_postgresql_streams_in_bounded_memory(pg_url, request):
    import time
    from pathlib import Path

    from helpers import bench_process

    make_db(pg_url)
    proc = bench_process("sql", "SELECT x, repeat('y', 200) FROM generate_series(1, 100000000) AS x", "--format",
                         "csv", "--max-rows", "0", "--db", pg_url, stdout=subprocess.DEVNULL)
    request.addfinalizer(proc.kill)
    peak, deadline = 0.0, time.monotonic() + 5
    while time.monotonic() < deadline and proc.poll() is None:
        status = Path(f"/proc/{proc.pid}/status").read_text()
        peak = max(peak, int(status.split("VmRSS:")[1].split()[0]) / 1024)
        time.sleep(0.1)
    assert proc.poll() is None
    proc.terminate()
    proc.wait(timeout=10)
    assert peak < 200, f"{peak:.0f} MB"


def test_a_merge_into_postgresql_brings_a_resumed_runs_measurements(pg_url, tmp_path):
    from helpers import fake_device, fake_result
    from harness.provenance import Provenance

    node = tmp_path / "node.db"
    prov = Provenance("bench run --suite wgmma", "node7", "abc123", False, "0.1.0", "3.12", "14.2", "13.0")
    cases = ["wgmma.mma_async.m64n8k16.f32.f16.f16.SS", "wgmma.mma_async.m64n64k16.f32.f16.f16.SS"]
    with Store.open(node, create=True) as store:
        run = store.start_run(fake_device(), prov, "wgmma", None)
        store.record_case(run, fake_result(cases[0], 18.0))
        store.finish_run(run, "interrupted")
    merge([str(node)], pg_url)
    with Store.open(node) as store:
        store.resume_run(run)
        store.record_case(run, fake_result(cases[1], 18.0))
        store.finish_run(run, "complete")
    assert merge([str(node)], pg_url)[0].updated == [1]
    with Store.open(pg_url, read_only=True) as store:
        assert store.query("SELECT status FROM runs").status.tolist() == ["complete"]
        assert store.query("SELECT COUNT(DISTINCT case_id) AS n FROM results").n[0] == 2


def test_sql_fuzzing_on_postgresql_never_writes_or_crashes(pg_url):
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    make_db(pg_url)

    def state():
        with Store.open(pg_url, read_only=True) as store:
            return store.query("SELECT r.*, (SELECT COUNT(*) FROM measurement_rows) AS n FROM runs r").astype(str) \
                .values.tolist()

    before = state()
    words = st.sampled_from(["SELECT", "UPDATE runs SET host='x'", "DELETE FROM runs", ";", "COMMIT", "BEGIN",
                             "READ WRITE", "1", "'%'", "%s", "$$", "--", "/*", "*/", "FROM runs", "pg_sleep(0)",
                             "DROP TABLE runs", "SET", "TRANSACTION", "\\", "'", '"', "COPY runs TO STDOUT"])
    text = st.one_of(st.lists(words, min_size=1, max_size=8).map(" ".join),
                     st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=30))

    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
    @given(text, st.sampled_from(["table", "csv", "json", "markdown"]))
    def one(statement, fmt):
        result = bench("sql", statement, "--format", fmt, "--db", pg_url)
        if result.exit_code != 0:
            assert result.exit_code in (2, 4) and len(result.output.strip().splitlines()) == 1, result.output
            assert result.output.startswith("error: ") and "internal error" not in result.output, result.output

    one()
    assert state() == before


RUN_ROW = ("INSERT INTO runs (started_at, status, suite, command_line, host, harness_version, python_version) "
           "VALUES ('2026-11-24 00:00:00', 'complete', 'tma', 'bench run --suite tma', 'node', '0.1.0', '3.12')")


def test_schema_11_gives_the_dsmem_cases_their_own_family_on_postgresql(pg_url):
    """The SQLite test's twin (tests/test_migrations.py): a database built to schema 10 holding cases as
    the tma family stored them, then upgraded."""
    import pandas as pd
    import sqlalchemy as sa
    from alembic import command

    from test_migrations import check_dsmem_rows_moved, insert_tma_era_cases

    engine = sa.create_engine(pg_url)
    with engine.begin() as conn:
        command.upgrade(migrations.config(conn), "0010")
        insert_tma_era_cases(lambda sql, params: conn.execute(sa.text(sql), params))
    with engine.connect() as conn:
        before = pd.read_sql_query(sa.text("SELECT * FROM cases ORDER BY id"), conn)
    engine.dispose()
    store = Store.open(pg_url)
    assert store.migration is not None and store.migration.from_version == 10
    assert store.query("SELECT version_num FROM alembic_version").version_num[0] == migrations.head()
    check_dsmem_rows_moved(store, before)


def test_schema_12_renames_a_tma_loads_net_of_its_empty_sequence_on_postgresql(pg_url):
    """The SQLite test's twin (tests/test_migrations.py): a database built to schema 11 holding a run and
    the latency rows as schema 11 stored them, then upgraded."""
    import sqlalchemy as sa
    from alembic import command

    from test_migrations import check_schema_12_latencies, insert_schema_11_latencies

    engine = sa.create_engine(pg_url)
    with engine.begin() as conn:
        command.upgrade(migrations.config(conn), "0011")
        conn.execute(sa.text(RUN_ROW))
        ids = insert_schema_11_latencies(lambda sql, p: conn.execute(sa.text(sql), p),
                                         lambda sql, p: conn.execute(sa.text(sql), p).scalar())
    engine.dispose()
    store = Store.open(pg_url)
    assert store.migration is not None and store.migration.from_version == 11
    check_schema_12_latencies(store, ids)
