"""Schema 4: instruction families as plug-ins.

- `cases.params`: every parameter of the case as JSON; the shared columns (m, n, k, dtypes,
  operands, sparse, layout, instruction) become optional, since not every family has them.
- `measurements.launch`: the launch key of a measurement as canonical JSON (units per SM, ILP,
  blocks per SM, cluster size, ...); it replaces the `warpgroups` and `ilp` columns, which the
  `results` view still shows (read from `launch`), so old queries keep working.
- `builds.executes` and `builds.emulated`: what the SASS check found really runs, and whether the
  PTX instruction is emulated by other instructions.
- the `results` view gains `params`, `launch`, `executes` and `emulated`.

Revision ID: 0004
"""

import json

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

SHARED_CASE_COLUMNS = (("instruction", sa.String(64)), ("m", sa.Integer), ("n", sa.Integer), ("k", sa.Integer),
                       ("dtype_a", sa.String(8)), ("dtype_b", sa.String(8)), ("dtype_acc", sa.String(8)),
                       ("operands", sa.String(4)), ("sparse", sa.Boolean), ("layout", sa.String(32)))
# Schema 1-3 cases were all wgmma; their parameters, as the wgmma case type lists them.
WGMMA_PARAMS = ("m", "n", "k", "dtype_a", "dtype_b", "dtype_acc", "operands", "sparse")

RESULTS_VIEW = """
CREATE VIEW results AS
SELECT m.id AS measurement_id, r.id AS run_id, r.started_at AS run_started_at, r.status AS run_status,
       d.name AS gpu_name, d.sm_count AS sm_count, m.sm_clock_mhz AS sm_clock_mhz, r.suite AS suite,
       c.family AS family, c.case_id AS case_id, c.instruction AS instruction,
       c.m AS m, c.n AS n, c.k AS k, c.dtype_a AS dtype_a, c.dtype_b AS dtype_b,
       c.dtype_acc AS dtype_acc, c.operands AS operands, c.sparse AS sparse, c.layout AS layout,
       m.metric AS metric, m.value AS value, m.unit AS unit, m.n_samples AS n_samples,
       m.spread AS spread, m.minimum AS min, m.maximum AS max, {warpgroups} AS warpgroups,
       {ilp} AS ilp, m.valid AS valid, m.error AS error, m.notes AS notes,
       r.git_commit AS git_commit,
       m.status AS status, m.stop_reason AS stop_reason,
       m.nvml_sm_clock_mhz AS nvml_sm_clock_mhz, m.nvml_mem_clock_mhz AS nvml_mem_clock_mhz,
       m.power_w AS power_w, m.temperature_c AS temperature_c, m.throttle_reasons AS throttle_reasons,
       m.throttled AS throttled, m.power_capped AS power_capped, m.other_processes AS other_processes,
       {flagged} AS flagged,
       c.params AS params, m.launch AS launch, b.executes AS executes, b.emulated AS emulated
FROM measurements m
JOIN runs r ON r.id = m.run_id
JOIN cases c ON c.id = m.case_pk
LEFT JOIN devices d ON d.id = r.device_id
LEFT JOIN builds b ON b.id = m.build_id
"""


def _flagged() -> str:
    """Throttled or shared: a boolean on PostgreSQL (NOT flagged must work), 0/1 on SQLite as before."""
    if op.get_bind().dialect.name == "postgresql":
        return "(COALESCE(m.throttled, FALSE) OR COALESCE(m.other_processes, 0) > 0)"
    return "CASE WHEN m.throttled OR COALESCE(m.other_processes, 0) > 0 THEN 1 ELSE 0 END"


def _json_int(column: str, key: str) -> str:
    if op.get_bind().dialect.name == "postgresql":
        return f"CAST(CAST({column} AS json) ->> '{key}' AS INTEGER)"
    return f"json_extract({column}, '$.{key}')"


def upgrade() -> None:
    conn = op.get_bind()
    op.execute("DROP VIEW results")
    with op.batch_alter_table("cases") as batch:
        batch.add_column(sa.Column("params", sa.Text, nullable=False, server_default="{}"))
        for name, type_ in SHARED_CASE_COLUMNS:
            batch.alter_column(name, existing_type=type_, nullable=True)
    rows = conn.execute(sa.text(f"SELECT id, {', '.join(WGMMA_PARAMS)} FROM cases WHERE family = 'wgmma'"))
    for row in rows.mappings().all():
        params = {key: (bool(row[key]) if key == "sparse" else row[key]) for key in WGMMA_PARAMS}
        conn.execute(sa.text("UPDATE cases SET params = :p WHERE id = :id"),
                     {"p": json.dumps(params, sort_keys=True), "id": row["id"]})

    with op.batch_alter_table("builds") as batch:
        batch.add_column(sa.Column("executes", sa.String(96)))
        batch.add_column(sa.Column("emulated", sa.Boolean))

    # The unnamed unique constraint of schema 1 gets a name by convention, so it can be dropped.
    convention = {"uq": "uq_%(table_name)s_%(column_0_name)s"}
    with op.batch_alter_table("measurements", naming_convention=convention) as batch:
        batch.add_column(sa.Column("launch", sa.Text, nullable=False, server_default="{}"))
    op.execute("""UPDATE measurements SET launch = '{"ilp":' || ilp || ',"warpgroups":' || warpgroups || '}'""")
    with op.batch_alter_table("measurements", naming_convention=convention) as batch:
        if conn.dialect.name == "sqlite":
            batch.drop_constraint("uq_measurements_run_id", type_="unique")
        batch.drop_column("warpgroups")
        batch.drop_column("ilp")
        batch.create_unique_constraint("uq_measurements_run_case_metric_launch", ["run_id", "case_pk", "metric", "launch"])
    op.execute(RESULTS_VIEW.format(warpgroups=_json_int("m.launch", "warpgroups"), ilp=_json_int("m.launch", "ilp"),
                                   flagged=_flagged()))
    op.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")


def downgrade() -> None:
    raise NotImplementedError("downgrades are not supported: restore the backup that the upgrade made")
