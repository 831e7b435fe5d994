import sqlite3

import pytest

from conftest import make_db
from harness.errors import StoreError
from harness.db.store import Store, resolve_url

# docs/architecture.md, "Database": the columns the `results` view promises.
RESULTS_COLUMNS = {"run_id", "run_started_at", "run_status", "gpu_name", "sm_count", "sm_clock_mhz", "suite",
                   "family", "case_id", "m", "n", "k", "dtype_a", "dtype_b", "dtype_acc", "operands",
                   "sparse", "metric", "value", "unit", "n_samples", "valid"}


def test_round_trip_through_the_results_view(tmp_path):
    store = Store.open(str(make_db(tmp_path / "r.db")))
    frame = store.query("SELECT * FROM results")
    assert RESULTS_COLUMNS <= set(frame.columns)
    interval = frame[(frame.metric == "issue_interval_cycles") & (frame.n == 8)]
    assert interval.value.item() == 18.0 and interval.n_samples.item() == 4 and interval.valid.item() == 1
    assert interval.gpu_name.item() == "NVIDIA H100 80GB HBM3" and interval.sm_clock_mhz.item() == 1980.0
    tput = frame[(frame.metric == "throughput_tflops") & (frame.n == 256)]
    assert tput.warpgroups.item() == 2 and tput.value.item() == 640.0


def test_raw_samples_are_kept(tmp_path):
    store = Store.open(str(make_db(tmp_path / "r.db")))
    samples = store.query("""SELECT s.value FROM samples s JOIN results r ON r.measurement_id = s.measurement_id
                             WHERE r.metric = 'issue_interval_cycles' AND r.n = 256 ORDER BY s.idx""")
    assert list(samples.value) == [128.0, 128.0, 128.0 * 1.001, 128.0]


def test_invalid_cases_have_no_value_and_keep_their_error(tmp_path):
    store = Store.open(str(make_db(tmp_path / "r.db")))
    invalid = store.query("SELECT * FROM results WHERE NOT valid")
    assert len(invalid) == 2 and invalid.value.isna().all()  # each metric the case declares, empty
    assert invalid.error.str.startswith("validation failed").all()


def test_runs_summary(tmp_path):
    runs = Store.open(str(make_db(tmp_path / "r.db", status="interrupted"))).runs()
    assert runs.to_dict("records")[0] | {"started_at": None} == {
        "run": 1, "started_at": None, "status": "interrupted", "gpu": "NVIDIA H100 80GB HBM3",
        "suite": "wgmma", "filter": None, "cases": 3, "invalid": 1, "faults": 0, "resumes": 0,
        "git_commit": "abc123"}


def test_sqlite_is_in_wal_mode(tmp_path):
    path = make_db(tmp_path / "r.db")
    assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_missing_database_is_not_created_by_readers(tmp_path):
    with pytest.raises(StoreError, match="no results database"):
        Store.open(str(tmp_path / "absent.db"))
    assert not (tmp_path / "absent.db").exists()


def test_foreign_databases_and_other_files_are_refused_untouched(tmp_path):
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.commit()
    text, empty = tmp_path / "notes.txt", tmp_path / "empty.db"
    text.write_text("not a database\n")
    empty.touch()
    for path, message in ((other, "not a hopper-bench database"), (text, "not a hopper-bench database"),
                          (empty, "an empty file")):
        before = path.read_bytes()
        with pytest.raises(StoreError, match=message):
            Store.open(str(path))
        assert path.read_bytes() == before


def test_sql_is_read_only_unless_asked(tmp_path):
    store = Store.open(str(make_db(tmp_path / "r.db")))
    for statement in ("DELETE FROM measurements", "DROP VIEW results", "UPDATE runs SET status = 'x'",
                      "CREATE TABLE t (x)"):
        with pytest.raises(StoreError, match="read-only: pass --write"):
            store.query(statement)
    assert store.query("SELECT COUNT(*) AS n FROM measurements").n[0] == 6
    store.query("UPDATE runs SET status = 'failed' WHERE id = 1", write=True)
    assert store.query("SELECT status FROM runs").status[0] == "failed"
    store.query("SELECT 1")  # the pooled connection is writable again for the store itself
    store.finish_run(1, "complete")
    assert store.query("SELECT status FROM runs").status[0] == "complete"


def test_one_statement_at_a_time(tmp_path):
    store = Store.open(str(make_db(tmp_path / "r.db")))
    with pytest.raises(StoreError, match="SQL error: .*one statement at a time"):
        store.query("SELECT 1; DELETE FROM runs")
    assert len(store.query("SELECT * FROM runs")) == 1


def test_sql_errors_are_one_line(tmp_path):
    store = Store.open(str(make_db(tmp_path / "r.db")))
    with pytest.raises(StoreError, match="^SQL error: no such table: nope$"):
        store.query("SELECT * FROM nope")


def test_urls_and_paths(tmp_path, monkeypatch):
    assert resolve_url("sqlite:///x.db") == "sqlite:///x.db"
    assert resolve_url(str(tmp_path / "a.db")) == f"sqlite:///{tmp_path / 'a.db'}"
    monkeypatch.setenv("HOPPER_BENCH_DB", str(tmp_path / "env.db"))
    assert resolve_url(None).endswith("env.db")
    with pytest.raises(StoreError, match="not a database URL"):
        resolve_url("bogus://::")
