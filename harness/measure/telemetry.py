"""How the GPU behaved during a measurement: NVML clocks, power, temperature, clock-event
(throttle) reasons and other compute processes, sampled by a background thread.

    sampler = open_sampler(gpu_index)      # NullSampler when NVML is missing
    window = sampler.window()
    with window:
        ...take samples...
    window.state                           # GpuState: what NVML saw while they were taken

What the readings add up to (a window's own readings, its energy): harness/measure/gpustate.py.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import replace
from typing import Protocol

from harness.measure.gpustate import (CLOCK_EVENT_REASONS, ENERGY_MIN_STEPS, THROTTLING, GpuState,  # noqa: F401
                                      Instant, Reading, burst_state, counter_power, reason_names)

SAMPLE_INTERVAL_S = 0.01
BURST_INTERVAL_S = 0.0002  # between a burst's readings (BurstReadings): many in a batch of milliseconds, and the
#                            host's launch calls still get the interpreter between them
NVML_POWER_AVERAGE_S = 1.0  # what nvmlDeviceGetPowerUsage averages over (Ampere and newer but GA100)


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

