"""The results database: open (SQLite by default, any SQLAlchemy URL), migrate, write runs, read views.
Store is the facade every caller imports; its jobs live beside it: files.py (which file, creating,
integrity, copies), schema.py (migrations, WAL, published figures), writing.py and reading.py; the
engines are connections.py's.

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
- WAL mode is set by the first write that commits through `write`, never by opening or reading;
- a reading store is read-only on every connection, and leaves no -wal/-shm that it made.
"""

from __future__ import annotations

import os
import weakref
from pathlib import Path

from sqlalchemy import URL, Engine, make_url  # (the package by its name: a missing one is named so)

from harness.db.connections import describe, make_engine, sqlite_path
from harness.db.files import (SHIPPED_DB, USER_DB, check_integrity, check_sqlite_file, copy_sqlite,  # noqa: F401
                              create_file, default_db, resolve_url, tidy_wal)  # (USER_DB..copy_sqlite: also for callers)
from harness.db.reading import Reading, RunInfo, gpu_label  # noqa: F401  (RunInfo, gpu_label: for callers)
from harness.db.schema import Migration, Schema
from harness.db.writing import Texts, Writing, refuse_mixing  # noqa: F401  (Texts, refuse_mixing: for callers)
from harness.errors import StoreError


class Store(Schema, Writing, Reading):
    """The results database, open: its schema (harness/db/schema.py), writes (writing.py) and reads
    (reading.py) on one engine. Open it with Store.open; close it (or use it in a `with`) when done."""

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
                    raise StoreError(f"no results database at {path} " + _how_to_make(path))
                create_file(path, cls.build_new)
            wal_was_there = Path(f"{path}-wal").exists()
            check_sqlite_file(path)
        engine = make_engine(url, path, read_only)
        store = cls(url, engine, path=path, read_only=read_only)
        store._wal_was_there = wal_was_there
        # a store left open (a module's fixture, a notebook) still leaves no -wal/-shm when the process ends
        store._finalizer = weakref.finalize(store, _close_engine, engine,
                                            path if read_only and path is not None and not wal_was_there else None)
        try:
            if read_only or not upgrade:
                store.check_current()
            else:
                store.migration = store.prepare(create)
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

    @classmethod
    def build_new(cls, path: Path) -> None:
        """The newest schema into a new SQLite file (create_file's, under its temporary name)."""
        url = URL.create("sqlite", database=str(path))
        store = cls(url, make_engine(url, path, read_only=False), path=path)
        try:
            store.migrate()
        finally:
            store.engine.dispose()  # the last connection: SQLite checks the log in and removes it

    def __init__(self, url: URL | str, engine: Engine, path: Path | None = None, read_only: bool = False):
        self.sa_url = make_url(url) if isinstance(url, str) else url
        self.url = describe(self.sa_url)  # what messages show: never a password
        self.path = path
        self.engine = engine
        self.migration: Migration | None = None
        # Writes take the lock up front: two writers never both read "absent" and insert the same row.
        self.writer = engine.execution_options(begin_immediate=True)
        self.read_only = read_only
        self.last_rowcount: int | None = None
        self.wal_ready = engine.dialect.name != "sqlite"
        self._wal_was_there = True
        self._finalizer = weakref.finalize(self, lambda: None)

    def __repr__(self) -> str:
        return f"Store({self.url!r}{', read-only' if self.read_only else ''})"

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Close every connection. A reading store that made a WAL file's -wal/-shm (SQLite makes
        them for any reader) removes them again when they hold nothing and no one else has the file
        open (files.tidy_wal). A store never closed is closed so when the process ends."""
        _close_engine(self.engine, self.path if self.read_only and not self._wal_was_there else None)
        self._finalizer.detach()


def _how_to_make(path: Path) -> str:
    """What makes a missing database: the runs of record beside a clone's runs/ folder (issue 46, item 2), or a run."""
    runs = path.parent / "runs"
    if path.name == "results.db" and runs.is_dir() and any(runs.glob("run-*.db.xz")):
        return ("(the runs of record are built from runs/: `python scripts/runs_of_record.py build`, about a "
                "minute; your own runs: `bench run`, or pass --db)")
    return "(run `bench run` first, or pass --db)"


def _close_engine(engine: Engine, tidy: Path | None) -> None:
    engine.dispose()
    if tidy is not None:
        tidy_wal(tidy)
