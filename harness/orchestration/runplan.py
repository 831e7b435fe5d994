"""The plan of a `bench run` (harness/orchestration/run.py executes it): its cases, each checked and its family looked
up once; a resumed run's missing cases, and what it must go on with (the same code, the same GPU)."""

from __future__ import annotations

from dataclasses import dataclass

from harness.errors import DeviceError, SpecError
from harness.families.base import Family
from harness.measure.device import DeviceInfo
from harness.registry import family_of, parse_case_id
from harness.spec import Case
from harness.db.store import Store
from harness.suites import SUITES, select, suite_cases

RESUMABLE = ("interrupted", "failed")


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
