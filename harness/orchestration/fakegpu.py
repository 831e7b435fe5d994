"""A simulated GPU for the worker process (HOPPER_BENCH_BACKEND=fake), so that CI can drive crash
isolation, interruption and resumption end to end without a GPU.

Its numbers are synthetic and its device is named "Simulated GPU", so they can never pass for a
measurement. Planted faults behave like the real ones do to a worker process:
    trap  raises a CUDA-style launch failure (the worker reports it and exits)
    oob   kills the worker process outright (SIGSEGV), the worst a driver fault can do
    hang  never returns (the watchdog must kill it)
HOPPER_BENCH_FAKE_DELAY (seconds, default 0) makes each case take that long; HOPPER_BENCH_FAKE_GPUS
(default 2) is how many simulated GPUs `bench run --gpus all` finds. What a spec is answered with is its
method's own (Method.simulate, harness/measure/methods/): this module only names the chip and adds the noise.
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
from harness.families.base import Family
from harness.orchestration.runner import CasePlan, RunSettings
from harness.build.sass import SassCheck
from harness.spec import Case
from harness.measure.gpustate import GpuState

SIMULATED_CLOCK_MHZ = 1755.0
SIMULATED_POWER_W = 350.0
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

    def measure(self, case: Case, build: Build | None, planned: CasePlan | None = None) -> CaseResult:
        time.sleep(self.delay)
        if case.fault == "trap":
            raise SimulatedLaunchFailure("CUDA_ERROR_LAUNCH_FAILED: unspecified launch failure (simulated trap)")
        if case.fault == "oob":
            os.kill(os.getpid(), signal.SIGSEGV)
        if case.fault == "hang":
            while True:
                time.sleep(3600)
        rng = np.random.default_rng([self.settings.seed, *case.case_id.encode()])
        return synthetic_result(case, build, rng, self.device, planned)


def simulated_device(index: int = 0) -> DeviceInfo:
    return DeviceInfo(index=index, name="Simulated GPU (hopper-bench fake backend)", uuid=f"{SIMULATED_UUID_PREFIX}{index}",
                      sm_count=132, cc_major=9, cc_minor=0, total_memory_bytes=80 << 30, l2_bytes=50 << 20,
                      max_sm_clock_mhz=1980, max_mem_clock_mhz=2619, power_limit_w=700.0,
                      driver_version="simulated", cuda_driver_version="13.0")


def synthetic_interval(case: Case, family: Family | None = None) -> float:
    """A plausible issue interval: the family's model with datasheet parameters where it has one,
    else the work at the family's peak rate (or 1024 units per cycle), and at least 4 cycles."""
    family = family or family_of(case)
    model = family.model
    predicted = model.predict(case, "issue_interval_cycles", model.prior(PRIOR_GPU)) if model else None
    return predicted or max(family.work(case).amount / (family.peak(case) or 1024.0), 4.0)


def _noisy(value, rng: np.random.Generator) -> np.ndarray:
    """Samples of a simulated answer: 7 around a number, or an array's own, each off by about 1e-4."""
    return value * (1 + 1e-4 * rng.standard_normal(np.size(value) if np.ndim(value) else 7))


def synthetic_result(case: Case, build: Build | None, rng: np.random.Generator,
                     device: DeviceInfo | None = None, planned: CasePlan | None = None) -> CaseResult:
    """Every metric the family's plan declares, with synthetic values (never a measurement): each spec's method
    answers it (Method.simulate), this adds the noise. `planned`: the case's plan, where the run asked for it."""
    device = device or simulated_device()
    family = family_of(case)
    specs = planned.specs if planned is not None else family.plan(case, device)
    simulation = methods.Simulation(family.work(case), family.peak(case), device.sm_count, SIMULATED_CLOCK_MHZ,
                                    SIMULATED_POWER_W, synthetic_interval(case, family))
    state = GpuState(5, SIMULATED_CLOCK_MHZ, 2619.0, SIMULATED_POWER_W, 50.0, (), 0)
    metrics = [Metric(name, unit, _noisy(value, rng), dict(launch), sm_clock_mhz=SIMULATED_CLOCK_MHZ,
                      stop_reason="simulated", gpu_state=state, notes="simulated: not a measurement")
               for spec in specs
               for name, unit, value, launch in methods.simulate(spec, simulation)]
    return CaseResult(case, build, SassCheck(True, "simulated"), True, None, 0.0, "simulated", metrics)
