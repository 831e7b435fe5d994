"""Schema 11: distributed shared memory is its own family.

The cases whose ids start `ld.shared::cluster` or `st.shared::cluster` (DSMEM loads, stores and the
papers' chase patterns) were the `tma` family's; they are now the `dsmem` family's
(harness/families/dsmem/). `cases.family` is the only column that records a family per row: those
rows get `family = 'dsmem'`. Nothing else changes: their ids, their `params` (the tma family's dict,
whose `op`, `cluster`, `spread` and `pattern` are the dsmem case's parameters under the same names;
docs/database.md), the shared columns and every measurement stay as they were.

Revision ID: 0011
"""

from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

# The dsmem family's id prefixes (harness/families/dsmem/__init__.py id_prefixes), as they were at this
# schema (copied: a migration stays as it was). LIKE's '_' and '%' appear in neither.
PREFIXES = ("ld.shared::cluster", "st.shared::cluster")


def upgrade() -> None:
    where = " OR ".join(f"case_id LIKE '{prefix}%'" for prefix in PREFIXES)
    op.execute(f"UPDATE cases SET family = 'dsmem' WHERE family = 'tma' AND ({where})")
    op.execute("UPDATE meta SET value = '11' WHERE key = 'schema_version'")


def downgrade() -> None:
    raise NotImplementedError("downgrades are not supported: restore the backup that the upgrade made")
