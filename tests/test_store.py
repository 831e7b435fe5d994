import sqlite3

import pytest

from conftest import make_db
from harness.errors import StoreError
from harness.store import Store, resolve_url

# DESIGN.md section 5: the columns the `results` view promises.
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
    assert len(invalid) == 6 and invalid.value.isna().all()
    assert invalid.error.str.startswith("validation failed").all()


def test_runs_summary(tmp_path):
    runs = Store.open(str(make_db(tmp_path / "r.db", status="interrupted"))).runs()
    assert runs.to_dict("records")[0] | {"started_at": None} == {
        "run": 1, "started_at": None, "status": "interrupted", "gpu": "NVIDIA H100 80GB HBM3",
        "suite": "wgmma", "filter": None, "cases": 3, "invalid": 1, "git_commit": "abc123"}


def test_sqlite_is_in_wal_mode(tmp_path):
    path = make_db(tmp_path / "r.db")
    assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_missing_database_is_not_created_by_readers(tmp_path):
    with pytest.raises(StoreError, match="no results database"):
        Store.open(str(tmp_path / "absent.db"))
    assert not (tmp_path / "absent.db").exists()


def test_foreign_and_newer_databases_are_refused(tmp_path):
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.commit()
    with pytest.raises(StoreError, match="not a hopper-bench database"):
        Store.open(str(other))
    newer = make_db(tmp_path / "newer.db")
    con = sqlite3.connect(newer)
    con.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    con.commit()
    with pytest.raises(StoreError, match="schema version 99"):
        Store.open(str(newer))


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
