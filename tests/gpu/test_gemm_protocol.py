"""The worklog's GEMM figures by their protocol on the GPU (issue 45 section 5, suite gemm-protocol): the measured
problem's integer and zero inputs validate exactly and a kernel that skips work fails them; a burst after idle times
the batch, reads the SM clock and the board's instantaneous power through NVML while it runs; zero inputs draw less
power than normal ones under the same sustained load (DESIGN.md: the input distribution moves the clock through power).
Run: python -m pytest -m gpu tests/gpu/test_gemm_protocol.py"""

from __future__ import annotations

import numpy as np
import pytest

from harness.build.compile import compile_probe
from harness.families.gemm import FAMILY
from harness.families.gemm.problem import MEASURED_INPUTS
from harness.measure import telemetry
from harness.measure.device import open_device
from harness.orchestration.runner import RunSettings, loaded, measure_case, validate
from harness.registry import parse_case_id, probe_source

pytestmark = pytest.mark.gpu

BEST_4096 = "gemm.f16.4096x4096x4096.tile128x256x64.s3.wg2.setmaxnreg.cluster2.persistent-grouped.tmastore"
CUBLAS_4096 = "cublas.f16.4096x4096x4096"


@pytest.fixture(scope="module")
def device():
    return open_device(0)


@pytest.fixture(scope="module")
def sampler(device):
    reader = telemetry.nvml_reader(device.uuid)
    if reader is None:
        pytest.skip("no NVML: a burst's clock and power cannot be read")
    return telemetry.Sampler(reader, telemetry.own_pids(set(), set()))


def _build(case):
    return None if case.case_id.startswith("cublas") else compile_probe(probe_source(case))


@pytest.mark.parametrize("inputs", ["int", "zero"])
def test_integer_and_zero_inputs_validate_and_a_kernel_that_skips_work_fails(device, inputs):
    case = parse_case_id(f"{BEST_4096}.inputs-{inputs}")
    given = FAMILY.inputs(case, np.random.default_rng(1))
    assert f"measured: {MEASURED_INPUTS[inputs]} f16" in given.distribution
    probe = loaded(case, _build(case), given, device)
    ok = validate(case, probe, given)
    assert ok.ok, ok.message
    check, measured = probe.attached.extra_args
    measured["m"] -= 256  # the last row of cluster pairs never written: C keeps the 0xFFFF poison there (NaN)
    skipped = validate(case, probe, given)
    assert not skipped.ok
    measured["m"] += 256
    if inputs == "int":
        measured["k"] -= 64  # a k-block dropped: integers' sums move by a k-block's, far beyond exact
        assert not validate(case, probe, given).ok
        measured["k"] += 64
    assert validate(case, probe, given).ok


@pytest.mark.parametrize("case_id", [BEST_4096 + ".burst", CUBLAS_4096 + ".inputs-zero.burst"])
def test_a_burst_after_idle_times_the_batch_and_reads_the_clock_and_power_during_it(device, sampler, case_id):
    case = parse_case_id(case_id)
    result = measure_case(case, _build(case), device, RunSettings(), sampler)
    assert result.valid, result.error
    found = {m.name: m for m in result.metrics}
    tflops = found["throughput_tflops"]
    assert len(tflops.samples) == 5 and (tflops.samples > 50).all()
    state = tflops.gpu_state
    assert state.samples >= 5, state  # at least one NVML reading a batch
    assert 300 <= state.sm_clock_mhz <= device.max_sm_clock_mhz + 30
    if case.case_id.startswith("gemm"):  # the kernel's own clock, from its records
        assert 300 <= tflops.sm_clock_mhz <= device.max_sm_clock_mhz + 30
    if "power_burst_w" in found:  # NVML's instantaneous power field (drivers that have it)
        assert (found["power_burst_w"].samples > 30).all() and (found["power_burst_w"].samples < 1.2 * 700).all()
    print(case_id, np.median(tflops.samples), tflops.sm_clock_mhz, state.sm_clock_mhz,
          found.get("power_burst_w") and found["power_burst_w"].value)


def test_zero_inputs_draw_less_power_or_run_faster_than_normal_ones(device, sampler):
    """Sustained rounds of the best configuration on normal(0, 1) inputs and on zeros: fewer bits toggle, so at the
    same power cap zeros draw less power, or (capped) buy a higher clock."""
    results = {}
    for inputs in ("", ".inputs-zero"):
        case = parse_case_id(BEST_4096 + inputs)
        result = measure_case(case, _build(case), device, RunSettings(), sampler)
        assert result.valid, result.error
        found = {m.name: m for m in result.metrics}
        results[inputs or "random"] = (found["power_mean_w"].value, found["throughput_tflops"].sm_clock_mhz)
    (random_w, random_mhz), (zero_w, zero_mhz) = results["random"], results[".inputs-zero"]
    print(results)
    assert zero_w < 0.95 * random_w or zero_mhz > 1.02 * random_mhz, results
