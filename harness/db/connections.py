"""Connections to the results database and single SQL statements on them: engines (SQLite with its
pragmas and a read-only mode that an authorizer enforces; PostgreSQL with a connect timeout and
read-only transactions), and `bench sql`'s statements, streamed a chunk at a time, stopped at their
time limit or on Ctrl-C. harness/db/store.py builds the Store on them."""

from __future__ import annotations

import os

import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator
from urllib.parse import quote

from sqlalchemy import create_engine, event
from sqlalchemy.engine import URL, Engine
from sqlalchemy.exc import ArgumentError, SQLAlchemyError

from harness.db.tables import register_functions
from harness.errors import StoreError, redact

BUSY_TIMEOUT_MS = 30_000  # several writers (one per GPU) share one SQLite file


def sqlite_path(url: URL) -> Path | None:
    """The file of a SQLite URL (None for other databases)."""
    if url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:"):
        return Path(url.database)
    return None


MAX_VALUE_BYTES = 64 << 20  # the longest string or blob a `bench sql` query may build on SQLite


CONNECT_TIMEOUT_S = 10  # a PostgreSQL server that never answers (a URL's ?connect_timeout= overrides)


def describe(url: URL) -> str:
    """What messages call a database: its file path, or its URL without the password."""
    path = sqlite_path(url)
    return str(path) if path is not None else redact(url.render_as_string(hide_password=True))


def first_line(exc: BaseException) -> str:
    lines = str(getattr(exc, "orig", None) or exc).splitlines()
    return lines[0] if lines else type(exc).__name__


@dataclass
class Rows:
    """A statement's result, streamed: its column names and an iterator of row chunks (lists of
    tuples). `rowcount`: rows a writing statement changed (None for a query)."""

    columns: list[str]
    chunks: Iterator[list[tuple]]
    rowcount: int | None = None
    close: Callable[[], None] = lambda: None


def make_engine(url: URL, path: Path | None, read_only: bool) -> Engine:
    """The engine of a database: SQLite with its pragmas (read-only connections where asked), or a
    server database with a connect timeout."""
    try:
        if path is not None:
            engine = create_engine(_read_only_url(path) if read_only else url)
            event.listen(engine, "connect", _sqlite_connect_read_only if read_only else _sqlite_connect)
            event.listen(engine, "begin", _sqlite_begin)
            return engine
        connect_args = {}
        if url.get_backend_name() == "postgresql" and "connect_timeout" not in url.query:
            connect_args["connect_timeout"] = CONNECT_TIMEOUT_S
        engine = create_engine(url, connect_args=connect_args)
    except (ArgumentError, SQLAlchemyError, ImportError) as exc:
        raise StoreError(f"cannot open database {describe(url)}: {first_line(exc)}") from None
    if read_only and engine.dialect.name == "postgresql":
        event.listen(engine, "connect", _postgresql_read_only)
    return engine


class StatementTimeout(Exception):
    """A `bench sql` statement ran past its time limit (args[0]: the limit in seconds)."""


def sqlite_rows(raw: sqlite3.Connection, sql: str, timeout_s: float | None, chunk_rows: int) -> Rows:
    """One statement on a SQLite connection, its rows fetched a chunk at a time. A progress handler
    stops it at its deadline, and lets a Ctrl-C (raised inside the handler, which SQLite then
    answers with "interrupted") reach Python while SQLite works."""
    deadline = time.monotonic() + timeout_s if timeout_s else None

    def progress() -> int:
        return int(deadline is not None and time.monotonic() > deadline)

    def translated(call):
        try:
            return call()
        except sqlite3.OperationalError as exc:
            if "interrupted" not in str(exc):
                raise
            if deadline is not None and time.monotonic() > deadline:
                raise StatementTimeout(timeout_s) from None
            raise KeyboardInterrupt from None

    raw.set_progress_handler(progress, 10_000)
    raw.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
    cursor = raw.cursor()
    try:
        translated(lambda: cursor.execute(sql))
    except BaseException:
        cursor.close()  # an unfinished statement would keep the file open past the connection's close
        raise

    def chunks():
        while batch := translated(lambda: cursor.fetchmany(chunk_rows)):
            yield batch

    columns = [d[0] for d in cursor.description] if cursor.description else []
    return Rows(columns, chunks(), None if cursor.description else cursor.rowcount, cursor.close)


def postgresql_rows(raw, sql: str, chunk_rows: int) -> Rows:
    """One statement on a psycopg connection. The server first prepares it (the extended query
    protocol takes exactly one statement, so `...; COMMIT; BEGIN READ WRITE; ...` fails here, before
    anything runs) and describes it: a statement with rows is streamed in chunks, so neither side
    holds the whole result; one without runs as it is and says how many rows it changed."""
    from itertools import islice

    from psycopg import pq

    pgconn = raw.pgconn
    prepared = pgconn.prepare(b"", sql.encode())
    if prepared.status != pq.ExecStatus.COMMAND_OK:
        raise StoreError(f"SQL error: {_pg_message(prepared)}")
    described = pgconn.describe_prepared(b"")
    if described.status != pq.ExecStatus.COMMAND_OK:
        raise StoreError(f"SQL error: {_pg_message(described)}")
    cursor = raw.cursor()
    if described.nfields == 0:
        cursor.execute(sql)
        return Rows([], iter(()), cursor.rowcount)
    try:
        rows = cursor.stream(sql, size=chunk_rows)
        first = list(islice(rows, chunk_rows))
    except psycopg_errors("NotSupportedError"):  # a libpq before 17: one row at a time
        rows = cursor.stream(sql)
        first = list(islice(rows, chunk_rows))

    def chunks():
        batch = first
        while batch:
            yield batch
            batch = list(islice(rows, chunk_rows))

    names = [described.fname(i).decode("utf-8", "replace") for i in range(described.nfields)]
    return Rows(names, chunks())


def _pg_message(result) -> str:
    message = (result.error_message or b"").decode("utf-8", "replace").strip()
    return message.removeprefix("ERROR:").strip().splitlines()[0] if message else "the server refused the statement"


def psycopg_errors(name: str) -> tuple:
    """psycopg's exception class `name`, as a tuple for `except` (empty where psycopg was never loaded)."""
    import sys

    psycopg = sys.modules.get("psycopg")
    return (getattr(psycopg, name),) if psycopg else ()


def _sqlite_connect(dbapi_connection, _record) -> None:
    dbapi_connection.isolation_level = None  # SQLAlchemy emits BEGIN itself (_sqlite_begin)
    cursor = dbapi_connection.cursor()
    cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()
    register_functions(dbapi_connection)  # the samples view's samples_json (schema 10)


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
    register_functions(dbapi_connection)  # the samples view's samples_json (schema 10)
    dbapi_connection.set_authorizer(_read_only_authorizer)


def _postgresql_read_only(dbapi_connection, _record) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("SET default_transaction_read_only = on")
    cursor.close()
    dbapi_connection.commit()


def _read_only_url(path: Path) -> URL:
    """SQLite's read-only URI for `path` (the driver opens it with SQLITE_OPEN_READONLY). A reader of a WAL file
    needs its -shm, which SQLite makes beside it: on a read-only file system (an archive, a shipped copy) it cannot,
    and the file would not open at all (issue 46, item 13). Where the -shm cannot be made and no -wal holds commits,
    the file is opened `immutable` (SQLite then takes no locks and reads the file as it is: nothing can be writing
    to a place no one can write)."""
    query = {"mode": "ro", "uri": "true"}
    if read_as_it_is(path):
        query["immutable"] = "1"
    return URL.create("sqlite", database=f"file:{quote(str(path))}", query=query)


def read_as_it_is(path: Path) -> bool:
    """Whether a reader of the SQLite file `path` opens it `immutable` (_read_only_url says why)."""
    return _shm_impossible(path) and not _wal_holds_commits(path)


def _shm_impossible(path: Path) -> bool:
    shm = Path(f"{path}-shm")
    if shm.exists():
        return not shm.is_file() or not os.access(shm, os.R_OK)
    return not os.access(path.parent if str(path.parent) else Path("."), os.W_OK)


def _wal_holds_commits(path: Path) -> bool:
    wal = Path(f"{path}-wal")
    try:
        return wal.is_file() and wal.stat().st_size > 0
    except OSError:
        return False


SCHEMA_LOCK = 0x68627368  # PostgreSQL advisory lock key ("hbsh") of every write transaction


def schema_lock(conn) -> None:
    """Serialise write transactions (schema upgrades, reference syncs, runs and cases) between processes
    until the transaction ends, so that get-or-create never races. SQLite's BEGIN IMMEDIATE already
    does; PostgreSQL takes a transaction-level advisory lock. (Re-entrant within a transaction.)"""
    if conn.dialect.name == "postgresql":
        conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({SCHEMA_LOCK})")


def _sqlite_begin(conn) -> None:
    immediate = conn.get_execution_options().get("begin_immediate")
    conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


def set_read_only(conn, on: bool) -> None:
    if conn.dialect.name == "sqlite":
        conn.exec_driver_sql(f"PRAGMA query_only = {'ON' if on else 'OFF'}")
    elif conn.dialect.name == "postgresql" and on:
        conn.exec_driver_sql("SET TRANSACTION READ ONLY")
