"""The database's schema: what a file holds (its revision), upgrading it with the Alembic migrations
of harness/migrations/ (backed up first, once, under the write lock), WAL mode, and the published
figures it holds (sync_references)."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import insert, inspect, text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from harness import migrations
from harness.db.connections import first_line, schema_lock
from harness.db.files import backup_file
from harness.db.tables import SCHEMA_VERSION, Meta, ReferenceFigure
from harness.errors import StoreError
from harness.measure.measurement import launch_key


@dataclass(frozen=True)
class Migration:
    """What opening the database did to an older file."""

    from_version: int
    to_version: int
    backup: Path | None


class Schema:
    """Store's schema (harness/db/store.py): reading it, migrating it, WAL mode, and the published
    figures it holds. A part of Store, on its engine, writer, url and path."""

    def check_current(self) -> None:
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
            raise StoreError(f"cannot read database {self.url}: {first_line(exc)}") from None

    def prepare(self, create: bool) -> Migration | None:
        """Check the schema (reading only), then upgrade an older one."""
        tables, revision = self._schema_revision()
        if not tables:
            if not create:
                raise StoreError(f"{self.url} is empty: not a hopper-bench database")
            return self.migrate()  # an empty server database (a new SQLite file was made whole)
        if revision is None:
            raise StoreError(f"{self.url} is not a hopper-bench database (tables: {', '.join(sorted(tables))})")
        if revision == migrations.head():
            return None
        if revision not in migrations.known_revisions():
            raise StoreError(f"database {self.url} has schema version {revision.lstrip('0') or revision}; "
                             f"this harness reads versions up to {SCHEMA_VERSION}: upgrade hopper-bench")
        return self.migrate()

    def use_wal(self) -> None:
        """WAL mode (kept in the file) lets readers and several writers share it. Set by the first
        write, on our own databases only: a file we refuse is left as it was."""
        if self.wal_ready:
            return
        raw = self.engine.raw_connection()
        try:
            if raw.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                raw.execute("PRAGMA journal_mode=WAL")
        except sqlite3.Error as exc:
            raise StoreError(f"cannot use {self.url}: {exc}") from None
        finally:
            raw.close()
        self.wal_ready = True

    def migrate(self) -> Migration | None:
        """Run the migrations to the newest schema in one write transaction. The schema is read
        again under the write lock (another process may have just upgraded it: then nothing is done,
        and no second backup made), and the SQLite file is backed up under that lock.

        SQLite's batch migrations copy tables that other tables reference, so foreign keys are off
        while they run (SQLite ignores that pragma inside a transaction) and checked before commit."""
        from alembic import command

        sqlite = self.engine.dialect.name == "sqlite"
        self.use_wal()
        try:
            with self.writer.connect() as conn:
                raw = conn.connection.dbapi_connection
                if sqlite:
                    raw.execute("PRAGMA foreign_keys=OFF")
                try:
                    with conn.begin():
                        schema_lock(conn)
                        tables, revision = self._read_revision(conn)
                        if revision == migrations.head():
                            return None
                        if tables and revision not in migrations.known_revisions():
                            raise StoreError(f"database {self.url} has schema version {revision}; this harness "
                                             f"reads versions up to {SCHEMA_VERSION}: upgrade hopper-bench")
                        backup = backup_file(self.path, revision) if self.path and revision else None
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
            raise StoreError(f"cannot upgrade database {self.url}: {first_line(exc)}") from None
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
            schema_lock(session.connection())
            current = session.get(Meta, "references_hash")
            if current is not None and current.value == wanted:  # another process just did it
                return
            session.query(ReferenceFigure).delete()
            # one executemany of plain rows, in order (ids as add_all gave them): some 1200 ORM objects took a
            # fifth of a second of every new database
            rows = [dict(source=r.source, citation=r.citation, source_table=r.table, gpu=r.gpu, case_id=r.case_id,
                         m=r.m, n=r.n, k=r.k, dtype_a=r.dtype_a, dtype_acc=r.dtype_acc, operands=r.operands,
                         sparse=r.sparse, metric=r.metric, value=r.value, unit=r.unit, condition=r.condition,
                         launch=launch_key(r.launch) if r.launch else None,
                         also_in=r.also_in, unmapped_reason=r.unmapped_reason, notes=r.notes)
                    for r in references.figures]
            if rows:
                session.execute(insert(ReferenceFigure), rows)
            session.merge(Meta(key="references_hash", value=wanted))

        self.write(work)

    def schema_version(self) -> int:
        with Session(self.engine) as session:
            return int(session.get(Meta, "schema_version").value)
