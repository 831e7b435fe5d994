"""Schema 5: raw samples stored as one array per measurement.

Schema 1-4 kept one row (and one primary-key index entry) per raw sample: about 35 bytes a sample,
half the database. `sample_arrays` holds each measurement's samples as one JSON array of numbers
(whole numbers written without ".0", every other value as Python's shortest round-trip repr, so
no sample loses a bit); `samples` becomes a view that still lists them one per row, with the same
columns (measurement_id, idx, value), so queries over it keep working.

Revision ID: 0005
"""

import json

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

SQLITE_VIEW = """
CREATE VIEW samples AS
SELECT a.measurement_id AS measurement_id, CAST(j.key AS INTEGER) AS idx, CAST(j.value AS REAL) AS value
FROM sample_arrays a, json_each(a.samples) j
"""
POSTGRES_VIEW = """
CREATE VIEW samples AS
SELECT a.measurement_id AS measurement_id, CAST(j.ordinality - 1 AS INTEGER) AS idx,
       CAST(j.value AS DOUBLE PRECISION) AS value
FROM sample_arrays a, jsonb_array_elements_text(CAST(a.samples AS jsonb)) WITH ORDINALITY AS j(value, ordinality)
"""


def encode(values) -> str:
    """A JSON array of the samples, exact: 18.0 is written 18, 6.140000000000001 as it is."""
    return json.dumps([int(v) if float(v).is_integer() and abs(v) < 2 ** 53 else float(v) for v in values],
                      separators=(",", ":"))


def upgrade() -> None:
    conn = op.get_bind()
    op.create_table("sample_arrays",
                    sa.Column("measurement_id", sa.Integer, sa.ForeignKey("measurements.id"), primary_key=True),
                    sa.Column("samples", sa.Text, nullable=False))
    table = sa.table("sample_arrays", sa.column("measurement_id"), sa.column("samples"))
    ids = [row[0] for row in conn.execute(sa.text("SELECT DISTINCT measurement_id FROM samples ORDER BY 1"))]
    for start in range(0, len(ids), 5000):  # in slices, to bound memory on large databases
        low, high = ids[start], ids[min(start + 5000, len(ids)) - 1]
        arrays: dict[int, list] = {}
        for measurement_id, value in conn.execute(
                sa.text("SELECT measurement_id, value FROM samples WHERE measurement_id BETWEEN :low AND :high "
                        "ORDER BY measurement_id, idx"), {"low": low, "high": high}).fetchall():
            arrays.setdefault(measurement_id, []).append(value)
        conn.execute(table.insert(), [{"measurement_id": m, "samples": encode(v)} for m, v in arrays.items()])
    op.drop_table("samples")
    op.execute(POSTGRES_VIEW if conn.dialect.name == "postgresql" else SQLITE_VIEW)
    op.execute("UPDATE meta SET value = '5' WHERE key = 'schema_version'")


def downgrade() -> None:
    raise NotImplementedError("downgrades are not supported: restore the backup that the upgrade made")
