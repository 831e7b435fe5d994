"""`bench merge`: bring the runs of other results databases into one, without duplicates.

A run is the same run in two files when its device (by UUID), start time, host and command line
agree. A run the target lacks comes whole; a run it holds brings the measurements the target's copy
lacks (a measurement is one case, metric and launch of the run) and, when the source's copy is
further on (resumed more often, or finished), its status. So merging a node's file, resuming the
run on the node and merging again brings what the resumed run added, and merging twice adds nothing.
Devices are matched by UUID, cases by case id, builds by build hash. An older source is upgraded in
a temporary copy made with SQLite's backup API (commits still in its -wal come along; the file itself
is only read); a file that is not a hopper-bench database is refused with one line that names it.

A SQLite target changes all at once or not at all: the merge runs in a copy beside it (the published figures
brought up to date, an older schema upgraded, every source's runs added), which replaces the target only once
every source is in, and only if no one wrote the target meanwhile. A merge that fails (a refusal, a damaged
source, a full disk) leaves the target as it was, byte for byte, and a new target not made at all.
"""

from __future__ import annotations

import os
import tempfile
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path

from sqlalchemy import insert, select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, aliased

from harness.db.connections import describe, sqlite_path
from harness.db.files import backup_name, copy_sqlite, resolve_url, tidy_wal
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


def _open_source(source: str, copy: Path) -> tuple[Store, int | None]:
    """The source read-only; an older one through an upgraded copy at `copy`."""
    try:
        return Store.open(source, read_only=True), None
    except StoreError as exc:
        if "bench db upgrade" not in str(exc):
            raise
    path = sqlite_path(resolve_url(source))
    if path is None:  # an older PostgreSQL database: upgrade it first, where it is
        raise StoreError(f"{describe(resolve_url(source))} has an older schema: "
                         "run `bench db upgrade --db ...` on it first")
    copy_sqlite(path, copy)
    store = Store.open(str(copy))
    return store, store.migration.from_version if store.migration else None


def _run_key(run: Run, uuid: str | None) -> tuple:
    return (uuid, run.started_at, run.host, run.command_line)


def _progress(run: Run) -> tuple:
    """How far a run has come: resumed more often, then finished, then finished later."""
    return (run.resumes or 0, run.finished_at is not None, run.finished_at or datetime.min)


def merge(sources: list[str], into: str, references=None, progress=None, on_open=None,
          atomic: bool = True) -> list[MergeReport]:
    """Merge every source into `into` (created if missing, given the published figures `references`,
    harness/published.py); one report per source. Every source is opened (and refused, if it must
    be) before the target is opened or created; a SQLite target is merged into a copy that replaces it
    at the end (module docstring), so a merge that fails changes no byte and leaves no new file.
    `on_open(migration)` is called once the target is open, with what opening it did to an older schema
    (None: nothing; its backup named as the target's will be); `progress(source, runs done, runs)` as each run is
    merged. `atomic` False merges into a SQLite target in place (a caller that builds a new file in a scratch
    folder of its own and renames it at the end)."""
    reports = []
    with tempfile.TemporaryDirectory() as scratch, ExitStack() as opened:
        into_url = resolve_url(into, write=True)
        into_path = sqlite_path(into_url)
        stores = []
        for i, source in enumerate(sources):
            source_path = sqlite_path(resolve_url(source))
            if into_path is not None and source_path is not None and source_path == into_path:
                raise StoreError(f"{source_path} is the database merged into: nothing to merge")
            store, upgraded = _open_source(source, Path(scratch) / f"source{i}.db")
            opened.callback(store.close)
            stores.append((source, store, upgraded))
        work = _Work(into_path) if into_path is not None and atomic else None
        target = None
        try:
            target = Store.open(work.url if work else into, create=True, references=references)
            opened.callback(target.close)
            if on_open is not None:
                on_open(work.planned(target.migration) if work is not None else target.migration)
            for source, store, upgraded in stores:
                name = describe(resolve_url(source))
                report = _merge_one(store, target, name,
                                    progress and (lambda done, total, _run, name=name: progress(name, done, total)),
                                    describe(into_url))
                report.upgraded_from = upgraded
                reports.append(report)
            if work is not None:
                target.close()
                work.replace(target.migration)
        except BaseException:
            if work is not None:
                if target is not None:
                    target.close()
                work.discard(target.migration if target is not None else None)
            raise
    return reports


class _Work:
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


def _merge_one(source: Store, target: Store, name: str, progress=None, target_name: str | None = None) -> MergeReport:
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

        texts = Texts(dst, preload=True)
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
    with source.engine.connect() as src:
        rows = src.execute(select(measurements).where(measurements.c.run_id == source_run_id)
                           .order_by(measurements.c.id)).mappings().all()
        stored = {a["measurement_id"]: a for a in src.execute(
            select(arrays).join(measurements, arrays.c.measurement_id == measurements.c.id)
            .where(measurements.c.run_id == source_run_id)).mappings()}
    texts.ensure(source_texts.get(row[f"{name}_id"]) for row in rows for name in TEXT_COLUMNS)
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
    ids = dst.execute(insert(measurements).returning(measurements.c.id, sort_by_parameter_order=True), fresh).scalars()
    new_ids.update(zip(fresh_ids, ids))
    copies = [{**stored[old], "measurement_id": new_ids[old], "derived_from": new_ids.get(stored[old]["derived_from"])}
              for old in fresh_ids if old in stored]
    if copies:
        dst.execute(insert(arrays), copies)
    report.measurements += len(fresh)
    return len(fresh)
