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


def coarse_grid(samples, smallest: int = 32, slack: float = 8.0, share: float = 0.9,
                occupied: float = 0.75) -> int | None:
    """The step of a coarse grid the samples fall on, or None: a step g >= `smallest` cycles such that at
    least `share` of them lie within `slack` cycles of min + k g, where the samples span two steps or
    more (a spread narrower than that says nothing about a grid), and they fill at least `occupied` of
    the grid's points between their minimum and maximum (a waiting mechanism's grid puts samples on
    consecutive multiples; a few separate clusters, such as the near and far halves of the L2 each with
    a second mode, fit some step by chance and leave most of its points empty). Of the steps that fit,
    the one the samples sit closest to (its multiples fit too: the largest of those within half a cycle).

    A timing whose samples sit on such a grid measures the mechanism that waits, not what it waits
    for: lane 0 resuming from a try_wait in a diverged warp only every ~150 cycles put TMA latencies
    on 436 / 586 / 736 cycles (docs/data-movement.md)."""
    values = np.asarray(samples, dtype=np.float64)
    values = values[np.isfinite(values)]
    if values.size < 8:
        return None
    offsets = values - values.min()
    fits: list[tuple[float, int]] = []
    for step in range(smallest, int(offsets.max() // 2) + 1):
        points = np.round(offsets / step)
        distance = np.abs(offsets - points * step)
        filled = len(set(points[distance <= slack].tolist())) / (points.max() + 1)
        if np.mean(distance <= slack) >= share and filled >= occupied:
            fits.append((float(np.mean(distance)), step))
    if not fits:
        return None
    best = min(d for d, _ in fits)
    return max(step for d, step in fits if d <= best + 0.5)


def median_interval(samples, z: float = 1.96) -> tuple[float, float]:
    """A distribution-free confidence interval of the median (order statistics; 95 % for z = 1.96): the
    j-th and k-th smallest samples, j = floor(n/2 - z sqrt(n)/2) and k = ceil(1 + n/2 + z sqrt(n)/2)
    (1-based, clipped to the samples). How well the median is known, not how wide the samples are: a wide
    distribution with many samples at its median has a narrow interval."""
    x = np.sort(np.asarray(samples, dtype=np.float64))
    x = x[np.isfinite(x)]
    if x.size == 0:
        raise ValueError("no samples")
    n = x.size
    half = z * np.sqrt(n) / 2
    j = int(np.clip(np.floor(n / 2 - half), 1, n))
    k = int(np.clip(np.ceil(1 + n / 2 + half), 1, n))
    return float(x[j - 1]), float(x[k - 1])


def relative_uncertainty(samples, centre: float | None = None, z: float = 1.96) -> float:
    """Half the width of median_interval relative to `centre` (default the median): the larger side."""
    x = np.asarray(samples, dtype=np.float64)
    centre = float(np.median(x)) if centre is None else float(centre)
    lo, hi = median_interval(x, z)
    return max(centre - lo, hi - centre, 0.0) / abs(centre) if centre else float("inf")


def residual_frame(rows: list[dict]):
    """A model's residuals as a DataFrame (rows with `measured` and `fitted`), with `relative`, the
    measured over the fitted less one, rounded to 4 places (`bench model --run N --residuals`)."""
    import pandas as pd

    frame = pd.DataFrame(rows)
    if not frame.empty:
        frame["relative"] = (frame.measured / frame.fitted - 1).round(4)
    return frame


@dataclass(frozen=True)
class Clusters:
    """1-D k-means: each cluster's centre (its mean), ascending, and each value's cluster."""

    centres: np.ndarray
    labels: np.ndarray

    @property
    def threshold(self) -> float:
        """Between the two clusters: the midpoint of their centres (NaN for one cluster)."""
        return float(self.centres[:2].mean()) if self.centres.size == 2 else float("nan")


def kmeans_1d(values, k: int = 2) -> Clusters:
    """The exact 1-D k-means of `values` for k = 1 or 2: for two, the cut between consecutive sorted values that
    leaves the least sum of squares about the two means (no start, no iteration: the optimum). A set of one
    distinct value is one cluster."""
    x = np.asarray(values, dtype=np.float64)
    if k not in (1, 2):
        raise ValueError(f"kmeans_1d: k must be 1 or 2, not {k}")
    if x.size == 0:
        return Clusters(np.array([]), np.array([], dtype=int))
    if k == 1 or np.ptp(x) == 0:
        return Clusters(np.array([x.mean()]), np.zeros(x.size, dtype=int))
    order = np.sort(x)
    n = order.size
    left = np.cumsum(order)[:-1]
    sizes = np.arange(1, n)
    total = order.sum()
    squares = np.cumsum(order ** 2)
    # SSE = sum x^2 - (sum left)^2 / n_left - (sum right)^2 / n_right; minimise over cuts after index i
    sse = squares[-1] - left ** 2 / sizes - (total - left) ** 2 / (n - sizes)
    cut = int(np.argmin(sse))
    threshold = (order[cut] + order[cut + 1]) / 2
    labels = (x > threshold).astype(int)
    return Clusters(np.array([x[labels == 0].mean(), x[labels == 1].mean()]), labels)
