"""SQLAlchemy ORM tables of the results database, and the views users query.

The ORM describes the newest schema; harness/migrations/ builds it (and upgrades older files)
step by step. A change here needs a new migration, and tests/fixtures/ a database of the old one.
"""

from __future__ import annotations

import hashlib
import json
import zlib

from datetime import datetime

import numpy as np
from sqlalchemy import (BigInteger, Boolean, DateTime, Float, ForeignKey, Integer, LargeBinary, String, Text,
                        TypeDecorator, UniqueConstraint)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

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


# A sample array as stored (schema 10): one kind byte, then the body. The kind's low bits say what the
# body holds, bit 0x80 that it is raw-deflated (zlib, wbits=-15), which it is wherever that is shorter.
#   SAMPLES_FLOAT: the float64 values, little-endian, as 8 byte planes (every value's first byte, then
#                  every second byte, ...): values of one measurement share their sign, exponent and top
#                  mantissa bits, so the first planes deflate to little.
#   SAMPLES_INT8/16/32/64: every value is a whole number (|v| < 2**53, no -0.0): the first value and the
#                  differences of the next, as little-endian signed integers of that width.
# Both are exact: the float64 bits come back, or whole numbers that float64 holds exactly.
SAMPLES_FLOAT, SAMPLES_INT8, SAMPLES_INT16, SAMPLES_INT32, SAMPLES_INT64 = 0, 1, 2, 3, 4
SAMPLES_DEFLATED = 0x80
_INT_KINDS = {SAMPLES_INT8: "<i1", SAMPLES_INT16: "<i2", SAMPLES_INT32: "<i4", SAMPLES_INT64: "<i8"}


def _deflate(body: bytes) -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    return packer.compress(body) + packer.flush()


def pack_samples(values) -> bytes:
    """The samples as stored on SQLite (see SAMPLES_FLOAT above): exact, a third of their JSON text."""
    a = np.ascontiguousarray(np.asarray(values, dtype=float).ravel(), dtype="<f8")
    whole = a.size > 0 and bool(np.all(np.isfinite(a)) and np.all(a == np.rint(a)) and np.all(np.abs(a) < 2 ** 53)
                                and not np.any((a == 0) & np.signbit(a)))
    if whole:
        steps = np.diff(a.astype(np.int64), prepend=np.int64(0))
        low, high = int(steps.min()), int(steps.max())
        kind = next(k for k, dtype in _INT_KINDS.items()
                    if np.iinfo(dtype).min <= low and high <= np.iinfo(dtype).max)
        body = steps.astype(_INT_KINDS[kind]).tobytes()
    else:
        kind, body = SAMPLES_FLOAT, a.view(np.uint8).reshape(-1, 8).T.tobytes()
    packed = _deflate(body)
    return bytes([kind | SAMPLES_DEFLATED]) + packed if len(packed) < len(body) else bytes([kind]) + body


def unpack_samples(stored: bytes | str) -> np.ndarray:
    """The float64 samples of a stored array: packed (pack_samples) or a JSON array (schemas 5 to 9,
    and PostgreSQL)."""
    if isinstance(stored, str):
        return np.asarray(json.loads(stored), dtype=float)
    stored = bytes(stored)
    kind, body = stored[0], stored[1:]
    if kind & SAMPLES_DEFLATED:
        body = zlib.decompress(body, -15)
    kind &= ~SAMPLES_DEFLATED
    if kind in _INT_KINDS:
        return np.cumsum(np.frombuffer(body, dtype=_INT_KINDS[kind]).astype(np.int64)).astype(float)
    if kind != SAMPLES_FLOAT or len(body) % 8:
        raise ValueError(f"not a stored sample array (kind {kind}, {len(body)} bytes)")
    return np.frombuffer(body, dtype=np.uint8).reshape(8, -1).T.copy().view("<f8").ravel().astype(float)


def json_samples(values) -> str:
    """A JSON array of the samples, exact and short: whole numbers without ".0", others as the shortest
    round-trip repr (the stored form on PostgreSQL, and what the SQLite `samples` view expands)."""
    return json.dumps([int(v) if float(v).is_integer() and abs(v) < 2 ** 53 and not (v == 0 and np.signbit(v))
                       else float(v) for v in values], separators=(",", ":"))


def samples_json(stored: bytes | str | None) -> str | None:
    """SQL function `samples_json(sample_arrays.samples)`: the array as JSON text, for json_each. Every
    SQLite connection of the harness has it (harness/db/connections.py); the `samples` view needs it."""
    if stored is None or isinstance(stored, str):
        return stored
    return json_samples(unpack_samples(stored))


def register_functions(connection) -> None:
    """Give a sqlite3 connection the SQL functions the views need (`samples_json`, for the `samples`
    view). The harness's own connections have them; call this on one opened with sqlite3.connect."""
    connection.create_function("samples_json", 1, samples_json, deterministic=True)


class SampleBlob(TypeDecorator):
    """`sample_arrays.samples`: in Python a float64 array; stored packed (pack_samples) on SQLite, as a
    JSON array on PostgreSQL. Either form is read back, so a copy between the two is exact."""

    impl = LargeBinary
    cache_ok = True

    def load_dialect_impl(self, dialect):
        return dialect.type_descriptor(LargeBinary() if dialect.name == "sqlite" else Text())

    def process_bind_param(self, value, dialect):
        if value is None:
            return None
        if isinstance(value, (bytes, memoryview)) and dialect.name == "sqlite":
            return bytes(value)  # already packed (a merge copies a SQLite source's arrays as stored)
        if isinstance(value, (bytes, memoryview, str)):
            value = unpack_samples(value)
        return pack_samples(value) if dialect.name == "sqlite" else json_samples(value)

    def process_result_value(self, value, dialect):
        return None if value is None else unpack_samples(value)


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
