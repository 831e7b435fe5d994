"""The GEMM ladder on the GPU (harness/families/ladder): every step of every size validates (the check problem bit
for bit, the measured one within its arithmetic's bound), a step fed a wrong reference fails, and one step of each
kind is measured end to end beside cuBLAS."""

from __future__ import annotations

import numpy as np
import pytest

from harness.anchors import has_probe
from harness.build.compile import compile_many, compile_probe
from harness.families.base import Inputs
from harness.measure.device import open_device
from harness.orchestration.runner import loaded as attached, validate
from harness.registry import FAMILIES, parse_case_id, probe_source

pytestmark = pytest.mark.gpu
FAMILY = FAMILIES["ladder"]


def build_of(case):
    """The step's build, or None for the library's rung (an anchor: nothing of ours to compile)."""
    return compile_probe(probe_source(case)) if has_probe(case) else None


def loaded(case, seed=1):
    inputs = FAMILY.inputs(case, np.random.default_rng(seed))
    return attached(case, build_of(case), inputs, open_device(0)), inputs


@pytest.fixture(scope="module", autouse=True)
def compiled():
    compile_many([probe_source(case) for case in FAMILY.cases() if has_probe(case)])


@pytest.mark.parametrize("case", FAMILY.cases(), ids=str)
def test_every_step_validates(case):
    probe, inputs = loaded(case)
    result = validate(case, probe, inputs)
    assert result.ok, result.message


@pytest.mark.parametrize("case_id", ["ladder.reg-tiled.f32.1024x1024x1024", "ladder.mma-ldmatrix.f16.1024x1024x1024",
                                     "ladder.cublas.f32.1024x1024x1024"])
def test_a_wrong_reference_fails(case_id):
    """The check problem's C against the product of A and B reversed: the step's own output fails it."""
    case = parse_case_id(case_id)
    probe, inputs = loaded(case, 2)
    assert validate(case, probe, inputs).ok
    values = dict(inputs.values, B=inputs.values["B"][::-1])
    assert not validate(case, probe, Inputs(inputs.buffer, values, inputs.distribution)).ok


@pytest.mark.parametrize("case_id", ["ladder.smem-tiled.f32.1024x1024x1024", "ladder.wmma.f16.1024x1024x1024",
                                     "ladder.cublas.f32.1024x1024x1024"])
def test_a_step_is_measured_beside_cublas(case_id):
    from harness.measure.telemetry import Sampler, nvml_reader
    from harness.orchestration.runner import declared_metrics, measure_case

    case = parse_case_id(case_id)
    device = open_device(0)
    result = measure_case(case, build_of(case), device, sampler=Sampler(nvml_reader(device.uuid), set()))
    assert result.valid, result.error
    assert {(m.name, m.unit) for m in result.metrics} == set(declared_metrics(case, device))
    values = {m.name: m.value for m in result.metrics}
    assert values["throughput_tflops"] > 0.1
    if "peak_fraction" in values:  # never above the step's unit's peak at the clock it ran at
        assert 0.0 < values["peak_fraction"] <= 1.02


def test_the_library_rung_is_a_host_call_with_no_module():
    """ladder.cublas is an anchor: its probe has no module, its call is the host kernel KERNEL (and the measured
    problem's verification beside it), and its one measurement has no clock of its own (no peak_fraction)."""
    from harness.anchors import KERNEL, VERIFY
    from harness.measure.telemetry import NullSampler
    from harness.orchestration.runner import measure_case

    case = parse_case_id("ladder.cublas.f32.2048x2048x2048")
    probe, inputs = loaded(case)
    assert probe.module is None and set(probe.attached.host_kernels) == {KERNEL, VERIFY}
    assert validate(case, probe, inputs).ok
    result = measure_case(case, None, open_device(0), sampler=NullSampler())
    assert result.valid and result.build is None, result.error
    assert {m.name for m in result.metrics} == {"throughput_tflops"}
