"""A simulated GPU for the worker process (HOPPER_BENCH_BACKEND=fake), so that CI can drive crash
isolation, interruption and resumption end to end without a GPU.

Its numbers are synthetic and its device is named "Simulated GPU", so they can never pass for a
measurement. Planted faults behave like the real ones do to a worker process:
    trap  raises a CUDA-style launch failure (the worker reports it and exits)
    oob   kills the worker process outright (SIGSEGV), the worst a driver fault can do
    hang  never returns (the watchdog must kill it)
HOPPER_BENCH_FAKE_DELAY (seconds, default 0) makes each case take that long; HOPPER_BENCH_FAKE_GPUS
(default 2) is how many simulated GPUs `bench run --gpus all` finds.
"""

from __future__ import annotations

import os
import signal
import time

import numpy as np

from harness.build.compile import Build
from harness.measure.device import SIMULATED_UUID_PREFIX, DeviceInfo
from harness.registry import family_of
from harness.measure import methods
from harness.measure.measurement import CaseResult, Metric
from harness.orchestration.runner import RunSettings
from harness.build.sass import SassCheck
from harness.spec import Case
from harness.measure.telemetry import GpuState

SIMULATED_CLOCK_MHZ = 1755.0
SIMULATED_POWER_W = 350.0
# A burst after idle (methods.WholeKernel.idle_s): a cool board's higher clock and the power of a short batch
SIMULATED_BURST_CLOCK_MHZ = 1980.0
SIMULATED_BURST_POWER_W = 450.0
PRIOR_GPU = "H100 SXM5"  # the datasheet row whose model (if the family has one) shapes the numbers


class SimulatedLaunchFailure(RuntimeError):
    pass


class FakeBackend:
    def __init__(self, settings: RunSettings):
        self.settings = settings
        from harness import environment

        self.delay = environment.fake_delay_s()

    def open(self, gpu_index: int) -> DeviceInfo:
        self.device = simulated_device(gpu_index)
        return self.device

    def measure(self, case: Case, build: Build | None) -> CaseResult:
        time.sleep(self.delay)
        if case.fault == "trap":
            raise SimulatedLaunchFailure("CUDA_ERROR_LAUNCH_FAILED: unspecified launch failure (simulated trap)")
        if case.fault == "oob":
            os.kill(os.getpid(), signal.SIGSEGV)
        if case.fault == "hang":
            while True:
                time.sleep(3600)
        rng = np.random.default_rng([self.settings.seed, *case.case_id.encode()])
        return synthetic_result(case, build, rng, self.device)


def simulated_device(index: int = 0) -> DeviceInfo:
    return DeviceInfo(index=index, name="Simulated GPU (hopper-bench fake backend)", uuid=f"{SIMULATED_UUID_PREFIX}{index}",
                      sm_count=132, cc_major=9, cc_minor=0, total_memory_bytes=80 << 30, l2_bytes=50 << 20,
                      max_sm_clock_mhz=1980, max_mem_clock_mhz=2619, power_limit_w=700.0,
                      driver_version="simulated", cuda_driver_version="13.0")


def synthetic_interval(case: Case) -> float:
    """A plausible issue interval: the family's model with datasheet parameters where it has one,
    else the work at the family's peak rate (or 1024 units per cycle), and at least 4 cycles."""
    family = family_of(case)
    model = family.model
    predicted = model.predict(case, "issue_interval_cycles", model.prior(PRIOR_GPU)) if model else None
    return predicted or max(family.work(case).amount / (family.peak(case) or 1024.0), 4.0)


def _values(spec, case: Case, device: DeviceInfo, interval: float) -> list[tuple[str, str, float, dict]]:
    family = family_of(case)
    work, peak = family.work(case), family.peak(case)
    if isinstance(spec, methods.ChainSlope):
        value = interval if spec.metric == "issue_interval_cycles" else 2 * interval
        return [(spec.metric, "cycles", value, spec.launch)]
    if isinstance(spec, methods.BracketedLatency):
        first = [("latency_first_use_cycles", "cycles", interval + 60, spec.launch)] if spec.first_use else []
        issued = [("latency_cycles", "cycles", interval + 70, spec.launch)] if spec.issue_stamps else []
        return [*issued, (spec.net_metric, "cycles", interval + 40, spec.launch),
                ("latency_raw_cycles", "cycles", interval + 90, spec.launch), *first]
    if isinstance(spec, methods.Bandwidth):  # more in flight, more bytes per second, up to 3000 GB/s
        return [("bandwidth_gbps", "GB/s", min(3000.0, 250.0 * point.blocks_per_sm * point.launch.get("stages", 4)),
                 point.launch) for point in spec.points]
    if isinstance(spec, methods.WholeKernel) and spec.idle_s:
        return _burst_values(spec, work, peak, device)
    if isinstance(spec, methods.WholeKernel):  # the work at 70 % of the peak rate, the anchor at 72 %
        rate = work.amount / (work.amount / (0.7 * (peak or 1024.0) * device.sm_count * SIMULATED_CLOCK_MHZ * 1e6)) / 1e12
        rows = [("throughput_tflops", methods.throughput_unit(work), rate, spec.launch)]
        rows += [("peak_fraction", "ratio", 0.7, spec.launch)] if peak and spec.records else []
        rows += [(spec.anchor_metric, "ratio", 0.7 / 0.72, spec.launch)] if spec.anchor else []
        if spec.energy:
            (power, w), (efficiency, e), (per_op, j) = methods.energy_metrics(work)
            rows += [(power, w, SIMULATED_POWER_W, spec.launch), (efficiency, e, rate / SIMULATED_POWER_W, spec.launch),
                     (per_op, j, SIMULATED_POWER_W / rate, spec.launch)]
        return rows + [(c.metric, c.unit, 1000.0, spec.launch) for c in spec.counters]
    rows, rated = [], []
    for point in spec.points:
        per_sm = work.amount * min(point.units * point.per_iter, 4) / interval
        per_sm = min(per_sm, peak) if peak else per_sm
        rows.append(("sm_throughput", f"{work.unit}/cycle/SM", per_sm, point.launch))
        rated.append((per_sm, point))
    if spec.whole_gpu == "best":
        rated = [max(rated, key=lambda r: r[0])]  # the first of the highest, as the real method picks
    for per_sm, point in rated if spec.whole_gpu != "none" else ():
        rate = per_sm * device.sm_count * SIMULATED_CLOCK_MHZ * 1e6 / 1e12
        rows.append(("throughput_tflops", methods.throughput_unit(work), rate, point.launch))
        if peak:
            rows.append(("peak_fraction", "ratio", per_sm / peak, point.launch))
        if spec.energy:
            (power, w), (efficiency, e), (per_op, j) = methods.energy_metrics(work)
            rows += [(power, w, SIMULATED_POWER_W, point.launch), (efficiency, e, rate / SIMULATED_POWER_W, point.launch),
                     (per_op, j, SIMULATED_POWER_W / rate, point.launch)]
    return rows


def _burst_values(spec: "methods.WholeKernel", work, peak: float | None, device: DeviceInfo) -> list:
    """A burst (WholeKernel.idle_s): the work at 70 % of the peak rate at SIMULATED_BURST_CLOCK_MHZ, its power."""
    rate = 0.7 * (peak or 1024.0) * device.sm_count * SIMULATED_BURST_CLOCK_MHZ * 1e6 / 1e12
    rows = [("throughput_tflops", methods.throughput_unit(work), rate, spec.launch)]
    rows += [("peak_fraction", "ratio", 0.7, spec.launch)] if peak and spec.records else []
    return rows + [("power_burst_w", "W", SIMULATED_BURST_POWER_W, spec.launch)]


def _clock(spec) -> float:
    """The SM clock a simulated spec's metrics carry: a burst's, else the sustained one."""
    return SIMULATED_BURST_CLOCK_MHZ if isinstance(spec, methods.WholeKernel) and spec.idle_s else SIMULATED_CLOCK_MHZ


# A simulated chip for the maps (methods.SmMap): two L2 halves, SMs in GPCs of 16 and 18, TPCs of 2.
SIMULATED_GPC_SMS = (16, 18, 16, 18, 16, 16, 16, 16)  # 132 SMs
SIMULATED_L2_CYCLES = (260.0, 420.0)  # a line in the SM's own half, in the other
SIMULATED_DSMEM_CYCLES = (190.0, 205.0)  # another SM of the same TPC, of the same GPC


def _simulated_gpc(sm: int) -> int:
    return int(np.searchsorted(np.cumsum(SIMULATED_GPC_SMS), sm, side="right"))


def _map_rows(spec: "methods.SmMap", sm_count: int) -> np.ndarray:
    """One launch's rows as the kernel writes them: each L2 line in one half (by its index), an SM's half by
    its GPC; clusters packed into the GPCs in order, each CTA timing every other CTA of its cluster; pairs with no
    cluster (by target, grid_multiple 1): each block timing the next SMs' lines, far where the two SMs' halves
    differ."""
    blocks = spec.blocks(sm_count)
    rows = np.zeros((blocks, spec.row_words), dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(SIMULATED_GPC_SMS)])
    c = spec.grid_multiple
    placed = [int(starts[g]) + i for g, n in enumerate(SIMULATED_GPC_SMS) for i in range(n // c * c)]
    for b in range(blocks):
        sm = placed[b % len(placed)] if spec.by_target else b % sm_count
        rows[b, 0] = sm
        for j in range(spec.targets):
            if spec.by_target and c == 1:  # pairs with no cluster: another SM's lines, near or far by the two halves
                peer = placed[(b + 1 + j) % len(placed)]
                cycles = SIMULATED_L2_CYCLES[int((_simulated_gpc(peer) < 4) != (_simulated_gpc(sm) < 4))]
            elif spec.by_target:
                peer = placed[(b // c * c + (b % c + 1 + j) % c) % len(placed)]
                cycles = SIMULATED_DSMEM_CYCLES[0 if peer // 2 == sm // 2 else 1] * spec.steps
            else:
                peer, cycles = j, SIMULATED_L2_CYCLES[int(j % 2 != (_simulated_gpc(sm) < 4))]
            rows[b, methods.MAP_ROW_HEAD + 2 * j:methods.MAP_ROW_HEAD + 2 * j + 2] = (peer, cycles)
    return rows


def synthetic_result(case: Case, build: Build | None, rng: np.random.Generator,
                     device: DeviceInfo | None = None) -> CaseResult:
    """Every metric the family's plan declares, with synthetic values (never a measurement)."""
    device = device or simulated_device()
    interval = synthetic_interval(case)
    state = GpuState(5, SIMULATED_CLOCK_MHZ, 2619.0, SIMULATED_POWER_W, 50.0, (), 0)
    plan = family_of(case).plan(case, device)
    metrics = [Metric(name, unit, value * (1 + 1e-4 * rng.standard_normal(7)), dict(launch),
                      sm_clock_mhz=_clock(spec), stop_reason="simulated", gpu_state=state,
                      notes="simulated: not a measurement")
               for spec in plan if not isinstance(spec, methods.SmMap)
               for name, unit, value, launch in _values(spec, case, device, interval)]
    for spec in plan:
        if isinstance(spec, methods.SmMap):
            rows = [_map_rows(spec, device.sm_count) for _ in range(2)]
            for launch, values in methods.map_launches(spec, rows):
                metrics.append(Metric(spec.metric, "cycles", values * (1 + 1e-4 * rng.standard_normal(values.size)),
                                      launch, sm_clock_mhz=SIMULATED_CLOCK_MHZ, stop_reason="simulated",
                                      gpu_state=state, notes="simulated: not a measurement"))
    return CaseResult(case, build, SassCheck(True, "simulated"), True, None, 0.0, "simulated", metrics)
