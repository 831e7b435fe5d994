"""When to stop sampling, and the in-kernel timing records.

A measurement repeats a sampling function until the relative spread (IQR / median) of what it
has falls under a target, within a minimum count and a maximum count and time budget.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

from harness.errors import HarnessError
from harness.stats import relative_spread

RECORD_WORDS = 5  # ptx/common.cuh TIMING_RECORD_WORDS: clk_start, clk_stop, ns_start, ns_stop, smid


@dataclass(frozen=True)
class TimingPolicy:
    warmup: int = 2  # samples taken and discarded first (module load, clocks ramping up)
    min_samples: int = 7
    max_samples: int = 40
    target_spread: float = 0.005  # stop once IQR/median is under 0.5 %
    max_seconds: float = 3.0


def collect(sample: Callable[[], float], policy: TimingPolicy) -> np.ndarray:
    """Call `sample` until the stopping rule holds; returns every kept sample."""
    for _ in range(policy.warmup):
        sample()
    values: list[float] = []
    deadline = time.monotonic() + policy.max_seconds
    while len(values) < policy.max_samples:
        values.append(sample())
        if len(values) >= policy.min_samples and (
                relative_spread(values) <= policy.target_spread or time.monotonic() > deadline):
            break
    return np.asarray(values)


@dataclass(frozen=True)
class Records:
    """Per-warpgroup timing records of one launch."""

    clk_start: np.ndarray
    clk_stop: np.ndarray
    ns_start: np.ndarray
    ns_stop: np.ndarray
    smid: np.ndarray

    @classmethod
    def from_words(cls, words: np.ndarray) -> "Records":
        """Parse the records; a record still holding the -1 poison means a warpgroup never wrote it."""
        table = np.asarray(words, dtype=np.int64).reshape(-1, RECORD_WORDS)
        if (table == -1).any():
            missing = int((table == -1).any(axis=1).sum())
            raise HarnessError(f"{missing} of {len(table)} timing records were not written by the probe")
        return cls(*(table[:, i] for i in range(RECORD_WORDS)))

    @property
    def cycles(self) -> np.ndarray:
        return self.clk_stop - self.clk_start

    def sm_clock_mhz(self) -> float:
        """Median over warpgroups of cycles / nanoseconds: the SM clock while the probe ran."""
        ns = (self.ns_stop - self.ns_start).astype(np.float64)
        valid = ns > 0
        return float(np.median(self.cycles[valid] / ns[valid]) * 1e3) if valid.any() else float("nan")
