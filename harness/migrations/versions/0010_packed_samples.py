"""Schema 10: sample arrays packed, exactly, in a third of their JSON text (SQLite).

`sample_arrays.samples` held each array as JSON text: 19.4 MB of the shipped database's 60 MB for 1.6
million samples, most of them 17-digit reprs of float64 (12 bytes each and more). On SQLite it is now
a BLOB (harness.db.tables.pack_samples): one kind byte, then either the float64 values as 8 byte
planes, or, where every value is a whole number, the first value and the differences of the next as
integers of the narrowest width that holds them; raw-deflated wherever that is shorter. The float64
bits come back exactly (tests/test_packed_samples.py compares every array of a database).

The `samples` view expands an array through the SQL function `samples_json`, which every SQLite
connection of the harness registers (harness/db/connections.py); it lists the same rows, bit for bit.
A plain `sqlite3` shell lacks the function: read samples through `bench sql`, `Store.samples_of` or
harness.results.

PostgreSQL keeps JSON text (its `samples` view expands it with jsonb), and the ORM reads either form,
so `bench merge` between the two stays exact. Derived arrays (`derived_from`) are unchanged.

Revision ID: 0010
"""

import json
import zlib

import numpy as np
import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

# The packed form, as harness/db/tables.py pack_samples writes it (copied: a migration stays as it was).
FLOAT, DEFLATED = 0, 0x80
INT_KINDS = {1: "<i1", 2: "<i2", 3: "<i4", 4: "<i8"}


def pack(values: np.ndarray) -> bytes:
    a = np.ascontiguousarray(values, dtype="<f8")
    whole = a.size > 0 and bool(np.all(np.isfinite(a)) and np.all(a == np.rint(a)) and np.all(np.abs(a) < 2 ** 53)
                                and not np.any((a == 0) & np.signbit(a)))
    if whole:
        steps = np.diff(a.astype(np.int64), prepend=np.int64(0))
        kind = next(k for k, dtype in INT_KINDS.items()
                    if np.iinfo(dtype).min <= int(steps.min()) and int(steps.max()) <= np.iinfo(dtype).max)
        body = steps.astype(INT_KINDS[kind]).tobytes()
    else:
        kind, body = FLOAT, a.view(np.uint8).reshape(-1, 8).T.tobytes()
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    packed = packer.compress(body) + packer.flush()
    return bytes([kind | DEFLATED]) + packed if len(packed) < len(body) else bytes([kind]) + body


def unpack(stored: bytes) -> np.ndarray:
    kind, body = stored[0], stored[1:]
    if kind & DEFLATED:
        body = zlib.decompress(body, -15)
    kind &= ~DEFLATED
    if kind in INT_KINDS:
        return np.cumsum(np.frombuffer(body, dtype=INT_KINDS[kind]).astype(np.int64)).astype(float)
    return np.frombuffer(body, dtype=np.uint8).reshape(8, -1).T.copy().view("<f8").ravel().astype(float)


SAMPLES_SQLITE = """
CREATE VIEW samples AS
SELECT a.measurement_id AS measurement_id, CAST(j.key AS INTEGER) AS idx, CAST(j.value AS REAL) AS value
FROM sample_arrays a, json_each(samples_json(a.samples)) j
WHERE a.samples IS NOT NULL
UNION ALL
SELECT a.measurement_id, CAST(j.key AS INTEGER), (CAST(j.value AS REAL) - a.subtract) / a.divide_by
FROM sample_arrays a JOIN sample_arrays s ON s.measurement_id = a.derived_from, json_each(samples_json(s.samples)) j
"""


def upgrade() -> None:
    conn = op.get_bind()
    if conn.dialect.name == "sqlite":
        op.execute("DROP VIEW samples")
        op.create_table(
            "sample_arrays_v10",
            sa.Column("measurement_id", sa.Integer, sa.ForeignKey("measurement_rows.id"), primary_key=True),
            sa.Column("samples", sa.LargeBinary),
            sa.Column("derived_from", sa.Integer, sa.ForeignKey("measurement_rows.id")),
            sa.Column("subtract", sa.Float), sa.Column("divide_by", sa.Float))
        table = sa.table("sample_arrays_v10", *[sa.column(c) for c in
                                                ("measurement_id", "samples", "derived_from", "subtract", "divide_by")])
        last = -1
        while True:  # in slices of 5000 arrays, to bound memory on large databases
            rows = conn.execute(sa.text("SELECT measurement_id, samples, derived_from, subtract, divide_by "
                                        "FROM sample_arrays WHERE measurement_id > :last "
                                        "ORDER BY measurement_id LIMIT 5000"), {"last": last}).mappings().all()
            if not rows:
                break
            out = []
            for row in rows:
                packed = None
                if row["samples"] is not None:
                    values = np.asarray(json.loads(row["samples"]), dtype=float)
                    packed = pack(values)
                    if unpack(packed).tobytes() != values.tobytes():
                        raise RuntimeError(f"sample array of measurement {row['measurement_id']} does not "
                                           "come back exactly once packed")
                out.append({**row, "samples": packed})
            conn.execute(table.insert(), out)
            last = rows[-1]["measurement_id"]
        op.drop_table("sample_arrays")
        op.rename_table("sample_arrays_v10", "sample_arrays")
        op.execute(SAMPLES_SQLITE)
    op.execute("UPDATE meta SET value = '10' WHERE key = 'schema_version'")


def downgrade() -> None:
    raise NotImplementedError("downgrades are not supported: restore the backup that the upgrade made")
