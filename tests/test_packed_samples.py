"""Schema 10 stores each sample array packed (harness.db.tables.pack_samples): every float64 comes back
bit for bit, through the `samples` view, Store.samples_of and the migration that packed the old JSON."""

import importlib.util
import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from helpers import copy_fixture, make_db
from harness.db.store import Store
from harness.db.tables import json_samples, pack_samples, register_functions, unpack_samples

ROOT = Path(__file__).resolve().parent.parent
MIGRATION = ROOT / "harness" / "migrations" / "versions" / "0010_packed_samples.py"

rng = np.random.default_rng(32)
ARRAYS = [
    [], [18.0] * 7, [45.0] * 60, [0.0], [-0.0], [-0.0, 1.0], [1.0, -0.0], [-5, 3, 100000, -7], [2.0 ** 53 - 1, 0.0],
    [2.0 ** 53, 1.0], [2.0 ** 60], [-2.0 ** 62, 2.0 ** 62], [float("nan"), 1.0], [float("inf"), -float("inf")],
    [5e-324, 1e308], [0.1, 0.2, 0.30000000000000004], [880.012448391241, 877.9317386648631, 879.6115200499673],
    [8.000284830729166, 8.0001220703125, 7.999918619791667, 8.0], list(rng.normal(1000, 5, 200)),
    list(np.round(rng.normal(300, 20, 500))), list(rng.integers(-2 ** 40, 2 ** 40, 50).astype(float)),
    list(rng.integers(0, 2 ** 31, 50).astype(float)), list(rng.random(64) * 1e-300),
]


def _bits(values) -> bytes:
    return np.asarray(values, dtype="<f8").tobytes()


@pytest.mark.parametrize("values", ARRAYS, ids=range(len(ARRAYS)))
def test_a_packed_array_comes_back_bit_for_bit(values):
    packed = pack_samples(values)
    assert isinstance(packed, bytes) and _bits(unpack_samples(packed)) == _bits(values)
    assert unpack_samples(packed).dtype == np.float64
    if all(np.isfinite(values)):  # the JSON form (PostgreSQL, schemas 5 to 9) reads back the same
        assert _bits(unpack_samples(json_samples(values))) == _bits(values)


def test_packing_is_smaller_than_the_json_it_replaces():
    for values in ARRAYS[1:]:
        assert len(pack_samples(values)) <= 8 * len(values) + 1
    measured = list(rng.normal(1000, 5, 10))
    assert len(pack_samples(measured)) < len(json_samples(measured)) * 0.7
    assert len(pack_samples([121.0] * 60)) < 12


def test_the_migration_packs_as_the_harness_does():
    """0010 keeps its own copy of the packing (a migration stays as it was): the two agree."""
    spec = importlib.util.spec_from_file_location("migration_0010", MIGRATION)
    migration = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(migration)
    for values in ARRAYS:
        assert migration.pack(np.asarray(values, dtype=float)) == pack_samples(values)
        assert _bits(migration.unpack(pack_samples(values))) == _bits(values)


def test_the_view_and_samples_of_read_the_packed_arrays(tmp_path):
    path = make_db(tmp_path / "r.db")
    store = Store.open(str(path), read_only=True)
    view = store.query("SELECT measurement_id, idx, value FROM samples ORDER BY measurement_id, idx")
    assert len(view)
    arrays = store.samples_of(view.measurement_id.unique())
    for measurement_id, rows in view.groupby("measurement_id"):
        assert _bits(arrays[measurement_id]) == _bits(rows.value)
    with sqlite3.connect(path) as con:  # stored packed; a plain connection reads the view once it has the function
        kinds = {type(row[0]) for row in con.execute("SELECT samples FROM sample_arrays WHERE samples IS NOT NULL")}
        assert kinds == {bytes}
        register_functions(con)
        assert con.execute("SELECT COUNT(*) FROM samples").fetchone()[0] == len(view)


def test_an_old_database_is_packed_exactly(tmp_path):
    """The schema 9 fixture's JSON arrays, packed by the upgrade: the same samples, and no array left as text."""
    path = copy_fixture("schema_v9.db", tmp_path)
    with sqlite3.connect(path) as con:
        before = {m: json.loads(s) for m, s in con.execute("SELECT measurement_id, samples FROM sample_arrays "
                                                           "WHERE samples IS NOT NULL")}
    store = Store.open(str(path))
    assert store.migration is not None and store.schema_version() >= 10
    after = store.samples_of(before)
    assert set(after) == set(before) and all(_bits(after[m]) == _bits(v) for m, v in before.items())
    with sqlite3.connect(path) as con:
        assert con.execute("SELECT COUNT(*) FROM sample_arrays WHERE typeof(samples) = 'text'").fetchone()[0] == 0
