"""Schema 1: runs, devices, cases, builds, measurements, samples, and the `results` view.

Revision ID: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

RESULTS_VIEW_V1 = """
CREATE VIEW results AS
SELECT m.id AS measurement_id, r.id AS run_id, r.started_at AS run_started_at, r.status AS run_status,
       d.name AS gpu_name, d.sm_count AS sm_count, m.sm_clock_mhz AS sm_clock_mhz, r.suite AS suite,
       c.family AS family, c.case_id AS case_id, c.instruction AS instruction,
       c.m AS m, c.n AS n, c.k AS k, c.dtype_a AS dtype_a, c.dtype_b AS dtype_b,
       c.dtype_acc AS dtype_acc, c.operands AS operands, c.sparse AS sparse, c.layout AS layout,
       m.metric AS metric, m.value AS value, m.unit AS unit, m.n_samples AS n_samples,
       m.spread AS spread, m.minimum AS min, m.maximum AS max, m.warpgroups AS warpgroups,
       m.ilp AS ilp, m.valid AS valid, m.error AS error, m.notes AS notes,
       r.git_commit AS git_commit
FROM measurements m
JOIN runs r ON r.id = m.run_id
JOIN cases c ON c.id = m.case_pk
LEFT JOIN devices d ON d.id = r.device_id
"""


def upgrade() -> None:
    op.create_table("meta", sa.Column("key", sa.String(64), primary_key=True),
                    sa.Column("value", sa.Text, nullable=False))
    op.create_table(
        "devices",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("name", sa.String(128), nullable=False),
        sa.Column("uuid", sa.String(64), nullable=False, unique=True),
        sa.Column("sm_count", sa.Integer, nullable=False),
        sa.Column("cc_major", sa.Integer, nullable=False),
        sa.Column("cc_minor", sa.Integer, nullable=False),
        # 64-bit: an H200 holds 141 GB. (SQLite's INTEGER always was; PostgreSQL needs BIGINT. No
        # PostgreSQL database could be written before this fix, so none exists to migrate.)
        sa.Column("total_memory_bytes", sa.BigInteger),
        sa.Column("l2_bytes", sa.BigInteger),
        sa.Column("max_sm_clock_mhz", sa.Integer),
        sa.Column("max_mem_clock_mhz", sa.Integer),
        sa.Column("power_limit_w", sa.Float))
    op.create_table(
        "runs",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("started_at", sa.DateTime, nullable=False),
        sa.Column("finished_at", sa.DateTime),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("suite", sa.String(64), nullable=False),
        sa.Column("filter", sa.String(256)),
        sa.Column("command_line", sa.Text, nullable=False),
        sa.Column("host", sa.String(256), nullable=False),
        sa.Column("git_commit", sa.String(64)),
        sa.Column("git_dirty", sa.Boolean),
        sa.Column("harness_version", sa.String(32), nullable=False),
        sa.Column("python_version", sa.String(32), nullable=False),
        sa.Column("cupy_version", sa.String(32)),
        sa.Column("nvrtc_version", sa.String(32)),
        sa.Column("driver_version", sa.String(32)),
        sa.Column("cuda_driver_version", sa.String(32)),
        sa.Column("device_id", sa.Integer, sa.ForeignKey("devices.id")),
        sa.Column("gpu_index", sa.Integer),
        sa.Column("error", sa.Text))
    op.create_table(
        "cases",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("case_id", sa.String(128), nullable=False, unique=True),
        sa.Column("family", sa.String(32), nullable=False),
        sa.Column("instruction", sa.String(64), nullable=False),
        sa.Column("m", sa.Integer, nullable=False),
        sa.Column("n", sa.Integer, nullable=False),
        sa.Column("k", sa.Integer, nullable=False),
        sa.Column("dtype_a", sa.String(8), nullable=False),
        sa.Column("dtype_b", sa.String(8), nullable=False),
        sa.Column("dtype_acc", sa.String(8), nullable=False),
        sa.Column("operands", sa.String(4), nullable=False),
        sa.Column("sparse", sa.Boolean, nullable=False),
        sa.Column("layout", sa.String(32), nullable=False))
    op.create_table(
        "builds",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("build_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("source_hash", sa.String(64), nullable=False),
        sa.Column("options", sa.Text, nullable=False),
        sa.Column("nvrtc_version", sa.String(16), nullable=False),
        sa.Column("registers", sa.Integer),
        sa.Column("spill_bytes", sa.Integer),
        sa.Column("sass_ok", sa.Boolean),
        sa.Column("sass_note", sa.Text),
        sa.Column("compile_log", sa.Text, nullable=False))
    op.create_table(
        "measurements",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id"), nullable=False, index=True),
        sa.Column("case_pk", sa.Integer, sa.ForeignKey("cases.id"), nullable=False, index=True),
        sa.Column("build_id", sa.Integer, sa.ForeignKey("builds.id")),
        sa.Column("metric", sa.String(48), nullable=False),
        sa.Column("unit", sa.String(24), nullable=False),
        sa.Column("value", sa.Float),
        sa.Column("mean", sa.Float),
        sa.Column("minimum", sa.Float),
        sa.Column("maximum", sa.Float),
        sa.Column("stdev", sa.Float),
        sa.Column("spread", sa.Float),
        sa.Column("n_samples", sa.Integer, nullable=False),
        sa.Column("warpgroups", sa.Integer, nullable=False),
        sa.Column("ilp", sa.Integer, nullable=False),
        sa.Column("sm_clock_mhz", sa.Float),
        sa.Column("valid", sa.Boolean, nullable=False),
        sa.Column("error", sa.Text),
        sa.Column("validation_max_error", sa.Float),
        sa.Column("input_distribution", sa.String(64)),
        sa.Column("notes", sa.Text),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.UniqueConstraint("run_id", "case_pk", "metric", "warpgroups", "ilp"))
    op.create_table(
        "samples",
        sa.Column("measurement_id", sa.Integer, sa.ForeignKey("measurements.id"), primary_key=True),
        sa.Column("idx", sa.Integer, primary_key=True),
        sa.Column("value", sa.Float, nullable=False))
    op.execute(RESULTS_VIEW_V1)
    op.execute("INSERT INTO meta (key, value) VALUES ('schema_version', '1')")


def downgrade() -> None:
    raise NotImplementedError("downgrades are not supported: restore the backup that the upgrade made")
