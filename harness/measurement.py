"""Plain data passed from the runner to the store: one case's validation, build and metrics."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from harness.compile import Build
from harness.sass import SassCheck
from harness.spec import Case
from harness.stats import summarize
from harness.telemetry import GpuState

# The metrics a wgmma case produces; an invalid case stores each of them with no value.
WGMMA_METRICS = (
    ("issue_interval_cycles", "cycles"),
    ("latency_cycles", "cycles"),
    ("latency_raw_cycles", "cycles"),
    ("throughput_tflops", "TFLOPS"),
    ("peak_fraction", "ratio"),
    ("sm_throughput", "FLOP/cycle/SM"),
)


@dataclass
class Metric:
    name: str
    unit: str
    samples: np.ndarray | None  # raw samples; value is their median
    warpgroups: int = 1
    ilp: int = 1
    sm_clock_mhz: float | None = None  # measured in the kernel (cycles / globaltimer ns)
    notes: str | None = None
    stop_reason: str | None = None  # why sampling stopped (harness/timing.py)
    gpu_state: GpuState | None = None  # NVML telemetry while the samples were taken

    @property
    def value(self) -> float | None:
        return summarize(self.samples).median if self.samples is not None and len(self.samples) else None


@dataclass
class CaseResult:
    case: Case
    build: Build | None
    sass: SassCheck | None
    valid: bool
    error: str | None  # why the case is invalid (validation, SASS check, launch) or faulted
    validation_max_error: float | None
    input_distribution: str | None
    metrics: list[Metric] = field(default_factory=list)
    fault: bool = False  # the probe crashed or hung its worker process (harness/worker.py)

    @property
    def status(self) -> str:
        return "valid" if self.valid else "fault" if self.fault else "invalid"


def unmeasured(case: Case, error: str, build: Build | None = None, sass: SassCheck | None = None,
               fault: bool = False, **extra) -> CaseResult:
    """A case with no timing: every metric it would have had, stored with no value."""
    metrics = [Metric(name, unit, None) for name, unit in WGMMA_METRICS]
    return CaseResult(case, build, sass, False, error, extra.get("max_error"), extra.get("distribution"),
                      metrics, fault)
