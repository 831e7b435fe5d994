"""Schema 9: an emulated mma.sync form has no issue interval.

ptxas runs the fp8, s4/u4, xor.popc and m8n8k4 f16 forms of mma.sync as routines of other instructions
(the SASS check stores this as `builds.emulated`). Their independent-accumulator chain was stored as
`issue_interval_cycles`, and for most of them it exceeds the form's dependent-chain latency (more
independent calls cost more each): no instruction is issued, so it is renamed `call_interval_cycles`
(metric registry, harness/metrics.py). Native forms keep `issue_interval_cycles`.

Revision ID: 0009
"""

import hashlib

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


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
    rows = [row.id for row in conn.execute(sa.text("""
        SELECT m.id FROM measurement_rows m JOIN cases c ON c.id = m.case_pk JOIN builds b ON b.id = m.build_id
        JOIN texts t ON t.id = m.metric_id
        WHERE c.family = 'mma' AND b.emulated AND t.text = 'issue_interval_cycles'""")).fetchall()]
    if rows:
        renamed = _text_id(conn, "call_interval_cycles")
        for start in range(0, len(rows), 500):
            ids = ", ".join(str(i) for i in rows[start:start + 500])
            conn.execute(sa.text(f"UPDATE measurement_rows SET metric_id = {renamed} WHERE id IN ({ids})"))
    op.execute("UPDATE meta SET value = '9' WHERE key = 'schema_version'")


def downgrade() -> None:
    raise NotImplementedError("downgrades are not supported: restore the backup that the upgrade made")
