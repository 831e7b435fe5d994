"""Every wgmma case validates on the GPU, and the paper's issue intervals reproduce."""

from __future__ import annotations

import numpy as np
import pytest

from harness.build.compile import compile_probe
from harness.measure.device import open_device
from harness.families import wgmma
from harness.measure.launch import LoadedProbe
from harness.build.render import render
from harness.measure.runner import _issue_interval, _validate, measure_case
from harness.spec import parse_case_id
from harness.measure.timing import TimingPolicy

pytestmark = pytest.mark.gpu

# arXiv 2402.13499 Tables VIII-X, H800 PCIe, m64nNk16 f16 inputs, f32 accumulate, SS (cycles).
PAPER_SS_INTERVAL = {8: 18, 16: 20, 32: 24, 64: 32, 128: 64, 256: 128}


@pytest.fixture(scope="module")
def device():
    return open_device(0)


@pytest.mark.parametrize("case", wgmma.cases(), ids=str)
def test_case_validates(case):
    inputs = wgmma.make_inputs(case, np.random.default_rng(1))
    probe = LoadedProbe(compile_probe(render(case)), inputs.buffer, wgmma.output_words(case))
    result = _validate(case, probe, inputs)
    assert result.ok, result.message


def test_validation_rejects_a_reference_that_does_not_match_the_inputs():
    """The GPU result for one B, checked against the reference for B with its rows reversed, fails.

    (Layout bugs proper, registers in the wrong place, are caught on the CPU: test_wgmma_family.)
    """
    case = parse_case_id("wgmma.mma_async.m64n64k16.f32.f16.f16.SS")
    inputs = wgmma.make_inputs(case, np.random.default_rng(2))
    mismatched = wgmma.ProbeInputs(inputs.buffer, inputs.a, inputs.b[::-1], inputs.distribution)
    probe = LoadedProbe(compile_probe(render(case)), inputs.buffer, wgmma.output_words(case))
    assert _validate(case, probe, inputs).ok
    assert not _validate(case, probe, mismatched).ok


@pytest.mark.parametrize("n,expected", sorted(PAPER_SS_INTERVAL.items()))
def test_paper_issue_interval_reproduces(n, expected):
    case = parse_case_id(f"wgmma.mma_async.m64n{n}k16.f32.f16.f16.SS")
    inputs = wgmma.make_inputs(case, np.random.default_rng(0))
    probe = LoadedProbe(compile_probe(render(case)), inputs.buffer, wgmma.output_words(case))
    collected, _ = _issue_interval(case, probe, TimingPolicy())
    assert np.median(collected.values) == pytest.approx(expected, rel=0.03)


def test_measure_case_produces_every_metric(device):
    from harness.measure.telemetry import Sampler, nvml_reader

    case = parse_case_id("wgmma.mma_async.m64n128k16.f32.bf16.bf16.RS")
    reader = nvml_reader(0)
    result = measure_case(case, compile_probe(render(case)), device, sampler=Sampler(reader, set()))
    assert result.valid, result.error
    for metric in result.metrics:  # NVML was sampled during every measurement, the clock is plausible
        assert metric.gpu_state.samples >= 2 and 300 < metric.gpu_state.sm_clock_mhz <= 2100, metric
        assert metric.stop_reason
    names = {m.name for m in result.metrics}
    assert names == {"issue_interval_cycles", "latency_cycles", "latency_raw_cycles",
                     "throughput_tflops", "peak_fraction", "sm_throughput"}
    fractions = [m.value for m in result.metrics if m.name == "peak_fraction"]
    assert all(0.05 < f <= 1.02 for f in fractions), fractions
