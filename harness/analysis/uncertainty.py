"""The statistic a comparison sets beside a published figure (the median, or the paper's minimum over placements)
and how well it is known (a 95 % interval from the stored samples, else an estimate from IQR/median and n)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from harness.db.store import Store
from harness.registry import FAMILIES


# Where a measurement's samples are missing, the uncertainty of its median from its IQR/median and n: 1.96 x
# 1.253 sigma / sqrt(n), sigma = IQR / 1.349 (a normal's) -- an estimate, never the IQR itself.
IQR_TO_MEDIAN_CI = 1.96 * 1.2533 / 1.349


def statistic_of(samples, statistic: tuple[str, int] | None = None) -> dict:
    """The statistic compared and how well it is known, from a measurement's stored samples:
    value, uncertainty (relative half-width of a 95 % interval: harness.stats.median_interval), n (what
    the statistic is over), statistic (its name) and distribution (text). `statistic` ("minimum", k): the
    samples are k units (placements of a cluster on the SMs, say) repeated launch after launch
    (Family.paper_statistic; a third element names the units, a fourth how many consecutive units
    make one placement): the value is the minimum over the k units' medians, its uncertainty the
    interval of the median of each launch's minimum, and n = k; the distribution also gives each
    placement's fastest unit where a placement holds several."""
    from harness.stats import median_interval, relative_uncertainty

    x = np.asarray(samples, dtype=np.float64)
    x = x[np.isfinite(x)]
    if statistic is not None and x.size and x.size % statistic[1] == 0:
        k, minimum = statistic[1], statistic[0] == "minimum"
        launches = x.reshape(-1, k)
        placements = np.median(launches, axis=0)
        value = float(placements.min() if minimum else np.median(placements))
        # the minimum: how it moves launch to launch; the median over placements: its interval over the k
        lo, hi = median_interval(launches.min(axis=1)) if minimum else median_interval(placements)
        what = statistic[2] if len(statistic) > 2 else "placements"  # what the k units are
        distribution = (f"{k} {what} x {launches.shape[0]} launches: per unit {placements.min():.1f}-"
                        f"{placements.max():.1f}, median {np.median(placements):.1f}")
        group = statistic[3] if len(statistic) > 3 else 1  # units of one placement (consecutive)
        if group > 1 and k % group == 0:
            fastest = placements.reshape(-1, group).min(axis=1)
            distribution += (f"; each placement's fastest of its {group}: {fastest.min():.1f}-{fastest.max():.1f}, "
                             f"median {np.median(fastest):.1f}")
        return {"value": value, "uncertainty": max(value - lo, hi - value, 0.0) / abs(value), "n": k,
                "statistic": f"{statistic[0]} over {k} {what}", "distribution": distribution}
    if x.size == 0:
        return {"value": np.nan, "uncertainty": np.nan, "n": 0, "statistic": "median", "distribution": ""}
    median = float(np.median(x))
    return {"value": median, "uncertainty": relative_uncertainty(x, median), "n": int(x.size), "statistic": "median",
            "distribution": f"{x.size} samples {x.min():.4g}-{x.max():.4g}"}


def compared_statistics(store: Store, frame: pd.DataFrame) -> pd.DataFrame:
    """Each row with a figure: the statistic like the paper's and its uncertainty (statistic_of), from the
    stored samples of its measurement (a roofline fraction: of its bandwidth and of the roofline, in
    quadrature). A row without samples keeps its value, its uncertainty estimated from IQR/median and n."""
    out = pd.DataFrame({"uncertainty": np.nan, "n_compared": np.nan, "statistic": "median", "distribution": ""},
                       index=frame.index)
    out["value"] = frame.value
    wanted = frame.paper.notna()
    ids = set(frame.loc[wanted, "measurement_id"].dropna().astype(int))
    if "roofline_measurement" in frame:
        ids |= set(frame.loc[wanted, "roofline_measurement"].dropna().astype(int))
    arrays = store.samples_of(pd.Series(sorted(ids), dtype="int64")) if ids else {}

    def known(mid) -> dict | None:
        return statistic_of(arrays[int(mid)]) if mid == mid and mid is not None and int(mid) in arrays else None

    for i in frame.index[wanted]:
        row = frame.loc[i]
        family = FAMILIES.get(row.family)
        mid = row.get("measurement_id")
        if row.metric == "roofline_fraction":
            parts = [known(mid), known(row.get("roofline_measurement"))]
            if all(parts):
                out.loc[i, ["uncertainty", "n_compared"]] = (float(np.hypot(parts[0]["uncertainty"], parts[1]["uncertainty"])),
                                                             parts[0]["n"])
                out.loc[i, "distribution"] = f"bandwidth {parts[0]['distribution']}; roofline {parts[1]['distribution']}"
                continue
        elif row.get("derived_uncertainty") == row.get("derived_uncertainty") \
                and row.get("derived_uncertainty") is not None:  # a figure across cases (Family.derived)
            out.loc[i, ["uncertainty", "n_compared", "statistic", "distribution"]] = (
                float(row.derived_uncertainty), row.n_samples, "derived", "across the cases of a sweep")
            continue
        elif mid == mid and mid is not None and int(mid) in arrays:
            launch = json.loads(row.launch) if isinstance(row.get("launch"), str) and row.launch else {}
            wanted_statistic = family.paper_statistic(row.case_id, row.metric, launch) if family is not None else None
            found = statistic_of(arrays[int(mid)], wanted_statistic)
            if wanted_statistic is None or wanted_statistic[0] == "median":
                found["value"] = row.value  # the stored value (the median, or a launch's best) stays ours
                found["uncertainty"] = (relative_uncertainty_about(arrays[int(mid)], row.value)
                                        if row.value == row.value else found["uncertainty"])
            out.loc[i, ["value", "uncertainty", "n_compared", "statistic", "distribution"]] = (
                found["value"], found["uncertainty"], found["n"], found["statistic"], found["distribution"])
            continue
        n = row.get("n_samples")
        spread = row.get("spread")
        out.loc[i, "uncertainty"] = (IQR_TO_MEDIAN_CI * spread / np.sqrt(n) if n == n and n and spread == spread
                                     else 0.0)
        out.loc[i, "n_compared"] = n
    return out


def relative_uncertainty_about(samples, centre: float) -> float:
    from harness.stats import relative_uncertainty

    return relative_uncertainty(np.asarray(samples, dtype=np.float64), centre)
