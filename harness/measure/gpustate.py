"""What NVML's readings during a measurement say (harness/measure/telemetry.py takes them): a Reading, a burst's
Instant, the clock-event reasons by name, and the GpuState a window's or a burst's readings add up to.

Energy: NVML's total-energy counter (millijoules since the driver loaded) moves in steps: every
100 ms on an H100 (measured: 10 steps a second, idle and busy). A window's mean power is therefore
taken between the first and the last step the sampler saw inside it, each timed to within one
sampling interval, never from the counter at the window's edges (which would count up to 100 ms of
energy from outside it). A window shorter than ENERGY_MIN_STEPS steps has no energy figure.

A window's own readings. What a window reports (its clocks, temperature, clock-event reasons and the
flags built on them, its power) describes the time between its start and its end, nothing from before:
    - no reading is taken before the work starts (the one once taken on entry still showed the previous
      case's state: in runs 52/54 every zero-input row was flagged power_capped, with a window maximum
      of 680-705 W against a mean of 208-309 W);
    - a power reading is an average over the reader's `power_average_s` before it was taken (NVML's
      nvmlDeviceGetPowerUsage: 1 s on Ampere and newer but GA100, NVML_POWER_AVERAGE_S; stored runs agree:
      run 52's zero-input windows read a mean of 370-378 W where the energy counter gave 260-271 W, as a
      1-s average falling from ~700 W over the window's first second gives), so it counts for the window
      only if that span lies inside the window: a window shorter than it has no power_w;
    - clocks, temperature and reasons are read as they are at the moment of the reading;
    - the energy counter is cumulative: its steps inside the window are the window's.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import median

ENERGY_MIN_STEPS = 5  # counter steps a window must span for a mean power (0.4 s at least on an H100)

# NVML clock-event ("throttle") reason bits (nvml.h nvmlClocksEventReason*), named here so the
# database stores words, not bit masks.
CLOCK_EVENT_REASONS = {
    0x1: "gpu_idle", 0x2: "applications_clocks", 0x4: "sw_power_cap", 0x8: "hw_slowdown",
    0x10: "sync_boost", 0x20: "sw_thermal", 0x40: "hw_thermal", 0x80: "hw_power_brake",
    0x100: "display_clocks",
}
# Reasons that mean the clock was forced down by heat or a hardware event: the measurement is
# flagged. A software power cap is normal under full tensor-core load and is recorded, not
# flagged: cycle metrics do not depend on the clock, and time metrics use the measured clock.
THROTTLING = frozenset({"hw_slowdown", "sw_thermal", "hw_thermal", "hw_power_brake"})


def reason_names(mask: int) -> set[str]:
    return {name for bit, name in CLOCK_EVENT_REASONS.items() if mask & bit}


@dataclass(frozen=True)
class Reading:
    sm_clock_mhz: float
    mem_clock_mhz: float
    power_w: float
    temperature_c: float
    reasons: int  # bit mask
    energy_mj: float | None = None  # NVML's total-energy counter; None where the GPU has none
    at_s: float = 0.0  # time.perf_counter() of the reading


def counter_power(readings: list[Reading]) -> tuple[float, float, int] | None:
    """(mean watts, seconds, steps) between the first and the last step of the energy counter in
    `readings` (in time order); None with fewer than ENERGY_MIN_STEPS steps."""
    steps = [r for before, r in zip(readings, readings[1:])
             if r.energy_mj is not None and before.energy_mj is not None and r.energy_mj != before.energy_mj]
    if len(steps) < ENERGY_MIN_STEPS + 1 or steps[-1].at_s <= steps[0].at_s:
        return None
    seconds = steps[-1].at_s - steps[0].at_s
    return (steps[-1].energy_mj - steps[0].energy_mj) / 1e3 / seconds, seconds, len(steps) - 1


@dataclass(frozen=True)
class GpuState:
    samples: int
    sm_clock_mhz: float | None = None  # median
    mem_clock_mhz: float | None = None  # median
    power_w: float | None = None  # maximum of the window's own power readings (None: none; see the docstring)
    temperature_c: float | None = None  # maximum
    reasons: tuple[str, ...] = ()  # every reason seen, sorted
    other_processes: int | None = None  # most other compute processes seen at once
    mean_power_w: float | None = None  # from the energy counter's steps (counter_power), else None
    energy_seconds: float | None = None  # the span the mean power is of
    energy_steps: int | None = None
    mean_reading_w: float | None = None  # the mean of the window's own power readings, for comparison

    @property
    def throttled(self) -> bool | None:
        return bool(THROTTLING & set(self.reasons)) if self.samples else None

    @property
    def power_capped(self) -> bool | None:
        return "sw_power_cap" in self.reasons if self.samples else None

    @classmethod
    def from_readings(cls, readings: list[Reading], other_processes: int | None, since: float | None = None,
                      power_average_s: float = 0.0) -> "GpuState":
        """What `readings` (in time order) say. With `since` (the window's start, perf_counter seconds),
        only the window's own: readings taken from then on, and power readings whose averaging span
        (`power_average_s` before each) starts there or later (module docstring, "A window's own readings")."""
        if since is not None:
            readings = [r for r in readings if r.at_s >= since]
        if not readings:
            return cls(0, other_processes=other_processes)
        powered = readings if since is None else [r for r in readings if r.at_s - power_average_s >= since]
        mask = 0
        for r in readings:
            mask |= r.reasons
        energy = counter_power(readings)
        return cls(len(readings), median(r.sm_clock_mhz for r in readings),
                   median(r.mem_clock_mhz for r in readings), max((r.power_w for r in powered), default=None),
                   max(r.temperature_c for r in readings), tuple(sorted(reason_names(mask))), other_processes,
                   *(energy or (None, None, None)),
                   sum(r.power_w for r in powered) / len(powered) if powered else None)


@dataclass(frozen=True)
class Instant:
    """One quick reading during a burst: the SM clock, the clock-event reasons, and the board's instantaneous power
    (NVML's field NVML_FI_DEV_POWER_INSTANT; None where the driver has none)."""

    at_s: float
    sm_clock_mhz: float
    reasons: int
    power_w: float | None


def burst_state(readings: list[Instant]) -> GpuState:
    """What a burst's readings say: the median SM clock, the most power read (power_w) and the mean
    (mean_reading_w), every clock-event reason seen; no memory clock, temperature or energy counter (not read)."""
    if not readings:
        return GpuState(0)
    mask = 0
    for r in readings:
        mask |= r.reasons
    powers = [r.power_w for r in readings if r.power_w is not None]
    return GpuState(len(readings), median(r.sm_clock_mhz for r in readings), power_w=max(powers, default=None),
                    reasons=tuple(sorted(reason_names(mask))),
                    mean_reading_w=sum(powers) / len(powers) if powers else None)
