import sqlite3

import pytest

from helpers import make_db
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
        "run": 1, "started_at": None, "status": "interrupted", "gpu": "NVIDIA H100 80GB HBM3 U-test-0",
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
    for statement in ("DELETE FROM measurement_rows", "DROP VIEW results", "UPDATE runs SET status = 'x'",
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
    assert resolve_url("sqlite:///x.db").database == "x.db"
    assert resolve_url(str(tmp_path / "a.db")).database == str(tmp_path / "a.db")
    assert resolve_url(tmp_path / "p.db").database == str(tmp_path / "p.db")  # a pathlib.Path
    monkeypatch.setenv("HOPPER_BENCH_DB", str(tmp_path / "env.db"))
    assert resolve_url(None).database.endswith("env.db")
    with pytest.raises(StoreError, match="not a database URL"):
        resolve_url("bogus://::")


@pytest.mark.parametrize("name", ["my?results.db", "50%41.db", "a#b.db", "x%2Fy.db", "sp ace&k=v.db"])
def test_a_path_is_a_file_name_taken_literally(tmp_path, monkeypatch, name):
    """URL syntax means nothing in a path: `?`, `%XX` and `#` are characters of the file name."""
    monkeypatch.chdir(tmp_path)
    make_db(tmp_path / name)
    assert resolve_url(name).database == str(tmp_path / name)
    with Store.open(name, read_only=True) as store:
        assert len(store.query("SELECT * FROM runs")) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]  # nothing else made, nothing left


@pytest.mark.parametrize("db", ["", "  ", "sqlite://", "sqlite:///:memory:"])
def test_a_database_that_keeps_nothing_is_refused(db):
    with pytest.raises(StoreError, match="names no database|in-memory"):
        resolve_url(db)


def test_derived_sample_arrays_come_back_bit_for_bit(tmp_path):
    """Schema 6 stores a peak fraction (throughput / peak) and a net latency (raw - empty) as rules over
    the arrays they come from; the samples view must give back exactly what was measured."""
    import numpy as np

    from helpers import fake_device, fake_result
    from harness.measure.measurement import Metric
    from harness.provenance import Provenance

    rng = np.random.default_rng(1)
    tflops = rng.uniform(600, 900, 7)
    peak = 132 * 4096 * 1755.0 * 1e6 / 1e12
    raw = rng.integers(100, 140, 9).astype(float)
    launch = {"warpgroups": 1, "ilp": 1}
    result = fake_result("wgmma.mma_async.m64n256k16.f32.f16.f16.SS", 128.0)
    result.metrics = [Metric("throughput_tflops", "TFLOPS", tflops, launch),
                      Metric("peak_fraction", "ratio", tflops / peak, launch),
                      Metric("latency_raw_cycles", "cycles", raw, launch),
                      Metric("latency_cycles", "cycles", raw - 48, launch),
                      Metric("sm_throughput", "FLOP/cycle/SM", rng.uniform(4000, 4096, 7), launch)]
    store = Store.open(str(tmp_path / "r.db"), create=True)
    prov = Provenance("bench run", "h", "abc", False, "0.1.0", "3.12", "14.2", "13.0")
    run_id = store.start_run(fake_device(), prov, "wgmma", None)
    store.record_case(run_id, result)
    stored = store.query("SELECT m.metric, a.samples IS NULL AS derived FROM sample_arrays a "
                         "JOIN measurements m ON m.id = a.measurement_id ORDER BY m.id")
    assert dict(zip(stored.metric, stored.derived)) == {"throughput_tflops": 0, "peak_fraction": 1,
                                                        "latency_raw_cycles": 0, "latency_cycles": 1,
                                                        "sm_throughput": 0}
    for metric in result.metrics:
        got = store.query(f"SELECT s.value FROM samples s JOIN measurements m ON m.id = s.measurement_id "
                          f"WHERE m.metric = '{metric.name}' ORDER BY s.idx").value.to_numpy()
        assert got.tolist() == metric.samples.tolist()  # equal as float64, not merely close
    ids = store.query("SELECT id, metric FROM measurements")
    arrays = store.samples_of(ids.id.tolist() + [10 ** 6])  # and one that has no samples
    assert {metric: arrays[i].tolist() for i, metric in zip(ids.id, ids.metric)} == {
        m.name: m.samples.tolist() for m in result.metrics}  # the same, read without the view
    store.engine.dispose()
    from harness.db.merge import merge

    merge([str(tmp_path / "r.db")], str(tmp_path / "m.db"))
    query = "SELECT m.metric, s.idx, s.value FROM samples s JOIN measurements m ON m.id = s.measurement_id ORDER BY 1, 2"
    assert (Store.open(str(tmp_path / "m.db")).query(query).values.tolist()
            == Store.open(str(tmp_path / "r.db")).query(query).values.tolist())


def test_strings_are_stored_once_and_logs_compressed(tmp_path):
    store = Store.open(str(make_db(tmp_path / "r.db")))
    texts = store.query("SELECT text FROM texts").text.tolist()
    assert len(texts) == len(set(texts)) and "issue_interval_cycles" in texts
    assert store.query("SELECT COUNT(*) AS n FROM measurement_rows").n[0] == 6
    import zlib
    logs = store.query("SELECT compile_log_zlib FROM builds").compile_log_zlib
    assert all("Compiling entry function 'probe_chain'" in zlib.decompress(blob).decode() for blob in logs)


def test_a_wal_file_whose_shm_cannot_be_made_is_read(tmp_path):
    """Issue 46, item 13: on a read-only file system a reader of a WAL file cannot make its -shm, and the file was
    called "not a hopper-bench database (unable to open database file)". Directories in the -wal's and -shm's place
    stand in for the read-only mount (root can write anywhere a permission forbids): the reading commands now open
    the file as it is, and write nothing."""
    from click.testing import CliRunner

    from harness.cli import cli
    from helpers import digest

    db = make_db(tmp_path / "r.db")
    (tmp_path / "r.db-shm").mkdir()
    (tmp_path / "r.db-wal").mkdir()
    before = digest(db)
    out = tmp_path / "elsewhere"
    for args in (["runs", "--db", str(db)], ["sql", "SELECT COUNT(*) AS n FROM runs", "--db", str(db)],
                 ["compare", "--db", str(db)], ["report", "--db", str(db), "--out", str(out / "reports")]):
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 0 and "not a hopper-bench database" not in result.output, result.output
    assert digest(db) == before and sorted(p.name for p in tmp_path.iterdir()) == \
        ["elsewhere", "r.db", "r.db-shm", "r.db-wal"]
