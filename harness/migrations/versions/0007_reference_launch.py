"""Schema 7: a published figure may belong to one launch of a case (`reference_figures.launch`, JSON,
e.g. {"source": "HBM"} for a TMA latency from HBM, {"blocks_per_sm": 4, "stages": 1} for a bandwidth
with one copy in flight per block): compare then takes that launch's measurement, not the case's
headline. The `reference_values` view gains the column.

Revision ID: 0007
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

REFERENCE_VALUES_VIEW = """
CREATE VIEW reference_values AS
SELECT f.id AS reference_id, f.source AS source, f.citation AS citation, f.source_table AS source_table,
       f.gpu AS gpu_name, f.case_id AS case_id, f.m AS m, f.n AS n, f.k AS k, f.dtype_a AS dtype_a,
       f.dtype_acc AS dtype_acc, f.operands AS operands, f.sparse AS sparse, f.metric AS metric,
       f.value AS value, f.unit AS unit, f.condition AS condition, f.launch AS launch, f.also_in AS also_in,
       f.notes AS notes
FROM reference_figures f
WHERE f.case_id IS NOT NULL
"""


def upgrade() -> None:
    op.execute("DROP VIEW reference_values")
    op.add_column("reference_figures", sa.Column("launch", sa.Text))
    op.execute(REFERENCE_VALUES_VIEW)
    # the figures are mapped anew on the next write (the references hash no longer matches)
    op.execute("DELETE FROM meta WHERE key = 'references_hash'")
    op.execute("UPDATE meta SET value = '7' WHERE key = 'schema_version'")


def downgrade() -> None:
    raise NotImplementedError("downgrades are not supported: restore the backup that the upgrade made")
