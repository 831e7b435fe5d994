"""The results database: open (SQLite by default, any SQLAlchemy URL), migrate, write runs, read views.

Every case is committed as soon as it is measured, so an interrupted run keeps what it measured.
Several processes (one `bench run` per GPU, readers) can share one SQLite file: WAL mode, a busy
timeout, write transactions that take the write lock up front (BEGIN IMMEDIATE), and a retry.
Files of an older schema are backed up and upgraded with the Alembic migrations in
harness/migrations/ when a writing command opens them.

What a command may change is decided before any byte of the file changes:
- a new SQLite file is built whole under a temporary name and linked into place, so no process
  ever sees it half made (or empty);
- the schema is read first, and a file of an unknown (newer) schema, or not ours, is refused as it
  is; an upgrade takes the write lock, reads the schema again, backs the file up and migrates, so
  several processes upgrading at once do it once;
- WAL mode is set by the first write that commits through `_write`, never by opening or reading;
- a reading store is read-only on every connection, and leaves no -wal/-shm that it made.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import sqlite3
import time
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator

import numpy as np
import pandas as pd
from sqlalchemy import insert, inspect, select, text
from sqlalchemy.engine import URL, Engine, make_url
from sqlalchemy.exc import ArgumentError, OperationalError, SQLAlchemyError
from sqlalchemy.orm import Session

from harness import migrations
from harness.measure.device import DeviceInfo, is_simulated
from harness.errors import StoreError
from harness.measure.measurement import CaseResult, launch_key
from harness.provenance import Provenance
from harness.stats import summarize
from harness.db.connections import (BUSY_TIMEOUT_MS, READING_KEYWORDS, Rows, _Timeout, _engine, _first_line,
                                    _leading_keyword, _postgresql_rows, _psycopg, _read_only, _schema_lock,
                                    _sqlite_rows, describe, sqlite_path)  # describe, sqlite_path: also for callers
from harness.db.tables import (SCHEMA_VERSION, BuildRow, CaseRow, Device, Measurement, Meta, ReferenceFigure,
                            TextRow,
                            Run, SampleArray)

USER_DB = "bench.db"  # where a user's runs go by default (untracked)
SHIPPED_DB = "results.db"  # the runs of record, built from runs/ (scripts/runs_of_record.py)
WRITE_ATTEMPTS = 5  # a write still locked out after the busy timeout is retried this often
_URL_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def default_db(write: bool) -> str:
    """The database a command uses when it is given none: $HOPPER_BENCH_DB, else the user's own
    ./bench.db; a command that only reads falls back to the shipped ./results.db while there is no
    ./bench.db (the runs of record are written only when named)."""
    if os.environ.get("HOPPER_BENCH_DB"):
        return os.environ["HOPPER_BENCH_DB"]
    if write or Path(USER_DB).exists() or not Path(SHIPPED_DB).exists():
        return USER_DB
    return SHIPPED_DB


def resolve_url(db: str | os.PathLike | None, write: bool = False) -> URL:
    """A path or URL -> a SQLAlchemy URL. Default: default_db(write).

    Only text that starts with `scheme://` is a URL; anything else is a file path, taken literally
    (`my?results.db`, `50%.db` and `a#b.db` name files). An in-memory SQLite URL is refused: it
    would keep nothing."""
    if db is None:
        db = default_db(write)
    db = os.fspath(db)
    if not isinstance(db, str) or not db.strip():
        raise StoreError(f"--db {db!r} names no database: give a file path or a URL")
    if _URL_SCHEME.match(db):
        try:
            url = make_url(db)
        except (ArgumentError, ValueError):
            raise StoreError(f"not a database URL: {db!r} (expected a file path or e.g. sqlite:///x.db)") from None
        if url.get_backend_name() == "sqlite" and url.database in (None, "", ":memory:"):
            raise StoreError(f"{db!r} is an in-memory database, which keeps nothing: give a file path")
        return url
    path = Path(db)
    try:
        path = path.expanduser()
    except RuntimeError:  # "~x.db" names no user's home: a file of that name
        pass
    return URL.create("sqlite", database=str(path.resolve()))


def _now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


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
    def open(cls, db: str | os.PathLike | None = None, create: bool = False, read_only: bool = False,
             upgrade: bool = True, references=None) -> "Store":
        """Open the database, creating it if `create`, upgrading it if it is older, and loading the
        published figures `references` (harness/published.py ReferenceSet, handed down by whoever
        opens the store for writing) where it holds none or an older set.

        With create=False a missing SQLite file is an error, never a new empty file. With read_only the
        file is opened read-only (SQLite `mode=ro`, an authorizer refusing ATTACH and pragma changes;
        PostgreSQL read-only transactions): nothing is upgraded, converted to WAL or re-synced, and
        an older schema is an error naming `bench db upgrade`. upgrade=False opens a writable store
        that changes nothing on opening (no migration, no reference sync): an older schema is the
        same error. Close the store (or use it in a `with`) when done.
        """
        url = resolve_url(db, write=not read_only)
        path = sqlite_path(url)
        wal_was_there = False
        if path is not None:
            if path.is_dir():
                raise StoreError(f"{path} is a directory, not a database file")
            if not path.parent.is_dir():
                raise StoreError(f"cannot use {path}: directory {path.parent} does not exist")
            if not path.exists():
                if not create:
                    raise StoreError(f"no results database at {path} (run `bench run` first, or pass --db)")
                _create_file(path)
            wal_was_there = Path(f"{path}-wal").exists()
            _check_sqlite_file(path)
        engine = _engine(url, path, read_only)
        store = cls(url, engine, path=path, read_only=read_only)
        store._wal_was_there = wal_was_there
        try:
            if read_only or not upgrade:
                store._check_current()
            else:
                store.migration = store._prepare(create)
                if references is not None:
                    store.sync_references(references)
        except BaseException:
            store.close()
            raise
        return store

    @classmethod
    def open_target(cls, db: str | os.PathLike | None = None) -> "Store | None":
        """What `bench run` opens before any GPU work: an existing database, for writing (refused if it
        is not ours, upgraded if older: see `migration`); for a new SQLite file None, once its folder is
        known to exist and be writable (the file itself is made when the run starts, so a run that
        cannot start leaves none)."""
        path = sqlite_path(resolve_url(db, write=True))
        if path is not None and not path.exists():
            if not path.parent.is_dir():
                raise StoreError(f"cannot use {path}: directory {path.parent} does not exist")
            if not os.access(path.parent, os.W_OK | os.X_OK):
                raise StoreError(f"cannot create {path}: directory {path.parent} is not writable")
            return None
        return cls.open(db, create=True)

    def __init__(self, url: URL | str, engine: Engine, path: Path | None = None, read_only: bool = False):
        self.sa_url = make_url(url) if isinstance(url, str) else url
        self.url = describe(self.sa_url)  # what messages show: never a password
        self.path = path
        self.engine = engine
        self.migration: Migration | None = None
        # Writes take the lock up front: two writers never both read "absent" and insert the same row.
        self._writer = engine.execution_options(begin_immediate=True)
        self.read_only = read_only
        self.last_rowcount: int | None = None
        self._wal_ready = engine.dialect.name != "sqlite"
        self._wal_was_there = True

    def __repr__(self) -> str:
        return f"Store({self.url!r}{', read-only' if self.read_only else ''})"

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Close every connection. A reading store that made a WAL file's -wal/-shm (SQLite makes
        them for any reader) removes them again when they hold nothing and no one else has the file
        open: SQLite itself does that when its last connection to the file closes, so one plain
        connection is opened and closed (it writes nothing: the log it would check in is empty)."""
        self.engine.dispose()
        if not (self.read_only and self.path is not None and not self._wal_was_there):
            return
        wal = Path(f"{self.path}-wal")
        try:
            if not wal.exists() or wal.stat().st_size != 0 or not os.access(self.path, os.W_OK):
                return
            tidy = sqlite3.connect(f"{self.path.as_uri()}?mode=rw", uri=True, timeout=0.1)
            try:
                tidy.execute("PRAGMA schema_version").fetchone()
            finally:
                tidy.close()
        except (OSError, sqlite3.Error):
            pass  # someone else has the file open: the -wal is theirs to remove

    def _check_current(self) -> None:
        """The file must be ours and of the current schema (nothing is changed)."""
        tables, revision = self._schema_revision()
        if not tables or revision is None:
            raise StoreError(f"{self.url} is not a hopper-bench database")
        if revision != migrations.head():
            if revision in migrations.known_revisions():
                command = "only reads" if self.read_only else "changes nothing before its own statement"
                raise StoreError(f"{self.url} has schema {revision.lstrip('0')}, this harness "
                                 f"{SCHEMA_VERSION}: run `bench db upgrade --db ...` first (this command "
                                 f"{command}, so it leaves the file as it is)")
            raise StoreError(f"database {self.url} has schema version {revision.lstrip('0') or revision}; "
                             f"this harness reads versions up to {SCHEMA_VERSION}: upgrade hopper-bench")

    @staticmethod
    def _read_revision(conn) -> tuple[set[str], str | None]:
        tables = set(inspect(conn).get_table_names())
        revision = None
        if "alembic_version" in tables:
            revision = conn.execute(text("SELECT version_num FROM alembic_version")).scalar()
        elif "meta" in tables:  # a schema-1 file written before the migrations existed
            version = conn.execute(text("SELECT value FROM meta WHERE key = 'schema_version'")).scalar()
            revision = f"{int(version):04d}" if version and version.isdigit() else version
        return tables, revision

    def _schema_revision(self) -> tuple[set[str], str | None]:
        try:
            with self.engine.connect() as conn:
                return self._read_revision(conn)
        except SQLAlchemyError as exc:
            raise StoreError(f"cannot read database {self.url}: {_first_line(exc)}") from None

    def _prepare(self, create: bool) -> Migration | None:
        """Check the schema (reading only), then upgrade an older one."""
        tables, revision = self._schema_revision()
        if not tables:
            if not create:
                raise StoreError(f"{self.url} is empty: not a hopper-bench database")
            return self._upgrade()  # an empty server database (a new SQLite file was made whole)
        if revision is None:
            raise StoreError(f"{self.url} is not a hopper-bench database (tables: {', '.join(sorted(tables))})")
        if revision == migrations.head():
            return None
        if revision not in migrations.known_revisions():
            raise StoreError(f"database {self.url} has schema version {revision.lstrip('0') or revision}; "
                             f"this harness reads versions up to {SCHEMA_VERSION}: upgrade hopper-bench")
        return self._upgrade()

    def _use_wal(self) -> None:
        """WAL mode (kept in the file) lets readers and several writers share it. Set by the first
        write, on our own databases only: a file we refuse is left as it was."""
        if self._wal_ready:
            return
        raw = self.engine.raw_connection()
        try:
            if raw.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                raw.execute("PRAGMA journal_mode=WAL")
        except sqlite3.Error as exc:
            raise StoreError(f"cannot use {self.url}: {exc}") from None
        finally:
            raw.close()
        self._wal_ready = True

    def _upgrade(self) -> Migration | None:
        """Run the migrations to the newest schema in one write transaction. The schema is read
        again under the write lock (another process may have just upgraded it: then nothing is done,
        and no second backup made), and the SQLite file is backed up under that lock.

        SQLite's batch migrations copy tables that other tables reference, so foreign keys are off
        while they run (SQLite ignores that pragma inside a transaction) and checked before commit."""
        from alembic import command

        sqlite = self.engine.dialect.name == "sqlite"
        self._use_wal()
        try:
            with self._writer.connect() as conn:
                raw = conn.connection.dbapi_connection
                if sqlite:
                    raw.execute("PRAGMA foreign_keys=OFF")
                try:
                    with conn.begin():
                        _schema_lock(conn)
                        tables, revision = self._read_revision(conn)
                        if revision == migrations.head():
                            return None
                        if tables and revision not in migrations.known_revisions():
                            raise StoreError(f"database {self.url} has schema version {revision}; this harness "
                                             f"reads versions up to {SCHEMA_VERSION}: upgrade hopper-bench")
                        backup = _backup(self.path, revision) if self.path and revision else None
                        cfg = migrations.config(conn)
                        if "alembic_version" not in tables and "meta" in tables:  # schema 1, before Alembic
                            command.stamp(cfg, revision)
                        command.upgrade(cfg, "head")
                        if sqlite and conn.exec_driver_sql("PRAGMA foreign_key_check").first():
                            raise StoreError(f"cannot upgrade database {self.url}: a foreign key is broken")
                finally:
                    if sqlite:
                        raw.execute("PRAGMA foreign_keys=ON")
        except SQLAlchemyError as exc:
            raise StoreError(f"cannot upgrade database {self.url}: {_first_line(exc)}") from None
        return Migration(int(revision), SCHEMA_VERSION, backup) if revision else None

    def sync_references(self, references) -> None:
        """Load `references` (a ReferenceSet: digest and mapped figures) when the database lacks them or
        holds an older set."""
        wanted = references.digest
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
                also_in=r.also_in, unmapped_reason=r.unmapped_reason, notes=r.notes) for r in references.figures)
            session.merge(Meta(key="references_hash", value=wanted))

        self._write(work)

    def schema_version(self) -> int:
        with Session(self.engine) as session:
            return int(session.get(Meta, "schema_version").value)

    def _write(self, work):
        """Run `work(session)` in a write transaction (BEGIN IMMEDIATE on SQLite) and return its
        result; retried while the file stays locked past the busy timeout."""
        self._use_wal()
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
            refuse_mixing(session, [device.uuid], self.url)
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

    @contextmanager
    def stream(self, sql: str, write: bool = False, timeout_s: float | None = None,
               chunk_rows: int = 1000) -> Iterator[Rows]:
        """Run one SQL statement and stream its rows in chunks: memory stays bounded whatever the
        result's size. Read-only unless `write` (then committed when the block ends without error).

        Exactly one statement runs on every backend: SQLite's driver refuses a second one, and
        PostgreSQL gets the statement through the extended query protocol, which takes one (so a
        `COMMIT; BEGIN READ WRITE; ...` cannot step out of the read-only transaction). A statement
        runs at most `timeout_s` seconds, and Ctrl-C stops it within a fraction of a second (SQLite:
        a progress handler; PostgreSQL: psycopg cancels it on the server)."""
        if write and self.read_only:
            raise StoreError(f"{self.url} was opened read-only")
        if not sql.strip():
            raise StoreError("SQL error: the statement is empty")
        dialect = self.engine.dialect.name
        if dialect not in ("sqlite", "postgresql"):
            raise StoreError(f"`bench sql` supports SQLite and PostgreSQL, not {dialect}")
        with self._guarded(write) as conn:
            raw = conn.connection.dbapi_connection
            if dialect == "sqlite":
                limit = raw.getlimit(sqlite3.SQLITE_LIMIT_LENGTH)
                rows = None
                try:
                    rows = _sqlite_rows(raw, sql, timeout_s, chunk_rows)
                    yield rows
                finally:
                    if rows is not None:
                        rows.close()
                    raw.set_progress_handler(None, 0)
                    raw.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, limit)
            else:
                if not write and _leading_keyword(sql) not in READING_KEYWORDS:
                    raise StoreError("SQL error: a read-only statement on PostgreSQL starts with "
                                     f"{', '.join(READING_KEYWORDS)} (pass --write to run others)")
                if timeout_s:
                    conn.exec_driver_sql(f"SET LOCAL statement_timeout = {max(1, int(timeout_s * 1000))}")
                rows = _postgresql_rows(raw, sql, chunk_rows)
                yield rows
            self.last_rowcount = rows.rowcount
            if write:
                conn.commit()

    @contextmanager
    def _guarded(self, write: bool):
        """A connection in a transaction for one `bench sql` statement: read-only unless `write`,
        rolled back unless committed, database errors turned into one line."""
        toggle = not write and not self.read_only  # a read-only store is read-only on every connection
        try:
            with (self._writer if write else self.engine).connect() as conn:
                if toggle:
                    _read_only(conn, True)
                else:
                    conn.exec_driver_sql("SELECT 1")  # begins the transaction (IMMEDIATE) that the raw cursor joins
                try:
                    yield conn
                finally:
                    if conn.in_transaction():
                        conn.rollback()
                    if toggle:
                        _read_only(conn, False)
        except _Timeout as exc:
            raise StoreError(f"SQL error: the statement ran past its {exc.args[0]:g} s time limit "
                             "(`bench sql --timeout`)") from None
        except (SQLAlchemyError, sqlite3.Error) as exc:
            message = _first_line(exc)
            if not write and any(word in message for word in ("readonly", "read-only", "read only", "not authorized")):
                message += " (`bench sql` is read-only: pass --write to change the database)"
            if "statement timeout" in message:
                message += " (`bench sql --timeout`)"
            raise StoreError(f"SQL error: {message}") from None
        except _psycopg("Error") as exc:
            raise StoreError(f"SQL error: {_first_line(exc)}") from None
        except ValueError as exc:  # e.g. a NUL character in the statement
            raise StoreError(f"SQL error: {_first_line(exc)}") from None

    def query(self, sql: str, write: bool = False) -> pd.DataFrame:
        """Run one SQL statement and return its rows; read-only unless `write` (then committed;
        `last_rowcount` says how many rows it changed)."""
        with self.stream(sql, write=write) as rows:
            data = [row for chunk in rows.chunks for row in chunk]
        return pd.DataFrame(data, columns=rows.columns) if rows.columns else pd.DataFrame()

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

    def samples_of(self, measurement_ids) -> dict[int, np.ndarray]:
        """{measurement id: its raw samples in order}, as the `samples` view gives them (a derived array
        by the view's two IEEE operations), read from sample_arrays directly: the view expands every
        array of the database before any WHERE narrows it (half a second on the shipped one), where
        this reads only the arrays asked for. A measurement without samples is left out."""
        wanted = sorted({int(i) for i in measurement_ids})
        columns = (SampleArray.measurement_id, SampleArray.samples, SampleArray.derived_from,
                   SampleArray.subtract, SampleArray.divide_by)
        rows, sources = [], {}
        with Session(self.engine) as session:
            for start in range(0, len(wanted), 500):  # bound the statement's parameters
                rows += session.execute(select(*columns).where(
                    SampleArray.measurement_id.in_(wanted[start:start + 500]))).all()
            needed = sorted({r.derived_from for r in rows if r.samples is None and r.derived_from is not None})
            for start in range(0, len(needed), 500):
                sources.update(session.execute(select(SampleArray.measurement_id, SampleArray.samples).where(
                    SampleArray.measurement_id.in_(needed[start:start + 500]))).all())
        arrays = {}
        for row in rows:
            if row.samples is not None:
                arrays[row.measurement_id] = row.samples  # a float64 array (tables.SampleBlob)
            elif sources.get(row.derived_from) is not None:
                source = sources[row.derived_from]
                arrays[row.measurement_id] = (source - row.subtract) / row.divide_by
        return arrays

    def refuse_mixing_with(self, uuid: str) -> None:
        """refuse_mixing for a run of the GPU `uuid`, asked before the run does any work."""
        with Session(self.engine) as session:
            refuse_mixing(session, [uuid], self.url)

    def runs(self) -> pd.DataFrame:
        """One row per run, oldest first; `gpu` is gpu_label's (as `bench fleet` names GPUs)."""
        frame = self.query("""
            SELECT r.id AS run, r.started_at, r.status, d.name AS gpu, d.uuid, r.suite, r.filter,
                   (SELECT COUNT(DISTINCT case_pk) FROM measurements m WHERE m.run_id = r.id) AS cases,
                   (SELECT COUNT(DISTINCT case_pk) FROM measurements m
                     WHERE m.run_id = r.id AND m.status = 'invalid') AS invalid,
                   (SELECT COUNT(DISTINCT case_pk) FROM measurements m
                     WHERE m.run_id = r.id AND m.status = 'fault') AS faults,
                   r.resumes, substr(r.git_commit, 1, 10) AS git_commit
            FROM runs r LEFT JOIN devices d ON d.id = r.device_id ORDER BY r.id""")
        frame["gpu"] = [gpu_label(name, uuid) for name, uuid in zip(frame.gpu, frame.uuid)]
        return frame.drop(columns="uuid")


def refuse_mixing(session: Session, uuids: list[str], where: str) -> None:
    """Simulated runs (the tests' fake GPU: synthetic numbers) and real ones never share a database:
    refuse to add runs of `uuids` where the other kind is already stored."""
    kinds = {is_simulated(u) for u in uuids if u}
    held = {is_simulated(u) for u in session.scalars(select(Device.uuid).join(Run, Run.device_id == Device.id))}
    if (True in kinds and False in held) or (False in kinds and True in held):
        theirs = "real GPUs" if False in held else "the simulated GPU"
        ours = "simulated" if True in kinds else "real-GPU"
        raise StoreError(f"{where} holds runs of {theirs}: {ours} runs go into a database of their own "
                         "(--db other.db); simulated and real numbers are never mixed")


def gpu_label(name: str | None, uuid: str | None) -> str:
    """A GPU as tables name it: its model and the end of its UUID, so two GPUs of one model differ
    and a fleet row can be found in `bench runs`."""
    name = name if isinstance(name, str) and name else "unknown GPU"  # None or NaN from a frame: no device
    return f"{name} {uuid[-8:]}" if isinstance(uuid, str) and uuid else name


def _create_file(path: Path) -> None:
    """A new database, built whole (schema and published figures) under a temporary name beside
    `path` and then hard-linked into place: it appears complete or not at all, so a process that
    finds the file never finds it empty or half made. When several processes create it at once,
    the first link wins and the others use that file."""
    if not os.access(path.parent, os.W_OK | os.X_OK):
        raise StoreError(f"cannot create {path}: directory {path.parent} is not writable")
    temp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.new")
    try:
        url = URL.create("sqlite", database=str(temp))
        store = Store(url, _engine(url, temp, read_only=False), path=temp)
        try:
            store._upgrade()
        finally:
            store.engine.dispose()  # the last connection: SQLite checks the log in and removes it
        try:
            os.link(temp, path)
        except FileExistsError:
            pass  # another process made it first: that file is used
        except OSError:  # a file system without hard links
            if not path.exists():
                os.replace(temp, path)
    except (OSError, sqlite3.Error) as exc:
        raise StoreError(f"cannot create {path}: {exc}") from None
    finally:
        for suffix in ("", "-wal", "-shm", "-journal"):
            Path(f"{temp}{suffix}").unlink(missing_ok=True)


def check_integrity(db: str | os.PathLike | None) -> None:
    """Refuse a damaged SQLite file (SQLite's quick_check), reading only; other databases pass."""
    path = sqlite_path(resolve_url(db, write=True))
    if path is None or not path.is_file():
        return
    _check_sqlite_file(path)
    try:
        probe = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_MS / 1000)
        try:
            problems = [str(row[0]) for row in probe.execute("PRAGMA quick_check(5)")]
        finally:
            probe.close()
    except sqlite3.Error as exc:
        problems = [str(exc)]
    if problems != ["ok"]:
        raise StoreError(f"{path} is damaged ({'; '.join(problems)[:200]}): restore it from a backup "
                         "(a .schemaN.bak beside it, or a copy); nothing was changed")


def _check_sqlite_file(path: Path) -> None:
    """Refuse a file that is not SQLite before the engine's first connection touches it.

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


def copy_sqlite(source: Path, target: Path) -> None:
    """A consistent copy of a SQLite file through SQLite's backup API: commits still in the source's
    -wal come along (a plain file copy would drop them). The source is opened read-only."""
    reader = sqlite3.connect(f"{source.as_uri()}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_MS / 1000)
    copy = sqlite3.connect(target)
    try:
        reader.backup(copy)
    finally:
        reader.close()
        copy.close()


def _backup(path: Path, revision: str) -> Path:
    """A consistent copy of the SQLite file (WAL included) before it is upgraded."""
    target = path.with_name(f"{path.name}.schema{int(revision)}.bak")
    n = 1
    while target.exists():
        n += 1
        target = path.with_name(f"{path.name}.schema{int(revision)}.{n}.bak")
    copy_sqlite(path, target)
    return target


class Texts:
    """The ids of strings in `texts` within one write transaction: looked up by digest, added when
    new. (A cache per transaction: a retried transaction starts again from the database.)"""

    def __init__(self, session: Session, preload: bool = False):
        """`preload`: read every stored string now (one query; for a writer that adds many rows)."""
        self.session, self.known = session, {}
        if preload:
            self.known = {text: id_ for id_, text in session.execute(select(TextRow.id, TextRow.text))}

    def ensure(self, strings) -> None:
        """Add the strings not yet stored, in one insert (after preload: every stored one is known)."""
        missing = sorted({s for s in strings if s is not None and s not in self.known})
        if not missing:
            return
        rows = [{"digest": TextRow.digest_of(text), "text": text} for text in missing]
        for start in range(0, len(rows), 10_000):  # within every database's limit of bound parameters
            clash = self.session.execute(select(TextRow.digest, TextRow.text).where(
                TextRow.digest.in_([r["digest"] for r in rows[start:start + 10_000]]))).first()
            if clash is not None:
                raise StoreError(f"two strings share the digest {clash.digest}: {clash.text!r} and another")
        table = TextRow.__table__
        ids = self.session.execute(insert(table).returning(table.c.id, sort_by_parameter_order=True), rows).scalars()
        self.known.update(zip(missing, ids))

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
