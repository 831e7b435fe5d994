"""The results database: open (SQLite by default, any SQLAlchemy URL), write runs, read views.

Every case is committed as soon as it is measured, so an interrupted run keeps what it measured.
"""

from __future__ import annotations

import os
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd
from sqlalchemy import create_engine, event, inspect, select, text
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError
from sqlalchemy.orm import Session

from harness.device import DeviceInfo
from harness.errors import StoreError
from harness.families import family_of
from harness.measurement import CaseResult
from harness.provenance import Provenance
from harness.stats import summarize
from harness.tables import (RESULTS_VIEW, SCHEMA_VERSION, Base, BuildRow, CaseRow, Device, Measurement,
                            Meta, Run, Sample)

DEFAULT_DB = "results.db"
BUSY_TIMEOUT_MS = 30_000  # several writers (one per GPU) share one SQLite file


def resolve_url(db: str | None) -> str:
    """A path or URL -> a SQLAlchemy URL. Default: $HOPPER_BENCH_DB, else ./results.db."""
    db = db or os.environ.get("HOPPER_BENCH_DB") or DEFAULT_DB
    if "://" in db:
        try:
            make_url(db)
        except (ArgumentError, ValueError):
            raise StoreError(f"not a database URL: {db!r} (expected a file path or e.g. sqlite:///x.db)") from None
        return db
    return f"sqlite:///{Path(db).expanduser().resolve()}"


def _sqlite_path(url: str) -> Path | None:
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
        return Path(parsed.database)
    return None


def _now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


class Store:
    def __init__(self, url: str, engine: Engine):
        self.url = url
        self.engine = engine

    @classmethod
    def open(cls, db: str | None = None, create: bool = False) -> "Store":
        """Open the database; with create=False a missing SQLite file is an error, not a new file."""
        url = resolve_url(db)
        path = _sqlite_path(url)
        if path is not None:
            if not path.exists() and not create:
                raise StoreError(f"no results database at {path} (run `bench run` first, or pass --db)")
            if not path.parent.is_dir():
                raise StoreError(f"cannot create {path}: directory {path.parent} does not exist")
            if path.exists() and path.is_dir():
                raise StoreError(f"{path} is a directory, not a database file")
        try:
            engine = create_engine(url)
        except (ArgumentError, SQLAlchemyError, ImportError) as exc:
            raise StoreError(f"cannot open database {url}: {exc}") from None
        if engine.dialect.name == "sqlite":
            event.listen(engine, "connect", _sqlite_pragmas)
        store = cls(url, engine)
        store._prepare(create)
        return store

    def _prepare(self, create: bool) -> None:
        try:
            tables = set(inspect(self.engine).get_table_names())
        except SQLAlchemyError as exc:
            raise StoreError(f"cannot read database {self.url}: {str(exc).splitlines()[0]}") from None
        if "meta" in tables:
            with Session(self.engine) as session:
                row = session.get(Meta, "schema_version")
            if row is None or int(row.value) != SCHEMA_VERSION:
                found = row.value if row else "none"
                raise StoreError(f"database {self.url} has schema version {found}; this harness "
                                 f"reads version {SCHEMA_VERSION}")
            return
        if tables:
            raise StoreError(f"{self.url} is not a hopper-bench database (tables: {', '.join(sorted(tables))})")
        if not create:
            raise StoreError(f"{self.url} is empty: not a hopper-bench database")
        Base.metadata.create_all(self.engine)
        with self.engine.begin() as conn:
            conn.execute(text(RESULTS_VIEW))
        with Session(self.engine) as session, session.begin():
            session.add(Meta(key="schema_version", value=str(SCHEMA_VERSION)))

    # -- writing -------------------------------------------------------------------------------

    def start_run(self, device: DeviceInfo, provenance: Provenance, suite: str, filter_: str | None) -> int:
        with Session(self.engine) as session, session.begin():
            device_row = session.scalars(select(Device).where(Device.uuid == device.uuid)).first()
            if device_row is None:
                device_row = Device(name=device.name, uuid=device.uuid, sm_count=device.sm_count,
                                    cc_major=device.cc_major, cc_minor=device.cc_minor,
                                    total_memory_bytes=device.total_memory_bytes, l2_bytes=device.l2_bytes,
                                    max_sm_clock_mhz=device.max_sm_clock_mhz,
                                    max_mem_clock_mhz=device.max_mem_clock_mhz,
                                    power_limit_w=device.power_limit_w)
                session.add(device_row)
                session.flush()
            run = Run(started_at=_now(), status="running", suite=suite, filter=filter_,
                      command_line=provenance.command_line, host=provenance.host,
                      git_commit=provenance.git_commit, git_dirty=provenance.git_dirty,
                      harness_version=provenance.harness_version, python_version=provenance.python_version,
                      cupy_version=provenance.cupy_version, nvrtc_version=provenance.nvrtc_version,
                      driver_version=device.driver_version, cuda_driver_version=device.cuda_driver_version,
                      device_id=device_row.id, gpu_index=device.index)
            session.add(run)
            session.flush()
            return run.id

    def finish_run(self, run_id: int, status: str, error: str | None = None) -> None:
        with Session(self.engine) as session, session.begin():
            run = session.get(Run, run_id)
            run.status, run.finished_at, run.error = status, _now(), error

    def record_case(self, run_id: int, result: CaseResult) -> None:
        """Store one case's measurements (and raw samples) in one transaction."""
        with Session(self.engine) as session, session.begin():
            case_pk = self._case_pk(session, result.case)
            build_id = self._build_id(session, result) if result.build else None
            for metric in result.metrics:
                row = Measurement(run_id=run_id, case_pk=case_pk, build_id=build_id, metric=metric.name,
                                  unit=metric.unit, warpgroups=metric.warpgroups, ilp=metric.ilp,
                                  sm_clock_mhz=metric.sm_clock_mhz, valid=result.valid, error=result.error,
                                  validation_max_error=result.validation_max_error,
                                  input_distribution=result.input_distribution, notes=metric.notes,
                                  created_at=_now(), n_samples=0)
                if result.valid and metric.samples is not None and len(metric.samples):
                    s = summarize(metric.samples)
                    row.value, row.mean, row.minimum, row.maximum = s.median, s.mean, s.minimum, s.maximum
                    row.stdev, row.spread, row.n_samples = s.stdev, s.spread, s.n
                session.add(row)
                session.flush()
                if row.n_samples:
                    session.add_all(Sample(measurement_id=row.id, idx=i, value=float(v))
                                    for i, v in enumerate(metric.samples))

    @staticmethod
    def _case_pk(session: Session, case) -> int:
        row = session.scalars(select(CaseRow).where(CaseRow.case_id == case.case_id)).first()
        if row is None:
            row = CaseRow(case_id=case.case_id, family=case.family, instruction=case.instruction,
                          m=case.m, n=case.n, k=case.k, dtype_a=case.dtype_a, dtype_b=case.dtype_b,
                          dtype_acc=case.dtype_acc, operands=case.operands, sparse=case.sparse,
                          layout=family_of(case).LAYOUT)
            session.add(row)
            session.flush()
        return row.id

    @staticmethod
    def _build_id(session: Session, result: CaseResult) -> int:
        build = result.build
        row = session.scalars(select(BuildRow).where(BuildRow.build_hash == build.build_hash)).first()
        if row is None:
            row = BuildRow(build_hash=build.build_hash, source_hash=build.source_hash,
                           options=" ".join(build.options), nvrtc_version=build.nvrtc_version,
                           registers=build.registers("probe_chain"), spill_bytes=build.spill_bytes("probe_chain"),
                           sass_ok=result.sass.ok if result.sass else None,
                           sass_note=result.sass.note if result.sass else None, compile_log=build.log)
            session.add(row)
            session.flush()
        return row.id

    # -- reading -------------------------------------------------------------------------------

    def query(self, sql: str) -> pd.DataFrame:
        try:
            with self.engine.connect() as conn:
                result = conn.execute(text(sql))
                if not result.returns_rows:
                    return pd.DataFrame()
                return pd.DataFrame(result.fetchall(), columns=list(result.keys()))
        except SQLAlchemyError as exc:
            message = str(getattr(exc, "orig", exc)).splitlines()[0]
            raise StoreError(f"SQL error: {message}") from None

    def runs(self) -> pd.DataFrame:
        return self.query("""
            SELECT r.id AS run, r.started_at, r.status, d.name AS gpu, r.suite, r.filter,
                   (SELECT COUNT(DISTINCT case_pk) FROM measurements m WHERE m.run_id = r.id) AS cases,
                   (SELECT COUNT(DISTINCT case_pk) FROM measurements m
                     WHERE m.run_id = r.id AND NOT m.valid) AS invalid,
                   substr(r.git_commit, 1, 10) AS git_commit
            FROM runs r LEFT JOIN devices d ON d.id = r.device_id ORDER BY r.id""")


def _sqlite_pragmas(dbapi_connection, _record) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()
