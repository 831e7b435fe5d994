"""A whole `bench run`: check everything first, then compile, measure and store each case, the three
overlapped: the compiler's processes work ahead of the measurement, and the run stores one case while
the worker measures the next.

Nothing touches the database until the suite, filter, cases and GPU have all been checked. A probe
that fails to compile (CI compiles every shipped one) fails the run with NVRTC's message, keeping the
cases measured before it. Cases are measured in a worker process (harness/orchestration/worker.py), so
a probe that faults or hangs is stored as a fault and the run goes on. Each case is committed as soon
as it is measured; SIGINT or SIGTERM marks the run interrupted, and `bench run --resume RUN_ID`
measures what is missing.
"""

from __future__ import annotations

import os
import queue
import signal
import threading
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator

from harness import provenance
from harness.anchors import has_probe
from harness.build import sass
from harness.build.compile import Build, compile_each
from harness.build.render import render
from harness.measure.device import DeviceInfo
from harness.errors import CompileError, DeviceError, RunInterrupted, SpecError
from harness.registry import family_of
from harness.measure.measurement import CaseResult
from harness.published import shipped as published_figures
from harness.families.base import Family
from harness.registry import parse_case_id
from harness.spec import Case
from harness.db.store import Store
from harness.suites import SUITES, select, suite_cases
from harness.orchestration.runner import CasePlan, case_plan
from harness.orchestration.worker import Worker

RESUMABLE = ("interrupted", "failed")
DISASSEMBLY_BATCH = 16  # builds disassembled at once by bench run (nvdisasm takes about 0.4 s to start)


@dataclass(frozen=True)
class RunPlan:
    suite: str
    filter: str | None
    cases: list[Case]  # the cases still to measure
    resume: int | None = None  # the run being continued
    total: int | None = None  # cases in the whole run (resumed runs: measured ones included)
    git_commit: str | None = None  # a resumed run's commit: the code must not have changed
    device_uuid: str | None = None  # ... nor the GPU
    # what the resume read (RunInfo): the statuses it may take the run from and the run's resumes then; taking it
    # checks both again (Store.resume_run), so a second `bench run --resume` of the run is refused, not stored twice
    resume_from: tuple[str, ...] | None = None
    resumes: int | None = None
    # each case's family, in the order of `cases`: looked up once, where the case was checked (plan_cases), and
    # handed to every later stage (compile, the plan of measurement, the worker); a plan made by hand gets them here
    families: tuple[Family, ...] = ()

    def __post_init__(self):
        if len(self.families) != len(self.cases):
            object.__setattr__(self, "families", tuple(family_of(case) for case in self.cases))

    @property
    def size(self) -> int:
        return self.total or len(self.cases)


def plan(suite: str, filter_: str | None) -> RunPlan:
    return plan_cases(suite, select(suite_cases(suite), filter_), filter_)


def plan_cases(label: str, cases: list[Case], filter_: str | None = None) -> RunPlan:
    """A run of these cases, each checked (its family looked up once, and kept). Without `filter_` (a list no suite
    makes: `bench gemm`'s) the run is stored as `label` with their ids as its filter, which is how `bench run
    --resume` finds them again."""
    families = tuple(family_of(case) for case in cases)
    for case, family in zip(cases, families):
        family.check(case)
    return RunPlan(label, filter_ if label in SUITES else ",".join(c.case_id for c in cases), cases,
                   families=families)


def plan_resume(store: Store, run_id: int, force: bool = False) -> RunPlan:
    """The cases run `run_id` has not stored yet (read only: the database is not touched). A run still marked
    running (its process killed with -9, or its machine lost, before it could mark it) is resumed only by `force`:
    nothing here can tell a dead process from one measuring on another host."""
    info = store.run_info(run_id)
    if info.status == "running" and not force:
        raise SpecError(f"run {run_id} is still marked running: another `bench run` may be measuring it. If its "
                        f"process is gone (killed, or its machine lost): bench run --resume {run_id} --force")
    statuses = RESUMABLE + (("running",) if force else ())
    if info.status not in statuses:
        raise SpecError(f"run {run_id} is {info.status}: only {' or '.join(RESUMABLE)} runs can be resumed")
    whole = plan(info.suite, info.filter) if info.suite in SUITES or not info.filter else \
        plan_cases(info.suite, [parse_case_id(i) for i in (info.filter or "").split(",") if i])
    done = store.measured_case_ids(run_id)
    missing = [(c, f) for c, f in zip(whole.cases, whole.families) if c.case_id not in done]
    return RunPlan(info.suite, info.filter, [c for c, _ in missing], resume=run_id, total=len(whole.cases),
                   git_commit=info.git_commit, device_uuid=info.device_uuid, resume_from=statuses,
                   resumes=info.resumes, families=tuple(f for _, f in missing))


@dataclass
class RunOutcome:
    run_id: int
    status: str
    results: list[CaseResult]


def compiled(cases: list[Case], jobs: int | None = None,
             families: tuple[Family, ...] | None = None) -> Iterator[tuple[Case, Build | None]]:
    """Each case with its build, in the plan's order, as soon as it is compiled and disassembled (an anchor, a
    library call, with None: it has no template, harness/anchors). The
    work starts at the call and runs ahead of the caller (bench run starts it before the GPU worker
    and measures while it goes on): the compiler's processes (default: half the CPUs), and a thread
    that disassembles their builds (cached for the SASS checks) in batches that double in size up to
    DISASSEMBLY_BATCH, so that the first case waits for one build and nvdisasm starts a few times,
    not once a case. Closing the iterator stops both. `families`: each case's (RunPlan.families), else looked up."""
    jobs = jobs or max(1, (os.cpu_count() or 2) // 2)  # the other half: the measuring worker and this process
    families = families if families is not None else tuple(family_of(c) for c in cases)
    sources = [render(c, f) for c, f in zip(cases, families) if has_probe(c)]  # an anchor has no source
    return _Ahead(_disassembled(cases, compile_each(sources, jobs)))


def _disassembled(cases: list[Case], builds: Iterator[Build]) -> Iterator[tuple[Case, Build | None]]:
    ready, batch = [], 1
    try:
        try:
            for case in cases:
                ready.append((case, next(builds) if has_probe(case) else None))
                if len(ready) == batch:
                    sass.disassemble_many((b.cubin_path for _, b in ready if b), jobs=1)
                    yield from ready
                    ready, batch = [], min(batch * 2, DISASSEMBLY_BATCH)
        except (CompileError, BrokenProcessPool):  # a probe that does not compile: the builds before it first
            sass.disassemble_many((b.cubin_path for _, b in ready if b), jobs=1)
            yield from ready
            raise
        sass.disassemble_many((b.cubin_path for _, b in ready if b), jobs=1)
        yield from ready
    finally:
        builds.close()


class _Ahead:
    """An iterator filled by a thread of its own from `source`, ahead of its reader; an exception of
    `source` is raised to the reader in its place. close() stops the thread after its current item."""

    _END = object()

    def __init__(self, source: Iterator):
        self._items: queue.Queue = queue.Queue()
        self._stop = threading.Event()
        threading.Thread(target=self._fill, args=(source,), daemon=True, name="bench-compile").start()

    def _fill(self, source: Iterator) -> None:
        try:
            for item in source:
                if self._stop.is_set():
                    break
                self._items.put((item, None))
            self._items.put((self._END, None))
        except BaseException as exc:  # noqa: BLE001  (the reader raises it)
            self._items.put((self._END, exc))
        finally:
            source.close()

    def __iter__(self) -> "_Ahead":
        return self

    def __next__(self):
        item, error = self._items.get()
        if item is self._END:
            self._items.put((item, error))  # every later call ends the same way
            if error is not None:
                raise error
            raise StopIteration
        return item

    def close(self) -> None:
        self._stop.set()


def check_resumable(run_plan: RunPlan, device: DeviceInfo, commit: str | None) -> None:
    """A resumed run must go on with the same code on the same GPU, or its numbers do not mix."""
    if run_plan.resume is None:
        return
    if run_plan.device_uuid and device.uuid != run_plan.device_uuid:
        raise DeviceError(f"run {run_plan.resume} was measured on {run_plan.device_uuid}; GPU {device.index} "
                          f"is {device.uuid}: resume it on the same GPU (--gpu)")
    if run_plan.git_commit and commit != run_plan.git_commit:
        raise SpecError(f"run {run_plan.resume} was measured at commit {run_plan.git_commit[:10]}; this "
                        f"harness is at {(commit or 'unknown')[:10]}: start a new run instead")


@contextmanager
def signals_handled_by(handler):
    """SIGINT and SIGTERM handled by `handler` inside the block, the handlers before restored after. Only the main
    thread can set them (elsewhere the block runs as it is)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, before in previous.items():
            signal.signal(s, before)


def _signals_held():
    """Let cleanup finish: a second Ctrl-C must not leave the run marked running."""
    return signals_handled_by(signal.SIG_IGN)


def open_run_store(db: str | os.PathLike | Store | None, device: DeviceInfo) -> Store:
    """The database a run on `device` writes to, ready before any work: `db` itself where it is a Store
    already open for writing (Store.open_target's), else opened here (created if missing). A database
    holding runs of the other kind (simulated or real) is refused (StoreError; a store opened here is
    closed again), and the published figures are loaded where it lacks them. The caller closes it."""
    store = db if isinstance(db, Store) else Store.open(db, create=True)
    try:
        store.refuse_mixing_with(device.uuid)  # simulated and real runs never share a database
        store.sync_references(published_figures())
    except BaseException:
        if store is not db:
            store.close()
        raise
    return store


def execute(run_plan: RunPlan, db: str | os.PathLike | Store | None, worker: Worker, jobs: int | None = None,
            argv: list[str] | None = None, on_compiled: Callable[[Build], None] | None = None,
            on_case: Callable[[CaseResult], None] | None = None,
            builds: Iterator[tuple[Case, Build]] | None = None) -> RunOutcome:
    """Compile, measure each case in `worker` (already started) and store it at once.

    `db`: a path or URL, opened (open_run_store) and closed here; or a Store that open_run_store
    returned for this worker's GPU, which stays the caller's to close. `builds`: `compiled(the plan's
    cases)`, begun by the caller (before it started the worker), closed here; else begun here.
    `on_compiled` sees each build as the run takes it."""
    device = worker.device
    prov = provenance.collect(argv)
    check_resumable(run_plan, device, prov.git_commit)
    if isinstance(db, Store):
        return _execute(run_plan, db, worker, prov, builds or compiled(run_plan.cases, jobs, run_plan.families), on_compiled, on_case)
    with open_run_store(db, device) as store:
        return _execute(run_plan, store, worker, prov, builds or compiled(run_plan.cases, jobs, run_plan.families), on_compiled, on_case)


def _execute(run_plan: RunPlan, store: Store, worker: Worker, prov, builds, on_compiled, on_case) -> RunOutcome:
    device = worker.device
    results: list[CaseResult] = []
    pending: CaseResult | None = None  # measured, not yet stored

    def keep(result: CaseResult) -> None:
        store.record_case(run_id, result)
        results.append(result)
        if on_case:
            on_case(result)

    def keep_pending() -> None:
        """The case measured before an interrupt or an error, stored if the store still takes it (its
        failure must not keep the run from being marked)."""
        nonlocal pending
        result, pending = pending, None
        if result is not None:
            try:
                keep(result)
            except Exception:  # noqa: BLE001  (the run's own error is the one to raise)
                pass

    families = iter(run_plan.families)

    def take() -> tuple[Case, Build | None, CasePlan] | None:
        """The next case compiled, with its plan of measurement: asked of its family once, here, for the worker
        (which measures it) and for a fault result (which declares its metrics) alike."""
        ahead = next(builds, None)
        if ahead is None:
            return None
        if on_compiled:
            on_compiled(ahead[1])
        case, build = ahead
        return case, build, case_plan(case, next(families), device)

    try:
        # the first case compiled before the run exists: a first probe that does not compile leaves no run
        ahead = take()
        if run_plan.resume is None:
            run_id = store.start_run(device, prov, run_plan.suite, run_plan.filter)
        else:
            run_id = run_plan.resume
            store.resume_run(run_id, run_plan.resume_from, run_plan.resumes)
    except BaseException:
        builds.close()
        raise
    try:
        with worker:
            while ahead is not None:
                worker.submit(*ahead)
                if pending is not None:  # stored while the worker measures the next case
                    result, pending = pending, None
                    keep(result)
                try:
                    ahead = take()  # ... and the case after it compiled
                except (CompileError, BrokenProcessPool):  # it did not compile: the case in flight is kept first
                    pending = worker.collect()
                    raise
                pending = worker.collect()
            if pending is not None:
                result, pending = pending, None
                keep(result)
    except KeyboardInterrupt:
        with _signals_held():
            try:
                keep_pending()
            finally:
                kept = run_plan.size - len(run_plan.cases) + len(results)
                store.finish_run(run_id, "interrupted", f"interrupted with {kept} of {run_plan.size} cases stored")
        raise RunInterrupted(f"interrupted: run {run_id} keeps {kept} of {run_plan.size} cases; "
                             f"measure the rest with `bench run --resume {run_id}`") from None
    except BaseException as exc:
        with _signals_held():
            try:
                keep_pending()
            finally:
                store.finish_run(run_id, "failed", f"{type(exc).__name__}: {exc}")
        raise
    finally:
        builds.close()  # the compilations not yet started are cancelled
    store.finish_run(run_id, "complete")
    return RunOutcome(run_id, "complete", results)
