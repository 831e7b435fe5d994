"""`bench run` as one call: the plan (a suite, a resumed run, or a family's choice once the GPU is known), the
database, the worker on its GPU, the cases compiled meanwhile, each measured and stored (harness/orchestration/
run.py), the run's outcome. What the caller shows on the way (a bar, a line per case) it hears through a Listener.

The order is the promise of run.py: nothing touches the database until the suite, filter and cases are checked (a
resumed run's are read, not written); a new database file is made only once the GPU is found.
"""

from __future__ import annotations

import signal
import sys
import time
from dataclasses import dataclass, field
from typing import Callable

from harness.build.compile import Build
from harness.db.store import Store
from harness.measure.device import DeviceInfo
from harness.measure.measurement import CaseResult
from harness.orchestration.run import (RunOutcome, RunPlan, compiled, execute, open_run_store, plan, plan_resume,
                                       signals_handled_by)
from harness.orchestration.runner import RunSettings
from harness.orchestration.worker import DEFAULT_WATCHDOG_S, Worker


@dataclass(frozen=True)
class Request:
    """What to run. A suite (with an optional filter), or `resume` (a run's id: what it is missing; `force`: one
    still marked running whose process is gone), or `choose`: the plan made from the GPU once it is known (a
    family's Measurer, harness/families/base.py). `gpu`: the CUDA index (default 0; a resumed run's own GPU, found
    by UUID)."""

    suite: str | None = None
    filter: str | None = None
    resume: int | None = None
    force: bool = False
    choose: Callable[[DeviceInfo], RunPlan] | None = None
    gpu: int | None = None
    seed: int = 0
    watchdog_s: float = DEFAULT_WATCHDOG_S
    jobs: int | None = None
    argv: list[str] = field(default_factory=lambda: list(sys.argv))

    def __post_init__(self):
        chosen = [name for name, given in (("a suite", self.suite is not None), ("resume", self.resume is not None),
                                           ("choose", self.choose is not None)) if given]
        if len(chosen) != 1:
            raise ValueError(f"a run is one of a suite, a resumed run or a family's choice (got "
                               f"{' and '.join(chosen) or 'none'})")


class Listener:
    """What a run tells its caller as it goes; each method does nothing here. A caller's listener is any object
    with these five methods (the CLI's draw bars or lines: harness/cli/measuring.py)."""

    def upgraded(self, migration) -> None:
        """The database was an older schema, upgraded before any GPU work (db/files.py Migration)."""

    def started(self, device: DeviceInfo, run_plan: RunPlan) -> None:
        """The GPU is open and the plan known; the cases follow."""

    def compiled(self, build: Build | None) -> None:
        """The next case was compiled (None: an anchor, a library call, has nothing to compile)."""

    def measured(self, result: CaseResult) -> None:
        """A case was measured and stored."""

    def finished(self) -> None:
        """The run ended, stored or not (a caller's display closes here)."""


@dataclass(frozen=True)
class Conducted:
    outcome: RunOutcome
    device: DeviceInfo
    store_url: str
    seconds: float  # from the first case's start to the run's end

    @property
    def failed(self) -> list[CaseResult]:
        """The cases that did not validate or faulted (the database holds each one's error)."""
        return [r for r in self.outcome.results if not r.valid]


def conduct(request: Request, db=None, listener: Listener = Listener()) -> Conducted:
    """Run `request` into `db` (a path or URL, opened here and closed; or a Store the caller opened, left open):
    the plan checked, the database opened (upgraded if older: `listener.upgraded`), the worker started, then
    each case compiled, measured and stored. Errors are HarnessErrors (RunInterrupted on SIGINT or SIGTERM, the
    run marked interrupted); a bad request (not one of suite, resume, choose) is a ValueError."""
    run_plan = plan(request.suite, request.filter) if request.suite is not None else None  # before any file
    owned = not isinstance(db, Store)
    store = open_target(db, request.resume is not None, listener) if owned else db
    builds = None
    try:
        gpu = request.gpu
        if request.resume is not None:
            run_plan = plan_resume(store, request.resume, request.force)
            if gpu is None:
                from harness.orchestration.node import index_of

                gpu = index_of(run_plan.device_uuid)
        worker = Worker(0 if gpu is None else gpu, RunSettings(seed=request.seed), watchdog_s=request.watchdog_s)
        if run_plan is not None:  # compiling while the worker opens the GPU
            builds = compiled(run_plan.cases, request.jobs, run_plan.families)
        with _interrupting(), worker:
            device = worker.start()
            if request.choose is not None:
                run_plan = request.choose(device)
                builds = compiled(run_plan.cases, request.jobs, run_plan.families)
            # made now if new; a database of the other kind (simulated or real) refused
            if store is None:
                store = open_run_store(db, device)
            else:
                open_run_store(store, device)
            listener.started(device, run_plan)
            started = time.monotonic()
            outcome = execute(run_plan, store, worker, argv=request.argv, on_compiled=listener.compiled,
                              on_case=listener.measured, builds=builds)
        return Conducted(outcome, device, store.url, time.monotonic() - started)
    finally:
        listener.finished()
        if builds is not None:
            builds.close()
        if owned and store is not None:
            store.close()


def open_target(db, must_exist: bool, listener: Listener) -> Store | None:
    """Store.open_target, the listener told of an upgrade; None for a new file (unless `must_exist`: then the
    error that there is none)."""
    store = Store.open_target(db)
    if store is None:
        return Store.open(db) if must_exist else None  # a missing file: StoreError naming it
    if store.migration:
        listener.upgraded(store.migration)
    return store


def _interrupting():
    """SIGINT and SIGTERM both interrupt the run (even where SIGINT was inherited as ignored, as in background
    jobs); the handlers before are restored after."""
    return signals_handled_by(signal.default_int_handler)
