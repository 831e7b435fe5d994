"""Schema 6: repeated strings stored once, derived sample arrays stored as their rule.

A tensor run writes about 29 000 measurements; most of their bytes were the same few strings again
and again (metric, unit, launch key, input distribution, notes, stop reason, status, throttle
reasons: about 180 bytes a row, 56 distinct input distributions in 126 000 rows). Now:

- `texts` holds each distinct string once (id, a 64-bit BLAKE2b digest that is unique and indexed,
  and the text); `measurement_rows` holds the measurements with the ids of those strings.
- `measurements` becomes a view over the two with the columns and names it had, so every query
  (and the `results` and `samples` views) reads as before.
- A sample array that is another array of the same case and launch, less a constant and divided by a
  constant, exactly, sample for sample (a `peak_fraction` is its `throughput_tflops` divided by the
  peak; a `latency_cycles` its `latency_raw_cycles` less the empty sequence) is stored as that rule:
  `derived_from`, `subtract`, `divide_by`. The `samples` view computes it with the same IEEE
  operations, so every sample comes back bit for bit; an array whose rule is not exact keeps its
  numbers.
- The index on `run_id` goes: the unique (run_id, case_pk, metric_id, launch_id) index serves it.
- `builds.compile_log` (ptxas's log, about 1.6 kB a build, read by no query) is kept zlib-compressed
  in `builds.compile_log_zlib`, a fifth of the size: `zlib.decompress(x).decode()` gives it back.

Revision ID: 0006
"""

import hashlib
import json
import zlib

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

TEXT_COLUMNS = ("metric", "unit", "launch", "status", "input_distribution", "notes", "stop_reason",
                "throttle_reasons")
PLAIN_COLUMNS = ("id", "run_id", "case_pk", "build_id", "value", "mean", "minimum", "maximum", "stdev", "spread",
                 "n_samples", "sm_clock_mhz", "valid", "error", "validation_max_error", "created_at",
                 "telemetry_samples", "nvml_sm_clock_mhz", "nvml_mem_clock_mhz", "power_w", "temperature_c",
                 "throttled", "power_capped", "other_processes")
# The view lists the columns in the order schema 5's table had them.
VIEW_COLUMNS = ("id", "run_id", "case_pk", "build_id", "metric", "unit", "value", "mean", "minimum", "maximum",
                "stdev", "spread", "n_samples", "sm_clock_mhz", "valid", "error", "validation_max_error",
                "input_distribution", "notes", "created_at", "status", "stop_reason", "telemetry_samples",
                "nvml_sm_clock_mhz", "nvml_mem_clock_mhz", "power_w", "temperature_c", "throttle_reasons",
                "throttled", "power_capped", "other_processes", "launch")

SAMPLES_SQLITE = """
CREATE VIEW samples AS
SELECT a.measurement_id AS measurement_id, CAST(j.key AS INTEGER) AS idx, CAST(j.value AS REAL) AS value
FROM sample_arrays a, json_each(a.samples) j
WHERE a.samples IS NOT NULL
UNION ALL
SELECT a.measurement_id, CAST(j.key AS INTEGER), (CAST(j.value AS REAL) - a.subtract) / a.divide_by
FROM sample_arrays a JOIN sample_arrays s ON s.measurement_id = a.derived_from, json_each(s.samples) j
"""
SAMPLES_POSTGRES = """
CREATE VIEW samples AS
SELECT a.measurement_id AS measurement_id, CAST(j.ordinality - 1 AS INTEGER) AS idx,
       CAST(j.value AS DOUBLE PRECISION) AS value
FROM sample_arrays a, jsonb_array_elements_text(CAST(a.samples AS jsonb)) WITH ORDINALITY AS j(value, ordinality)
WHERE a.samples IS NOT NULL
UNION ALL
SELECT a.measurement_id, CAST(j.ordinality - 1 AS INTEGER),
       (CAST(j.value AS DOUBLE PRECISION) - a.subtract) / a.divide_by
FROM sample_arrays a JOIN sample_arrays s ON s.measurement_id = a.derived_from,
     jsonb_array_elements_text(CAST(s.samples AS jsonb)) WITH ORDINALITY AS j(value, ordinality)
"""


def digest(text: str) -> str:
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def derivation(source: list, values: list) -> tuple[float, float] | None:
    """(subtract, divide_by) with (s - subtract) / divide_by == v for every pair, exactly; else None."""
    if len(source) != len(values) or not values:
        return None
    s0, v0 = float(source[0]), float(values[0])
    candidates = [(s0 - v0, 1.0)]
    if v0 != 0.0 and s0 != 0.0:
        candidates.append((0.0, s0 / v0))
    for subtract, divide_by in candidates:
        if all((float(s) - subtract) / divide_by == float(v) for s, v in zip(source, values)):
            return subtract, divide_by
    return None


def measurements_view() -> str:
    select = ", ".join(f"{name}.text AS {name}" if name in TEXT_COLUMNS else f"m.{name} AS {name}"
                       for name in VIEW_COLUMNS)
    joins = "\n".join(f"{'JOIN' if name in ('metric', 'unit', 'launch', 'status') else 'LEFT JOIN'} texts {name} "
                      f"ON {name}.id = m.{name}_id" for name in TEXT_COLUMNS)
    return f"CREATE VIEW measurements AS\nSELECT {select}\nFROM measurement_rows m\n{joins}\n"


def _results_view() -> str:
    """Schema 4's `results` view, unchanged (it reads the `measurements` view now)."""
    from importlib import import_module
    previous = import_module("harness.migrations.versions.0004_families")
    return previous.RESULTS_VIEW.format(warpgroups=previous._json_int("m.launch", "warpgroups"),
                                        ilp=previous._json_int("m.launch", "ilp"), flagged=previous._flagged())


def upgrade() -> None:
    conn = op.get_bind()
    op.execute("DROP VIEW samples")
    op.execute("DROP VIEW results")
    op.create_table("texts", sa.Column("id", sa.Integer, primary_key=True),
                    sa.Column("digest", sa.String(16), nullable=False, unique=True),
                    sa.Column("text", sa.Text, nullable=False))
    text_ids = [f"{name}_id" for name in TEXT_COLUMNS]
    op.create_table(
        "measurement_rows",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id"), nullable=False),
        sa.Column("case_pk", sa.Integer, sa.ForeignKey("cases.id"), nullable=False, index=True),
        sa.Column("build_id", sa.Integer, sa.ForeignKey("builds.id")),
        *[sa.Column(name, sa.Integer, sa.ForeignKey("texts.id"),
                    nullable=name in ("input_distribution_id", "notes_id", "stop_reason_id", "throttle_reasons_id"))
          for name in text_ids],
        sa.Column("value", sa.Float), sa.Column("mean", sa.Float), sa.Column("minimum", sa.Float),
        sa.Column("maximum", sa.Float), sa.Column("stdev", sa.Float), sa.Column("spread", sa.Float),
        sa.Column("n_samples", sa.Integer, nullable=False), sa.Column("sm_clock_mhz", sa.Float),
        sa.Column("valid", sa.Boolean, nullable=False), sa.Column("error", sa.Text),
        sa.Column("validation_max_error", sa.Float), sa.Column("created_at", sa.DateTime, nullable=False),
        sa.Column("telemetry_samples", sa.Integer, nullable=False, server_default="0"),
        sa.Column("nvml_sm_clock_mhz", sa.Float), sa.Column("nvml_mem_clock_mhz", sa.Float),
        sa.Column("power_w", sa.Float), sa.Column("temperature_c", sa.Float),
        sa.Column("throttled", sa.Boolean), sa.Column("power_capped", sa.Boolean),
        sa.Column("other_processes", sa.Integer),
        sa.UniqueConstraint("run_id", "case_pk", "metric_id", "launch_id",
                            name="uq_measurement_rows_run_case_metric_launch"))
    op.create_table(
        "sample_arrays_v6",
        sa.Column("measurement_id", sa.Integer, sa.ForeignKey("measurement_rows.id"), primary_key=True),
        sa.Column("samples", sa.Text),
        sa.Column("derived_from", sa.Integer, sa.ForeignKey("measurement_rows.id")),
        sa.Column("subtract", sa.Float), sa.Column("divide_by", sa.Float))

    texts = sa.table("texts", sa.column("id"), sa.column("digest"), sa.column("text"))
    known: dict[str, int] = {}

    def text_id(value):
        if value is None:
            return None
        if value not in known:
            known[value] = conn.execute(texts.insert().returning(texts.c.id),
                                        {"digest": digest(value), "text": value}).scalar_one()
        return known[value]

    rows_table = sa.table("measurement_rows", *[sa.column(c) for c in (*PLAIN_COLUMNS, *text_ids)])
    arrays_table = sa.table("sample_arrays_v6", *[sa.column(c) for c in
                                                  ("measurement_id", "samples", "derived_from", "subtract",
                                                   "divide_by")])
    columns = ", ".join((*PLAIN_COLUMNS, *TEXT_COLUMNS))
    ids = [row[0] for row in conn.execute(sa.text("SELECT id FROM measurements ORDER BY id"))]
    for start in range(0, len(ids), 5000):  # in slices, to bound memory on large databases
        low, high = ids[start], ids[min(start + 5000, len(ids)) - 1]
        rows = conn.execute(sa.text(f"SELECT {columns} FROM measurements WHERE id BETWEEN :low AND :high "
                                    "ORDER BY id"), {"low": low, "high": high}).mappings().all()
        conn.execute(rows_table.insert(), [{**{c: row[c] for c in PLAIN_COLUMNS},
                                            **{f"{c}_id": text_id(row[c]) for c in TEXT_COLUMNS}} for row in rows])
        arrays = dict(conn.execute(sa.text("SELECT measurement_id, samples FROM sample_arrays "
                                           "WHERE measurement_id BETWEEN :low AND :high"),
                                   {"low": low, "high": high}).all())
        # A measurement's candidate sources: the explicit arrays of its case, run and launch, stored before it.
        explicit: dict[tuple, list[tuple[int, list]]] = {}
        out = []
        for row in rows:
            if row["id"] not in arrays:
                continue
            values = json.loads(arrays[row["id"]])
            group = explicit.setdefault((row["run_id"], row["case_pk"], row["launch"]), [])
            rule = next(((source_id, found) for source_id, source in group
                         if (found := derivation(source, values)) is not None), None)
            if rule is None:
                group.append((row["id"], values))
                out.append({"measurement_id": row["id"], "samples": arrays[row["id"]], "derived_from": None,
                            "subtract": None, "divide_by": None})
            else:
                source_id, (subtract, divide_by) = rule
                out.append({"measurement_id": row["id"], "samples": None, "derived_from": source_id,
                            "subtract": subtract, "divide_by": divide_by})
        if out:
            conn.execute(arrays_table.insert(), out)
    op.drop_table("sample_arrays")
    op.drop_table("measurements")
    op.rename_table("sample_arrays_v6", "sample_arrays")
    with op.batch_alter_table("builds") as batch:
        batch.add_column(sa.Column("compile_log_zlib", sa.LargeBinary))
    builds = sa.table("builds", sa.column("id"), sa.column("compile_log_zlib"))
    for build_id, log in conn.execute(sa.text("SELECT id, compile_log FROM builds")).all():
        conn.execute(builds.update().where(builds.c.id == build_id),
                     {"compile_log_zlib": zlib.compress(log.encode(), 9)})
    with op.batch_alter_table("builds") as batch:
        batch.drop_column("compile_log")
        batch.alter_column("compile_log_zlib", existing_type=sa.LargeBinary, nullable=False)
    op.execute(measurements_view())
    op.execute(_results_view())
    op.execute(SAMPLES_POSTGRES if conn.dialect.name == "postgresql" else SAMPLES_SQLITE)
    op.execute("UPDATE meta SET value = '6' WHERE key = 'schema_version'")


def downgrade() -> None:
    raise NotImplementedError("downgrades are not supported: restore the backup that the upgrade made")
