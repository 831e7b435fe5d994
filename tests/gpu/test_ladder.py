"""The GEMM ladder on the GPU (harness/families/ladder): every step of every size validates (the check problem bit
for bit, the measured one within its arithmetic's bound), a step fed a wrong reference fails, and one step of each
kind is measured end to end beside cuBLAS."""

from __future__ import annotations

import numpy as np
import pytest

from harness.build.compile import compile_many, compile_probe
from harness.families.base import Inputs
from harness.measure.device import open_device
from harness.measure.launch import LoadedProbe
from harness.orchestration.runner import validate
from harness.registry import FAMILIES, parse_case_id, probe_source

pytestmark = pytest.mark.gpu
FAMILY = FAMILIES["ladder"]


def loaded(case, seed=1):
    inputs = FAMILY.inputs(case, np.random.default_rng(seed))
    probe = LoadedProbe(compile_probe(probe_source(case)), inputs.buffer, FAMILY.output_words(case))
    probe.attach(FAMILY.attach(case, probe, open_device(0)))
    return probe, inputs


@pytest.fixture(scope="module", autouse=True)
def compiled():
    compile_many([probe_source(case) for case in FAMILY.cases()])


@pytest.mark.parametrize("case", FAMILY.cases(), ids=str)
def test_every_step_validates(case):
    probe, inputs = loaded(case)
    result = validate(case, probe, inputs)
    assert result.ok, result.message


@pytest.mark.parametrize("case_id", ["ladder.reg-tiled.f32.1024x1024x1024", "ladder.mma-ldmatrix.f16.1024x1024x1024"])
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
    result = measure_case(case, compile_probe(probe_source(case)), device,
                          sampler=Sampler(nvml_reader(device.uuid), set()))
    assert result.valid, result.error
    assert {(m.name, m.unit) for m in result.metrics} == set(declared_metrics(case, device))
    values = {m.name: m.value for m in result.metrics}
    assert values["throughput_tflops"] > 0.1
    if "peak_fraction" in values:  # never above the step's unit's peak at the clock it ran at
        assert 0.0 < values["peak_fraction"] <= 1.02
