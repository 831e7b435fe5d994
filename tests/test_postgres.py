"""The store, the migrations, the views, the analyses, merge, concurrency and the CLI against a real
PostgreSQL server (conftest.postgres_server: initdb and pg_ctl on a temporary directory). Each test
has its twin on SQLite elsewhere in the suite; here the same calls must give the same answers."""

import sqlite3
import subprocess
import sys

from click.testing import CliRunner

import harness
from conftest import make_db
from harness.analysis.compare import against_run, compare
from harness.analysis.fleet import table as fleet_table
from harness.cli import cli
from harness import migrations
from harness.db.merge import merge
from harness.db.store import Store


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
    result = bench("sql", "DELETE FROM runs", "--db", pg_url)
    assert result.exit_code == 4 and "read-only transaction" in result.output
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
        assert con.execute("SELECT COUNT(*) FROM samples").fetchone()[0] == 16
    secret = pg_url.replace("bench@", "bench:hunter2@").replace("/t_", "/no_such_db_")
    failed = bench("runs", "--db", secret)
    assert failed.exit_code == 4 and "hunter2" not in failed.output and "bench:***@" in failed.output


def test_two_processes_write_runs_at_once(pg_url):
    """Concurrency: two writers (real processes) each store a run; both land, neither is lost."""
    script = ("import sys; sys.path.insert(0, 'tests'); from conftest import make_db; make_db(sys.argv[1])")
    writers = [subprocess.Popen([sys.executable, "-c", script, pg_url]) for _ in range(2)]
    assert [w.wait(timeout=120) for w in writers] == [0, 0]
    store = Store.open(pg_url, read_only=True)
    assert store.query("SELECT COUNT(*) AS n FROM runs").n[0] == 2
    assert store.query("SELECT COUNT(*) AS n FROM measurements").n[0] == 12
