"""A whole `bench run`: check everything first, then compile, measure and store each case, the three
overlapped: the compiler's processes work ahead of the measurement, and the run stores one case while
the worker measures the next.

Nothing touches the database until the suite, filter, cases and GPU have all been checked. A probe
that fails to compile (CI compiles every shipped one) fails the run with NVRTC's message, keeping the
cases measured before it. Cases are measured in a worker process (harness/orchestration/worker.py), so
a probe that faults or hangs is stored as a fault and the run goes on. Each case is committed as soon
as it is measured; SIGINT or SIGTERM marks the run interrupted, and `bench run --resume RUN_ID`
measures what is missing.

The plan: harness/orchestration/runplan.py; the probes compiled ahead: harness/orchestration/compiling.py.
"""

from __future__ import annotations

import os
import signal
import threading
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator

from harness import provenance
from harness.build.compile import Build
from harness.measure.device import DeviceInfo
from harness.errors import CompileError, RunInterrupted
from harness.measure.measurement import CaseResult
from harness.published import shipped as published_figures
from harness.spec import Case
from harness.db.store import Store
from harness.orchestration.compiling import compiled
from harness.orchestration.runner import CasePlan, case_plan
from harness.orchestration.runplan import (RESUMABLE, RunPlan, check_resumable, plan, plan_cases,  # noqa: F401
                                           plan_resume)
from harness.orchestration.worker import Worker


@dataclass
class RunOutcome:
    run_id: int
    status: str
    results: list[CaseResult]


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
