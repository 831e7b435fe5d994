"""SQLAlchemy ORM tables of the results database, and the views users query."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, DateTime, Float, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

SCHEMA_VERSION = 1


class Base(DeclarativeBase):
    pass


class Meta(Base):
    __tablename__ = "meta"
    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[str] = mapped_column(Text)


class Device(Base):
    __tablename__ = "devices"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(128))
    uuid: Mapped[str] = mapped_column(String(64), unique=True)
    sm_count: Mapped[int]
    cc_major: Mapped[int]
    cc_minor: Mapped[int]
    total_memory_bytes: Mapped[int | None]
    l2_bytes: Mapped[int | None]
    max_sm_clock_mhz: Mapped[int | None]
    max_mem_clock_mhz: Mapped[int | None]
    power_limit_w: Mapped[float | None]


class Run(Base):
    __tablename__ = "runs"
    id: Mapped[int] = mapped_column(primary_key=True)
    started_at: Mapped[datetime] = mapped_column(DateTime)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime)
    status: Mapped[str] = mapped_column(String(16))  # running, complete, interrupted, failed
    suite: Mapped[str] = mapped_column(String(64))
    filter: Mapped[str | None] = mapped_column(String(256))
    command_line: Mapped[str] = mapped_column(Text)
    host: Mapped[str] = mapped_column(String(256))
    git_commit: Mapped[str | None] = mapped_column(String(64))
    git_dirty: Mapped[bool | None] = mapped_column(Boolean)
    harness_version: Mapped[str] = mapped_column(String(32))
    python_version: Mapped[str] = mapped_column(String(32))
    cupy_version: Mapped[str | None] = mapped_column(String(32))
    nvrtc_version: Mapped[str | None] = mapped_column(String(32))
    driver_version: Mapped[str | None] = mapped_column(String(32))
    cuda_driver_version: Mapped[str | None] = mapped_column(String(32))
    device_id: Mapped[int | None] = mapped_column(ForeignKey("devices.id"))
    gpu_index: Mapped[int | None]
    error: Mapped[str | None] = mapped_column(Text)


class CaseRow(Base):
    __tablename__ = "cases"
    id: Mapped[int] = mapped_column(primary_key=True)
    case_id: Mapped[str] = mapped_column(String(128), unique=True)
    family: Mapped[str] = mapped_column(String(32))
    instruction: Mapped[str] = mapped_column(String(64))
    m: Mapped[int]
    n: Mapped[int]
    k: Mapped[int]
    dtype_a: Mapped[str] = mapped_column(String(8))
    dtype_b: Mapped[str] = mapped_column(String(8))
    dtype_acc: Mapped[str] = mapped_column(String(8))
    operands: Mapped[str] = mapped_column(String(4))
    sparse: Mapped[bool] = mapped_column(Boolean)
    layout: Mapped[str] = mapped_column(String(32))


class BuildRow(Base):
    __tablename__ = "builds"
    id: Mapped[int] = mapped_column(primary_key=True)
    build_hash: Mapped[str] = mapped_column(String(64), unique=True)
    source_hash: Mapped[str] = mapped_column(String(64))
    options: Mapped[str] = mapped_column(Text)
    nvrtc_version: Mapped[str] = mapped_column(String(16))
    registers: Mapped[int | None]
    spill_bytes: Mapped[int | None]
    sass_ok: Mapped[bool | None] = mapped_column(Boolean)
    sass_note: Mapped[str | None] = mapped_column(Text)
    compile_log: Mapped[str] = mapped_column(Text)


class Measurement(Base):
    __tablename__ = "measurements"
    __table_args__ = (UniqueConstraint("run_id", "case_pk", "metric", "warpgroups", "ilp"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id"), index=True)
    case_pk: Mapped[int] = mapped_column(ForeignKey("cases.id"), index=True)
    build_id: Mapped[int | None] = mapped_column(ForeignKey("builds.id"))
    metric: Mapped[str] = mapped_column(String(48))
    unit: Mapped[str] = mapped_column(String(24))
    value: Mapped[float | None] = mapped_column(Float)  # the median of the samples
    mean: Mapped[float | None] = mapped_column(Float)
    minimum: Mapped[float | None] = mapped_column(Float)
    maximum: Mapped[float | None] = mapped_column(Float)
    stdev: Mapped[float | None] = mapped_column(Float)
    spread: Mapped[float | None] = mapped_column(Float)  # IQR / median
    n_samples: Mapped[int] = mapped_column(Integer, default=0)
    warpgroups: Mapped[int] = mapped_column(Integer, default=1)  # per SM
    ilp: Mapped[int] = mapped_column(Integer, default=1)  # independent accumulators per warpgroup
    sm_clock_mhz: Mapped[float | None] = mapped_column(Float)  # measured in the kernel
    valid: Mapped[bool] = mapped_column(Boolean)
    error: Mapped[str | None] = mapped_column(Text)
    validation_max_error: Mapped[float | None] = mapped_column(Float)
    input_distribution: Mapped[str | None] = mapped_column(String(64))
    notes: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime)


class Sample(Base):
    __tablename__ = "samples"
    measurement_id: Mapped[int] = mapped_column(ForeignKey("measurements.id"), primary_key=True)
    idx: Mapped[int] = mapped_column(primary_key=True)
    value: Mapped[float] = mapped_column(Float)


RESULTS_VIEW = """
CREATE VIEW IF NOT EXISTS results AS
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
