"""`bench run` as one call: the plan (a suite, a resumed run, or a family's choice once the GPU is known), the
database, the worker on its GPU, the cases compiled meanwhile, each measured and stored (harness/orchestration/
run.py), the run's outcome. What the caller shows on the way (a bar, a line per case) it hears through a Listener.
`bench run --gpus` is one call too (conduct_node): the suite checked, the GPUs named, the database made or upgraded
once, then one `bench run --gpu I` process per GPU (harness/orchestration/node.py); its caller hears a NodeListener.

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


class NodeListener:
    """What a run on several GPUs tells its caller as it goes; each method does nothing here (the CLI's draws a
    bar per GPU: harness/cli/measuring.py)."""

    def upgraded(self, migration) -> None:
        """The database was an older schema, upgraded before any GPU work (db/files.py Migration)."""

    def started(self, indices: list[int], suite: str) -> None:
        """The suite is checked, the GPUs known and the database ready; a process per GPU starts now."""

    def updated(self, child) -> None:
        """A GPU's process printed a line (harness/orchestration/node.py Child: its label, done, total, detail)."""

    def finished(self) -> None:
        """Every GPU's process ended (a caller's display closes here)."""


@dataclass(frozen=True)
class NodeConducted:
    children: list  # harness/orchestration/node.py Child, one per GPU: its process, label and summary lines
    worst: int  # the worst exit status of them (0: every run stored)

    @property
    def failed(self) -> list:
        """The GPUs whose run failed (a non-zero exit status)."""
        return [child for child in self.children if child.process.returncode]


def conduct_node(gpus: str, request: Request, db=None, listener: NodeListener = NodeListener()) -> NodeConducted:
    """Run `request` (a suite) on several GPUs of this node at once: `gpus` is 'all' or 'I,J,...' (CUDA indices).
    The suite and filter are checked once, here, before any file (a bad one fails here, not in every process);
    then the GPUs (SpecError for a bad spelling, DeviceError for a GPU that is not there); then the database is
    made, or upgraded (`listener.upgraded`), once, before any GPU work; then one `bench run --gpu I` process per
    GPU, all writing to `db`, each a whole run of its own (harness/orchestration/node.py). Ctrl-C and SIGTERM are
    forwarded to each. A request that is not a suite (a resumed run, a family's choice) or names a GPU is a
    ValueError."""
    from harness.orchestration.node import gpu_indices, run_node
    from harness.published import shipped

    if request.suite is None or request.gpu is not None:
        raise ValueError("a run on several GPUs is of a suite, on the GPUs it is given (resume each run alone)")
    plan(request.suite, request.filter)
    indices = gpu_indices(gpus)
    store = Store.open(db, create=True, references=shipped())
    try:
        if store.migration:
            listener.upgraded(store.migration)
    finally:
        store.close()
    args = ["--suite", request.suite, "--seed", str(request.seed), "--watchdog", str(request.watchdog_s)]
    args += (["--filter", request.filter] if request.filter else []) + (["--db", str(db)] if db else []) + \
        (["--jobs", str(request.jobs)] if request.jobs else [])
    listener.started(indices, request.suite)
    try:
        children, worst = run_node(indices, args, listener.updated)
    finally:
        listener.finished()
    return NodeConducted(children, worst)


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
