"""Plain data passed from the runner to the store: one case's validation, build and metrics."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np

from harness.build.compile import Build
from harness.build.sass import SassCheck
from harness.measure.gpustate import GpuState
from harness.spec import Case
from harness.stats import summarize


@dataclass(frozen=True)
class Work:
    """Work per instruction per issuing unit: FLOP (OP for integer and bit types) or bytes."""

    amount: float
    unit: str  # "FLOP", "OP" (tensor-core integer work), "B", or "result" (results per lane, as the CUDA
    #             Programming Guide counts a CUDA-core or special-function instruction's work)


def launch_key(launch: dict) -> str:
    """The canonical JSON of a launch key: what tells two measurements of one metric apart."""
    return json.dumps(launch, sort_keys=True, separators=(",", ":"))


@dataclass
class Metric:
    name: str
    unit: str
    samples: np.ndarray | None  # raw samples; value is their median
    launch: dict = field(default_factory=dict)  # units per SM, ILP, blocks per SM, cluster size, ...
    sm_clock_mhz: float | None = None  # measured in the kernel (cycles / globaltimer ns)
    notes: str | None = None
    stop_reason: str | None = None  # why sampling stopped (harness/measure/timing.py)
    gpu_state: GpuState | None = None  # NVML telemetry while the samples were taken
    input_distribution: str | None = None  # when not the case's validation inputs (launch key "inputs")

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
    fault: bool = False  # the probe crashed or hung its worker process (harness/orchestration/worker.py)

    @property
    def status(self) -> str:
        return "valid" if self.valid else "fault" if self.fault else "invalid"


def unmeasured(case: Case, error: str, build: Build | None = None, sass: SassCheck | None = None,
               fault: bool = False, metrics: list[tuple[str, str]] = (), **extra) -> CaseResult:
    """A case with no timing: each metric it would have had (`metrics`: (name, unit)) stored with no value."""
    rows = [Metric(name, unit, None) for name, unit in metrics] or [Metric("none", "", None)]
    return CaseResult(case, build, sass, False, error, extra.get("max_error"), extra.get("distribution"),
                      rows, fault)
