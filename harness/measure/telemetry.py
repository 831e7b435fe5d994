"""How the GPU behaved during a measurement: NVML clocks, power, temperature, clock-event
(throttle) reasons and other compute processes, sampled by a background thread.

    sampler = open_sampler(gpu_index)      # NullSampler when NVML is missing
    window = sampler.window()
    with window:
        ...take samples...
    window.state                           # GpuState: what NVML saw while they were taken

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

import os
import threading
import time
from dataclasses import dataclass, replace
from statistics import median
from typing import Protocol

SAMPLE_INTERVAL_S = 0.01
BURST_INTERVAL_S = 0.0002  # between a burst's readings (BurstReadings): many in a batch of milliseconds, and the
#                            host's launch calls still get the interpreter between them
ENERGY_MIN_STEPS = 5  # counter steps a window must span for a mean power (0.4 s at least on an H100)
NVML_POWER_AVERAGE_S = 1.0  # what nvmlDeviceGetPowerUsage averages over (Ampere and newer but GA100)

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


class Reader(Protocol):
    """Also, optionally, `power_average_s`: the span each power reading averages over (0 if absent:
    instantaneous)."""

    def read(self) -> Reading: ...

    def compute_pids(self) -> set[int]: ...


class Window:
    """A context manager that samples `reader` every `interval` seconds while it is open, and once as it
    closes; its state is of the readings of its own span (GpuState.from_readings with `since`)."""

    def __init__(self, reader: Reader, own_pids: set[int], interval: float = SAMPLE_INTERVAL_S):
        self._reader, self._own, self._interval = reader, own_pids, interval
        self._readings: list[Reading] = []
        self._others = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self.started: float | None = None
        self.state: GpuState | None = None

    def _sample(self) -> None:
        try:
            reading = self._reader.read()
        except Exception:  # a failed NVML read loses one sample, never the measurement
            return
        # A reader that does not time its readings (a scripted one) is timed here, as it returns.
        self._readings.append(reading if reading.at_s else replace(reading, at_s=time.perf_counter()))

    def _count_others(self) -> None:
        try:
            self._others = max(self._others, len(self._reader.compute_pids() - self._own))
        except Exception:
            pass

    def _loop(self) -> None:
        while not self._stop.wait(self._interval):
            self._sample()

    def __enter__(self) -> "Window":
        # No reading now: one taken before the work starts shows the state the previous work left.
        self._count_others()
        self.started = time.perf_counter()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()
        self._count_others()
        self.state = GpuState.from_readings(self._readings, self._others, since=self.started,
                                            power_average_s=getattr(self._reader, "power_average_s", 0.0))


class NullWindow:
    def __init__(self):
        self.state = GpuState(0)

    def __enter__(self) -> "NullWindow":
        return self

    def __exit__(self, *exc) -> None:
        pass


class Sampler:
    def __init__(self, reader: Reader, own_pids: set[int]):
        self.reader, self.own_pids = reader, own_pids

    def window(self) -> Window:
        return Window(self.reader, self.own_pids)

    def burst(self) -> "BurstReadings":
        return BurstReadings(self.reader)


class NullSampler:
    """No NVML: measurements carry GpuState(samples=0) and are neither trusted nor flagged by it."""

    def window(self) -> NullWindow:
        return NullWindow()

    def burst(self) -> "BurstReadings":
        return BurstReadings(None)


# -- a burst's readings ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Instant:
    """One quick reading during a burst: the SM clock, the clock-event reasons, and the board's instantaneous power
    (NVML's field NVML_FI_DEV_POWER_INSTANT; None where the driver has none)."""

    at_s: float
    sm_clock_mhz: float
    reasons: int
    power_w: float | None


class BurstReadings:
    """A context manager that reads NVML in a tight loop while it is open: a burst (a batch of launches after idle,
    WholeKernel.idle_s in measure/methods/whole_kernel.py) lasts milliseconds, which a Window's 10 ms interval misses,
    and a Window's power is nvmlDeviceGetPowerUsage, a 1-s trailing average, mostly of the idle before the burst. The reader's `instant()`
    gives an Instant; a reader without one (a scripted one) gives its read()'s clock and reasons and no power. The
    first reading may precede the first launch by the time the host takes to enqueue it (tens of microseconds)."""

    def __init__(self, reader: Reader | None):
        self._reader = reader
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self.readings: list[Instant] = []

    def _read(self) -> Instant:
        instant = getattr(self._reader, "instant", None)
        if instant is not None:
            return instant()
        r = self._reader.read()
        return Instant(r.at_s or time.perf_counter(), r.sm_clock_mhz, r.reasons, None)

    def _loop(self) -> None:
        while True:
            try:
                self.readings.append(self._read())
            except Exception:  # a failed NVML read loses the rest of the burst's readings, never the measurement
                return
            if self._stop.wait(BURST_INTERVAL_S):
                return

    def __enter__(self) -> "BurstReadings":
        if self._reader is not None:
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    @property
    def power_w(self) -> float | None:
        """The mean of the instantaneous power readings taken while the burst ran (None: none)."""
        powers = [r.power_w for r in self.readings if r.power_w is not None]
        return sum(powers) / len(powers) if powers else None


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


class NvmlReader:
    power_average_s = NVML_POWER_AVERAGE_S  # nvmlDeviceGetPowerUsage is a trailing average

    def __init__(self, uuid: str):
        import pynvml

        from harness.measure.device import nvml_handle

        self._nvml = pynvml
        self._handle = nvml_handle(uuid)  # by UUID: the GPU CUDA measures, whatever the index order
        self._reasons = getattr(pynvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
            pynvml.nvmlDeviceGetCurrentClocksThrottleReasons  # the older name
        self._no_energy = False
        self._no_instant = False

    def read(self) -> Reading:
        nvml, h = self._nvml, self._handle
        return Reading(nvml.nvmlDeviceGetClockInfo(h, nvml.NVML_CLOCK_SM),
                       nvml.nvmlDeviceGetClockInfo(h, nvml.NVML_CLOCK_MEM),
                       nvml.nvmlDeviceGetPowerUsage(h) / 1000.0,
                       nvml.nvmlDeviceGetTemperature(h, nvml.NVML_TEMPERATURE_GPU),
                       self._reasons(h), self._energy(), time.perf_counter())

    def instant(self) -> Instant:
        """A burst's reading (BurstReadings): the SM clock, the reasons and the instantaneous power, three calls."""
        nvml, h = self._nvml, self._handle
        clock = nvml.nvmlDeviceGetClockInfo(h, nvml.NVML_CLOCK_SM)
        reasons = self._reasons(h)
        return Instant(time.perf_counter(), clock, reasons, self._instant_power())

    def _instant_power(self) -> float | None:
        if self._no_instant:
            return None
        try:
            value = self._nvml.nvmlDeviceGetFieldValues(self._handle, [self._nvml.NVML_FI_DEV_POWER_INSTANT])[0]
            if value.nvmlReturn != 0:
                raise RuntimeError(value.nvmlReturn)
            return value.value.uiVal / 1000.0  # milliwatts
        except Exception:  # an older driver or NVML: no instantaneous power
            self._no_instant = True
            return None

    def _energy(self) -> float | None:
        if self._no_energy:
            return None
        try:
            return float(self._nvml.nvmlDeviceGetTotalEnergyConsumption(self._handle))
        except Exception:  # NVML_ERROR_NOT_SUPPORTED: mean power from the readings alone
            self._no_energy = True
            return None

    def compute_pids(self) -> set[int]:
        return {p.pid for p in self._nvml.nvmlDeviceGetComputeRunningProcesses(self._handle)}


def nvml_reader(uuid: str) -> NvmlReader | None:
    try:
        reader = NvmlReader(uuid)
        reader.read()
        return reader
    except Exception:  # NVML is optional: no library, no permission, or no such GPU
        return None


def own_pids(before: set[int], after: set[int]) -> set[int]:
    """Our own compute process as NVML lists it: what appeared when we created our CUDA context
    (inside a container NVML may list host PIDs, so os.getpid() alone can miss it)."""
    return (after - before) or {os.getpid()}

