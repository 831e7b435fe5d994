"""Plain data passed from the runner to the store: one case's validation, build and metrics."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from harness.compile import Build
from harness.sass import SassCheck
from harness.spec import Case
from harness.stats import summarize


@dataclass
class Metric:
    name: str
    unit: str
    samples: np.ndarray | None  # raw samples; value is their median
    warpgroups: int = 1
    ilp: int = 1
    sm_clock_mhz: float | None = None
    notes: str | None = None

    @property
    def value(self) -> float | None:
        return summarize(self.samples).median if self.samples is not None and len(self.samples) else None


@dataclass
class CaseResult:
    case: Case
    build: Build | None
    sass: SassCheck | None
    valid: bool
    error: str | None  # why the case is invalid (validation, SASS check, launch)
    validation_max_error: float | None
    input_distribution: str | None
    metrics: list[Metric] = field(default_factory=list)


# The metrics a wgmma case produces; an invalid case stores each of them with no value.
WGMMA_METRICS = (
    ("issue_interval_cycles", "cycles"),
    ("latency_cycles", "cycles"),
    ("latency_raw_cycles", "cycles"),
    ("throughput_tflops", "TFLOPS"),
    ("peak_fraction", "ratio"),
    ("sm_throughput", "FLOP/cycle/SM"),
)
