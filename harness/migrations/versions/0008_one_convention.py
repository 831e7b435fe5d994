"""Schema 8: one meaning per metric name, for rows stored before it.

- wgmma's bracketed measurement less its empty sequence (fence, commit and wait without the wgmma)
  was stored as `latency_cycles`. Part of the empty sequence's wait overlaps the wgmma, so the
  difference is not a latency: it was below the case's own issue interval in hundreds of rows. It is
  now `latency_added_cycles`; the round trip stays `latency_raw_cycles` (metric registry,
  harness/metrics.py).
- A sparse wgmma's `peak_fraction` divided its dense-equivalent rate by the dense peak (up to 1.98);
  sparse mma.sync's by the sparse peak. Both now use the sparse peak (twice the dense): the stored
  sparse wgmma fractions are halved, the notes name the peak they are now of, and a fraction stored
  as a rule over its throughput samples keeps the rule with twice the divisor (exact: doubling is).

Revision ID: 0008
"""

import hashlib
import json
import re

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

PEAK_NOTE = re.compile(r"^peak (?P<peak>[0-9.]+) at (?P<rest>.*)$")


def _text_id(conn, text: str) -> int:
    """The id of `text` in `texts`, added if new (texts are stored once, by their 64-bit BLAKE2b digest)."""
    digest = hashlib.blake2b(text.encode(), digest_size=8).hexdigest()
    found = conn.execute(sa.text("SELECT id FROM texts WHERE digest = :d"), {"d": digest}).scalar()
    if found is None:
        conn.execute(sa.text("INSERT INTO texts (digest, text) VALUES (:d, :t)"), {"d": digest, "t": text})
        found = conn.execute(sa.text("SELECT id FROM texts WHERE digest = :d"), {"d": digest}).scalar()
    return int(found)


def _rows(conn, family_sql: str, metric: str) -> list:
    return conn.execute(sa.text(f"""
        SELECT m.id, m.notes_id FROM measurement_rows m JOIN cases c ON c.id = m.case_pk
        JOIN texts t ON t.id = m.metric_id WHERE t.text = :metric AND {family_sql}"""), {"metric": metric}).fetchall()


def upgrade() -> None:
    conn = op.get_bind()
    renamed = [row.id for row in _rows(conn, "c.family = 'wgmma'", "latency_cycles")]
    if renamed:
        added = _text_id(conn, "latency_added_cycles")
        for start in range(0, len(renamed), 500):
            ids = ", ".join(str(i) for i in renamed[start:start + 500])
            conn.execute(sa.text(f"UPDATE measurement_rows SET metric_id = {added} WHERE id IN ({ids})"))

    for row in _rows(conn, "c.family = 'wgmma' AND c.sparse", "peak_fraction"):
        conn.execute(sa.text("""UPDATE measurement_rows SET value = value / 2, mean = mean / 2,
                                minimum = minimum / 2, maximum = maximum / 2, stdev = stdev / 2 WHERE id = :i"""),
                     {"i": row.id})
        array = conn.execute(sa.text("SELECT samples, derived_from FROM sample_arrays WHERE measurement_id = :i"),
                             {"i": row.id}).fetchone()
        if array is not None and array.derived_from is not None:
            conn.execute(sa.text("UPDATE sample_arrays SET divide_by = divide_by * 2 WHERE measurement_id = :i"),
                         {"i": row.id})
        elif array is not None and array.samples is not None:
            halved = [v / 2 for v in json.loads(array.samples)]
            conn.execute(sa.text("UPDATE sample_arrays SET samples = :s WHERE measurement_id = :i"),
                         {"s": json.dumps(halved, separators=(",", ":")), "i": row.id})
        note = conn.execute(sa.text("SELECT text FROM texts WHERE id = :i"), {"i": row.notes_id}).scalar() \
            if row.notes_id is not None else None
        match = PEAK_NOTE.match(note or "")
        if match:
            text = f"peak {2 * float(match['peak']):.1f} at {match['rest']} (the sparse peak: twice the dense)"
            conn.execute(sa.text("UPDATE measurement_rows SET notes_id = :n WHERE id = :i"),
                         {"n": _text_id(conn, text), "i": row.id})
    op.execute("UPDATE meta SET value = '8' WHERE key = 'schema_version'")


def downgrade() -> None:
    raise NotImplementedError("downgrades are not supported: restore the backup that the upgrade made")
