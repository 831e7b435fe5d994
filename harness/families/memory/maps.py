"""The L2 by SM by plain loads (ld.global.cg.u32.map.l2): which lines are in which partition, and which SMs are
near which. The map's measurements are one per SM (launch {"map": "l2", "lines": n, "sm": s}), each holding every
launch's walk of the lines, launch by launch (methods.SmMap); the matrix and its split are harness/l2lines.py's,
which the tma family's map of the same lines shares. This module reads the family's rows and says what they show."""

from __future__ import annotations

import numpy as np
import pandas as pd

from harness.l2lines import (  # noqa: F401
    MIN_SPLIT_CYCLES,
    L2Map,
    by_gpu,
    heatmap,
    l2_map,
    matrix,
    partitions,
)


def load(store, frame: pd.DataFrame) -> dict[str, L2Map]:
    """Every GPU's plain-load L2 map among `frame`'s rows (a run's, or the newest of each GPU): {gpu: L2Map}."""
    from harness.db.distributions import map_rows

    found_rows = map_rows(store, frame, "memory", "l2")
    return by_gpu(*found_rows) if found_rows is not None else {}


def ranges(values) -> str:
    """SM ids as runs: 0-15, 32, 40-47."""
    values = sorted(int(v) for v in values)
    runs, start = [], None
    for i, v in enumerate(values):
        if start is None:
            start = v
        if i + 1 == len(values) or values[i + 1] != v + 1:
            runs.append(f"{start}" if start == v else f"{start}-{v}")
            start = None
    return ", ".join(runs)


def describe(gpu: str, found: L2Map) -> str:
    """One sentence: which SMs are near which partition, with the run's numbers."""
    table = found.per_sm()
    if not found.split:
        return (f"{gpu}: no near/far split of the L2 by SM: every SM reaches the {found.cycles.shape[1]} lines in "
                f"{table['near cycles'].median():.0f} cycles (median; far - near under {MIN_SPLIT_CYCLES:g} cycles "
                f"at the median SM).")
    parts = []
    for side, group in table.groupby("near"):
        parts.append(f"SMs {ranges(group.sm)} ({len(group)}) are near partition {side} "
                     f"({group['near cycles'].median():.0f} cycles) and far from partition {1 - side} "
                     f"({group['far cycles'].median():.0f})")
    shares = np.bincount(found.partition, minlength=2)
    return (f"{gpu}: the {found.partition.size} lines fall into two L2 partitions ({shares[0]} and {shares[1]} lines); "
            + "; ".join(parts) + ".")


