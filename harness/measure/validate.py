"""Compare a probe's output with its NumPy float64 reference, element by element."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Validation:
    ok: bool
    max_error: float
    message: str | None  # the first mismatch and how many elements differ


def compare(result: np.ndarray, expected: np.ndarray, tolerance: np.ndarray, label: str = "D") -> Validation:
    """Pass iff every element is within its tolerance; NaN (an unwritten, poisoned word) never passes."""
    error = np.abs(result - expected)
    bad = ~(error <= tolerance)
    max_error = float(np.nanmax(np.where(np.isnan(error), np.inf, error))) if error.size else 0.0
    if not bad.any():
        return Validation(True, max_error, None)
    index = tuple(int(i) for i in np.argwhere(bad)[0])
    where = ",".join(map(str, index))
    return Validation(False, max_error,
                      f"{label}[{where}] = {result[index]!r}, expected {expected[index]!r} "
                      f"(tolerance {tolerance[index]:.3g}); {int(bad.sum())} of {bad.size} elements differ")


def accumulation_tolerance(u: float, k: int, magnitude: np.ndarray, chain: int = 1) -> np.ndarray:
    """Absolute error bound of `chain` back-to-back MMAs accumulating into one accumulator.

    `magnitude` = |A|.|B| (element-wise sums of |a||b| over K), `u` the accumulator's unit roundoff.
    Each instruction adds a K-long dot product (allow a full rounding per product added, 2K: tensor
    cores need not round like IEEE adds) and rounds the running sum, which after i instructions is
    at most i x magnitude: sum over i of (2K + i) u magnitude.
    """
    return (2 * k * chain + chain * (chain + 1) / 2) * u * magnitude
