"""When to stop sampling, and the in-kernel timing records.

A measurement repeats a sampling function until the relative spread (IQR / median) of what it
has falls under a target or stops improving, within a minimum and maximum count and time.
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
    target_spread: float = 0.005  # stop once IQR/median is under 0.5 % ...
    converged: float = 0.1  # ... or once it moved less than 10 % over the last min_samples samples
    min_seconds: float = 0.01
    max_seconds: float = 3.0


@dataclass(frozen=True)
class Collected:
    values: np.ndarray
    stop_reason: str


def stop_reason(values: list[float], elapsed: float, policy: TimingPolicy) -> str | None:
    """Why sampling should stop now (None: take another sample)."""
    n = len(values)
    if n >= policy.max_samples:
        return f"sample limit ({policy.max_samples})"
    if elapsed > policy.max_seconds and n >= policy.min_samples:
        return f"time limit ({policy.max_seconds:g} s)"
    if n < policy.min_samples or elapsed < policy.min_seconds:
        return None
    spread = relative_spread(values)
    if spread <= policy.target_spread:
        return f"spread {spread:.2%} <= {policy.target_spread:.2%}"
    if n >= 2 * policy.min_samples:
        before = relative_spread(values[:n - policy.min_samples])
        if abs(spread - before) <= policy.converged * spread:
            return f"spread converged at {spread:.2%}"
    return None


def collect(sample: Callable[[], float], policy: TimingPolicy) -> Collected:
    """Call `sample` until the stopping rule holds; returns every kept sample and why it stopped."""
    for _ in range(policy.warmup):
        sample()
    values: list[float] = []
    started = time.monotonic()
    while True:
        values.append(sample())
        reason = stop_reason(values, time.monotonic() - started, policy)
        if reason:
            return Collected(np.asarray(values), reason)


@dataclass(frozen=True)
class Records:
    """Timing records of one launch, one per issuing unit (a warp or a group of warps; ptx/common.cuh)."""

    clk_start: np.ndarray
    clk_stop: np.ndarray
    ns_start: np.ndarray
    ns_stop: np.ndarray
    smid: np.ndarray

    @classmethod
    def from_words(cls, words: np.ndarray) -> "Records":
        """Parse the records; a record still holding the -1 poison means a unit never wrote it."""
        table = np.asarray(words, dtype=np.int64).reshape(-1, RECORD_WORDS)
        if (table == -1).any():
            missing = int((table == -1).any(axis=1).sum())
            raise HarnessError(f"{missing} of {len(table)} timing records were not written by the probe")
        return cls(*(table[:, i] for i in range(RECORD_WORDS)))

    @property
    def cycles(self) -> np.ndarray:
        return self.clk_stop - self.clk_start

    def sm_clock_mhz(self) -> float:
        """Median over units of cycles / nanoseconds: the SM clock while the probe ran."""
        ns = (self.ns_stop - self.ns_start).astype(np.float64)
        valid = ns > 0
        return float(np.median(self.cycles[valid] / ns[valid]) * 1e3) if valid.any() else float("nan")
