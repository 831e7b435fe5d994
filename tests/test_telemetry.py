"""GPU telemetry windows (with a scripted NVML reader) and how the store flags measurements."""

import threading

import pytest

from helpers import fake_device, fake_result
from harness.provenance import Provenance
from harness.db.store import Store
from harness.measure.telemetry import GpuState, Reading, Sampler, reason_names


class ScriptedReader:
    """Readings from a list (the last one repeats), compute processes from a set."""

    def __init__(self, readings, pids=()):
        self.readings, self.pids, self.calls = list(readings), set(pids), 0
        self.lock = threading.Lock()

    def read(self):
        with self.lock:
            self.calls += 1
            return self.readings[min(self.calls, len(self.readings)) - 1]

    def compute_pids(self):
        return set(self.pids)


NORMAL = Reading(1980, 2619, 300.0, 45, 0x0)
POWER_CAP = Reading(1620, 2619, 699.0, 60, 0x4)
HOT = Reading(1400, 2619, 650.0, 88, 0x20 | 0x4)


def window_state(reader, own=frozenset({100}), work=lambda: None):
    window = Sampler(reader, set(own)).window()
    with window:
        work()
    return window.state


def a_while():
    import time

    time.sleep(0.05)


def test_a_window_summarises_what_nvml_saw():
    state = window_state(ScriptedReader([NORMAL, POWER_CAP, POWER_CAP]), work=a_while)
    assert state.samples >= 2 and state.power_w == 699.0 and state.temperature_c == 60
    assert state.reasons == ("sw_power_cap",) and state.power_capped and not state.throttled


def test_thermal_slowdown_is_throttling():
    state = window_state(ScriptedReader([NORMAL, HOT]), work=a_while)
    assert state.throttled and set(state.reasons) == {"sw_thermal", "sw_power_cap"}


def test_other_processes_are_counted_but_not_our_own():
    assert window_state(ScriptedReader([NORMAL], pids={100})).other_processes == 0
    assert window_state(ScriptedReader([NORMAL], pids={100, 4242, 4343})).other_processes == 2


def test_the_thread_keeps_sampling_during_long_work():
    import time

    reader = ScriptedReader([NORMAL])
    state = window_state(reader, work=lambda: time.sleep(0.2))
    assert state.samples >= 8  # every 10 ms, plus the first and last


def test_failed_reads_lose_samples_not_the_measurement():
    class Broken(ScriptedReader):
        def read(self):
            raise RuntimeError("NVML_ERROR_GPU_IS_LOST")

    assert window_state(Broken([NORMAL])) == GpuState(0, other_processes=0)


def test_reason_names():
    assert reason_names(0x1 | 0x8 | 0x80) == {"gpu_idle", "hw_slowdown", "hw_power_brake"}


def test_flags_reach_the_results_view(tmp_path):
    store = Store.open(str(tmp_path / "r.db"), create=True)
    prov = Provenance("bench run", "host", "abc", False, "0.1.0", "3.12", None, "13.0")
    run_id = store.start_run(fake_device(), prov, "wgmma", None)
    states = {8: GpuState(5, 1620, 2619, 699.0, 60, ("sw_power_cap",), 0),
              16: GpuState(5, 1400, 2619, 650.0, 88, ("sw_power_cap", "sw_thermal"), 0),
              32: GpuState(5, 1980, 2619, 300.0, 45, (), 1),
              64: GpuState(0)}
    for n, state in states.items():
        result = fake_result(f"wgmma.mma_async.m64n{n}k16.f32.f16.f16.SS", 18.0)
        for metric in result.metrics:
            metric.gpu_state = state
        store.record_case(run_id, result)
    frame = store.query("SELECT r.n, r.power_capped, r.flagged, r.throttle_reasons, r.power_w, m.telemetry_samples "
                        "FROM results r JOIN measurements m ON m.id = r.measurement_id "
                        "WHERE r.metric = 'issue_interval_cycles' ORDER BY r.n")
    assert frame.flagged.tolist() == [0, 1, 1, 0]  # power cap alone is recorded, not flagged
    assert frame.power_capped.tolist()[:3] == [1, 1, 0] and frame.throttle_reasons[1] == "sw_power_cap,sw_thermal"
    assert frame.telemetry_samples.tolist() == [5, 5, 5, 0] and frame.power_w[0] == 699.0


def test_a_uuid_cut_at_a_zero_byte_is_asked_of_the_driver(monkeypatch):
    """CuPy's uuid is a C string: GPU-d600fccb-... arrived as b"\\xd6" and NVML found no such GPU."""
    import sys
    import types

    from harness.measure import device

    full = bytes.fromhex("d600fccb4d4db7d84d2aad7a7b8acb38")
    runtime = types.SimpleNamespace(getDeviceProperties=lambda index: {"uuid": full[:1]})
    monkeypatch.setitem(sys.modules, "cupy", types.SimpleNamespace(cuda=types.SimpleNamespace(runtime=runtime)))
    monkeypatch.setitem(sys.modules, "cupy.cuda", types.SimpleNamespace(runtime=runtime))
    monkeypatch.setattr(device, "_driver_uuid", lambda index: device.format_uuid(full))
    assert device.cuda_uuid(0) == "GPU-d600fccb-4d4d-b7d8-4d2a-ad7a7b8acb38"
    runtime.getDeviceProperties = lambda index: {"uuid": full}
    assert device.cuda_uuid(0) == "GPU-d600fccb-4d4d-b7d8-4d2a-ad7a7b8acb38"


def test_mean_power_is_taken_between_the_energy_counters_steps():
    """The counter moves every 100 ms (an H100's NVML); sampled every 10 ms over 1 s at 400 W, the
    mean power comes from its first to its last step, not from the window's edges (which would add the
    energy of up to 100 ms outside it)."""
    from harness.measure.telemetry import ENERGY_MIN_STEPS, counter_power

    readings = []
    for i in range(101):  # t = 0.000 .. 1.000 s; the counter steps at 0.05, 0.15, ... by 40 J (400 W x 0.1 s)
        t = i * 0.01
        steps = int((t + 0.05) // 0.1)
        readings.append(Reading(1755, 2619, 390.0, 50, 0, 1_000_000 + 40_000.0 * steps, t))
    watts, seconds, steps = counter_power(readings)
    assert watts == pytest.approx(400.0, rel=0.03) and steps == 9 and seconds == pytest.approx(0.9, abs=0.011)
    assert counter_power(readings[:30]) is None  # 3 steps: fewer than ENERGY_MIN_STEPS
    assert ENERGY_MIN_STEPS > 3
    assert counter_power([Reading(1755, 2619, 390.0, 50, 0)] * 50) is None  # no counter
    state = GpuState.from_readings(readings, 0)
    assert state.mean_power_w == pytest.approx(400.0, rel=0.03) and state.mean_reading_w == pytest.approx(390.0)


class SimulatedNvml:
    """A fake NVML sample stream in time: a previous case's load (700 W, clocked down by the software
    power cap) until `switch`, then this case's (250 W, full clock, no reason). Power readings are
    trailing averages over `power_average_s`, as nvmlDeviceGetPowerUsage's are; clocks and reasons are
    read as they are; the energy counter integrates the true power."""

    def __init__(self, power_average_s=0.2, before=700.0, after=250.0):
        import time

        self.power_average_s, self.before, self.after = power_average_s, before, after
        self.origin = time.perf_counter() - 5.0  # the previous load ran for 5 s
        self.switch = float("inf")

    def _energy_j(self, t):  # joules since `origin`
        cut = min(t, self.switch)
        return (cut - self.origin) * self.before + max(0.0, t - self.switch) * self.after

    def read(self):
        import time

        t = time.perf_counter()
        span = self.power_average_s
        average = (self._energy_j(t) - self._energy_j(t - span)) / span if span else \
            (self.before if t < self.switch else self.after)
        loaded = t < self.switch
        energy_mj = 1e3 * self._energy_j(t // 0.1 * 0.1)  # the counter steps every 100 ms
        return Reading(1620 if loaded else 1980, 2619, average, 60, 0x4 if loaded else 0x0, energy_mj, t)

    def compute_pids(self):
        return set()


def test_a_window_describes_its_own_work_not_the_previous_cases():
    """Issue 34 item 12: a low-power case right after a power-capped one. Its window's flags, clocks and
    power are its own: no reading from before its start, no power reading whose average reaches back
    before it. (The code before the fix took a reading on entry, the previous load's: 700 W, 1620 MHz,
    sw_power_cap, so the case was flagged power_capped with power_w 700 against its 250.)"""
    import time

    nvml = SimulatedNvml()
    window = Sampler(nvml, set()).window()
    # the load changes as the window opens: set just before it, not inside it, where on a loaded machine the
    # sampler could take a reading between the window's start and the switch (the previous load's, by the test's
    # own doing: 255.5 W once in CI, the window itself being right)
    nvml.switch = time.perf_counter()
    with window:
        time.sleep(0.45)
    state = window.state
    assert not state.power_capped and state.reasons == () and not state.throttled
    assert state.sm_clock_mhz == 1980
    assert state.power_w == pytest.approx(250.0, rel=0.02) and state.mean_reading_w == pytest.approx(250.0, rel=0.02)


def test_the_stream_as_the_old_window_saw_it_is_flagged():
    """The same stream with the reading the old window took on entry (just before the work) and the
    readings whose averages still hold the previous load: all of them flag the case; its own do not."""
    nvml = SimulatedNvml(power_average_s=1.0)
    start = nvml.origin + 5.0
    nvml.switch = start
    stream = []
    for i in range(-1, 151):  # one reading 10 ms before the start, then every 10 ms for 1.5 s
        t = start + 0.01 * i + (0.009 if i < 0 else 0.0)
        power = (nvml._energy_j(t) - nvml._energy_j(t - 1.0)) / 1.0
        loaded = t < nvml.switch
        stream.append(Reading(1620 if loaded else 1980, 2619, power, 60, 0x4 if loaded else 0x0,
                              1e3 * nvml._energy_j(t // 0.1 * 0.1), t))
    old = GpuState.from_readings(stream, 0)
    assert old.power_capped and old.power_w > 690 and old.mean_reading_w > 300
    own = GpuState.from_readings(stream, 0, since=start, power_average_s=1.0)
    assert not own.power_capped and own.power_w == pytest.approx(250.0, rel=0.01)
    assert own.mean_power_w == pytest.approx(250.0, rel=0.02)  # the energy counter agrees
    assert own.samples == 151  # the reading before the start is not the window's
    short = GpuState.from_readings(stream[:50], 0, since=start, power_average_s=1.0)
    assert short.power_w is None and short.mean_reading_w is None and not short.power_capped


def test_a_failed_first_read_or_an_empty_window_flags_nothing():
    state = GpuState.from_readings([Reading(1620, 2619, 700.0, 60, 0x4, None, 1.0)], 0, since=2.0)
    assert state.samples == 0 and state.power_capped is None and state.throttled is None
