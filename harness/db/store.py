"""The results database: open (SQLite by default, any SQLAlchemy URL), migrate, write runs, read views.

Every case is committed as soon as it is measured, so an interrupted run keeps what it measured.
Several processes (one `bench run` per GPU, readers) can share one SQLite file: WAL mode, a busy
timeout, write transactions that take the write lock up front (BEGIN IMMEDIATE), and a retry.
Files of an older schema are backed up and upgraded with the Alembic migrations in
harness/migrations/ when they are opened.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd
from sqlalchemy import create_engine, event, func, inspect, select, text
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import ArgumentError, OperationalError, SQLAlchemyError
from sqlalchemy.orm import Session

from harness import migrations
from harness.measure.device import DeviceInfo
from harness.errors import StoreError, redact
from harness.measure.measurement import CaseResult, launch_key
from harness.provenance import Provenance
from harness.stats import summarize
from harness.db.tables import (SCHEMA_VERSION, BuildRow, CaseRow, Device, Measurement, Meta, ReferenceFigure,
                            TextRow,
                            Run, SampleArray)

DEFAULT_DB = "results.db"
BUSY_TIMEOUT_MS = 30_000  # several writers (one per GPU) share one SQLite file
WRITE_ATTEMPTS = 5  # a write still locked out after the busy timeout is retried this often


def resolve_url(db: str | None) -> str:
    """A path or URL -> a SQLAlchemy URL. Default: $HOPPER_BENCH_DB, else ./results.db."""
    db = db or os.environ.get("HOPPER_BENCH_DB") or DEFAULT_DB
    if "://" in db:
        try:
            make_url(db)
        except (ArgumentError, ValueError):
            raise StoreError(f"not a database URL: {db!r} (expected a file path or e.g. sqlite:///x.db)") from None
        return db
    try:
        return f"sqlite:///{Path(db).expanduser().resolve()}"
    except RuntimeError as exc:  # "~someone" with no such user
        raise StoreError(f"cannot use --db {db!r}: {exc}") from None


def sqlite_path(url: str) -> Path | None:
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
        return Path(parsed.database)
    return None


def _now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


def _first_line(exc: BaseException) -> str:
    return str(getattr(exc, "orig", None) or exc).splitlines()[0]


@dataclass(frozen=True)
class Migration:
    """What opening the database did to an older file."""

    from_version: int
    to_version: int
    backup: Path | None


@dataclass(frozen=True)
class RunInfo:
    id: int
    status: str
    suite: str
    filter: str | None
    git_commit: str | None
    device_uuid: str | None
    gpu_name: str | None


class Store:
    @classmethod
    def open(cls, db: str | None = None, create: bool = False, read_only: bool = False) -> "Store":
        """Open the database, creating it if `create`, upgrading it if it is older.

        With create=False a missing SQLite file is an error, never a new empty file. With read_only the
        file is opened read-only (SQLite `mode=ro`, an authorizer refusing ATTACH and pragma changes;
        PostgreSQL read-only transactions): nothing is upgraded, converted to WAL or re-synced, and
        an older schema is an error naming `bench db upgrade`.
        """
        url = resolve_url(db)
        path = sqlite_path(url)
        if path is not None:
            if path.exists() and path.is_dir():
                raise StoreError(f"{path} is a directory, not a database file")
            if not path.exists() and not create:
                raise StoreError(f"no results database at {path} (run `bench run` first, or pass --db)")
            if not path.parent.is_dir():
                raise StoreError(f"cannot create {path}: directory {path.parent} does not exist")
            if path.exists():
                _check_sqlite_file(path)
        try:
            engine = create_engine(_read_only_url(url, path) if read_only and path else url)
        except (ArgumentError, SQLAlchemyError, ImportError) as exc:
            raise StoreError(f"cannot open database {redact(url)}: {redact(_first_line(exc))}") from None
        if engine.dialect.name == "sqlite":
            event.listen(engine, "connect", _sqlite_connect_read_only if read_only else _sqlite_connect)
            event.listen(engine, "begin", _sqlite_begin)
        elif read_only and engine.dialect.name == "postgresql":
            event.listen(engine, "connect", _postgresql_read_only)
        store = cls(url, engine)
        store.read_only = read_only
        if read_only:
            store._check_current()
        else:
            store.migration = store._prepare(create, path)
            store._sync_references()
        return store

    def _check_current(self) -> None:
        """A read-only open: the file must be ours and of the current schema (nothing is changed)."""
        tables, revision = self._schema_revision()
        if not tables or revision is None:
            raise StoreError(f"{redact(self.url)} is not a hopper-bench database")
        if revision != migrations.head():
            if revision in migrations.known_revisions():
                raise StoreError(f"{redact(self.url)} has schema {revision.lstrip('0')}, this harness "
                                 f"{SCHEMA_VERSION}: run `bench db upgrade --db ...` first (this command "
                                 "only reads, so it leaves the file as it is)")
            raise StoreError(f"database {redact(self.url)} has schema version {revision.lstrip('0') or revision}; "
                             f"this harness reads versions up to {SCHEMA_VERSION}: upgrade hopper-bench")

    def __init__(self, url: str, engine: Engine):
        self.url = url
        self.engine = engine
        self.migration: Migration | None = None
        # Writes take the lock up front: two writers never both read "absent" and insert the same row.
        self._writer = engine.execution_options(begin_immediate=True)
        self._reader: Engine | None = None
        self.read_only = False
        self.last_rowcount: int | None = None

    def _schema_revision(self) -> tuple[set[str], str | None]:
        try:
            with self.engine.connect() as conn:
                tables = set(inspect(conn).get_table_names())
                revision = None
                if "alembic_version" in tables:
                    revision = conn.execute(text("SELECT version_num FROM alembic_version")).scalar()
                elif "meta" in tables:  # a schema-1 file written before the migrations existed
                    version = conn.execute(text("SELECT value FROM meta WHERE key = 'schema_version'")).scalar()
                    revision = f"{int(version):04d}" if version and version.isdigit() else version
        except SQLAlchemyError as exc:
            raise StoreError(f"cannot read database {self.url}: {_first_line(exc)}") from None
        return tables, revision

    def _prepare(self, create: bool, path: Path | None) -> Migration | None:
        tables, revision = self._schema_revision()
        if not tables:
            if not create:
                raise StoreError(f"{self.url} is empty: not a hopper-bench database")
            self._use_wal()
            self._upgrade()
            return None
        if revision is None:
            raise StoreError(f"{self.url} is not a hopper-bench database (tables: {', '.join(sorted(tables))})")
        self._use_wal()
        if revision == migrations.head():
            return None
        if revision not in migrations.known_revisions():
            raise StoreError(f"database {self.url} has schema version {revision.lstrip('0') or revision}; "
                             f"this harness reads versions up to {SCHEMA_VERSION}: upgrade hopper-bench")
        backup = _backup(path, revision) if path else None
        self._upgrade()
        return Migration(int(revision), SCHEMA_VERSION, backup)

    def _use_wal(self) -> None:
        """WAL mode (kept in the file) lets readers and several writers share it. Set only on our
        own databases: a file we refuse is left as it was."""
        if self.engine.dialect.name != "sqlite":
            return
        raw = self.engine.raw_connection()
        try:
            if raw.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                raw.execute("PRAGMA journal_mode=WAL")
        except sqlite3.Error as exc:
            raise StoreError(f"cannot use {self.url}: {exc}") from None
        finally:
            raw.close()

    def _upgrade(self) -> None:
        """Run the migrations to the newest schema in one write transaction. The state is read
        again under the write lock: another process may have just done the same.

        SQLite's batch migrations copy tables that other tables reference, so foreign keys are off
        while they run (SQLite ignores that pragma inside a transaction) and checked before commit."""
        from alembic import command

        sqlite = self.engine.dialect.name == "sqlite"
        try:
            with self._writer.connect() as conn:
                raw = conn.connection.dbapi_connection
                if sqlite:
                    raw.execute("PRAGMA foreign_keys=OFF")
                try:
                    with conn.begin():
                        _schema_lock(conn)
                        tables = set(inspect(conn).get_table_names())
                        cfg = migrations.config(conn)
                        if "alembic_version" not in tables and "meta" in tables:  # schema 1, before Alembic
                            version = conn.execute(text("SELECT value FROM meta WHERE key = 'schema_version'")).scalar()
                            command.stamp(cfg, f"{int(version):04d}")
                        command.upgrade(cfg, "head")
                        if sqlite and conn.exec_driver_sql("PRAGMA foreign_key_check").first():
                            raise StoreError(f"cannot upgrade database {self.url}: a foreign key is broken")
                finally:
                    if sqlite:
                        raw.execute("PRAGMA foreign_keys=ON")
        except SQLAlchemyError as exc:
            raise StoreError(f"cannot upgrade database {self.url}: {_first_line(exc)}") from None

    def _sync_references(self) -> None:
        """Load the shipped published figures when the database lacks them or holds an older set."""
        from harness.db import references

        wanted = references.data_hash()
        with Session(self.engine) as session:
            current = session.get(Meta, "references_hash")
            if current is not None and current.value == wanted:
                return

        def work(session: Session) -> None:
            _schema_lock(session.connection())
            current = session.get(Meta, "references_hash")
            if current is not None and current.value == wanted:  # another process just did it
                return
            session.query(ReferenceFigure).delete()
            session.add_all(ReferenceFigure(
                source=r.source, citation=r.citation, source_table=r.table, gpu=r.gpu, case_id=r.case_id,
                m=r.m, n=r.n, k=r.k, dtype_a=r.dtype_a, dtype_acc=r.dtype_acc, operands=r.operands,
                sparse=r.sparse, metric=r.metric, value=r.value, unit=r.unit, condition=r.condition,
                launch=launch_key(r.launch) if r.launch else None,
                also_in=r.also_in, unmapped_reason=r.unmapped_reason, notes=r.notes) for r in references.load())
            session.merge(Meta(key="references_hash", value=wanted))

        self._write(work)

    def schema_version(self) -> int:
        with Session(self.engine) as session:
            return int(session.get(Meta, "schema_version").value)

    def _write(self, work):
        """Run `work(session)` in a write transaction (BEGIN IMMEDIATE on SQLite) and return its
        result; retried while the file stays locked past the busy timeout."""
        for attempt in range(WRITE_ATTEMPTS):
            try:
                with Session(self._writer) as session, session.begin():
                    _schema_lock(session.connection())  # PostgreSQL: one writer at a time, as SQLite's IMMEDIATE
                    return work(session)
            except OperationalError as exc:
                if ("locked" not in str(exc) and "busy" not in str(exc)) or attempt == WRITE_ATTEMPTS - 1:
                    raise StoreError(f"cannot write to {self.url}: {_first_line(exc)}") from None
                time.sleep(0.1 * 2 ** attempt)

    # -- writing -------------------------------------------------------------------------------

    def start_run(self, device: DeviceInfo, provenance: Provenance, suite: str, filter_: str | None) -> int:
        def work(session: Session) -> int:
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
                      device_id=device_row.id, gpu_index=device.index, resumes=0)
            session.add(run)
            session.flush()
            return run.id

        return self._write(work)

    def resume_run(self, run_id: int) -> None:
        """Mark an interrupted or failed run running again."""
        def work(session: Session) -> None:
            run = session.get(Run, run_id)
            run.status, run.finished_at, run.error = "running", None, None
            run.resumes = (run.resumes or 0) + 1

        self._write(work)

    def finish_run(self, run_id: int, status: str, error: str | None = None) -> None:
        def work(session: Session) -> None:
            run = session.get(Run, run_id)
            run.status, run.finished_at, run.error = status, _now(), error

        self._write(work)

    def record_case(self, run_id: int, result: CaseResult) -> None:
        """Store one case's measurements (and raw samples) in one transaction."""
        self._write(lambda session: self._add_case(session, run_id, result))

    def _add_case(self, session: Session, run_id: int, result: CaseResult) -> None:
        case_pk = self._case_pk(session, result.case)
        build_id = self._build_id(session, result) if result.build else None
        texts = Texts(session)
        explicit: dict[str, list[tuple[int, np.ndarray]]] = {}  # launch key -> arrays stored as numbers
        for metric in result.metrics:
            launch = launch_key(metric.launch)
            row = Measurement(run_id=run_id, case_pk=case_pk, build_id=build_id,
                              sm_clock_mhz=metric.sm_clock_mhz, valid=result.valid, error=result.error,
                              validation_max_error=result.validation_max_error, created_at=_now(), n_samples=0,
                              telemetry_samples=0, **texts.ids(
                                  metric=metric.name, unit=metric.unit, launch=launch, status=result.status,
                                  input_distribution=metric.input_distribution or result.input_distribution,
                                  notes=metric.notes, stop_reason=metric.stop_reason))
            if result.valid and metric.samples is not None and len(metric.samples):
                s = summarize(metric.samples)
                row.value, row.mean, row.minimum, row.maximum = s.median, s.mean, s.minimum, s.maximum
                row.stdev, row.spread, row.n_samples = s.stdev, s.spread, s.n
            if metric.gpu_state is not None:
                state = metric.gpu_state
                row.telemetry_samples = state.samples
                row.nvml_sm_clock_mhz, row.nvml_mem_clock_mhz = state.sm_clock_mhz, state.mem_clock_mhz
                row.power_w, row.temperature_c = state.power_w, state.temperature_c
                row.throttle_reasons_id = texts.id(",".join(state.reasons) if state.samples else None)
                row.throttled, row.power_capped = state.throttled, state.power_capped
                row.other_processes = state.other_processes
            session.add(row)
            session.flush()
            if row.n_samples:
                session.add(_sample_array(row.id, np.asarray(metric.samples, dtype=float),
                                          explicit.setdefault(launch, [])))

    @staticmethod
    def _case_pk(session: Session, case) -> int:
        row = session.scalars(select(CaseRow).where(CaseRow.case_id == case.case_id)).first()
        if row is None:
            row = CaseRow(case_id=case.case_id, family=case.family,
                          params=json.dumps(case.params(), sort_keys=True), **case.columns())
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
                           registers=build.max_registers(), spill_bytes=build.spill_bytes(),
                           sass_ok=result.sass.ok if result.sass else None,
                           sass_note=result.sass.note if result.sass else None,
                           executes=result.sass.executes if result.sass else None,
                           emulated=result.sass.emulated if result.sass else None, compile_log_zlib=BuildRow.pack_log(build.log))
            session.add(row)
            session.flush()
        return row.id

    # -- reading -------------------------------------------------------------------------------

    def query(self, sql: str, write: bool = False) -> pd.DataFrame:
        """Run one SQL statement; read-only unless `write` (then committed; `last_rowcount` says how
        many rows it changed)."""
        if write and self.read_only:
            raise StoreError(f"{redact(self.url)} was opened read-only")
        toggle = not write and not self.read_only  # a read-only store is read-only on every connection
        try:
            with (self._writer if write else self.engine).connect() as conn:
                if toggle:
                    _read_only(conn, True)
                try:
                    # psycopg reads % as a placeholder even without parameters: a literal % is %%
                    statement = sql.replace("%", "%%") if conn.dialect.name == "postgresql" else sql
                    result = conn.exec_driver_sql(statement)
                    frame = (pd.DataFrame(result.fetchall(), columns=list(result.keys()))
                             if result.returns_rows else pd.DataFrame())
                    self.last_rowcount = result.rowcount if not result.returns_rows else None
                    if write:
                        conn.commit()
                    return frame
                finally:
                    if not write:
                        conn.rollback()
                    if toggle:
                        _read_only(conn, False)
        except SQLAlchemyError as exc:
            message = _first_line(exc)
            if not write and any(word in message for word in ("readonly", "read-only", "read only", "not authorized")):
                message += " (`bench sql` is read-only: pass --write to change the database)"
            raise StoreError(f"SQL error: {message}") from None
        except (sqlite3.Warning, ValueError) as exc:  # e.g. more than one statement at a time
            raise StoreError(f"SQL error: {_first_line(exc)}") from None

    def run_info(self, run_id: int) -> RunInfo:
        with Session(self.engine) as session:
            run = session.get(Run, run_id)
            if run is None:
                known = session.scalars(select(Run.id).order_by(Run.id)).all()
                choices = f"runs {known[0]}..{known[-1]}" if known else "no runs yet"
                raise StoreError(f"no run {run_id} in {self.url} ({choices}; see `bench runs`)")
            device = session.get(Device, run.device_id) if run.device_id else None
            return RunInfo(run.id, run.status, run.suite, run.filter, run.git_commit,
                           device.uuid if device else None, device.name if device else None)

    def measured_case_ids(self, run_id: int) -> set[str]:
        """Cases with stored measurements in the run (valid, invalid or faulted)."""
        with Session(self.engine) as session:
            rows = session.execute(select(CaseRow.case_id).join(Measurement, Measurement.case_pk == CaseRow.id)
                                   .where(Measurement.run_id == run_id).distinct())
            return {row[0] for row in rows}

    def runs(self) -> pd.DataFrame:
        return self.query("""
            SELECT r.id AS run, r.started_at, r.status, d.name AS gpu, r.suite, r.filter,
                   (SELECT COUNT(DISTINCT case_pk) FROM measurements m WHERE m.run_id = r.id) AS cases,
                   (SELECT COUNT(DISTINCT case_pk) FROM measurements m
                     WHERE m.run_id = r.id AND m.status = 'invalid') AS invalid,
                   (SELECT COUNT(DISTINCT case_pk) FROM measurements m
                     WHERE m.run_id = r.id AND m.status = 'fault') AS faults,
                   r.resumes, substr(r.git_commit, 1, 10) AS git_commit
            FROM runs r LEFT JOIN devices d ON d.id = r.device_id ORDER BY r.id""")


def _check_sqlite_file(path: Path) -> None:
    """Refuse a file that is not SQLite before the engine's first connection touches it (that
    connection sets WAL mode, which would write a header into an empty file).

    The file is read through SQLite, read-only, never with open()/close(): closing any other
    descriptor of the file would drop the POSIX locks that this process's SQLite connections
    hold on it, and another process could then reset the WAL under them.
    """
    if path.stat().st_size == 0:
        raise StoreError(f"{path} is an empty file, not a hopper-bench database")
    try:
        probe = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_MS / 1000)
        try:
            probe.execute("PRAGMA schema_version").fetchone()
        finally:
            probe.close()
    except sqlite3.Error as exc:
        raise StoreError(f"{path} is not a hopper-bench database ({exc})") from None


def _backup(path: Path, revision: str) -> Path:
    """A consistent copy of the SQLite file (WAL included) before it is upgraded."""
    target = path.with_name(f"{path.name}.schema{int(revision)}.bak")
    n = 1
    while target.exists():
        n += 1
        target = path.with_name(f"{path.name}.schema{int(revision)}.{n}.bak")
    source, copy = sqlite3.connect(path), sqlite3.connect(target)
    try:
        source.backup(copy)
    finally:
        source.close()
        copy.close()
    return target


def _sqlite_connect(dbapi_connection, _record) -> None:
    dbapi_connection.isolation_level = None  # SQLAlchemy emits BEGIN itself (_sqlite_begin)
    cursor = dbapi_connection.cursor()
    cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


# Authorizer action codes (sqlite3.SQLITE_*) a read-only connection refuses outright, and the pragmas
# that take an argument only to read (every other pragma with an argument sets something).
_REFUSED = {sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH}
_READING_PRAGMAS = {"table_info", "table_xinfo", "table_list", "index_list", "index_info", "index_xinfo",
                    "foreign_key_list", "foreign_key_check", "integrity_check", "quick_check"}


def _read_only_authorizer(action, arg1, arg2, _db, _trigger):
    if action in _REFUSED:
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_PRAGMA and arg2 is not None and (arg1 or "").lower() not in _READING_PRAGMAS:
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


def _sqlite_connect_read_only(dbapi_connection, _record) -> None:
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    cursor.execute("PRAGMA query_only=ON")
    cursor.close()
    dbapi_connection.set_authorizer(_read_only_authorizer)


def _postgresql_read_only(dbapi_connection, _record) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("SET default_transaction_read_only = on")
    cursor.close()
    dbapi_connection.commit()


def _read_only_url(url: str, path: Path) -> str:
    """SQLite's read-only URI for `path` (the driver opens it with SQLITE_OPEN_READONLY)."""
    from urllib.parse import quote

    return f"sqlite:///file:{quote(str(path))}?mode=ro&uri=true"


SCHEMA_LOCK = 0x68627368  # PostgreSQL advisory lock key ("hbsh") of every write transaction


def _schema_lock(conn) -> None:
    """Serialise write transactions (schema upgrades, reference syncs, runs and cases) between processes
    until the transaction ends, so that get-or-create never races. SQLite's BEGIN IMMEDIATE already
    does; PostgreSQL takes a transaction-level advisory lock. (Re-entrant within a transaction.)"""
    if conn.dialect.name == "postgresql":
        conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({SCHEMA_LOCK})")


def _sqlite_begin(conn) -> None:
    immediate = conn.get_execution_options().get("begin_immediate")
    conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


def _read_only(conn, on: bool) -> None:
    if conn.dialect.name == "sqlite":
        conn.exec_driver_sql(f"PRAGMA query_only = {'ON' if on else 'OFF'}")
    elif conn.dialect.name == "postgresql" and on:
        conn.exec_driver_sql("SET TRANSACTION READ ONLY")


class Texts:
    """The ids of strings in `texts` within one write transaction: looked up by digest, added when
    new. (A cache per transaction: a retried transaction starts again from the database.)"""

    def __init__(self, session: Session):
        self.session, self.known = session, {}

    def id(self, text: str | None) -> int | None:
        if text is None:
            return None
        if text not in self.known:
            digest = TextRow.digest_of(text)
            row = self.session.scalars(select(TextRow).where(TextRow.digest == digest)).first()
            if row is None:
                row = TextRow(digest=digest, text=text)
                self.session.add(row)
                self.session.flush()
            elif row.text != text:
                raise StoreError(f"two strings share the digest {digest}: {row.text!r} and {text!r}")
            self.known[text] = row.id
        return self.known[text]

    def ids(self, **columns: str | None) -> dict[str, int | None]:
        """{"metric": "x", ...} -> {"metric_id": id, ...}"""
        return {f"{name}_id": self.id(value) for name, value in columns.items()}


def _sample_array(measurement_id: int, values: np.ndarray, explicit: list[tuple[int, np.ndarray]]) -> SampleArray:
    """The samples as numbers, or as a rule over an array of the same case and launch stored as numbers
    (a peak fraction is its throughput over the peak, exactly): `explicit` lists those, and grows."""
    for source_id, source in explicit:
        rule = SampleArray.derivation(source, values)
        if rule is not None:
            return SampleArray(measurement_id=measurement_id, derived_from=source_id,
                               subtract=rule[0], divide_by=rule[1])
    explicit.append((measurement_id, values))
    return SampleArray(measurement_id=measurement_id, samples=SampleArray.encode(values))
