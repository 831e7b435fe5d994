"""Writing the database: write transactions (BEGIN IMMEDIATE, retried while the file stays locked),
runs and their cases with raw samples, strings by digest (Texts), and the rule that simulated and real
runs never share a database (refuse_mixing)."""

from __future__ import annotations

import json
import time
from datetime import datetime, timezone

import numpy as np
from sqlalchemy import insert, select
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session

from harness.db.connections import first_line, schema_lock
from harness.db.tables import BuildRow, CaseRow, Device, Measurement, Run, SampleArray, TextRow
from harness.errors import SpecError, StoreError
from harness.measure.device import DeviceInfo, is_simulated
from harness.measure.measurement import CaseResult, launch_key
from harness.provenance import Provenance
from harness.stats import summarize

WRITE_ATTEMPTS = 5  # a write still locked out after the busy timeout is retried this often


def _now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


class Writing:
    """Store's writes (harness/db/store.py): transactions that retry while the file is locked, runs
    and their cases. A part of Store, on its engine, writer and url."""

    def write(self, work):
        """Run `work(session)` in a write transaction (BEGIN IMMEDIATE on SQLite) and return its
        result; retried while the file stays locked past the busy timeout."""
        self.use_wal()
        for attempt in range(WRITE_ATTEMPTS):
            try:
                with Session(self.writer) as session, session.begin():
                    schema_lock(session.connection())  # PostgreSQL: one writer at a time, as SQLite's IMMEDIATE
                    return work(session)
            except OperationalError as exc:
                if ("locked" not in str(exc) and "busy" not in str(exc)) or attempt == WRITE_ATTEMPTS - 1:
                    raise StoreError(f"cannot write to {self.url}: {first_line(exc)}") from None
                time.sleep(0.1 * 2 ** attempt)

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

        return self.write(work)

    def resume_run(self, run_id: int, statuses: tuple[str, ...] | None = None, resumes: int | None = None) -> None:
        """Mark an interrupted or failed run running again. Where `statuses` and `resumes` (what the caller
        read when it planned the resume: RunInfo) are given, only if the run still has one of those statuses
        and was resumed no more times since, checked in the same write transaction: of two resumes of one run,
        the later is refused (SpecError) and changes nothing, rather than storing a case the other stored."""
        def work(session: Session) -> None:
            run = session.get(Run, run_id)
            taken = ((statuses is not None and run.status not in statuses)
                     or (resumes is not None and (run.resumes or 0) != resumes))
            if taken:
                raise SpecError(f"run {run_id} was resumed by another `bench run` since this one read it (now "
                                f"{run.status}): nothing measured here; see `bench runs`")
            run.status, run.finished_at, run.error = "running", None, None
            run.resumes = (run.resumes or 0) + 1

        self.write(work)

    def finish_run(self, run_id: int, status: str, error: str | None = None) -> None:
        def work(session: Session) -> None:
            run = session.get(Run, run_id)
            run.status, run.finished_at, run.error = status, _now(), error

        self.write(work)

    def record_case(self, run_id: int, result: CaseResult) -> None:
        """Store one case's measurements (and raw samples) in one transaction."""
        self.write(lambda session: self._add_case(session, run_id, result))

    def _add_case(self, session: Session, run_id: int, result: CaseResult) -> None:
        """The case's measurement rows in one insert (a map case has thousands: one per launch), their strings
        and sample arrays in one each; ids in the order of result.metrics, as row by row would give them."""
        case_pk = self._case_pk(session, result.case)
        build_id = self._build_id(session, result) if result.build else None
        texts = Texts(session)
        launches = [launch_key(metric.launch) for metric in result.metrics]
        strings = [dict(metric=metric.name, unit=metric.unit, launch=launch, status=result.status,
                        input_distribution=metric.input_distribution or result.input_distribution,
                        notes=metric.notes, stop_reason=metric.stop_reason,
                        throttle_reasons=",".join(metric.gpu_state.reasons) if _sampled(metric) else None)
                   for metric, launch in zip(result.metrics, launches)]
        texts.resolve(value for columns in strings for value in columns.values())
        rows = [self._measurement(run_id, case_pk, build_id, result, metric, texts.ids(**columns))
                for metric, columns in zip(result.metrics, strings)]
        if not rows:
            return
        table = Measurement.__table__
        ids = session.execute(insert(table).returning(table.c.id, sort_by_parameter_order=True), rows).scalars().all()
        explicit: dict[str, list[tuple[int, np.ndarray]]] = {}  # launch key -> arrays stored as numbers
        arrays = [_sample_array(id_, np.asarray(metric.samples, dtype=float), explicit.setdefault(launch, []))
                  for id_, row, metric, launch in zip(ids, rows, result.metrics, launches) if row["n_samples"]]
        if arrays:  # one insert of every array (a map case's thousands), not an ORM object each
            session.execute(insert(SampleArray.__table__), arrays)

    @staticmethod
    def _measurement(run_id: int, case_pk: int, build_id: int | None, result: CaseResult, metric,
                     text_ids: dict[str, int | None]) -> dict:
        """One metric's row of measurement_rows, every column named (one insert takes them all)."""
        row = dict(run_id=run_id, case_pk=case_pk, build_id=build_id, sm_clock_mhz=metric.sm_clock_mhz,
                   valid=result.valid, error=result.error, validation_max_error=result.validation_max_error,
                   created_at=_now(), n_samples=0, telemetry_samples=0, value=None, mean=None, minimum=None,
                   maximum=None, stdev=None, spread=None, nvml_sm_clock_mhz=None, nvml_mem_clock_mhz=None,
                   power_w=None, temperature_c=None, throttled=None, power_capped=None, other_processes=None,
                   **text_ids)
        if result.valid and metric.samples is not None and len(metric.samples):
            s = summarize(metric.samples)
            row.update(value=s.median, mean=s.mean, minimum=s.minimum, maximum=s.maximum, stdev=s.stdev,
                       spread=s.spread, n_samples=s.n)
        if metric.gpu_state is not None:
            state = metric.gpu_state
            row.update(telemetry_samples=state.samples, nvml_sm_clock_mhz=state.sm_clock_mhz,
                       nvml_mem_clock_mhz=state.mem_clock_mhz, power_w=state.power_w,
                       temperature_c=state.temperature_c, throttled=state.throttled, power_capped=state.power_capped,
                       other_processes=state.other_processes)
        return row

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

    def refuse_mixing_with(self, uuid: str) -> None:
        """refuse_mixing for a run of the GPU `uuid`, asked before the run does any work."""
        with Session(self.engine) as session:
            refuse_mixing(session, [uuid], self.url)


def _sampled(metric) -> bool:
    """Whether telemetry sampled the GPU while `metric` was measured (its throttle reasons are then stored)."""
    return metric.gpu_state is not None and bool(metric.gpu_state.samples)


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


class Texts:
    """The ids of strings in `texts` within one write transaction: looked up by digest, added when
    new. (A cache per transaction: a retried transaction starts again from the database.)"""

    def __init__(self, session: Session):
        self.session, self.known = session, {}

    def resolve(self, strings) -> None:
        """Make every one of `strings` known: those stored looked up by digest in one query (per 10,000), the
        rest added in one insert, in the order of their first appearance (as one id() after another adds them)."""
        wanted = [s for s in dict.fromkeys(strings) if s is not None and s not in self.known]
        for start in range(0, len(wanted), 10_000):  # within every database's limit of bound parameters
            chunk = {TextRow.digest_of(text): text for text in wanted[start:start + 10_000]}
            for id_, digest, text in self.session.execute(select(TextRow.id, TextRow.digest, TextRow.text).where(
                    TextRow.digest.in_(list(chunk)))):
                if text != chunk[digest]:
                    raise StoreError(f"two strings share the digest {digest}: {text!r} and {chunk[digest]!r}")
                self.known[text] = id_
        missing = [s for s in wanted if s not in self.known]
        if missing:
            table = TextRow.__table__
            rows = [{"digest": TextRow.digest_of(text), "text": text} for text in missing]
            ids = self.session.execute(insert(table).returning(table.c.id, sort_by_parameter_order=True), rows)
            self.known.update(zip(missing, ids.scalars()))

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


def _sample_array(measurement_id: int, values: np.ndarray, explicit: list[tuple[int, np.ndarray]]) -> dict:
    """The row of sample_arrays, every column named: the samples as numbers, or as a rule over an array of the
    same case and launch stored as numbers (a peak fraction is its throughput over the peak, exactly): `explicit`
    lists those, and grows."""
    for source_id, source in explicit:
        rule = SampleArray.derivation(source, values)
        if rule is not None:
            return dict(measurement_id=measurement_id, samples=None, derived_from=source_id,
                        subtract=rule[0], divide_by=rule[1])
    explicit.append((measurement_id, values))
    return dict(measurement_id=measurement_id, samples=SampleArray.encode(values), derived_from=None,
                subtract=None, divide_by=None)
