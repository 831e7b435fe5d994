"""One source's runs merged into the target (harness/db/merge.py: the merge of many): the runs the target lacks
copied whole, the measurements and state a held run lacks added; its devices, cases and builds matched by their
natural keys; a MergeReport of what came."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import func, insert, select, type_coerce
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, aliased
from sqlalchemy.types import NullType

from harness.db.store import Store
from harness.db.writing import Texts, refuse_mixing
from harness.db.tables import TEXT_COLUMNS, BuildRow, CaseRow, Device, Measurement, Run, SampleArray, TextRow
from harness.errors import StoreError

RUN_STATE = ("status", "finished_at", "error", "resumes")  # what a resumed run changes on its row


@dataclass
class MergeReport:
    source: str
    added: list[int] = field(default_factory=list)  # run ids in the target
    updated: list[int] = field(default_factory=list)  # target run ids that gained measurements or state
    already: list[int] = field(default_factory=list)  # source run ids the target held whole
    measurements: int = 0
    samples: int = 0
    upgraded_from: int | None = None  # the source's schema, when a copy was upgraded

    def line(self) -> str:
        parts = []
        if self.added:
            parts.append(f"{_runs(self.added)} added (as {', '.join(map(str, self.added))})")
        if self.updated:
            parts.append(f"{_runs(self.updated)} brought up to date ({', '.join(map(str, self.updated))})")
        if not parts:
            parts.append("no run added")
        if self.already:
            parts.append(f"{len(self.already)} already there")
        copy = f" (read from an upgraded copy of schema {self.upgraded_from})" if self.upgraded_from else ""
        return f"{self.source}: {', '.join(parts)}; {self.measurements} measurements, {self.samples} samples{copy}"


def _runs(ids: list[int]) -> str:
    return f"{len(ids)} run{'s' if len(ids) != 1 else ''}"


def _values(row, model, skip=("id",)) -> dict:
    return {a.key: getattr(row, a.key) for a in model.__mapper__.column_attrs if a.key not in skip}


def _run_key(run: Run, uuid: str | None) -> tuple:
    return (uuid, run.started_at, run.host, run.command_line)


def _progress(run: Run) -> tuple:
    """How far a run has come: resumed more often, then finished, then finished later."""
    return (run.resumes or 0, run.finished_at is not None, run.finished_at or datetime.min)


def _read_source(source: Store, name: str):
    """Everything of the source that a merge needs, read in one go (a damaged source fails here,
    named as the source)."""
    try:
        with Session(source.engine) as src:
            devices = {d.id: d for d in src.scalars(select(Device))}
            runs = list(src.scalars(select(Run).order_by(Run.id)))
            cases = {c.id: c for c in src.scalars(select(CaseRow))}
            builds = {b.id: b for b in src.scalars(select(BuildRow))}
            texts = dict(src.execute(select(TextRow.id, TextRow.text)).all())
            src.expunge_all()
            return devices, runs, cases, builds, texts
    except SQLAlchemyError as exc:
        raise StoreError(f"cannot read the source {name}: {str(getattr(exc, 'orig', exc)).splitlines()[0]}") from None


def merge_one(source: Store, target: Store, name: str, progress=None, target_name: str | None = None) -> MergeReport:
    report = MergeReport(name)
    devices, runs, cases, builds, source_texts = _read_source(source, name)

    def work(dst: Session) -> None:
        report.added.clear(), report.updated.clear(), report.already.clear()  # a retried transaction starts over
        report.measurements = report.samples = 0
        refuse_mixing(dst, [devices[r.device_id].uuid for r in runs if r.device_id in devices],
                      target_name or target.url)
        known_runs = {_run_key(r, uuid): r for r, uuid in dst.execute(
            select(Run, Device.uuid).outerjoin(Device, Run.device_id == Device.id))}
        # The target's id of every source device, case and build, matched by its natural key; the
        # ones the target lacks are copied in (in one insert each).
        ids = {model: _matched_ids(dst, model, rows, key) for model, rows, key in
               ((Device, devices, "uuid"), (CaseRow, cases, "case_id"), (BuildRow, builds, "build_hash"))}

        def target_id(model, source_id):
            return None if source_id is None else ids[model][source_id]

        texts = Texts(dst)  # the source's strings are looked up by digest, run by run
        for done, run in enumerate(runs):
            if progress:
                progress(done, len(runs), run.id)
            uuid = devices[run.device_id].uuid if run.device_id in devices else None
            held = known_runs.get(_run_key(run, uuid))
            if held is None:
                held = Run(**{**_values(run, Run), "device_id": target_id(Device, run.device_id)})
                dst.add(held)
                dst.flush()
                report.added.append(held.id)
                present = {}
            else:
                present = _measurement_keys(dst, held.id)
            copied = _copy_measurements(dst, source, run.id, held.id, present, source_texts, cases, texts,
                                        target_id, report)
            if held.id in report.added:
                continue
            newer = _progress(run) > _progress(held)
            if newer:
                for column in RUN_STATE:
                    setattr(held, column, getattr(run, column))
            if copied or newer:
                report.updated.append(held.id)
            else:
                report.already.append(run.id)
        if progress:
            progress(len(runs), len(runs), None)

    try:
        target.write(work)
    except SQLAlchemyError as exc:
        raise StoreError(f"cannot merge {name} into {target_name or target.url}: "
                         f"{str(getattr(exc, 'orig', exc)).splitlines()[0]}") from None
    return report


def _matched_ids(dst: Session, model, rows: dict, key: str) -> dict[int, int]:
    """{source id: target id} for the source's `rows` of `model`, matched on the column `key`; the rows
    the target lacks are inserted first."""
    known = dict(dst.execute(select(getattr(model, key), model.id)).all())
    missing = [row for row in rows.values() if getattr(row, key) not in known]
    if missing:
        table = model.__table__
        new = dst.execute(insert(table).returning(table.c.id, sort_by_parameter_order=True),
                          [_values(row, model) for row in missing]).scalars()
        known.update(zip((getattr(row, key) for row in missing), new))
    return {id_: known[getattr(row, key)] for id_, row in rows.items()}


def _measurement_keys(dst: Session, run_id: int) -> dict[tuple[str, str, str], int]:
    """(case id, metric, launch) -> id of every measurement the target holds for a run."""
    metric, launch = aliased(TextRow), aliased(TextRow)
    return {(case_id, m, l): id_ for case_id, m, l, id_ in dst.execute(
        select(CaseRow.case_id, metric.text, launch.text, Measurement.id)
        .join(Measurement, Measurement.case_pk == CaseRow.id)
        .join(metric, Measurement.metric_id == metric.id).join(launch, Measurement.launch_id == launch.id)
        .where(Measurement.run_id == run_id))}


def _copy_measurements(dst: Session, source: Store, source_run_id: int, target_run_id: int, present: dict,
                       source_texts: dict, cases: dict, texts: Texts, target_id, report: MergeReport) -> int:
    """Copy the source run's measurements that the target's run lacks (`present`: those it holds),
    with their sample arrays, as two set-based inserts; the number copied."""
    measurements, arrays = Measurement.__table__, SampleArray.__table__
    # Between two SQLite files of one schema the rows go as stored, through sqlite3 itself: no value is
    # converted either way, so the copy is exact, and 150,000 rows take seconds, not a minute of SQLAlchemy's
    # parameter processing (the build of results.db from the runs of record).
    as_stored = source.engine.dialect.name == "sqlite" and dst.get_bind().dialect.name == "sqlite"
    rows, stored = (_rows_as_stored if as_stored else _rows)(source, source_run_id)
    texts.resolve(sorted({source_texts.get(row[f"{name}_id"]) for row in rows for name in TEXT_COLUMNS} - {None}))
    new_ids: dict[int, int] = {}  # source measurement id -> target's
    fresh, fresh_ids = [], []
    for row in rows:
        strings = {f"{name}_id": source_texts.get(row[f"{name}_id"]) for name in TEXT_COLUMNS}
        key = (cases[row["case_pk"]].case_id, strings["metric_id"], strings["launch_id"])
        if key in present:
            new_ids[row["id"]] = present[key]  # a derived array may name it
            continue
        fresh.append({**{k: v for k, v in row.items() if k != "id"}, "run_id": target_run_id,
                      "case_pk": target_id(CaseRow, row["case_pk"]), "build_id": target_id(BuildRow, row["build_id"]),
                      **{column: texts.id(value) for column, value in strings.items()}})
        fresh_ids.append(row["id"])
        report.samples += row["n_samples"]
    if not fresh:
        return 0
    if as_stored:
        # The write transaction holds the file's write lock (BEGIN IMMEDIATE): the next ids are the target's to
        # give (an INSERT ... RETURNING in parameter order is a statement a row on SQLite).
        first = (dst.execute(select(func.max(measurements.c.id))).scalar() or 0) + 1
        ids = range(first, first + len(fresh))
        _insert_as_stored(dst, measurements, [{**row, "id": id_} for row, id_ in zip(fresh, ids)])
    else:
        ids = dst.execute(insert(measurements).returning(measurements.c.id, sort_by_parameter_order=True),
                          fresh).scalars()
    new_ids.update(zip(fresh_ids, ids))
    copies = [{**stored[old], "measurement_id": new_ids[old], "derived_from": new_ids.get(stored[old]["derived_from"])}
              for old in fresh_ids if old in stored]
    if copies:
        _insert_as_stored(dst, arrays, copies) if as_stored else dst.execute(insert(arrays), copies)
    report.measurements += len(fresh)
    return len(fresh)


def _rows(source: Store, run_id: int) -> tuple[list, dict]:
    """A run's measurement rows and {measurement id: its sample array row}, through SQLAlchemy's types (the
    samples as stored: SampleBlob converts them for the target's dialect)."""
    measurements, arrays = Measurement.__table__, SampleArray.__table__
    with source.engine.connect() as src:
        rows = src.execute(select(measurements).where(measurements.c.run_id == run_id)
                           .order_by(measurements.c.id)).mappings().all()
        raw = [type_coerce(column, NullType()).label(column.name) if column.name == "samples" else column
               for column in arrays.c]
        stored = {a["measurement_id"]: a for a in src.execute(
            select(*raw).join(measurements, arrays.c.measurement_id == measurements.c.id)
            .where(measurements.c.run_id == run_id)).mappings()}
    return rows, stored


def _rows_as_stored(source: Store, run_id: int) -> tuple[list, dict]:
    """_rows of a SQLite source, as sqlite3 reads them (each value as the file holds it)."""
    measurements, arrays = Measurement.__table__.name, SampleArray.__table__.name
    with source.engine.connect() as src:
        con = src.connection.driver_connection
        rows = _dicts(con.execute(f"SELECT * FROM {measurements} WHERE run_id = ? ORDER BY id", (run_id,)))
        stored = {a["measurement_id"]: a for a in _dicts(con.execute(
            f"SELECT a.* FROM {arrays} a JOIN {measurements} m ON a.measurement_id = m.id WHERE m.run_id = ?",
            (run_id,)))}
    return rows, stored


def _dicts(cursor) -> list[dict]:
    names = [column[0] for column in cursor.description]
    return [dict(zip(names, row)) for row in cursor]


def _insert_as_stored(dst: Session, table, rows: list[dict]) -> None:
    """Insert rows read by _rows_as_stored into a SQLite target, in the session's transaction."""
    names = list(rows[0])
    statement = f"INSERT INTO {table.name} ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})"
    dst.connection().connection.driver_connection.executemany(statement, [tuple(r[n] for n in names) for r in rows])
