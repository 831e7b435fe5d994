"""The database as a file: which one a command uses (default_db, resolve_url), making a new SQLite file
whole (create_file), refusing a damaged one or one that is not SQLite (check_integrity,
check_sqlite_file), and consistent copies (copy_sqlite, backup_file)."""

from __future__ import annotations

import os
import re
import secrets
import sqlite3
import stat
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

from harness.db.connections import BUSY_TIMEOUT_MS, read_as_it_is, sqlite_path
from harness.errors import StoreError

USER_DB = "bench.db"  # where a user's runs go by default (untracked)
SHIPPED_DB = "results.db"  # the runs of record, built from runs/ (scripts/runs_of_record.py)
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
    if not isinstance(db, (str, os.PathLike)):  # harness.results(5): a run id where the database goes
        hint = f" (a run is a filter: results(db, run_id={db!r}))" if isinstance(db, int) else ""
        raise TypeError(f"db is {type(db).__name__} {db!r}: give a file path, a database URL or a Store{hint}")
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
    try:
        resolved = path.resolve()
    except (RuntimeError, OSError) as exc:  # a symbolic link loop (RuntimeError before Python 3.13)
        raise StoreError(f"cannot use {db}: {_loop_or(exc)}") from None
    return URL.create("sqlite", database=str(resolved))


def _loop_or(exc: BaseException) -> str:
    text = getattr(exc, "strerror", None) or str(exc)
    return "its symbolic links form a loop" if "loop" in text.lower() else text


def create_file(path: Path, build: Callable[[Path], None]) -> None:
    """A new database, built whole by `build(temporary path)` (Store.build_new: the schema) under a
    temporary name beside
    `path` and then hard-linked into place: it appears complete or not at all, so a process that
    finds the file never finds it empty or half made. When several processes create it at once,
    the first link wins and the others use that file."""
    if not os.access(path.parent, os.W_OK | os.X_OK):
        raise StoreError(f"cannot create {path}: directory {path.parent} is not writable")
    temp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.new")
    try:
        build(temp)
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


@contextmanager
def reading_sqlite(path: Path) -> Iterator[sqlite3.Connection]:
    """A read-only sqlite3 connection to `path` (`mode=ro`) that leaves no -wal/-shm it made: SQLite
    makes them for any reader of a WAL file, and a read-only connection cannot remove them again
    (tidy_wal does, once it is closed), whether the file turns out readable or not."""
    wal_was_there = Path(f"{path}-wal").exists()
    immutable = "&immutable=1" if read_as_it_is(path) else ""  # a -shm that cannot be made (connections.py)
    con = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro{immutable}", uri=True,
                          timeout=BUSY_TIMEOUT_MS / 1000)
    try:
        yield con
    finally:
        con.close()
        if not wal_was_there:
            tidy_wal(path)


def tidy_wal(path: Path) -> None:
    """Remove the -wal/-shm of `path` when they hold nothing and no one else has the file open: SQLite
    itself does that when its last connection to the file closes, so one plain connection is opened
    and closed (it writes nothing: the log it would check in is empty). A file that SQLite cannot
    read (damaged, or not SQLite) gets its empty -wal and -shm removed directly."""
    wal, shm = Path(f"{path}-wal"), Path(f"{path}-shm")
    try:
        if not wal.exists() or wal.stat().st_size != 0 or not os.access(path, os.W_OK):
            return
        tidy = sqlite3.connect(f"{path.absolute().as_uri()}?mode=rw", uri=True, timeout=0.1)
        try:
            tidy.execute("PRAGMA schema_version").fetchone()
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.OperationalError):
                return  # locked, busy: someone else has the file open, the -wal is theirs
            tidy.close()  # damaged or not SQLite: no one can use this log; the empty pair is ours
            if wal.stat().st_size == 0:
                wal.unlink(missing_ok=True)
                shm.unlink(missing_ok=True)
            return
        finally:
            tidy.close()
    except (OSError, sqlite3.Error):
        pass  # someone else has the file open: the -wal is theirs to remove


def check_integrity(db: str | os.PathLike | None) -> None:
    """Refuse a damaged SQLite file (SQLite's quick_check), reading only; other databases pass."""
    path = sqlite_path(resolve_url(db, write=True))
    if path is None or not path.is_file():
        return
    check_sqlite_file(path)
    try:
        with reading_sqlite(path) as probe:
            problems = [str(row[0]) for row in probe.execute("PRAGMA quick_check(5)")]
    except sqlite3.Error as exc:
        problems = [str(exc)]
    if problems != ["ok"]:
        raise StoreError(f"{path} is damaged ({'; '.join(problems)[:200]}): restore it from a backup "
                         "(a .schemaN.bak beside it, or a copy); nothing was changed")


def check_sqlite_file(path: Path) -> None:
    """Refuse a file that is not SQLite before the engine's first connection touches it.

    The file is read through SQLite, read-only, never with open()/close(): closing any other
    descriptor of the file would drop the POSIX locks that this process's SQLite connections
    hold on it, and another process could then reset the WAL under them.
    """
    mode = path.stat().st_mode
    if not stat.S_ISREG(mode):
        kind = ("a FIFO (named pipe)" if stat.S_ISFIFO(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
                else "a socket" if stat.S_ISSOCK(mode) else "not a regular file")
        raise StoreError(f"{path} is {kind}, not a hopper-bench database: give a database file")
    if path.stat().st_size == 0:
        raise StoreError(f"{path} is {_kind_of_empty(path)}, not a hopper-bench database")
    try:
        with reading_sqlite(path) as probe:
            probe.execute("PRAGMA schema_version").fetchone()
    except sqlite3.Error as exc:
        raise StoreError(f"{path} is not a hopper-bench database ({exc})") from None


def _kind_of_empty(path: Path) -> str:
    """What a regular file of size 0 is: empty, or one of a virtual file system (/proc, /sys) whose
    size says nothing. (A file of size 0 holds no SQLite database, so no lock of ours is on it.)"""
    try:
        with open(path, "rb", buffering=0) as handle:
            return "a file of a virtual file system (such as /proc)" if handle.read(1) else "an empty file"
    except OSError:
        return "an empty file"


def copy_sqlite(source: Path, target: Path) -> None:
    """A consistent copy of a SQLite file through SQLite's backup API: commits still in the source's
    -wal come along (a plain file copy would drop them). The source is opened read-only."""
    with reading_sqlite(source) as reader:
        copy = sqlite3.connect(target)
        try:
            reader.backup(copy)
        finally:
            copy.close()


def backup_file(path: Path, revision: str) -> Path:
    """A consistent copy of the SQLite file (WAL included) before it is upgraded."""
    target = backup_name(path, revision)
    copy_sqlite(path, target)
    return target


def backup_name(path: Path, revision) -> Path:
    """The first free name for a backup of `path` at schema `revision`: FILE.schemaN.bak, then .2.bak, ..."""
    target = path.with_name(f"{path.name}.schema{int(revision)}.bak")
    n = 1
    while target.exists():
        n += 1
        target = path.with_name(f"{path.name}.schema{int(revision)}.{n}.bak")
    return target
