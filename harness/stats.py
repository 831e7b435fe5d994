"""Pure statistics on raw samples."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Summary:
    median: float
    mean: float
    minimum: float
    maximum: float
    stdev: float
    spread: float  # interquartile range / median: robust relative spread
    n: int


def summarize(samples) -> Summary:
    x = np.asarray(samples, dtype=np.float64)
    if x.size == 0:
        raise ValueError("no samples to summarize")
    median = float(np.median(x))
    q1, q3 = np.percentile(x, [25, 75])
    spread = float((q3 - q1) / abs(median)) if median else float("inf")
    return Summary(median, float(x.mean()), float(x.min()), float(x.max()),
                   float(x.std(ddof=1)) if x.size > 1 else 0.0, spread, int(x.size))


def relative_spread(samples) -> float:
    return summarize(samples).spread
