"""Every older schema opens and upgrades (tests/fixtures/ holds one database per schema)."""

import sqlite3

import pytest
from click.testing import CliRunner

from helpers import FIXTURES, copy_fixture
from harness import migrations
from harness.cli import cli
from harness.errors import StoreError
from harness.db.store import Store
from harness.db.tables import SCHEMA_VERSION, register_functions

OLD_FIXTURES = sorted(p.name for p in FIXTURES.glob("schema_v*.db") if p.name != f"schema_v{SCHEMA_VERSION}.db")


def _plain(row):
    return tuple(None if isinstance(v, float) and v != v else v for v in row)  # NaN and NULL alike


def test_there_is_a_fixture_for_every_schema_version():
    assert {f"schema_v{n}.db" for n in range(1, SCHEMA_VERSION + 1)} == {p.name for p in FIXTURES.glob("schema_v*.db")}
    assert migrations.known_revisions() == [f"{n:04d}" for n in range(1, SCHEMA_VERSION + 1)]
    assert migrations.head() == f"{SCHEMA_VERSION:04d}"


@pytest.mark.parametrize("name", OLD_FIXTURES)
def test_an_old_database_upgrades_on_open_and_keeps_its_data(tmp_path, name):
    path = copy_fixture(name, tmp_path)
    old = sqlite3.connect(path)
    register_functions(old)  # the samples view of schema 10 on expands packed arrays through samples_json
    # Schema 8 renamed wgmma's latency_cycles (its net of fence, commit and wait is no latency)
    measurements = old.execute("""SELECT m.id, CASE WHEN c.family = 'wgmma' AND m.metric = 'latency_cycles'
                                  THEN 'latency_added_cycles' ELSE m.metric END, m.value, m.valid, m.error
                                  FROM measurements m JOIN cases c ON c.id = m.case_pk ORDER BY m.id""").fetchall()
    samples = old.execute("SELECT * FROM samples ORDER BY measurement_id, idx").fetchall()
    old.close()
    store = Store.open(str(path))
    assert store.migration.to_version == SCHEMA_VERSION and store.migration.from_version < SCHEMA_VERSION
    assert store.migration.backup.exists() and store.schema_version() == SCHEMA_VERSION
    frame = store.query("SELECT measurement_id, metric, value, valid, error, status, flagged FROM results "
                        "ORDER BY measurement_id")
    kept = frame[["measurement_id", "metric", "value", "valid", "error"]].itertuples(index=False)
    assert [_plain(row) for row in kept] == [_plain(row) for row in measurements]
    assert set(frame.status) <= {"valid", "invalid", "fault"} and (frame.status == "invalid").sum() >= 2
    assert ((frame.status == "valid") == frame.valid.astype(bool)).all()
    assert store.query("SELECT * FROM samples ORDER BY measurement_id, idx").values.tolist() == [list(s) for s in samples]
    backup = sqlite3.connect(store.migration.backup)  # the backup is the file as it was
    assert backup.execute("SELECT COUNT(*) FROM measurements").fetchone()[0] == len(measurements)


def test_an_upgraded_database_opens_again_without_a_migration(tmp_path):
    path = copy_fixture("schema_v1.db", tmp_path)
    Store.open(str(path)).engine.dispose()
    assert Store.open(str(path)).migration is None


def test_the_cli_says_once_that_it_upgraded_the_file(tmp_path):
    """A run or `bench db upgrade` upgrades (reading commands and `sql --write` refuse an older file:
    a statement is written against the current schema); it says so once."""
    path = copy_fixture("schema_v1.db", tmp_path)
    before = path.read_bytes()
    refused = CliRunner().invoke(cli, ["sql", "--write", "SELECT 1", "--db", str(path)])
    assert refused.exit_code == 4 and "bench db upgrade" in refused.output and path.read_bytes() == before
    first = CliRunner().invoke(cli, ["db", "upgrade", "--db", str(path)])
    assert first.exit_code == 0
    notes = [line for line in first.output.splitlines() if line.startswith("note: upgraded")]
    assert len(notes) == 1 and f"from schema 1 to {SCHEMA_VERSION}" in notes[0] and ".schema1.bak" in notes[0]
    second = CliRunner().invoke(cli, ["db", "upgrade", "--db", str(path)])
    assert second.exit_code == 0 and "nothing to do" in second.output and "note:" not in second.output


def test_bench_db_upgrade(tmp_path):
    path = copy_fixture("schema_v1.db", tmp_path)
    result = CliRunner().invoke(cli, ["db", "upgrade", "--db", str(path)])
    assert result.exit_code == 0 and "upgraded" in result.output
    assert sqlite3.connect(path).execute("SELECT version_num FROM alembic_version").fetchone()[0] == migrations.head()


def test_a_newer_database_is_refused_untouched(tmp_path):
    path = copy_fixture(f"schema_v{SCHEMA_VERSION}.db", tmp_path)
    con = sqlite3.connect(path)
    con.execute("UPDATE alembic_version SET version_num = '0099'")
    con.commit()
    con.close()
    before = path.read_bytes()
    with pytest.raises(StoreError, match="schema version 99; this harness reads versions up to"):
        Store.open(str(path))
    assert path.read_bytes() == before


def _insert_text(con, text: str) -> int:
    from harness.db.tables import TextRow

    digest = TextRow.digest_of(text)
    con.execute("INSERT OR IGNORE INTO texts (digest, text) VALUES (?, ?)", (digest, text))
    return con.execute("SELECT id FROM texts WHERE digest = ?", (digest,)).fetchone()[0]


def test_schema_8_gives_each_metric_one_meaning(tmp_path):
    """A sparse wgmma's peak_fraction was of the dense peak (1.8 here): now of the sparse peak, twice the
    dense (metric registry), in value, samples and note; wgmma's latency_cycles is renamed, mma's is not."""
    path = copy_fixture("schema_v7.db", tmp_path)
    con = sqlite3.connect(path)
    run = con.execute("SELECT MIN(id) FROM runs").fetchone()[0]
    ids = {}
    for case_id, family, sparse in (("wgmma.mma_async.sp.m64n256k32.f32.f16.f16.SS", "wgmma", 1),
                                    ("mma.sync.m16n8k16.row.col.f32.f16.f16.f32", "mma", 0)):
        con.execute("INSERT INTO cases (case_id, family, params, sparse) VALUES (?, ?, '{}', ?)",
                    (case_id, family, sparse))
        ids[family] = con.execute("SELECT id FROM cases WHERE case_id = ?", (case_id,)).fetchone()[0]
    launch, valid = _insert_text(con, '{"ilp":1}'), _insert_text(con, "valid")
    rows = (("wgmma", "peak_fraction", 1.8, "[1.8,1.6]", "peak 1978.6 at 1830 MHz"),
            ("wgmma", "latency_cycles", 30.0, "[30,31]", None), ("mma", "latency_cycles", 17.0, "[17,17]", None))
    for family, metric, value, samples, note in rows:
        con.execute("""INSERT INTO measurement_rows (run_id, case_pk, metric_id, unit_id, launch_id, status_id, notes_id,
                       value, mean, minimum, maximum, stdev, spread, n_samples, valid, created_at, telemetry_samples)
                       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0.1, 0.01, 2, 1, '2026-11-24 00:00:00', 0)""",
                    (run, ids[family], _insert_text(con, metric), _insert_text(con, "ratio"), launch, valid,
                     _insert_text(con, note) if note else None, value, value, value, value))
        measurement = con.execute("SELECT MAX(id) FROM measurement_rows").fetchone()[0]
        con.execute("INSERT INTO sample_arrays (measurement_id, samples) VALUES (?, ?)", (measurement, samples))
    con.commit()
    con.close()
    store = Store.open(str(path))
    assert store.schema_version() == SCHEMA_VERSION
    frame = store.query(f"""SELECT c.family, m.metric, m.value, m.maximum, m.stdev, m.spread, m.notes
                            FROM measurements m JOIN cases c ON c.id = m.case_pk
                            WHERE m.case_pk IN ({ids['wgmma']}, {ids['mma']}) ORDER BY m.metric""")
    got = {(row.family, row.metric): row for row in frame.itertuples()}
    peak = got[("wgmma", "peak_fraction")]
    assert (peak.value, peak.maximum, peak.stdev, peak.spread) == (0.9, 0.9, 0.05, 0.01)
    assert peak.notes.startswith("peak 3957.2 at 1830 MHz")
    assert got[("wgmma", "latency_added_cycles")].value == 30.0 and ("wgmma", "latency_cycles") not in got
    assert got[("mma", "latency_cycles")].value == 17.0
    samples = store.query(f"""SELECT s.value FROM samples s JOIN measurements m ON m.id = s.measurement_id
                              WHERE m.case_pk = {ids['wgmma']} AND m.metric = 'peak_fraction' ORDER BY s.idx""")
    assert samples.value.tolist() == [0.9, 0.8]


def test_schema_9_gives_emulated_mma_a_call_interval(tmp_path):
    """An emulated mma form (builds.emulated, from the SASS check) issues no instruction: its stored
    issue_interval_cycles becomes call_interval_cycles; a native form's, and a latency, stay."""
    path = copy_fixture("schema_v8.db", tmp_path)
    con = sqlite3.connect(path)
    run = con.execute("SELECT MIN(id) FROM runs").fetchone()[0]
    launch, valid, cycles = _insert_text(con, '{"ilp":8}'), _insert_text(con, "valid"), _insert_text(con, "cycles")
    ids = {}
    for name, case_id, emulated in (("emulated", "mma.sync.m16n8k32.row.col.f32.e4m3.e4m3.f32", 1),
                                    ("native", "mma.sync.m16n8k16.row.col.f32.f16.f16.f32", 0)):
        con.execute("INSERT INTO cases (case_id, family, params) VALUES (?, 'mma', '{}')", (case_id,))
        case_pk = con.execute("SELECT id FROM cases WHERE case_id = ?", (case_id,)).fetchone()[0]
        con.execute("""INSERT INTO builds (build_hash, source_hash, options, nvrtc_version, emulated, compile_log_zlib)
                       VALUES (?, 'x', '', '13.0', ?, x'')""", (f"hash-{name}", emulated))
        build = con.execute("SELECT id FROM builds WHERE build_hash = ?", (f"hash-{name}",)).fetchone()[0]
        for metric in ("issue_interval_cycles", "latency_cycles"):
            con.execute("""INSERT INTO measurement_rows (run_id, case_pk, build_id, metric_id, unit_id, launch_id,
                           status_id, value, n_samples, valid, created_at, telemetry_samples)
                           VALUES (?, ?, ?, ?, ?, ?, ?, 52.1, 1, 1, '2026-11-24 00:00:00', 0)""",
                        (run, case_pk, build, _insert_text(con, metric), cycles, launch, valid))
        ids[name] = case_pk
    con.commit()
    con.close()
    store = Store.open(str(path))
    frame = store.query("SELECT case_pk, metric FROM measurements WHERE case_pk IN "
                        f"({ids['emulated']}, {ids['native']}) ORDER BY case_pk, metric")
    assert set(zip(frame.case_pk, frame.metric)) == {
        (ids["emulated"], "call_interval_cycles"), (ids["emulated"], "latency_cycles"),
        (ids["native"], "issue_interval_cycles"), (ids["native"], "latency_cycles")}


# Cases as the tma family stored them before schema 11: its params dict (eleven keys) for the DSMEM ones.
TMA_ERA = {
    "ld.shared::cluster.u32.cluster4": ("tma", {"op": "dsmem", "cluster": 4, "spread": False, "pattern": ""}),
    "st.shared::cluster.u32.cluster8.spread": ("tma", {"op": "dsmem-store", "cluster": 8, "spread": True, "pattern": ""}),
    "ld.shared::cluster.u32.cluster2.chase.local": ("tma", {"op": "dsmem-chase", "cluster": 2, "spread": False,
                                                            "pattern": "local"}),
    "cp.async.bulk.shared::cluster.global.8192B": ("tma", {"op": "bulk", "box": [8192], "cluster": 1}),
    "ld.global.v4.u32": ("tma", {"op": "read", "cluster": 1}),
    "ld.shared.u32.pchase": ("memory", {"level": "shared"}),
}
TMA_DEFAULTS = {"rank": 1, "elem": 1, "box": [], "swizzle": 0, "gmap": False, "im2col": False, "promotion": 128,
                "spread": False, "pattern": ""}


def insert_tma_era_cases(execute) -> None:
    """The cases above as a schema-10 database holds them (`execute(sql, params)` of either backend)."""
    import json

    for case_id, (family, params) in TMA_ERA.items():
        stored = {**TMA_DEFAULTS, **params} if family == "tma" else params
        instruction = case_id.split(".cluster")[0] if case_id.startswith(("ld.shared::", "st.shared::")) else None
        execute("INSERT INTO cases (case_id, family, params, instruction) VALUES (:c, :f, :p, :i)",
                {"c": case_id, "f": family, "p": json.dumps(stored, sort_keys=True), "i": instruction})


def check_dsmem_rows_moved(store, before) -> None:
    """Every DSMEM case is the dsmem family's now; nothing else of the cases changed, params included,
    and each DSMEM row's params still make the case its id names."""
    import json

    from harness.families.dsmem.cases import from_params
    from harness.registry import parse_case_id

    after = store.query("SELECT * FROM cases ORDER BY id")
    assert after.drop(columns="family").astype(str).values.tolist() == \
        before.drop(columns="family").astype(str).values.tolist()
    moved = dict(zip(after.case_id, after.family))
    for case_id, family in zip(before.case_id, before.family):
        dsmem = case_id.startswith(("ld.shared::cluster", "st.shared::cluster"))
        assert moved[case_id] == ("dsmem" if dsmem else family), case_id
    for case_id, params in zip(after.case_id, after.params):
        if moved[case_id] == "dsmem":
            assert from_params(json.loads(params)) == parse_case_id(case_id)
            assert parse_case_id(case_id).family == "dsmem"


def test_schema_11_gives_the_dsmem_cases_their_own_family(tmp_path):
    """Cases and measurements stored by the tma family: the DSMEM ones (ids starting ld.shared::cluster or
    st.shared::cluster) become the dsmem family's; their ids, params and measurements, and every other
    row, stay as they were (a bulk copy to shared::cluster and the memory family's ld.shared keep theirs)."""
    import pandas as pd

    path = copy_fixture("schema_v10.db", tmp_path)
    con = sqlite3.connect(path)
    insert_tma_era_cases(lambda sql, params: con.execute(sql, params))
    run = con.execute("SELECT MIN(id) FROM runs").fetchone()[0]
    dsmem = con.execute("SELECT id FROM cases WHERE case_id = 'ld.shared::cluster.u32.cluster4'").fetchone()[0]
    launch, valid, cycles = _insert_text(con, '{"cluster":4}'), _insert_text(con, "valid"), _insert_text(con, "cycles")
    con.execute("""INSERT INTO measurement_rows (run_id, case_pk, metric_id, unit_id, launch_id, status_id, value,
                   n_samples, valid, created_at, telemetry_samples)
                   VALUES (?, ?, ?, ?, ?, ?, 201.5, 1, 1, '2026-11-24 00:00:00', 0)""",
                (run, dsmem, _insert_text(con, "latency_cycles"), cycles, launch, valid))
    con.commit()
    measurements = con.execute("SELECT * FROM measurement_rows ORDER BY id").fetchall()
    before = pd.read_sql_query("SELECT * FROM cases ORDER BY id", con)
    con.close()
    store = Store.open(str(path))
    assert store.migration.from_version == 10 and store.schema_version() == SCHEMA_VERSION
    check_dsmem_rows_moved(store, before)
    after = store.query("SELECT * FROM measurement_rows ORDER BY id")
    assert [_plain(row) for row in after.itertuples(index=False)] == [_plain(row) for row in measurements]
    row = store.query("SELECT family, case_id, instruction, value FROM results "
                      "WHERE case_id = 'ld.shared::cluster.u32.cluster4'")
    assert row.values.tolist() == [["dsmem", "ld.shared::cluster.u32.cluster4", "ld.shared::cluster.u32", 201.5]]


# Rows of schema 11 (notes as the tma family wrote them) and what schema 12 calls them.
SCHEMA_11_LATENCIES = (
    ("cp.async.bulk.tensor.2d.shared::cluster.global.tile.b16.box64x64.sw128", "tma",
     "net of 52 cycles for arrive.expect_tx of 0 bytes + try_wait without a copy", "latency_added_cycles"),
    ("cp.async.bulk.shared::cluster.global.8192B", "tma",
     "net of 53 cycles for arrive.expect_tx of 0 bytes + try_wait without a copy; the tile prefetched to the L2 "
     "4000 cycles before", "latency_added_cycles"),
    ("cp.async.bulk.tensor.2d.shared::cluster.global.tile.b16.box64x64.sw128.multicast4", "tma",
     "net of 640.5 cycles for arrive.expect_tx of 0 bytes + try_wait without a copy", "latency_added_cycles"),
    ("mbarrier.arrive.expect_tx.then.try_wait", "tma", "net of 2 cycles for the two clock reads", "latency_cycles"),
    ("cp.async.bulk.tensor.2d.global.shared::cta.tile.b16.box64x64.sw128", "tma",
     "net of 38 cycles for commit_group + wait_group 0 without a store", "latency_cycles"),
    ("ld.global.cg.u32.l2.chase", "memory", "net of 52 cycles for arrive.expect_tx of 0 bytes + try_wait without a copy",
     "latency_cycles"),
)


def insert_schema_11_latencies(execute, scalar) -> dict[str, int]:
    """The rows above in a schema-11 database (`execute(sql, params)`, `scalar(sql, params)` of either
    backend, which already holds a run); returns each case's primary key."""
    import hashlib

    def text(value: str) -> int:
        digest = hashlib.blake2b(value.encode(), digest_size=8).hexdigest()
        if scalar("SELECT id FROM texts WHERE digest = :d", {"d": digest}) is None:
            execute("INSERT INTO texts (digest, text) VALUES (:d, :t)", {"d": digest, "t": value})
        return scalar("SELECT id FROM texts WHERE digest = :d", {"d": digest})

    run = scalar("SELECT MIN(id) FROM runs", {})
    ids = {}
    for case_id, family, note, _ in SCHEMA_11_LATENCIES:
        execute("INSERT INTO cases (case_id, family, params) VALUES (:c, :f, '{}')", {"c": case_id, "f": family})
        ids[case_id] = scalar("SELECT id FROM cases WHERE case_id = :c", {"c": case_id})
        execute("""INSERT INTO measurement_rows (run_id, case_pk, metric_id, unit_id, launch_id, status_id, notes_id,
                   value, n_samples, valid, created_at, telemetry_samples)
                   VALUES (:r, :c, :m, :u, :l, :s, :n, 246.0, 1, TRUE, '2026-11-24 00:00:00', 0)""",
                {"r": run, "c": ids[case_id], "m": text("latency_cycles"), "u": text("cycles"),
                 "l": text('{"source":"L2"}'), "s": text("valid"), "n": text(note)})
    return ids


def check_schema_12_latencies(store, ids: dict[str, int]) -> None:
    frame = store.query("SELECT case_pk, metric, value, notes FROM measurements WHERE case_pk IN "
                        f"({', '.join(map(str, ids.values()))})")
    got = {(pk, metric): (value, notes) for pk, metric, value, notes in frame.itertuples(index=False)}
    assert len(got) == len(SCHEMA_11_LATENCIES)
    for case_id, _, note, metric in SCHEMA_11_LATENCIES:
        assert got[(ids[case_id], metric)] == (246.0, note), case_id


def test_schema_12_renames_a_tma_loads_net_of_its_empty_sequence(tmp_path):
    """A TMA load's latency_cycles stored before schema 12 was its sequence less the same sequence without
    the copy (another launch): latency_added_cycles now, value and notes kept. The barrier's (net of two
    clock reads), a store's and another family's rows keep their name."""
    path = copy_fixture("schema_v11.db", tmp_path)
    con = sqlite3.connect(path)
    ids = insert_schema_11_latencies(lambda sql, p: con.execute(sql, p),
                                     lambda sql, p: (con.execute(sql, p).fetchone() or (None,))[0])
    con.commit()
    con.close()
    store = Store.open(str(path))
    assert store.migration.from_version == 11 and store.schema_version() == SCHEMA_VERSION
    check_schema_12_latencies(store, ids)
