"""Raw samples of a run's measurements, and what their shape says: spread, a coarse grid, and modes.

Families' report sections use these to state how a figure is distributed, not just its median: a
measurement whose samples fall into two groups says so (near and far L2 partition, two SM placements),
and one whose samples sit on a coarse grid is a question about the probe (harness/stats.py coarse_grid).
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from harness.db.store import Store
from harness.stats import coarse_grid


def samples(store: Store, run_id: int, case_id: str, metric: str, launch: str) -> np.ndarray:
    """The raw samples of one measurement of a run (empty if there is none)."""
    def text(value: str) -> str:
        return "'" + value.replace("'", "''") + "'"

    frame = store.query(f"""
        SELECT measurement_id FROM results WHERE run_id = {int(run_id)} AND case_id = {text(case_id)}
          AND metric = {text(metric)} AND launch = {text(launch)}""")
    arrays = store.samples_of(frame.measurement_id)
    return np.concatenate([arrays[i] for i in frame.measurement_id if i in arrays] or [np.empty(0)])


def run_samples(store: Store, run_id: int, metrics: tuple[str, ...]) -> dict[tuple[str, str, str], np.ndarray]:
    """Every raw sample of a run's measurements of these metrics: {(case, metric, launch): samples}."""
    names = ", ".join("'" + m.replace("'", "''") + "'" for m in metrics)
    frame = store.query(f"""
        SELECT measurement_id, case_id, metric, launch FROM results
        WHERE run_id = {int(run_id)} AND metric IN ({names}) ORDER BY measurement_id""")
    arrays = store.samples_of(frame.measurement_id)
    found: dict[tuple[str, str, str], list[np.ndarray]] = {}
    for i, case, metric, launch in frame.itertuples(index=False):
        if i in arrays:  # a key measured twice (a resumed run) keeps both, in order
            found.setdefault((case, metric, launch), []).append(arrays[i])
    return {key: np.concatenate(parts) for key, parts in found.items()}


def two_modes(values: np.ndarray, min_gap: float = 0.1) -> tuple[float, float, float] | None:
    """(low centre, high centre, share of the high group) where the samples split at their largest gap
    into two groups each at least a tenth of them, that gap wider than `min_gap` of the median; else None."""
    v = np.sort(np.asarray(values, dtype=float))
    if v.size < 10:
        return None
    lo, hi = int(0.1 * v.size), int(0.9 * v.size)
    gaps = np.diff(v[lo - 1:hi + 1]) if lo > 0 else np.diff(v[:hi + 1])
    cut = int(np.argmax(gaps)) + max(lo - 1, 0)
    if gaps.max() < min_gap * np.median(v):
        return None
    low, high = v[:cut + 1], v[cut + 1:]
    return float(np.median(low)), float(np.median(high)), high.size / v.size


def describe(values: np.ndarray) -> dict:
    """Median, quartiles, range, modes and grid of a measurement's samples, as report columns."""
    v = np.asarray(values, dtype=float)
    if v.size == 0:
        return {}
    q1, med, q3 = np.percentile(v, [25, 50, 75])
    modes = two_modes(v)
    grid = coarse_grid(v)
    return {"samples": v.size, "median": round(med, 1), "IQR": round(q3 - q1, 1), "min": round(v.min(), 1),
            "max": round(v.max(), 1),
            "modes": f"{modes[0]:.0f} / {modes[1]:.0f} ({modes[2]:.0%} high)" if modes else "one",
            "grid": f"{grid} cycles" if grid else "none"}


def spread_summary(frame: pd.DataFrame, threshold: float = 0.01) -> tuple[int, int, pd.DataFrame]:
    """(cycle measurements, how many spread past `threshold`, those rows by metric and launch)."""
    cycles = frame[frame.unit == "cycles"]
    wide = cycles[cycles.spread.fillna(0) > threshold]
    table = (wide.groupby(["metric", "launch"]).agg(measurements=("case_id", "size"),
                                                    median_spread=("spread", "median"))
             .reset_index().round(3))
    return len(cycles), len(wide), table


def map_rows(store: Store, frame: pd.DataFrame, family: str | None, kind: str):
    """A family's map measurements among `frame`'s rows (latency_cycles whose launch says {"map": kind}; family
    None: every family's): (the rows, their launches as dicts, {measurement id: samples}), or None if none."""
    rows = frame[((frame.family == family) if family is not None else True) & (frame.metric == "latency_cycles")]
    launches = [json.loads(l) if isinstance(l, str) else dict(l) for l in rows.launch]
    keep = np.array([l.get("map") == kind for l in launches], dtype=bool)
    if not keep.any():
        return None
    rows = rows[keep]
    return rows, [l for l, k in zip(launches, keep) if k], store.samples_of(rows.measurement_id)


# The rounds' spread a library-ratio table shows beside its median (issue 46): a whole-kernel measurement alternating
# with its anchor (measure/methods/whole_kernel.py: a GEMM's or attention's library_fraction) keeps one sample per
# round, the kernel's rate over the library's in it; a table shows their 10th and 90th percentiles, under these headers.
ROUND_PERCENTILES = (10, 90)
ROUND_HEADERS = ("p10 of the ratio", "p90 of the ratio")


def library_rounds(store: Store, frame: pd.DataFrame) -> dict[int, np.ndarray]:
    """The per-round ratios of `frame`'s library_fraction measurements ({measurement id: the rounds}): stored as the
    measurement's samples, one a round (measure/methods/whole_kernel.py), in every run that has the metric."""
    rows = frame[frame.metric == "library_fraction"] if "measurement_id" in frame else frame.iloc[:0]
    return store.samples_of(rows.measurement_id) if len(rows) else {}


def round_percentiles(fractions: pd.DataFrame, keys: list[str],
                      rounds: dict[int, np.ndarray]) -> tuple[pd.Series, pd.Series]:
    """Per key of `fractions` (library_fraction rows, with measurement_id), ROUND_PERCENTILES of every round of its
    measurements (`rounds`: library_rounds'; a case measured twice, as a resumed run may: both measurements' rounds),
    as two Series indexed by `keys`; a key with no rounds at hand is left out (NaN where looked up)."""
    found = {}
    if "measurement_id" in fractions:
        for key, group in fractions.groupby(keys):
            parts = [rounds[i] for i in group.measurement_id if i in rounds and len(rounds[i])]
            if parts:
                found[key] = np.percentile(np.concatenate(parts), ROUND_PERCENTILES)
    index = pd.MultiIndex.from_tuples(found, names=keys) if len(keys) > 1 else pd.Index(
        [k[0] if isinstance(k, tuple) else k for k in found], name=keys[0])
    values = np.array(list(found.values())).reshape(-1, 2)
    return pd.Series(values[:, 0], index=index, dtype=float), pd.Series(values[:, 1], index=index, dtype=float)
