"""Measure one case on the GPU: validate it, then time it. No printing, no database.

Metrics (DESIGN.md section 2):
  issue_interval_cycles  slope of chain cycles against chain length, one warpgroup on one SM
  latency_cycles         fence+wgmma+commit+wait minus the same sequence without the wgmma
  latency_raw_cycles     the sequence with the wgmma, overhead included
  throughput_tflops      all SMs, W warpgroups per SM, CUDA events; peak_fraction against the
                         peak at the SM clock measured in the kernel; sm_throughput in FLOP/cycle/SM
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from harness import sass
from harness.compile import Build
from harness.device import DeviceInfo
from harness.errors import HarnessError
from harness.families import family_of
from harness.launch import LoadedProbe
from harness.measurement import CaseResult, Metric, unmeasured
from harness.spec import Case
from harness.telemetry import NullSampler
from harness.timing import RECORD_WORDS, Records, TimingPolicy, collect
from harness.validate import compare

WARPGROUP_THREADS = 128
MAX_WARPGROUPS_PER_SM = 4
CHAIN_SHORT_BODIES = 16  # chain lengths, in unrolled loop bodies, of the two launches whose
CHAIN_LONG_BODIES = 272  # difference gives the issue interval (fixed costs cancel)
LATENCY_REPS = 64  # single-instruction repetitions per launch
LATENCY_SKIP = 4  # first repetitions dropped (instruction cache, first touch)
THROUGHPUT_CYCLES = 2_000_000  # cycles each warpgroup runs in a throughput launch (~1 ms)


@dataclass(frozen=True)
class RunSettings:
    policy: TimingPolicy = TimingPolicy()
    seed: int = 0


def sass_check(case: Case, build: Build) -> sass.SassCheck:
    family = family_of(case)
    kernels = sass.disassemble(build.cubin_path)
    mnemonic = family.expected_sass(case)
    chain = sass.check_chain(kernels.get("probe_chain", []), mnemonic, family.UNROLL)
    single = sass.check_contains(kernels.get("probe_latency", []), mnemonic)
    spills = build.spill_bytes("probe_chain") + build.spill_bytes("probe_latency")
    ok = chain.ok and single.ok and spills == 0
    note = f"chain: {chain.note}; latency kernel: {single.note}; spills: {spills} B"
    injected = sorted({n.split(" in function")[0] for n in build.wgmma_notes()})
    if injected:
        note += "; ptxas: " + " | ".join(injected)
    return sass.SassCheck(ok and not build.serialization_notes(), note)


def measure_case(case: Case, build: Build, device: DeviceInfo, settings: RunSettings = RunSettings(),
                 sampler=NullSampler()) -> CaseResult:
    """Validate, then time. `sampler` (harness.telemetry) records how the GPU behaved meanwhile.

    CUDA errors (a faulting probe) propagate: the worker process that called this is then unusable.
    """
    family = family_of(case)
    check = sass_check(case, build)
    if not check.ok:
        return unmeasured(case, f"SASS check failed: {check.note}", build, check)
    inputs = family.make_inputs(case, np.random.default_rng(settings.seed))
    try:
        probe = LoadedProbe(build, inputs.buffer, family.output_words(case))
        validation = _validate(case, probe, inputs)
        if not validation.ok:
            return unmeasured(case, f"validation failed: {validation.message}", build, check,
                              distribution=inputs.distribution, max_error=validation.max_error)
        metrics = _time(case, probe, device, settings.policy, sampler)
    except HarnessError as exc:
        return unmeasured(case, str(exc), build, check, distribution=inputs.distribution)
    return CaseResult(case, build, check, True, None, validation.max_error, inputs.distribution, metrics)


def _validate(case: Case, probe: LoadedProbe, inputs):
    """One wgmma (the latency kernel) must give A.B; one chain body must give UNROLL x A.B."""
    family = family_of(case)
    single = probe.run("probe_latency", 1, WARPGROUP_THREADS, 1, WARPGROUP_THREADS)
    first = compare(family.decode_output(case, single.out), family.reference(case, inputs),
                    family.tolerance(case, inputs), "D (one wgmma)")
    if not first.ok:
        return first
    chain = probe.run("probe_chain", 1, WARPGROUP_THREADS, family.UNROLL, RECORD_WORDS)
    n = family.UNROLL
    return compare(family.decode_output(case, chain.out), n * family.reference(case, inputs),
                   n * family.tolerance(case, inputs), f"D (chain of {n})")


def _time(case: Case, probe: LoadedProbe, device: DeviceInfo, policy: TimingPolicy, sampler) -> list[Metric]:
    """Each group of metrics is taken inside one telemetry window, which it then carries."""
    window = sampler.window()
    with window:
        interval, clock = _issue_interval(case, probe, policy)
    metrics = [Metric("issue_interval_cycles", "cycles", interval.values, sm_clock_mhz=clock,
                      stop_reason=interval.stop_reason, gpu_state=window.state)]
    window = sampler.window()
    with window:
        latency = _latency(probe)
    for metric in latency:
        metric.gpu_state = window.state
    metrics += latency
    metrics += _throughput(case, probe, device, policy, float(np.median(interval.values)), sampler)
    return metrics


def _issue_interval(case: Case, probe: LoadedProbe, policy: TimingPolicy):
    family = family_of(case)
    short, long_ = CHAIN_SHORT_BODIES * family.UNROLL, CHAIN_LONG_BODIES * family.UNROLL
    clocks: list[float] = []

    def sample() -> float:
        a = Records.from_words(probe.run("probe_chain", 1, WARPGROUP_THREADS, short, RECORD_WORDS).timing)
        b = Records.from_words(probe.run("probe_chain", 1, WARPGROUP_THREADS, long_, RECORD_WORDS).timing)
        clocks.append(b.sm_clock_mhz())
        return float(b.cycles[0] - a.cycles[0]) / (long_ - short)

    return collect(sample, policy), float(np.median(clocks))


def _latency(probe: LoadedProbe) -> list[Metric]:
    def series(kernel: str) -> np.ndarray:
        probe.run(kernel, 1, WARPGROUP_THREADS, LATENCY_REPS, LATENCY_REPS * WARPGROUP_THREADS)  # warm-up
        launch = probe.run(kernel, 1, WARPGROUP_THREADS, LATENCY_REPS, LATENCY_REPS * WARPGROUP_THREADS)
        per_rep = launch.timing.reshape(LATENCY_REPS, WARPGROUP_THREADS)[:, 0]  # thread 0's view
        return per_rep[LATENCY_SKIP:].astype(np.float64)

    raw, empty = series("probe_latency"), series("probe_latency_empty")
    overhead = float(np.median(empty))
    note = f"net of {overhead:g} cycles for fence+commit+wait_group 0 without the wgmma"
    reason = f"fixed: {LATENCY_REPS - LATENCY_SKIP} repetitions in one launch"
    return [Metric("latency_cycles", "cycles", raw - overhead, notes=note, stop_reason=reason),
            Metric("latency_raw_cycles", "cycles", raw, stop_reason=reason)]


def _throughput(case: Case, probe: LoadedProbe, device: DeviceInfo, policy: TimingPolicy,
                interval: float, sampler) -> list[Metric]:
    family = family_of(case)
    unroll = family.UNROLL
    iters = max(unroll, int(THROUGHPUT_CYCLES / max(interval, 1.0)) // unroll * unroll)
    max_wg = min(MAX_WARPGROUPS_PER_SM, probe.max_threads("probe_chain") // WARPGROUP_THREADS)
    metrics: list[Metric] = []
    for wg in range(1, max_wg + 1):
        grid, block = device.sm_count, wg * WARPGROUP_THREADS
        flop = family.flops(case) * iters * wg * grid
        clocks, per_sm, sms = [], [], []

        def sample() -> float:
            launch = probe.run("probe_chain", grid, block, iters, grid * wg * RECORD_WORDS)
            records = Records.from_words(launch.timing)
            clocks.append(records.sm_clock_mhz())
            block_cycles = (records.clk_stop.reshape(grid, wg).max(1) - records.clk_start.reshape(grid, wg).min(1))
            per_sm.append(float(np.median(family.flops(case) * iters * wg / block_cycles)))
            sms.append(len(set(records.smid.reshape(grid, wg)[:, 0].tolist())))
            return flop / (launch.elapsed_ms * 1e-3) / 1e12

        window = sampler.window()
        with window:
            tflops = collect(sample, policy)
        clock = float(np.median(clocks))
        peak = device.sm_count * family.peak_flop_per_sm_per_cycle(case) * clock * 1e6 / 1e12
        note = f"{iters} wgmma per warpgroup; {min(sms)} distinct SMs of {grid} blocks; peak {peak:.1f} TFLOPS at {clock:.0f} MHz"
        common = dict(sm_clock_mhz=clock, stop_reason=tflops.stop_reason, gpu_state=window.state)
        metrics += [Metric("throughput_tflops", "TFLOPS", tflops.values, wg, notes=note, **common),
                    Metric("peak_fraction", "ratio", tflops.values / peak, wg, **common),
                    Metric("sm_throughput", "FLOP/cycle/SM", np.asarray(per_sm), wg, **common)]
    if max_wg < MAX_WARPGROUPS_PER_SM:
        metrics[-3].notes += (f"; at most {max_wg} warpgroups per SM fit "
                              f"({probe.build.registers('probe_chain')} registers per thread)")
    return metrics
