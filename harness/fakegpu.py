"""A simulated GPU for the worker process (HOPPER_BENCH_BACKEND=fake), so that CI can drive crash
isolation, interruption and resumption end to end without a GPU.

Its numbers are synthetic and its device is named "Simulated GPU", so they can never pass for a
measurement. Planted faults behave like the real ones do to a worker process:
    trap  raises a CUDA-style launch failure (the worker reports it and exits)
    oob   kills the worker process outright (SIGSEGV), the worst a driver fault can do
    hang  never returns (the watchdog must kill it)
HOPPER_BENCH_FAKE_DELAY (seconds, default 0) makes each case take that long.
"""

from __future__ import annotations

import os
import signal
import time

import numpy as np

from harness.compile import Build
from harness.device import DeviceInfo
from harness.families import family_of
from harness.measurement import WGMMA_METRICS, CaseResult, Metric
from harness.runner import RunSettings
from harness.sass import SassCheck
from harness.spec import Case
from harness.telemetry import GpuState

SIMULATED_CLOCK_MHZ = 1755.0


class SimulatedLaunchFailure(RuntimeError):
    pass


class FakeBackend:
    def __init__(self, settings: RunSettings):
        self.settings = settings
        self.delay = float(os.environ.get("HOPPER_BENCH_FAKE_DELAY", "0"))

    def open(self, gpu_index: int) -> DeviceInfo:
        return DeviceInfo(index=gpu_index, name="Simulated GPU (hopper-bench fake backend)",
                          uuid=f"FAKE-GPU-{gpu_index}", sm_count=132, cc_major=9, cc_minor=0,
                          total_memory_bytes=80 << 30, l2_bytes=50 << 20, max_sm_clock_mhz=1980,
                          max_mem_clock_mhz=2619, power_limit_w=700.0, driver_version="simulated",
                          cuda_driver_version="13.0")

    def measure(self, case: Case, build: Build | None) -> CaseResult:
        time.sleep(self.delay)
        if case.fault == "trap":
            raise SimulatedLaunchFailure("CUDA_ERROR_LAUNCH_FAILED: unspecified launch failure (simulated trap)")
        if case.fault == "oob":
            os.kill(os.getpid(), signal.SIGSEGV)
        if case.fault == "hang":
            while True:
                time.sleep(3600)
        return synthetic_result(case, build, np.random.default_rng(self.settings.seed + case.n))


def synthetic_interval(case: Case) -> float:
    """A plausible issue interval: shared-memory bytes at 128 B/cycle or the arithmetic at
    4096 FLOP/cycle/SM, whichever is longer, and at least 13 cycles."""
    smem = 2 * case.k * (case.n + (case.m if case.operands == "SS" else 0))
    return max(smem / 128, family_of(case).flops(case) / 4096, 13.0)


def synthetic_result(case: Case, build: Build | None, rng: np.random.Generator) -> CaseResult:
    interval = synthetic_interval(case)
    state = GpuState(5, SIMULATED_CLOCK_MHZ, 2619.0, 350.0, 50.0, (), 0)
    values = {"issue_interval_cycles": interval, "latency_cycles": interval + 40,
              "latency_raw_cycles": interval + 90, "sm_throughput": family_of(case).flops(case) / interval}
    tflops = values["sm_throughput"] * 132 * SIMULATED_CLOCK_MHZ * 1e6 / 1e12
    values |= {"throughput_tflops": tflops, "peak_fraction": tflops / (4096 * 132 * SIMULATED_CLOCK_MHZ * 1e-6)}
    metrics = [Metric(name, unit, values[name] * (1 + 1e-4 * rng.standard_normal(7)),
                      sm_clock_mhz=SIMULATED_CLOCK_MHZ, stop_reason="simulated", gpu_state=state,
                      notes="simulated: not a measurement")
               for name, unit in WGMMA_METRICS]
    return CaseResult(case, build, SassCheck(True, "simulated"), True, None, 0.0, "simulated", metrics)
