"""The copy a merge into a SQLite file writes (harness/db/merge.py): made beside the target, it replaces the target
only once every source is in and only if no one wrote the target meanwhile; merges into one folder take turns."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from harness.db.files import backup_name, copy_sqlite, tidy_wal
from harness.errors import StoreError


class WorkCopy:
    """The copy a merge into the SQLite file `path` writes: beside it (the same file system, so that the final
    rename is atomic), made with SQLite's backup API from the target if there is one."""

    def __init__(self, path: Path):
        self.path = path
        self.copy = path.with_name(f".{path.name}.merging-{os.getpid()}")
        self._lock = _lock_folder(path.parent)  # merges into one folder take turns: each sees the last one's file
        try:
            self.before = _identity(path)
            self._remove(self.copy)
            if path.exists():
                copy_sqlite(path, self.copy)
                tidy_wal(path)  # reading a WAL file makes an empty -wal and -shm beside it: not ours to leave
        except BaseException:
            self._remove(self.copy)
            self._unlock()
            raise

    def planned(self, migration):
        """What opening the copy did to an older schema, its backup named as the target's backup will be."""
        if migration is None or migration.backup is None:
            return migration
        self.backup = backup_name(self.path, migration.from_version)
        return replace(migration, backup=self.backup)

    @property
    def url(self) -> str:
        return str(self.copy.absolute())  # a path, taken literally (files.resolve_url): no URL escaping

    def replace(self, migration) -> None:
        """The merged copy in the target's place, if the target is as it was when the copy was made."""
        if _identity(self.path) != self.before:
            self.discard(migration)
            raise StoreError(f"{self.path} changed while the merge ran (another process wrote it): nothing was "
                             "merged; run the merge again")
        if migration is not None and migration.backup is not None:  # the old file's backup, under the target's name
            os.replace(migration.backup, getattr(self, "backup", None) or backup_name(self.path, migration.from_version))
        os.replace(self.copy, self.path)
        for suffix in ("-wal", "-shm"):  # the replaced file's, if any were left: they belong to no file now
            Path(f"{self.path}{suffix}").unlink(missing_ok=True)
        self._unlock()

    def discard(self, migration) -> None:
        self._remove(self.copy)
        if migration is not None and migration.backup is not None:
            Path(migration.backup).unlink(missing_ok=True)
        self._unlock()

    def _unlock(self) -> None:
        if self._lock is not None:
            os.close(self._lock)  # closing the descriptor releases its flock
            self._lock = None

    @staticmethod
    def _remove(path: Path) -> None:
        for suffix in ("", "-wal", "-shm", "-journal"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)


def _lock_folder(folder: Path) -> int | None:
    """An exclusive flock on the folder (no file of its own is left behind), held until the descriptor is closed;
    None where the platform has no flock."""
    try:
        import fcntl
    except ImportError:  # not POSIX: merges into one folder at once are not serialized
        return None
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
    except OSError:
        os.close(fd)
        return None
    return fd


def _identity(path: Path):
    """What says a SQLite file was written: its size and modification time (None: no file), and its -wal's size
    (a writer appends there; a reader may only make an empty one)."""
    try:
        main = path.stat()
    except FileNotFoundError:
        return None
    try:
        wal = Path(f"{path}-wal").stat().st_size
    except FileNotFoundError:
        wal = 0
    return main.st_size, main.st_mtime_ns, wal
