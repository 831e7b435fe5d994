"""A cache's capacity as one SM's chase sees it, the L2's and the L1's. The L2's, from the footprint sweep
(ld.global.cg.u32.pchase.l2.footprint<MiB>m, the `memory-l2-capacity` suite): latency per load against the ring's footprint, flat at the L2's hit latency while
the L2 holds the ring, rising toward HBM's once it does not (docs/data-movement.md, 'The L2's capacity'). The same
estimate, in KiB, gives the L1's capacity from the L1 chase's sweep (ld.global.ca.u32.pchase.l1.footprint<KiB>k, the
`memory-l1-capacity` suite: flat at the L1's hit latency, rising toward the L2's; 'The L1's capacity'): SWEEPS.

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
before the plateau's last footprint (no plateau).

The L1's sweep: a miss costs the L2's latency, some seven times the L1's (the memory suite's chases: about 40 and 270
cycles), so the 10 % crossing falls about 2 % past the capacity; the sweep's spacing there (16 KiB) is the
resolution."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from harness.errors import SpecError

PLATEAU_POINTS = 3
RISE = 0.10


@dataclass(frozen=True)
class Capacity:
    size: float  # the interpolated crossing, in `unit`
    below: float  # the knee: the last footprint within the threshold
    above: float  # the next footprint, above it
    plateau: float  # the plateau's latency (cycles)
    threshold: float
    unit: str = "MiB"  # the footprints' unit

    @property
    def mib(self) -> float:  # the L2 sweep's names (its footprints are MiB)
        return self.size

    @property
    def below_mib(self) -> float:
        return self.below

    @property
    def above_mib(self) -> float:
        return self.above

    @property
    def resolution(self) -> float:
        """Half the bracket over the estimate: the relative uncertainty the sweep's spacing leaves."""
        return (self.above - self.below) / 2 / self.size


def capacity(footprints, latencies, rise: float = RISE, unit: str = "MiB",
             plateau_points: int = PLATEAU_POINTS) -> Capacity:
    """The capacity estimate of a sweep (footprints in `unit`, latencies in cycles, in any order; the plateau the
    median of the `plateau_points` smallest footprints); SpecError if the curve shows none (module docstring)."""
    f = np.asarray(footprints, dtype=np.float64)
    lat = np.asarray(latencies, dtype=np.float64)
    if f.shape != lat.shape or f.size < plateau_points + 2:
        raise SpecError(f"a capacity needs at least {plateau_points + 2} footprints with a latency each, got {f.size}")
    if np.unique(f).size != f.size or not np.isfinite(lat).all():
        raise SpecError("a capacity needs distinct footprints, each with a finite latency")
    order = np.argsort(f)
    f, lat = f[order], lat[order]
    plateau = float(np.median(lat[:plateau_points]))
    threshold = plateau * (1 + rise)
    within = lat <= threshold
    if within[-1]:
        raise SpecError(f"no knee: the latency at {f[-1]:g} {unit} ({lat[-1]:.1f} cycles) is within {rise:.0%} of the "
                        f"plateau ({plateau:.1f}): the cache held every ring of the sweep, or nothing rose")
    knee = int(np.flatnonzero(within)[-1]) if within.any() else -1
    if knee < plateau_points - 1:
        raise SpecError(f"no plateau: the latency rises {rise:.0%} above the median of the {plateau_points} smallest "
                        f"footprints' before {f[plateau_points - 1]:g} {unit}")
    a, b = knee, knee + 1
    crossing = f[a] + (threshold - lat[a]) * (f[b] - f[a]) / (lat[b] - lat[a])
    return Capacity(float(crossing), float(f[a]), float(f[b]), plateau, threshold, unit)


@dataclass(frozen=True)
class Sweep:
    """A footprint sweep whose knee compare derives: the chase's level, the derived metric, the footprints' unit, the
    case field that holds a footprint, the sweep's footprints (the largest closes it and names the figure)."""
    level: str
    metric: str
    unit: str
    field: str
    plateau_points: int = PLATEAU_POINTS

    def footprints(self) -> tuple[int, ...]:
        from harness.families.memory.cases import SWEEP_KIB, SWEEP_MIB

        return SWEEP_MIB if self.level == "l2" else SWEEP_KIB

    def case(self) -> str:
        from harness.families.memory.cases import MemoryCase

        return str(MemoryCase("pchase", self.level, **{self.field: self.footprints()[-1]}))


# The L2's sweep (MiB, from 8: all three plateau footprints inside either half of the L2) and the L1's (KiB, from 16:
# 16, 32 and 64 KiB inside any L1 the carve-out leaves beside at most 164 KiB of shared memory)
SWEEPS = {"l2": Sweep("l2", "l2_capacity_mib", "MiB", "footprint_mib"),
          "l1": Sweep("l1", "l1_capacity_kib", "KiB", "footprint_kib")}
METRIC = SWEEPS["l2"].metric
L1_METRIC = SWEEPS["l1"].metric


def capacity_case(level: str = "l2") -> str:
    """The case the derived figure names: the sweep's largest footprint (the point that closes it)."""
    return SWEEPS[level].case()


def derived(frame) -> list:
    """Per GPU of `frame` (a run's memory rows) and sweep (SWEEPS), the capacity of its footprint sweep as one row
    naming capacity_case(level): metric l2_capacity_mib or l1_capacity_kib, derived_uncertainty the sweep's
    resolution; none where the run has no sweep or its curve shows no knee (capacity's SpecError)."""
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
        cases = [parse(c) for c in group.case_id]
        for sweep in SWEEPS.values():
            mine = group[[c.level == sweep.level for c in cases]]
            if mine.empty:
                continue
            try:
                estimate = capacity([getattr(parse(c), sweep.field) for c in mine.case_id], mine.value,
                                    unit=sweep.unit, plateau_points=sweep.plateau_points)
            except SpecError:
                continue
            row = mine.iloc[[-1]].copy()
            row["case_id"], row["metric"], row["unit"] = sweep.case(), sweep.metric, sweep.unit
            row["value"] = estimate.size
            row["launch"] = launch_key({"derived": "footprint sweep", "rise": RISE})
            row["measurement_id"], row["spread"], row["n_samples"] = float("nan"), float("nan"), len(mine)
            row["derived_uncertainty"] = estimate.resolution
            found.append(row)
    return [pd.concat(found, ignore_index=True)] if found else []
