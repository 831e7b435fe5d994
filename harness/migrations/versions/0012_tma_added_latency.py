"""Schema 12: a TMA load's latency_cycles is measured in one launch; the old difference keeps its meaning.

Before this schema a tensor or bulk load's `latency_cycles` was its bracketed sequence (clock,
arrive.expect_tx, the copy, try_wait, clock) less the median of the same sequence without the copy,
timed in another launch. The empty sequence's wait overlaps the copy, so that difference is what the
copy adds to the sequence, not its latency: it fell below a plain load's L2 hit (246 against 253 cycles
on an H100; issue 34 item 11), as wgmma's did before schema 8. New runs time the copy from a clock read
just before its issue, less two clock reads timed in the same launch, as `latency_cycles`, and keep the
difference as `latency_added_cycles`; stored rows of that difference are renamed to it here. Which rows:
the tma family's `latency_cycles` whose notes say what was subtracted, "net of ... cycles for
arrive.expect_tx of 0 bytes + try_wait without a copy" (every load, cold and prefetched ones too). The
barrier case's `latency_cycles` (net of the two clock reads alone) and the stores' rows (renamed
`store_drain_cycles` by new runs, left as they were) keep theirs; values, samples and notes stay as they were.

Revision ID: 0012
"""

import hashlib

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

# What the notes of those rows name as subtracted (harness/families/tma/__init__.py as it was: copied,
# a migration stays as it was). LIKE's '_' appears in it: escaped.
EMPTY_LOAD = "arrive.expect\\_tx of 0 bytes + try\\_wait without a copy"


def _text_id(conn, text: str) -> int:
    """The id of `text` in `texts`, added if new (texts are stored once, by their 64-bit BLAKE2b digest)."""
    digest = hashlib.blake2b(text.encode(), digest_size=8).hexdigest()
    found = conn.execute(sa.text("SELECT id FROM texts WHERE digest = :d"), {"d": digest}).scalar()
    if found is None:
        conn.execute(sa.text("INSERT INTO texts (digest, text) VALUES (:d, :t)"), {"d": digest, "t": text})
        found = conn.execute(sa.text("SELECT id FROM texts WHERE digest = :d"), {"d": digest}).scalar()
    return int(found)


def upgrade() -> None:
    conn = op.get_bind()
    renamed = [row.id for row in conn.execute(sa.text(f"""
        SELECT m.id FROM measurement_rows m JOIN cases c ON c.id = m.case_pk
        JOIN texts metric ON metric.id = m.metric_id JOIN texts notes ON notes.id = m.notes_id
        WHERE c.family = 'tma' AND metric.text = 'latency_cycles'
          AND notes.text LIKE 'net of % cycles for {EMPTY_LOAD}%' ESCAPE '\\'""")).fetchall()]
    if renamed:
        added = _text_id(conn, "latency_added_cycles")
        for start in range(0, len(renamed), 500):
            ids = ", ".join(str(i) for i in renamed[start:start + 500])
            conn.execute(sa.text(f"UPDATE measurement_rows SET metric_id = {added} WHERE id IN ({ids})"))
    op.execute("UPDATE meta SET value = '12' WHERE key = 'schema_version'")


def downgrade() -> None:
    raise NotImplementedError("downgrades are not supported: restore the backup that the upgrade made")
