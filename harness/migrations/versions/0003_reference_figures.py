"""Schema 3: the published figures (mapped by harness/published.py) in `reference_figures`, and the
`reference_values` view of those mapped to our case ids and metrics.

Revision ID: 0003
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

REFERENCE_VALUES_VIEW = """
CREATE VIEW reference_values AS
SELECT f.id AS reference_id, f.source AS source, f.citation AS citation, f.source_table AS source_table,
       f.gpu AS gpu_name, f.case_id AS case_id, f.m AS m, f.n AS n, f.k AS k, f.dtype_a AS dtype_a,
       f.dtype_acc AS dtype_acc, f.operands AS operands, f.sparse AS sparse, f.metric AS metric,
       f.value AS value, f.unit AS unit, f.condition AS condition, f.also_in AS also_in, f.notes AS notes
FROM reference_figures f
WHERE f.case_id IS NOT NULL
"""


def upgrade() -> None:
    op.create_table(
        "reference_figures",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("source", sa.String(128), nullable=False),
        sa.Column("citation", sa.Text, nullable=False),
        sa.Column("source_table", sa.String(128), nullable=False),
        sa.Column("gpu", sa.String(64), nullable=False),
        sa.Column("case_id", sa.String(128), index=True),
        sa.Column("m", sa.Integer), sa.Column("n", sa.Integer), sa.Column("k", sa.Integer),
        sa.Column("dtype_a", sa.String(8)), sa.Column("dtype_acc", sa.String(8)),
        sa.Column("operands", sa.String(4)), sa.Column("sparse", sa.Boolean),
        sa.Column("metric", sa.String(48)),
        sa.Column("value", sa.Float, nullable=False),
        sa.Column("unit", sa.String(32), nullable=False),
        sa.Column("condition", sa.String(16)),
        sa.Column("also_in", sa.Text),
        sa.Column("unmapped_reason", sa.Text),
        sa.Column("notes", sa.Text))
    op.execute(REFERENCE_VALUES_VIEW)
    op.execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'")


def downgrade() -> None:
    raise NotImplementedError("downgrades are not supported: restore the backup that the upgrade made")
