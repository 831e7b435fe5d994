"""Measure one case on the GPU: check its SASS, validate it, then time it. No printing, no database.

The family answers every question (harness/families/base.py): what the SASS must show, the
inputs and the checks they must pass, and the plan of measurement methods
(harness/measure/methods/) whose metrics are stored.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from harness.anchors import has_probe
from harness.build import sass
from harness.build.compile import Build
from harness.errors import HarnessError
from harness.families.base import Family
from harness.registry import family_of
from harness.measure import methods
from harness.measure.device import DeviceInfo
from harness.measure.measurement import CaseResult, unmeasured
from harness.measure.telemetry import NullSampler
from harness.measure.timing import TimingPolicy
from harness.measure.validate import Validation, compare
from harness.spec import Case


@dataclass(frozen=True)
class RunSettings:
    policy: TimingPolicy = TimingPolicy()
    seed: int = 0


@dataclass(frozen=True)
class CasePlan:
    """A case's plan of measurement on one GPU, asked of its family once (bench run asks it in the run's process
    and sends it with the case): the method specs, and the (name, unit) of every metric they produce, which an
    unmeasured case (a failed check, a fault) stores empty."""
    specs: tuple
    declared: tuple[tuple[str, str], ...]


def case_plan(case: Case, family: Family, device: DeviceInfo) -> CasePlan:
    specs = tuple(family.plan(case, device))
    work = family.work(case)
    names: list[tuple[str, str]] = []
    for spec in specs:
        names += [n for n in spec.declares(work) if n not in names]
    return CasePlan(specs, tuple(names))


def declared_metrics(case: Case, device: DeviceInfo) -> list[tuple[str, str]]:
    """(name, unit) of every metric the case's plan produces: what an unmeasured case stores empty."""
    return list(case_plan(case, family_of(case), device).declared)


def sass_check(case: Case, build: Build, family: Family | None = None) -> sass.SassCheck:
    return sass.check(build, (family or family_of(case)).sass_expectation(case))


def loaded(case: Case, build: Build | None, inputs, device: DeviceInfo, family: Family | None = None):
    """The case's probe with its family's GPU resources attached: its build's module, or for an anchor (a library
    call, harness/anchors) a probe of host kernels alone."""
    from harness.measure.launch import LoadedProbe

    family = family or family_of(case)
    probe = LoadedProbe(build, inputs.buffer, family.output_words(case))
    probe.attach(family.attach(case, probe, device))  # the family's GPU resources: buffers, tensor maps, shared memory
    return probe


def validate(case: Case, probe, inputs, family: Family | None = None) -> Validation:
    """Every check the family lists must pass; the first that fails is the answer."""
    family = family or family_of(case)
    result = Validation(True, 0.0, None)
    for check in family.checks(case, inputs):
        launch = probe.run(check.kernel, check.grid, check.threads, check.iters, check.timing_words)
        tolerance = np.broadcast_to(np.asarray(check.tolerance, dtype=np.float64), check.expected.shape)
        result = compare(family.decode(case, launch.out), check.expected, tolerance, check.label)
        if not result.ok:
            return result
    return result


def measure_case(case: Case, build: Build | None, device: DeviceInfo, settings: RunSettings = RunSettings(),
                 sampler=NullSampler(), planned: CasePlan | None = None) -> CaseResult:
    """Validate, then time. `sampler` (harness.measure.telemetry) records how the GPU behaved meanwhile. An
    anchor (a library call: no build) has no SASS to check; its checks and plan launch its call. `planned`: the
    case's plan on this GPU where the caller asked for it already (bench run), else asked here. The family is
    looked up once and handed to each step.

    CUDA errors (a faulting probe) propagate: the worker process that called this is then unusable.
    """
    family = family_of(case)
    planned = planned or case_plan(case, family, device)
    declared = list(planned.declared)
    check = sass_check(case, build, family) if has_probe(case) else None
    if check is not None and not check.ok:
        return unmeasured(case, f"SASS check failed: {check.note}", build, check, metrics=declared)
    inputs = family.inputs(case, np.random.default_rng(settings.seed))
    try:
        probe = loaded(case, build, inputs, device, family)
        validation = validate(case, probe, inputs, family)
        if not validation.ok:
            return unmeasured(case, f"validation failed: {validation.message}", build, check, metrics=declared,
                              distribution=inputs.distribution, max_error=validation.max_error)
        def use_inputs(pattern: str | None) -> str:
            """Swap in another input distribution, validated like the case's own, or restore those."""
            other = inputs if pattern is None else family.inputs(case, np.random.default_rng(settings.seed), pattern)
            probe.load(other.buffer)
            if pattern is not None and not (check := validate(case, probe, other, family)).ok:
                raise HarnessError(f"validation failed with {pattern} inputs: {check.message}")
            return other.distribution

        ctx = methods.Context(probe, device.sm_count, settings.policy, sampler, family.work(case), family.peak(case),
                              use_inputs)
        metrics = [metric for spec in planned.specs for metric in methods.run(spec, ctx)]
    except HarnessError as exc:
        return unmeasured(case, str(exc), build, check, metrics=declared, distribution=inputs.distribution)
    return CaseResult(case, build, check, True, None, validation.max_error, inputs.distribution, metrics)
