"""Every case of every family validates on the GPU (an anchor, a library call, with no build), and known points
reproduce (the paper's wgmma issue intervals; one warp's dependent mma chain)."""

from __future__ import annotations

import numpy as np
import pytest

from harness.anchors import KERNEL, has_probe
from harness.build.compile import compile_many, compile_probe
from harness.registry import probe_source
from harness.registry import FAMILIES
from harness.families.base import Inputs
from harness.measure import methods
from harness.measure.device import open_device
from harness.measure.launch import LoadedProbe
from harness.orchestration.runner import loaded as attached, measure_case, validate
from harness.measure.telemetry import NullSampler
from harness.measure.timing import TimingPolicy
from harness.registry import parse_case_id
from gpu.sample import full_sweep, sample

pytestmark = pytest.mark.gpu

# arXiv 2402.13499 Tables VIII-X, H800 PCIe, m64nNk16 f16 inputs, f32 accumulate, SS (cycles).
PAPER_SS_INTERVAL = {8: 18, 16: 20, 32: 24, 64: 32, 128: 64, 256: 128}
ALL_CASES = [case for family in FAMILIES.values() for case in family.cases()]


@pytest.fixture(scope="module")
def device():
    return open_device(0)


def build_of(case):
    """The case's build, or None for an anchor (a library call: nothing of ours to compile)."""
    return compile_probe(probe_source(case)) if has_probe(case) else None


def loaded(case, seed=1):
    family = FAMILIES[case.family]
    inputs = family.inputs(case, np.random.default_rng(seed))
    # the family's GPU resources: tensor maps, buffers, an anchor's call (a no-op by default)
    return attached(case, build_of(case), inputs, open_device(0)), inputs


def validated_cases(config) -> list:
    return ALL_CASES if full_sweep(config) else sample(ALL_CASES)


def pytest_generate_tests(metafunc):
    """test_case_validates runs on the sample (tests/gpu/sample.py), or every case with --full-sweep."""
    if metafunc.function.__name__ == "test_case_validates":
        metafunc.parametrize("case", validated_cases(metafunc.config), ids=str)


@pytest.fixture(scope="module", autouse=True)
def compiled(request):
    """Every probe of the module compiled once, in parallel on every core, before the first test: each
    test then takes its cubin from the cache (compiling them one by one was most of the wall time)."""
    compile_many([probe_source(case) for case in validated_cases(request.config) if has_probe(case)])


def test_case_validates(case):
    if not has_probe(case) and not case.anchor.available():  # a library call whose package is not installed here
        pytest.skip(case.anchor.missing)
    probe, inputs = loaded(case)
    result = validate(case, probe, inputs)
    assert result.ok, result.message


@pytest.mark.parametrize("case_id", ["wgmma.mma_async.m64n64k16.f32.f16.f16.SS",
                                     "mma.sync.m16n8k16.row.col.f32.f16.f16.f32"])
def test_validation_rejects_a_reference_that_does_not_match_the_inputs(case_id):
    """The GPU result for one B, checked against the reference for B reversed, fails."""
    case = parse_case_id(case_id)
    probe, inputs = loaded(case, 2)
    assert validate(case, probe, inputs).ok
    values = dict(inputs.values, b=inputs.values["b"][::-1])
    assert not validate(case, probe, Inputs(inputs.buffer, values, inputs.distribution)).ok


@pytest.mark.parametrize("n,expected", sorted(PAPER_SS_INTERVAL.items()))
def test_paper_issue_interval_reproduces(n, expected, device):
    case = parse_case_id(f"wgmma.mma_async.m64n{n}k16.f32.f16.f16.SS")
    probe, _ = loaded(case, 0)
    family = FAMILIES["wgmma"]
    spec = next(s for s in family.plan(case, device) if isinstance(s, methods.ChainSlope))
    ctx = methods.Context(probe, device.sm_count, TimingPolicy(), NullSampler(), family.work(case), family.peak(case))
    (metric,) = methods.run(spec, ctx)
    assert metric.value == pytest.approx(expected, rel=0.03)


@pytest.mark.parametrize("case_id", ["wgmma.mma_async.m64n128k16.f32.bf16.bf16.RS",
                                     "mma.sync.m16n8k16.row.col.f32.f16.f16.f32",
                                     "mma.sync.m16n8k32.row.col.f32.e4m3.e4m3.f32",
                                     "simt.overlap.fma.rn.f32.m64n64k16.tma",
                                     "simt.overlap.none.alone.tma"])
def test_measure_case_produces_every_declared_metric(case_id, device):
    from harness.orchestration.runner import declared_metrics
    from harness.measure.telemetry import Sampler, nvml_reader

    case = parse_case_id(case_id)
    result = measure_case(case, compile_probe(probe_source(case)), device, sampler=Sampler(nvml_reader(device.uuid), set()))
    assert result.valid, result.error
    for metric in result.metrics:  # NVML was sampled during every measurement, the clock is plausible
        assert metric.gpu_state.samples >= 1 and 300 < metric.gpu_state.sm_clock_mhz <= 2100, metric
        assert metric.stop_reason and metric.value is not None and metric.value > 0
    assert {(m.name, m.unit) for m in result.metrics} == set(declared_metrics(case, device))
    fractions = [m.value for m in result.metrics if m.name == "peak_fraction"]
    assert all(0.001 < f <= 1.02 for f in fractions), fractions


@pytest.mark.parametrize("case_id", ["cublas.f16.2048x2048x2048", "cublaslt.e4m3.2048x2048x2048",
                                     "gemm.f16.2048x2048x2048.tile128x256x64.s3.wg2.setmaxnreg.cluster2.persistent-grouped"
                                     ".tmastore", "attention.bf16.16x1024x16x128.tile128x128.s2.wg2.setmaxnreg",
                                     "cudnn.sdpa.bf16.16x1024x16x128", "cudnn.sdpa.bf16.16x1024x16x128.causal"])
def test_a_library_anchor_is_measured_alone_and_beside_a_kernel(case_id, device):
    """An anchor case (the library's call: no build) validates and is timed by WholeKernel with no clock of its own;
    a pipeline's rounds alternate with the same call (library_fraction): cuBLAS, and cuDNN beside attention.
    cuBLASLt's needs nvmath-python, cuDNN's the cuDNN frontend."""
    from harness.measure.telemetry import Sampler, nvml_reader
    from harness.orchestration.runner import declared_metrics

    case = parse_case_id(case_id)
    if case.case_id.startswith("cublaslt"):
        pytest.importorskip("nvmath", reason="nvmath-python is not installed (pip install '.[fp8]')")
    if case.family == "attention":
        pytest.importorskip("cudnn", reason="the cuDNN frontend is not installed (pip install '.[attention]')")
    probe, inputs = loaded(case)
    assert (probe.module is None) != has_probe(case) and KERNEL in probe.attached.host_kernels
    # NVML sampled, as a run samples it: the energy metrics the plan declares come from its power readings
    result = measure_case(case, build_of(case), device, sampler=Sampler(nvml_reader(device.uuid), set()))
    assert result.valid, result.error
    names = {m.name for m in result.metrics}
    assert {(m.name, m.unit) for m in result.metrics} == set(declared_metrics(case, device))
    assert ("peak_fraction" in names) == ("library_fraction" in names) == has_probe(case)
    tflops = next(m.value for m in result.metrics if m.name == "throughput_tflops")
    assert 50 < tflops < 3000, tflops


@pytest.mark.parametrize("case_id", ["cudnn.sdpa.bf16.4x4096x16x128", "cudnn.sdpa.f16.16x1024x8x256.causal"])
def test_cudnns_own_case_validates_and_a_wrong_reference_fails(case_id):
    """cuDNN's attention case (an anchor): its call on the check problem meets the f64 reference within the bound, and
    the measured problem's sampled rows too; against the reference of V reversed its own output fails."""
    pytest.importorskip("cudnn", reason="the cuDNN frontend is not installed (pip install '.[attention]')")
    case = parse_case_id(case_id)
    probe, inputs = loaded(case)
    assert probe.module is None
    result = validate(case, probe, inputs)
    assert result.ok, result.message
    values = dict(inputs.values, V=inputs.values["V"][:, ::-1])
    assert not validate(case, probe, Inputs(inputs.buffer, values, inputs.distribution)).ok


def test_a_persistent_grid_of_more_clusters_than_run_at_once_is_refused(device):
    """A cluster lives in one GPC, so clusters of 4 fill fewer SMs than the GPU has (the H100 SXM: 30 of 4, 120
    SMs): a persistent grid of more would run the rest as a second wave. The family refuses it when it attaches,
    naming the grid that fits; that grid itself attaches."""
    from harness.errors import HarnessError
    from harness.families.gemm.configs import BEST, pipeline
    from harness.measure.launch import max_active_clusters

    case = pipeline("f16", (4096, 4096, 4096), **dict(BEST, cluster=4))
    probe = LoadedProbe(compile_probe(probe_source(case)), np.zeros(16, dtype=np.uint8), 16)
    fit = max_active_clusters(probe.module.get_function("probe_gemm"), case.threads, case.smem_bytes(), 4)
    assert 0 < fit <= device.sm_count // 4
    if fit * 4 < device.sm_count:
        with pytest.raises(HarnessError, match=f"runs {fit} at once.*sms{fit * 4}"):
            loaded(case)
    loaded(pipeline("f16", (4096, 4096, 4096), **dict(BEST, cluster=4, grid_sms=fit * 4)))


@pytest.mark.parametrize("case_id", [
    "gemm.e4m3.2048x2048x2048.tile128x128x128.s5.wg2.setmaxnreg.cluster1.persistent-row.tmastore.pipelined",
    "gemm.f16.2048x2048x2048.tile128x256x64.s3.wg2.setmaxnreg.cluster2.persistent-grouped.tmastore"])
def test_the_timed_pipeline_counts_no_wait_and_its_counting_build_does(case_id, device):
    """The plan's timed kernel and its counting build, each launched on the measured problem as the rounds launch them:
    the timed one writes zero full- and empty-wait cycles in every CTA (it reads no clock around its waits), the
    counting one the waits it saw; both count the same tiles and k-blocks. Both validate (the family's checks)."""
    from harness.families.pipeline import counter_index
    from harness.measure.timing import RECORD_WORDS

    case = parse_case_id(case_id)
    probe, inputs = loaded(case)
    assert validate(case, probe, inputs).ok
    (spec,) = FAMILIES[case.family].plan(case, device)
    assert spec.counted_kernel and spec.counted_kernel != spec.kernel
    words = spec.grid * (RECORD_WORDS + spec.words)
    tables = {}
    for kernel in (spec.kernel, spec.counted_kernel):
        launch = probe.run(kernel, spec.grid, spec.threads, spec.iters, words)
        tables[kernel] = launch.timing[spec.grid * RECORD_WORDS:].reshape(spec.grid, spec.words)
    timed, counted = tables[spec.kernel], tables[spec.counted_kernel]
    full, empty, tiles = (counter_index(n) for n in ("full_wait", "empty_wait", "tiles"))
    assert (timed[:, full] == 0).all() and (timed[:, empty] == 0).all()
    assert (counted[:, full] > 0).any() and (counted[:, empty] > 0).any()
    assert (timed[:, tiles] == counted[:, tiles]).all() and timed[:, tiles].sum() > 0


@pytest.mark.parametrize("case_id", ["wgmma.mma_async.m64n128k16.f32.f16.f16.SS", "cublas.f16.2048x2048x2048"])
def test_measure_case_looks_the_family_up_once_and_measures_the_plan_it_is_given(case_id, device, monkeypatch):
    """Issue 46, item 8: the worker's side of a run. Given the case's plan (bench run asks for it once, in the run's
    process), measure_case does not ask the family again, looks it up once, and measures exactly that plan."""
    from harness import registry
    from harness.orchestration.runner import case_plan

    case = parse_case_id(case_id)
    family = registry.family_of(case)
    planned = case_plan(case, family, device)
    build = build_of(case)
    lookups, plans = [], []
    get = registry.get
    monkeypatch.setattr(registry, "get", lambda name: lookups.append(name) or get(name))
    real_plan = family.plan
    monkeypatch.setattr(family, "plan", lambda *a, **k: plans.append(a) or real_plan(*a, **k))
    from harness.measure.telemetry import Sampler, nvml_reader

    # NVML sampled, as a run samples it: the energy metrics a library call's plan declares come from its power
    result = measure_case(case, build, device, planned=planned, sampler=Sampler(nvml_reader(device.uuid), set()))
    assert result.valid, result.error
    assert lookups == [case.family] and plans == []
    assert {(m.name, m.unit) for m in result.metrics} == set(planned.declared)
