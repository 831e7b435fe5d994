"""`bench merge`: bring the runs of other results databases into one, without duplicates.

A run is the same run in two files when its device (by UUID), start time, host and command line
agree: merging a file twice, or a file that already holds some of the target's runs, adds nothing
twice. Devices are matched by UUID, cases by case id, builds by build hash; measurements and their
samples come with their run. An older source is upgraded in a temporary copy (the file itself is
only read); a file that is not a hopper-bench database is refused with one line.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

from harness.db.store import Store, Texts, resolve_url, sqlite_path
from harness.db.tables import TEXT_COLUMNS, BuildRow, CaseRow, Device, Measurement, Run, SampleArray, TextRow
from harness.errors import StoreError, redact


@dataclass
class MergeReport:
    source: str
    added: list[int] = field(default_factory=list)  # run ids in the target
    already: list[int] = field(default_factory=list)  # source run ids the target held
    measurements: int = 0
    samples: int = 0
    upgraded_from: int | None = None  # the source's schema, when a copy was upgraded

    def line(self) -> str:
        added = (f"{len(self.added)} run{'s' if len(self.added) != 1 else ''} added "
                 f"(as {', '.join(map(str, self.added))})" if self.added else "no run added")
        held = f", {len(self.already)} already there" if self.already else ""
        copy = f" (read from an upgraded copy of schema {self.upgraded_from})" if self.upgraded_from else ""
        return f"{self.source}: {added}{held}; {self.measurements} measurements, {self.samples} samples{copy}"


def _values(row, model, skip=("id",)) -> dict:
    return {a.key: getattr(row, a.key) for a in model.__mapper__.column_attrs if a.key not in skip}


def _open_source(source: str, scratch: Path) -> tuple[Store, int | None]:
    """The source read-only; an older one through an upgraded copy in `scratch`."""
    try:
        return Store.open(source, read_only=True), None
    except StoreError as exc:
        if "bench db upgrade" not in str(exc):
            raise
    path = sqlite_path(resolve_url(source))
    if path is None:  # an older PostgreSQL database: upgrade it first, where it is
        raise StoreError(f"{source} has an older schema: run `bench db upgrade --db ...` on it first")
    copy = scratch / path.name
    shutil.copyfile(path, copy)
    store = Store.open(str(copy))
    return store, store.migration.from_version if store.migration else None


def _run_key(run: Run, uuid: str | None) -> tuple:
    return (uuid, run.started_at, run.host, run.command_line)


def merge(sources: list[str], into: str) -> list[MergeReport]:
    """Merge every source into `into` (created if missing); one report per source."""
    target = Store.open(into, create=True)
    target_path = sqlite_path(target.url)
    reports = []
    with tempfile.TemporaryDirectory() as scratch:
        for source in sources:
            source_path = sqlite_path(resolve_url(source))
            if target_path is not None and source_path is not None and source_path.resolve() == target_path.resolve():
                raise StoreError(f"{source} is the database merged into: nothing to merge")
            store, upgraded = _open_source(source, Path(scratch))
            report = _merge_one(store, target, redact(source))
            report.upgraded_from = upgraded
            store.engine.dispose()
            reports.append(report)
    target.engine.dispose()
    return reports


def _merge_one(source: Store, target: Store, name: str) -> MergeReport:
    report = MergeReport(name)
    with Session(source.engine) as src:
        devices = {d.id: d for d in src.scalars(select(Device))}
        runs = list(src.scalars(select(Run).order_by(Run.id)))
        cases = {c.id: c for c in src.scalars(select(CaseRow))}
        builds = {b.id: b for b in src.scalars(select(BuildRow))}
        source_texts = dict(src.execute(select(TextRow.id, TextRow.text)).all())

        def work(dst: Session) -> None:
            report.added.clear(), report.already.clear()  # a retried transaction starts over
            report.measurements = report.samples = 0
            known_runs = {_run_key(r, uuid): r.id for r, uuid in dst.execute(
                select(Run, Device.uuid).outerjoin(Device, Run.device_id == Device.id))}
            # The target's id of a source row, matched by its natural key; copied in where missing.
            matchers = {model: (rows, key, dict(dst.execute(select(getattr(model, key), model.id)).all()))
                        for model, rows, key in ((Device, devices, "uuid"), (CaseRow, cases, "case_id"),
                                                 (BuildRow, builds, "build_hash"))}

            def target_id(model, source_id):
                if source_id is None:
                    return None
                rows, key, known = matchers[model]
                row = rows[source_id]
                natural = getattr(row, key)
                if natural not in known:
                    copy = model(**_values(row, model))
                    dst.add(copy)
                    dst.flush()
                    known[natural] = copy.id
                return known[natural]

            texts = Texts(dst)
            for run in runs:
                uuid = devices[run.device_id].uuid if run.device_id in devices else None
                if _run_key(run, uuid) in known_runs:
                    report.already.append(run.id)
                    continue
                new_run = Run(**{**_values(run, Run), "device_id": target_id(Device, run.device_id)})
                dst.add(new_run)
                dst.flush()
                report.added.append(new_run.id)
                arrays = {a.measurement_id: a for a in src.scalars(
                    select(SampleArray).join(Measurement, SampleArray.measurement_id == Measurement.id)
                    .where(Measurement.run_id == run.id))}
                new_ids: dict[int, int] = {}  # source measurement id -> target's
                for measurement in src.scalars(select(Measurement).where(Measurement.run_id == run.id)
                                               .order_by(Measurement.id)):
                    strings = {f"{name}_id": source_texts.get(getattr(measurement, f"{name}_id"))
                               for name in TEXT_COLUMNS}
                    row = Measurement(**{**_values(measurement, Measurement), "run_id": new_run.id,
                                         "case_pk": target_id(CaseRow, measurement.case_pk),
                                         "build_id": target_id(BuildRow, measurement.build_id),
                                         **{key: texts.id(value) for key, value in strings.items()}})
                    dst.add(row)
                    dst.flush()
                    new_ids[measurement.id] = row.id
                    if measurement.id in arrays:  # a derived array's source is stored before it
                        array = arrays[measurement.id]
                        dst.add(SampleArray(**{**_values(array, SampleArray, skip=()), "measurement_id": row.id,
                                               "derived_from": new_ids.get(array.derived_from)}))
                    report.measurements += 1
                    report.samples += measurement.n_samples

        target._write(work)
    return report
