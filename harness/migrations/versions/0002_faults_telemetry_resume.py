"""Schema 2: measurement status (valid/invalid/fault), stopping reason, GPU telemetry and
throttle flags per measurement, resume count per run; the `results` view gains those columns.

Revision ID: 0002
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

TELEMETRY_COLUMNS = (
    ("nvml_sm_clock_mhz", sa.Float), ("nvml_mem_clock_mhz", sa.Float), ("power_w", sa.Float),
    ("temperature_c", sa.Float), ("throttle_reasons", sa.Text), ("throttled", sa.Boolean),
    ("power_capped", sa.Boolean), ("other_processes", sa.Integer))

# The view users and scripts query (docs/architecture.md, "Database"); later schemas only add columns.
# `flagged`: taken while the GPU was throttled (thermal/hardware slowdown) or shared with another
# process; compare and report leave flagged measurements out unless asked.
RESULTS_VIEW = """
CREATE VIEW results AS
SELECT m.id AS measurement_id, r.id AS run_id, r.started_at AS run_started_at, r.status AS run_status,
       d.name AS gpu_name, d.sm_count AS sm_count, m.sm_clock_mhz AS sm_clock_mhz, r.suite AS suite,
       c.family AS family, c.case_id AS case_id, c.instruction AS instruction,
       c.m AS m, c.n AS n, c.k AS k, c.dtype_a AS dtype_a, c.dtype_b AS dtype_b,
       c.dtype_acc AS dtype_acc, c.operands AS operands, c.sparse AS sparse, c.layout AS layout,
       m.metric AS metric, m.value AS value, m.unit AS unit, m.n_samples AS n_samples,
       m.spread AS spread, m.minimum AS min, m.maximum AS max, m.warpgroups AS warpgroups,
       m.ilp AS ilp, m.valid AS valid, m.error AS error, m.notes AS notes,
       r.git_commit AS git_commit,
       m.status AS status, m.stop_reason AS stop_reason,
       m.nvml_sm_clock_mhz AS nvml_sm_clock_mhz, m.nvml_mem_clock_mhz AS nvml_mem_clock_mhz,
       m.power_w AS power_w, m.temperature_c AS temperature_c, m.throttle_reasons AS throttle_reasons,
       m.throttled AS throttled, m.power_capped AS power_capped, m.other_processes AS other_processes,
       CASE WHEN m.throttled OR COALESCE(m.other_processes, 0) > 0 THEN 1 ELSE 0 END AS flagged
FROM measurements m
JOIN runs r ON r.id = m.run_id
JOIN cases c ON c.id = m.case_pk
LEFT JOIN devices d ON d.id = r.device_id
"""


def upgrade() -> None:
    op.execute("DROP VIEW results")
    with op.batch_alter_table("measurements") as batch:
        batch.add_column(sa.Column("status", sa.String(8), nullable=False, server_default="valid"))
        batch.add_column(sa.Column("stop_reason", sa.String(64)))
        batch.add_column(sa.Column("telemetry_samples", sa.Integer, nullable=False, server_default="0"))
        for name, type_ in TELEMETRY_COLUMNS:
            batch.add_column(sa.Column(name, type_))
    op.execute("UPDATE measurements SET status = CASE WHEN valid THEN 'valid' ELSE 'invalid' END")
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("resumes", sa.Integer, nullable=False, server_default="0"))
    op.execute(RESULTS_VIEW)
    op.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")


def downgrade() -> None:
    raise NotImplementedError("downgrades are not supported: restore the backup that the upgrade made")
