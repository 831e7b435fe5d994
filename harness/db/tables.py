"""SQLAlchemy ORM tables of the results database, and the views users query.

The ORM describes the newest schema; harness/migrations/ builds it (and upgrades older files)
step by step. A change here needs a new migration, and tests/fixtures/ a database of the old one.
"""

from __future__ import annotations

import json

from datetime import datetime

from sqlalchemy import BigInteger, Boolean, DateTime, Float, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

SCHEMA_VERSION = 5  # = the number of the newest migration in harness/migrations/versions


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
    total_memory_bytes: Mapped[int | None] = mapped_column(BigInteger)
    l2_bytes: Mapped[int | None] = mapped_column(BigInteger)
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
    resumes: Mapped[int] = mapped_column(Integer, default=0)  # times `bench run --resume` continued it


class CaseRow(Base):
    """A case of any family: its parameters in `params` (JSON); the shared columns where they apply."""

    __tablename__ = "cases"
    id: Mapped[int] = mapped_column(primary_key=True)
    case_id: Mapped[str] = mapped_column(String(128), unique=True)
    family: Mapped[str] = mapped_column(String(32))
    params: Mapped[str] = mapped_column(Text, default="{}")  # JSON: every parameter of the case
    instruction: Mapped[str | None] = mapped_column(String(64))
    m: Mapped[int | None]
    n: Mapped[int | None]
    k: Mapped[int | None]
    dtype_a: Mapped[str | None] = mapped_column(String(8))
    dtype_b: Mapped[str | None] = mapped_column(String(8))
    dtype_acc: Mapped[str | None] = mapped_column(String(8))
    operands: Mapped[str | None] = mapped_column(String(4))
    sparse: Mapped[bool | None] = mapped_column(Boolean)
    layout: Mapped[str | None] = mapped_column(String(32))


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
    executes: Mapped[str | None] = mapped_column(String(96))  # what the SASS check found really runs
    emulated: Mapped[bool | None] = mapped_column(Boolean)  # the PTX instruction runs as other instructions
    compile_log: Mapped[str] = mapped_column(Text)


class Measurement(Base):
    __tablename__ = "measurements"
    __table_args__ = (UniqueConstraint("run_id", "case_pk", "metric", "launch",
                                       name="uq_measurements_run_case_metric_launch"),)
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
    launch: Mapped[str] = mapped_column(Text, default="{}")  # JSON launch key (measurement.launch_key)
    sm_clock_mhz: Mapped[float | None] = mapped_column(Float)  # measured in the kernel
    valid: Mapped[bool] = mapped_column(Boolean)
    status: Mapped[str] = mapped_column(String(8))  # valid, invalid (SASS/validation), fault (crash/hang)
    error: Mapped[str | None] = mapped_column(Text)
    validation_max_error: Mapped[float | None] = mapped_column(Float)
    input_distribution: Mapped[str | None] = mapped_column(String(64))
    notes: Mapped[str | None] = mapped_column(Text)
    stop_reason: Mapped[str | None] = mapped_column(String(64))  # why sampling stopped
    created_at: Mapped[datetime] = mapped_column(DateTime)
    # How the GPU behaved while the samples were taken (NVML, harness/telemetry.py).
    telemetry_samples: Mapped[int] = mapped_column(Integer, default=0)
    nvml_sm_clock_mhz: Mapped[float | None] = mapped_column(Float)  # median
    nvml_mem_clock_mhz: Mapped[float | None] = mapped_column(Float)  # median
    power_w: Mapped[float | None] = mapped_column(Float)  # maximum
    temperature_c: Mapped[float | None] = mapped_column(Float)  # maximum
    throttle_reasons: Mapped[str | None] = mapped_column(Text)  # every NVML clock-event reason seen
    throttled: Mapped[bool | None] = mapped_column(Boolean)  # thermal or hardware slowdown seen
    power_capped: Mapped[bool | None] = mapped_column(Boolean)  # software power cap seen
    other_processes: Mapped[int | None] = mapped_column(Integer)  # most other compute processes seen


class SampleArray(Base):
    """A measurement's raw samples as one JSON array (the `samples` view lists them one per row)."""

    __tablename__ = "sample_arrays"
    measurement_id: Mapped[int] = mapped_column(ForeignKey("measurements.id"), primary_key=True)
    samples: Mapped[str] = mapped_column(Text)

    @staticmethod
    def encode(values) -> str:
        """Exact and short: whole numbers without ".0", others as the shortest round-trip repr."""
        return json.dumps([int(v) if float(v).is_integer() and abs(v) < 2 ** 53 else float(v) for v in values],
                          separators=(",", ":"))

    def values(self) -> list[float]:
        return [float(v) for v in json.loads(self.samples)]


class ReferenceFigure(Base):
    """A published figure (harness/references.py); case_id and metric are None where unmapped."""

    __tablename__ = "reference_figures"
    id: Mapped[int] = mapped_column(primary_key=True)
    source: Mapped[str] = mapped_column(String(128))
    citation: Mapped[str] = mapped_column(Text)
    source_table: Mapped[str] = mapped_column(String(128))
    gpu: Mapped[str] = mapped_column(String(64))
    case_id: Mapped[str | None] = mapped_column(String(128), index=True)
    m: Mapped[int | None]
    n: Mapped[int | None]
    k: Mapped[int | None]
    dtype_a: Mapped[str | None] = mapped_column(String(8))
    dtype_acc: Mapped[str | None] = mapped_column(String(8))
    operands: Mapped[str | None] = mapped_column(String(4))
    sparse: Mapped[bool | None] = mapped_column(Boolean)
    metric: Mapped[str | None] = mapped_column(String(48))
    value: Mapped[float] = mapped_column(Float)
    unit: Mapped[str] = mapped_column(String(32))
    condition: Mapped[str | None] = mapped_column(String(16))
    also_in: Mapped[str | None] = mapped_column(Text)
    unmapped_reason: Mapped[str | None] = mapped_column(Text)
    notes: Mapped[str | None] = mapped_column(Text)
