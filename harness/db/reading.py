"""Reading the database: one SQL statement streamed in chunks, read-only unless asked (`bench sql`),
queries as DataFrames, runs, the cases a run measured, and raw samples (samples_of)."""

from __future__ import annotations

import sqlite3
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

import numpy as np
import pandas as pd
from sqlalchemy import select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from harness.db.connections import (Rows, StatementTimeout, first_line, postgresql_rows, psycopg_errors, set_read_only,
                                    sqlite_rows)
from harness.db.statements import READING_KEYWORDS, leading_keyword
from harness.db.tables import CaseRow, Device, Measurement, Run, SampleArray
from harness.errors import StoreError


@dataclass(frozen=True)
class RunInfo:
    id: int
    status: str
    suite: str
    filter: str | None
    git_commit: str | None
    device_uuid: str | None
    gpu_name: str | None
    resumes: int = 0  # times resumed so far: a resume takes the run only if no other took it since it was read


class Reading:
    """Store's reads (harness/db/store.py): one statement streamed (`bench sql`), a query as a
    DataFrame, runs, measured cases and raw samples. A part of Store, on its engine, writer and url."""

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
                    rows = sqlite_rows(raw, sql, timeout_s, chunk_rows)
                    yield rows
                finally:
                    if rows is not None:
                        rows.close()
                    raw.set_progress_handler(None, 0)
                    raw.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, limit)
            else:
                if not write and leading_keyword(sql) not in READING_KEYWORDS:
                    raise StoreError("SQL error: a read-only statement on PostgreSQL starts with "
                                     f"{', '.join(READING_KEYWORDS)} (pass --write to run others)")
                if timeout_s:
                    conn.exec_driver_sql(f"SET LOCAL statement_timeout = {max(1, int(timeout_s * 1000))}")
                rows = postgresql_rows(raw, sql, chunk_rows)
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
            with (self.writer if write else self.engine).connect() as conn:
                if toggle:
                    set_read_only(conn, True)
                else:
                    conn.exec_driver_sql("SELECT 1")  # begins the transaction (IMMEDIATE) that the raw cursor joins
                try:
                    yield conn
                finally:
                    if conn.in_transaction():
                        conn.rollback()
                    if toggle:
                        set_read_only(conn, False)
        except StatementTimeout as exc:
            raise StoreError(f"SQL error: the statement ran past its {exc.args[0]:g} s time limit "
                             "(`bench sql --timeout`)") from None
        except (SQLAlchemyError, sqlite3.Error) as exc:
            message = first_line(exc)
            if not write and any(word in message for word in ("readonly", "read-only", "read only", "not authorized")):
                message += " (`bench sql` is read-only: pass --write to change the database)"
            if "statement timeout" in message:
                message += " (`bench sql --timeout`)"
            raise StoreError(f"SQL error: {message}") from None
        except psycopg_errors("Error") as exc:
            raise StoreError(f"SQL error: {first_line(exc)}") from None
        except ValueError as exc:  # e.g. a NUL character in the statement
            raise StoreError(f"SQL error: {first_line(exc)}") from None

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
                           device.uuid if device else None, device.name if device else None, run.resumes or 0)

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


def gpu_label(name: str | None, uuid: str | None) -> str:
    """A GPU as tables name it: its model and the end of its UUID, so two GPUs of one model differ
    and a fleet row can be found in `bench runs`."""
    name = name if isinstance(name, str) and name else "unknown GPU"  # None or NaN from a frame: no device
    return f"{name} {uuid[-8:]}" if isinstance(uuid, str) and uuid else name
