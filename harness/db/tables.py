"""SQLAlchemy ORM tables of the results database, and the views users query.

The ORM describes the newest schema; harness/migrations/ builds it (and upgrades older files)
step by step. A change here needs a new migration, and tests/fixtures/ a database of the old one.
"""

from __future__ import annotations

import hashlib
import zlib
from datetime import datetime

import numpy as np
from sqlalchemy import BigInteger, Boolean, DateTime, Float, ForeignKey, Integer, LargeBinary, String, Text, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

# The sample arrays' stored form (harness/db/samples.py); its functions still answer here for their importers.
from harness.db.samples import (SampleBlob, json_samples, pack_samples, register_functions,  # noqa: F401
                                samples_json, unpack_samples)

SCHEMA_VERSION = 12  # = the number of the newest migration in harness/migrations/versions


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
    compile_log_zlib: Mapped[bytes] = mapped_column(LargeBinary)  # ptxas's log, zlib-compressed (schema 6)

    @property
    def compile_log(self) -> str:
        return zlib.decompress(self.compile_log_zlib).decode()

    @staticmethod
    def pack_log(log: str) -> bytes:
        return zlib.compress(log.encode(), 9)


class TextRow(Base):
    """Each distinct string of the measurements once (schema 6): the rows hold its id."""

    __tablename__ = "texts"
    id: Mapped[int] = mapped_column(primary_key=True)
    digest: Mapped[str] = mapped_column(String(16), unique=True)  # 64-bit BLAKE2b of the text
    text: Mapped[str] = mapped_column(Text)

    @staticmethod
    def digest_of(text: str) -> str:
        return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


# The string columns of a measurement, stored as ids into `texts`; the `measurements` view shows the text.
TEXT_COLUMNS = ("metric", "unit", "launch", "status", "input_distribution", "notes", "stop_reason",
                "throttle_reasons")


class Measurement(Base):
    """One measurement, as stored: its strings are ids into `texts` (see TEXT_COLUMNS and
    harness.db.writing.Texts). Queries read the `measurements` view, which has the strings."""

    __tablename__ = "measurement_rows"
    __table_args__ = (UniqueConstraint("run_id", "case_pk", "metric_id", "launch_id",
                                       name="uq_measurement_rows_run_case_metric_launch"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id"))
    case_pk: Mapped[int] = mapped_column(ForeignKey("cases.id"), index=True)
    build_id: Mapped[int | None] = mapped_column(ForeignKey("builds.id"))
    metric_id: Mapped[int] = mapped_column(ForeignKey("texts.id"))
    unit_id: Mapped[int] = mapped_column(ForeignKey("texts.id"))
    launch_id: Mapped[int] = mapped_column(ForeignKey("texts.id"))  # JSON launch key (measurement.launch_key)
    status_id: Mapped[int] = mapped_column(ForeignKey("texts.id"))  # valid, invalid (SASS/validation), fault
    input_distribution_id: Mapped[int | None] = mapped_column(ForeignKey("texts.id"))
    notes_id: Mapped[int | None] = mapped_column(ForeignKey("texts.id"))
    stop_reason_id: Mapped[int | None] = mapped_column(ForeignKey("texts.id"))  # why sampling stopped
    throttle_reasons_id: Mapped[int | None] = mapped_column(ForeignKey("texts.id"))  # every NVML reason seen
    value: Mapped[float | None] = mapped_column(Float)  # the median of the samples
    mean: Mapped[float | None] = mapped_column(Float)
    minimum: Mapped[float | None] = mapped_column(Float)
    maximum: Mapped[float | None] = mapped_column(Float)
    stdev: Mapped[float | None] = mapped_column(Float)
    spread: Mapped[float | None] = mapped_column(Float)  # IQR / median
    n_samples: Mapped[int] = mapped_column(Integer, default=0)
    sm_clock_mhz: Mapped[float | None] = mapped_column(Float)  # measured in the kernel
    valid: Mapped[bool] = mapped_column(Boolean)
    error: Mapped[str | None] = mapped_column(Text)
    validation_max_error: Mapped[float | None] = mapped_column(Float)
    created_at: Mapped[datetime] = mapped_column(DateTime)
    # How the GPU behaved while the samples were taken (NVML, harness/measure/telemetry.py).
    telemetry_samples: Mapped[int] = mapped_column(Integer, default=0)
    nvml_sm_clock_mhz: Mapped[float | None] = mapped_column(Float)  # median
    nvml_mem_clock_mhz: Mapped[float | None] = mapped_column(Float)  # median
    power_w: Mapped[float | None] = mapped_column(Float)  # maximum
    temperature_c: Mapped[float | None] = mapped_column(Float)  # maximum
    throttled: Mapped[bool | None] = mapped_column(Boolean)  # thermal or hardware slowdown seen
    power_capped: Mapped[bool | None] = mapped_column(Boolean)  # software power cap seen
    other_processes: Mapped[int | None] = mapped_column(Integer)  # most other compute processes seen


class SampleArray(Base):
    """A measurement's raw samples as one array (`samples`: a float64 array in Python, stored packed
    on SQLite, see SampleBlob; the `samples` view lists them one per row), or, where another array of
    its case and launch gives them exactly, that rule:
    sample i = (sample i of `derived_from` - subtract) / divide_by."""

    __tablename__ = "sample_arrays"
    measurement_id: Mapped[int] = mapped_column(ForeignKey("measurement_rows.id"), primary_key=True)
    samples: Mapped[np.ndarray | None] = mapped_column(SampleBlob)
    derived_from: Mapped[int | None] = mapped_column(ForeignKey("measurement_rows.id"))
    subtract: Mapped[float | None] = mapped_column(Float)
    divide_by: Mapped[float | None] = mapped_column(Float)

    @staticmethod
    def encode(values) -> np.ndarray:
        """The samples as the `samples` column takes them (SampleBlob stores them exactly)."""
        return np.array(values, dtype=float)

    @staticmethod
    def derivation(source, values) -> tuple[float, float] | None:
        """(subtract, divide_by) such that (s - subtract) / divide_by == v for every pair, in float64,
        exactly (the samples view repeats the same two IEEE operations); None if there is none."""
        if len(source) != len(values) or not len(values):
            return None
        s0, v0 = float(source[0]), float(values[0])
        candidates = [(s0 - v0, 1.0)] + ([(0.0, s0 / v0)] if v0 != 0.0 and s0 != 0.0 else [])
        for subtract, divide_by in candidates:
            if all((float(s) - subtract) / divide_by == float(v) for s, v in zip(source, values)):
                return subtract, divide_by
        return None


class ReferenceFigure(Base):
    """A published figure (harness/published.py); case_id and metric are None where unmapped."""

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
    launch: Mapped[str | None] = mapped_column(Text)  # JSON: the launch of the case the figure is of (schema 7)
    also_in: Mapped[str | None] = mapped_column(Text)
    unmapped_reason: Mapped[str | None] = mapped_column(Text)
    notes: Mapped[str | None] = mapped_column(Text)
