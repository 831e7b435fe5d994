"""A whole `bench run`: check everything first, compile all cases, then measure and store each.

Nothing touches the database until the suite, filter, GPU and probes have all been checked.
Each case is committed as soon as it is measured; Ctrl-C or SIGTERM marks the run interrupted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from harness import provenance
from harness.compile import Build, compile_many
from harness.device import DeviceInfo
from harness.families import family_of
from harness.measurement import CaseResult
from harness.render import render
from harness.runner import RunSettings, measure_case
from harness.spec import Case
from harness.store import Store
from harness.suites import select, suite_cases


@dataclass(frozen=True)
class RunPlan:
    suite: str
    filter: str | None
    cases: list[Case]


def plan(suite: str, filter_: str | None) -> RunPlan:
    cases = select(suite_cases(suite), filter_)
    for case in cases:
        family_of(case).check(case)
    return RunPlan(suite, filter_, cases)


@dataclass
class RunOutcome:
    run_id: int
    status: str
    results: list[CaseResult]


def compile_plan(cases: list[Case], jobs: int | None = None,
                 on_compiled: Callable[[Build], None] | None = None) -> dict[str, Build]:
    return compile_many([render(c) for c in cases], jobs=jobs, on_done=on_compiled)


def execute(run_plan: RunPlan, store_db: str | None, device: DeviceInfo, jobs: int | None = None,
            settings: RunSettings = RunSettings(), argv: list[str] | None = None,
            on_compiled: Callable[[Build], None] | None = None,
            on_case: Callable[[CaseResult], None] | None = None) -> RunOutcome:
    """Compile, then measure and store each case on `device` (from harness.device.open_device)."""
    builds = compile_plan(run_plan.cases, jobs, on_compiled)
    store = Store.open(store_db, create=True)
    run_id = store.start_run(device, provenance.collect(argv), run_plan.suite, run_plan.filter)
    results: list[CaseResult] = []
    try:
        for case in run_plan.cases:
            result = measure_case(case, builds[case.case_id], device, settings)
            store.record_case(run_id, result)
            results.append(result)
            if on_case:
                on_case(result)
    except KeyboardInterrupt:
        store.finish_run(run_id, "interrupted", f"interrupted after {len(results)} of {len(run_plan.cases)} cases")
        raise
    except BaseException as exc:
        store.finish_run(run_id, "failed", f"{type(exc).__name__}: {exc}")
        raise
    store.finish_run(run_id, "complete")
    return RunOutcome(run_id, "complete", results)
