"""The L2's capacity as one SM's chase sees it, from the footprint sweep (ld.global.cg.u32.pchase.l2.footprint<MiB>m,
the `memory-l2-capacity` suite): latency per load against the ring's footprint, flat at the L2's hit latency while
the L2 holds the ring, rising toward HBM's once it does not (docs/data-movement.md, 'The L2's capacity').

The estimate (`capacity`), from the arithmetic of the curve alone:

    plateau   the median latency of the PLATEAU_POINTS smallest footprints (the sweep starts at 8 MiB, a sixth of
              the nominal L2 and a third of either partition: all of them assumed to fit)
    threshold plateau x (1 + RISE)
    knee      the last footprint whose latency is within the threshold and after which every footprint's is above
              it (a point that rises and falls back is noise, not a knee)
    capacity  the footprint where the curve crosses the threshold, linearly interpolated between the knee and the
              next footprint: the footprint at which the chase's latency has risen RISE above the L2's

Why RISE = 10 %: beyond a capacity C a random chase over F bytes misses a fraction about 1 - C/F (a cache holding C
of the ring's F bytes, whatever it keeps); a miss costs HBM's latency, about twice the L2's on the H100 (the memory
suite's chases), so the latency rises about (1 - C/F) x the plateau and crosses 10 % near F = 1.1 C: an estimate
about 10 % above the capacity, far above the chain slope's noise (its stopping rule: a spread under 0.5 %). The
resolution is the sweep's spacing (4 MiB, 8 % of 50 MiB), returned beside the estimate.

Refused (SpecError, one line): fewer than PLATEAU_POINTS + 2 footprints, footprints not distinct, a curve with no
knee (no footprint stays above the threshold to the end: the L2 held the largest ring, or nothing rose), a knee
before the plateau's last footprint (no plateau)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from harness.errors import SpecError

PLATEAU_POINTS = 3
RISE = 0.10


@dataclass(frozen=True)
class Capacity:
    mib: float  # the interpolated crossing
    below_mib: float  # the knee: the last footprint within the threshold
    above_mib: float  # the next footprint, above it
    plateau: float  # the plateau's latency (cycles)
    threshold: float

    @property
    def resolution(self) -> float:
        """Half the bracket over the estimate: the relative uncertainty the sweep's spacing leaves."""
        return (self.above_mib - self.below_mib) / 2 / self.mib


def capacity(footprints_mib, latencies, rise: float = RISE) -> Capacity:
    """The capacity estimate of a sweep (footprints in MiB, latencies in cycles, in any order); SpecError if the
    curve shows none (module docstring)."""
    f = np.asarray(footprints_mib, dtype=np.float64)
    lat = np.asarray(latencies, dtype=np.float64)
    if f.shape != lat.shape or f.size < PLATEAU_POINTS + 2:
        raise SpecError(f"a capacity needs at least {PLATEAU_POINTS + 2} footprints with a latency each, got {f.size}")
    if np.unique(f).size != f.size or not np.isfinite(lat).all():
        raise SpecError("a capacity needs distinct footprints, each with a finite latency")
    order = np.argsort(f)
    f, lat = f[order], lat[order]
    plateau = float(np.median(lat[:PLATEAU_POINTS]))
    threshold = plateau * (1 + rise)
    within = lat <= threshold
    if within[-1]:
        raise SpecError(f"no knee: the latency at {f[-1]:g} MiB ({lat[-1]:.1f} cycles) is within {rise:.0%} of the "
                        f"plateau ({plateau:.1f}): the L2 held every ring of the sweep, or nothing rose")
    knee = int(np.flatnonzero(within)[-1]) if within.any() else -1
    if knee < PLATEAU_POINTS - 1:
        raise SpecError(f"no plateau: the latency rises {rise:.0%} above the median of the {PLATEAU_POINTS} smallest "
                        f"footprints' before {f[PLATEAU_POINTS - 1]:g} MiB")
    a, b = knee, knee + 1
    crossing = f[a] + (threshold - lat[a]) * (f[b] - f[a]) / (lat[b] - lat[a])
    return Capacity(float(crossing), float(f[a]), float(f[b]), plateau, threshold)


METRIC = "l2_capacity_mib"


def capacity_case() -> str:
    """The case the derived figure names: the sweep's largest footprint (the point that closes it)."""
    from harness.families.memory.cases import SWEEP_MIB, MemoryCase

    return str(MemoryCase("pchase", "l2", footprint_mib=SWEEP_MIB[-1]))


def derived(frame) -> list:
    """Per GPU of `frame` (a run's memory rows), the capacity of its footprint sweep as one row naming
    capacity_case(): metric l2_capacity_mib, derived_uncertainty the sweep's resolution; none where the run has no
    sweep or its curve shows no knee (capacity's SpecError)."""
    import pandas as pd

    from harness.families.memory.cases import parse
    from harness.measure.measurement import launch_key

    if frame.empty:
        return []
    chain = launch_key({"timed": "chain"})
    rows = frame[frame.case_id.str.contains(".footprint", regex=False) & (frame.metric == "latency_cycles")
                 & (frame.launch == chain)]
    found = []
    for _, group in rows.groupby("gpu_name"):
        group = group.drop_duplicates("case_id")
        try:
            estimate = capacity([parse(c).footprint_mib for c in group.case_id], group.value)
        except SpecError:
            continue
        row = group.iloc[[-1]].copy()
        row["case_id"], row["metric"], row["unit"], row["value"] = capacity_case(), METRIC, "MiB", estimate.mib
        row["launch"] = launch_key({"derived": "footprint sweep", "rise": RISE})
        row["measurement_id"], row["spread"], row["n_samples"] = float("nan"), float("nan"), len(group)
        row["derived_uncertainty"] = estimate.resolution
        found.append(row)
    return [pd.concat(found, ignore_index=True)] if found else []
