"""The measurement methods on the CPU, driven by a scripted launcher whose timing records follow a known
cost model: each method must recover the cost it was given (harness/measure/methods/)."""

import time

import numpy as np
import pytest

from harness.families.base import Work
from harness.measure import methods
from harness.measure.launch import Launch
from harness.measure.telemetry import NullSampler
from harness.measure.timing import RECORD_WORDS, TimingPolicy

CLOCK_MHZ = 1500.0  # the scripted SM clock: cycles per microsecond


class Scripted:
    """A launcher whose unit u of block b spends `fixed + iters * per_iter[kernel] * (1 + slow[b])` cycles;
    whole-launch time follows at CLOCK_MHZ. `max_threads` caps the block size like a register limit."""

    def __init__(self, per_iter: dict[str, float], fixed: float = 500.0, max_threads: int = 1024, slow_block=None):
        self.per_iter, self.fixed, self.limit, self.slow_block = per_iter, fixed, max_threads, slow_block
        self.launches: list[tuple[str, int, int, int]] = []

    def max_threads(self, kernel: str) -> int:
        return self.limit

    def run(self, kernel, grid, block, iters, timing_words):
        self.launches.append((kernel, grid, block, iters))
        units = timing_words // RECORD_WORDS
        cycles = np.full(units, self.fixed + iters * self.per_iter[kernel])
        if self.slow_block is not None:  # one block's units all 10 % slower
            per_block = units // grid
            cycles[self.slow_block * per_block:(self.slow_block + 1) * per_block] *= 1.1
        start = np.full(units, 1_000_000, dtype=np.int64)
        stop = start + cycles.astype(np.int64)
        ns0 = np.full(units, 5_000_000, dtype=np.int64)
        ns1 = ns0 + (cycles / CLOCK_MHZ * 1e3).astype(np.int64)
        smid = np.arange(units) // max(1, units // grid)
        timing = np.stack([start, stop, ns0, ns1, smid], axis=1).ravel()
        elapsed_ms = float(cycles.max()) / CLOCK_MHZ / 1e3
        return Launch(np.zeros(1, dtype=np.uint32), timing, elapsed_ms)


def context(probe, peak=4096.0, work=Work(4096, "FLOP"), sms=4):
    policy = TimingPolicy(warmup=1, min_samples=3, max_samples=5, min_seconds=0.0)
    return methods.Context(probe, sms, policy, NullSampler(), work, peak)


def test_chain_slope_recovers_the_cost_per_instruction_and_cancels_fixed_costs():
    probe = Scripted({"chain": 8 * 6.14}, fixed=12345.0)  # 8 independent mma per iteration, 6.14 cycles each
    spec = methods.ChainSlope("issue_interval_cycles", "chain", 32, per_iter=8, unroll=16, launch={"ilp": 8})
    (metric,) = methods.run(spec, context(probe))
    assert metric.name == "issue_interval_cycles" and metric.launch == {"ilp": 8}
    assert np.allclose(metric.samples, 6.14, atol=1e-3)
    assert metric.sm_clock_mhz == pytest.approx(CLOCK_MHZ, rel=1e-3)
    lengths = {iters for _, _, _, iters in probe.launches}
    assert lengths == {16 * 16, 272 * 16}  # the two chain lengths, in loop bodies of `unroll`


class Bodied(Scripted):
    """A chain whose loop body of U instructions costs U x `cost` + `per_body` cycles: the instructions,
    and what the body costs once (a compare and a branch, or a different schedule at its end). The
    short-body kernel has bodies of 4, the other of 16 (the mma family's)."""

    BODIES = {"chain": 16, "chain_short": 4}

    def __init__(self, cost: float, per_body: float):
        super().__init__({})
        self.cost, self.per_body = cost, per_body

    def run(self, kernel, grid, block, iters, timing_words):
        body = self.BODIES[kernel]
        assert iters % body == 0, "a chain runs whole bodies"
        self.per_iter = {kernel: self.cost + self.per_body / body}
        return super().run(kernel, grid, block, iters, timing_words)


@pytest.mark.parametrize("per_body", [14.0, -2.0, 0.0])
def test_chain_slope_with_two_bodies_removes_a_cost_per_body(per_body):
    """The simulated mma chain of docs/chains.md: 17 cycles per instruction, and a body that costs
    `per_body` more once. One body length reads 17 + per_body / 16 (16.875 for -2); two recover 17."""
    spec = methods.ChainSlope("latency_cycles", "chain", 32, unroll=16)
    (one,) = methods.run(spec, context(Bodied(17.0, per_body)))
    assert np.allclose(one.samples, 17.0 + per_body / 16, atol=1e-3)
    two_bodies = methods.ChainSlope("latency_cycles", "chain", 32, unroll=16, short_body=("chain_short", 4))
    probe = Bodied(17.0, per_body)
    (metric,) = methods.run(two_bodies, context(probe))
    assert np.allclose(metric.samples, 17.0, atol=1e-3)
    assert {(kernel, iters) for kernel, _, _, iters in probe.launches} == {
        ("chain", 16 * 16), ("chain", 272 * 16), ("chain_short", 16 * 4), ("chain_short", 272 * 4)}


def test_the_mma_chains_are_timed_in_two_body_lengths_and_both_validated():
    from harness.families.mma import MmaFamily
    from harness.registry import parse_case_id

    family = MmaFamily()
    case = parse_case_id("mma.sync.m16n8k8.row.col.f32.f16.f16.f32")
    chains = [spec for spec in family.plan(case) if isinstance(spec, methods.ChainSlope)]
    assert [(s.metric, s.kernel, s.unroll, s.short_body) for s in chains] == [
        ("latency_cycles", "probe_chain_ilp1", 16, ("probe_chain_ilp1_short", 4)),
        ("issue_interval_cycles", "probe_chain_ilp8", 16, ("probe_chain_ilp8_short", 4))]
    checked = {check.kernel for check in family.checks(case, family.inputs(case, np.random.default_rng(0)))}
    assert checked == {"probe_chain_ilp1", "probe_chain_ilp8", "probe_chain_ilp1_short", "probe_chain_ilp8_short"}


def test_bracketed_latency_subtracts_the_empty_sequence():
    class Bracketed(Scripted):
        def run(self, kernel, grid, block, iters, timing_words):
            per_rep = {"with": 140.0, "without": 48.0}[kernel]
            timing = np.full(timing_words, per_rep, dtype=np.int64)
            return Launch(np.zeros(1, dtype=np.uint32), timing, 0.01)

    spec = methods.BracketedLatency("with", "without", 128, overhead="fence, commit, wait")
    latency, raw = methods.run(spec, context(Bracketed({})))
    assert np.allclose(latency.samples, 92.0) and np.allclose(raw.samples, 140.0)
    assert "48" in latency.notes


def test_bracketed_latency_with_issue_stamps_subtracts_only_what_its_own_launch_timed():
    """Words 1 and 2 of each repetition: the copy from its issue, and two clock reads back to back. The
    latency is word 1 less word 2's median from the SAME launch; the empty kernel's median (another
    launch) gives only latency_added_cycles. A later launch that timed different clock reads changes
    nothing: each launch's own are used (issue 34 item 11)."""
    class Stamped(Scripted):
        def __init__(self):
            super().__init__({})
            self.calls = 0

        def run(self, kernel, grid, block, iters, timing_words):
            self.calls += 1
            rows = np.zeros((iters, block), dtype=np.int64)
            if kernel == "with":
                rows[:, 0] = 300  # the whole sequence
                rows[:, 1] = 260 + np.arange(iters) % 3  # from the issue: 260, 261, 262, ...
                rows[:, 2] = 4 if self.calls % 2 == 0 else 9  # the timed launch (the second call) reads 4
            else:
                rows[:, 0] = 52
                rows[:, 1] = rows[:, 2] = 1000  # an empty launch's stamps must never be used
            return Launch(np.zeros(1, dtype=np.uint32), rows.ravel(), 0.01)

    spec = methods.BracketedLatency("with", "without", 32, overhead="arrive + wait", reps=64, skip=4,
                                    net_metric="latency_added_cycles", issue_stamps=True)
    assert [name for name, _ in spec.declares(None)] == ["latency_cycles", "latency_added_cycles",
                                                          "latency_raw_cycles"]
    latency, added, raw = methods.run(spec, context(Stamped()))
    assert latency.name == "latency_cycles" and added.name == "latency_added_cycles"
    expected = 260 + np.arange(4, 64) % 3 - 4.0
    assert np.array_equal(latency.samples, expected)
    assert np.allclose(added.samples, 300 - 52) and np.allclose(raw.samples, 300)
    assert "4 cycles for two clock reads" in latency.notes and "52" in added.notes
    with pytest.raises(ValueError, match="latency_added_cycles"):
        methods.BracketedLatency("with", "without", 32, overhead="x", issue_stamps=True)


def test_occupancy_sweep_counts_work_per_cycle_per_sm_from_the_slowest_unit():
    probe = Scripted({"k1": 6.0, "k4": 4 * 8.0}, slow_block=1)
    points = (methods.SweepPoint("k1", 2, 1, {"warps": 2, "ilp": 1}), methods.SweepPoint("k4", 8, 4, {"warps": 8, "ilp": 4}))
    spec = methods.OccupancySweep(points, 32, unroll=16, target_cycles=100_000)
    metrics = methods.run(spec, context(probe))
    by = {(m.name, m.launch["warps"]): m for m in metrics}
    assert set(by) == {(name, w) for name in ("sm_throughput", "throughput_tflops", "peak_fraction") for w in (2, 8)}
    # 2 warps, one mma (4096 FLOP) per 6 cycles each -> 2 x 4096 / 6 per cycle per SM (median over SMs)
    sm = by[("sm_throughput", 2)]
    assert np.allclose(sm.samples, 2 * 4096 / 6, rtol=0.01) and sm.unit == "FLOP/cycle/SM"
    # whole GPU: every SM's work over the launch time, which the slow block sets (10 % longer)
    rate = by[("throughput_tflops", 8)]
    per_sm_per_s = 8 * 4 * 4096 / 32 * CLOCK_MHZ * 1e6 / 1.1
    assert np.allclose(rate.samples, 4 * per_sm_per_s / 1e12, rtol=0.01)
    peak = 4 * 4096 * CLOCK_MHZ * 1e6 / 1e12
    assert np.allclose(by[("peak_fraction", 8)].samples, rate.samples / peak, rtol=1e-3)  # ns are whole numbers


def test_occupancy_sweep_sizes_its_launch_and_skips_what_does_not_fit():
    probe = Scripted({"k": 10.0}, max_threads=256)
    points = (methods.SweepPoint("k", 4, 1, {"warps": 4}), methods.SweepPoint("k", 16, 1, {"warps": 16}))
    spec = methods.OccupancySweep(points, 32, unroll=16, whole_gpu="none", target_cycles=200_000)
    metrics = methods.run(spec, context(probe, peak=None, work=Work(512, "B")))
    assert [m.launch for m in metrics] == [{"warps": 4}] and metrics[0].unit == "B/cycle/SM"
    assert "not launched" in metrics[0].notes and "{'warps': 16}" in metrics[0].notes
    # sized from one short launch (its fixed cost included): about target_cycles, never over
    measured = [iters for kernel, grid, block, iters in probe.launches if grid == 4]
    assert measured and all(iters % 16 == 0 and 0.9 * 200_000 <= iters * 10 <= 200_000 for iters in measured)


def test_occupancy_sweep_times_only_its_best_point_as_a_whole_gpu_on_long_launches():
    # 1 warp: 4096 FLOP per 8 cycles; 4 warps x 2 chains: 8 x 4096 per 20 cycles per warp -> the best
    probe = Scripted({"k1": 8.0, "k8": 2 * 20.0, "k2": 2 * 30.0})
    points = (methods.SweepPoint("k1", 1, 1, {"warps": 1}), methods.SweepPoint("k8", 4, 2, {"warps": 4}),
              methods.SweepPoint("k2", 4, 2, {"warps": 4, "slow": 1}))
    metrics = methods.run(methods.OccupancySweep(points, 32, unroll=16, whole_gpu="best"), context(probe))
    per_sm = {m.launch["warps"] + m.launch.get("slow", 0) * 10: m for m in metrics if m.name == "sm_throughput"}
    assert set(per_sm) == {1, 4, 14}
    assert np.allclose(per_sm[4].samples, 4 * 2 * 4096 / 40, rtol=0.01)
    rated = [m for m in metrics if m.name != "sm_throughput"]
    assert {m.name for m in rated} == {"throughput_tflops", "peak_fraction"}
    assert all(m.launch == {"warps": 4} for m in rated) and "best point" in rated[0].notes
    # the sweep on ~THROUGHPUT_CYCLES launches, the best point again on ~WHOLE_GPU_CYCLES ones
    cycles = sorted({iters * probe.per_iter[k] for k, grid, _, iters in probe.launches if grid == 4})
    short = [c for c in cycles if c <= methods.THROUGHPUT_CYCLES]
    long_ = [c for c in cycles if c > methods.THROUGHPUT_CYCLES]
    assert short and all(c >= 0.9 * methods.THROUGHPUT_CYCLES for c in short)  # sized with the fixed cost
    assert long_ and all(0.9 * methods.WHOLE_GPU_CYCLES <= c <= methods.WHOLE_GPU_CYCLES for c in long_)
    assert {k for k, grid, _, iters in probe.launches if grid == 4 and iters * probe.per_iter[k] in long_} == {"k8"}


@pytest.mark.parametrize("whole_gpu, names, long_launches", [
    ("every", {"sm_throughput", "throughput_tflops", "peak_fraction"}, True),
    ("none", {"sm_throughput"}, False)])
def test_occupancy_sweep_launch_length_follows_what_is_timed(whole_gpu, names, long_launches):
    probe = Scripted({"k": 10.0})
    spec = methods.OccupancySweep((methods.SweepPoint("k", 2, 1, {"warps": 2}),), 32, whole_gpu=whole_gpu)
    assert {m.name for m in methods.run(spec, context(probe))} == names
    assert {name for name, _ in spec.declares(Work(4096, "FLOP"))} == names
    measured = {iters * 10.0 for _, grid, _, iters in probe.launches if grid == 4}
    target = methods.WHOLE_GPU_CYCLES if long_launches else methods.THROUGHPUT_CYCLES
    assert measured and all(0.9 * target <= c <= target for c in measured)


def test_occupancy_sweep_rejects_an_unknown_whole_gpu_choice():
    with pytest.raises(ValueError, match="every, best, none"):
        methods.OccupancySweep((), 32, whole_gpu="all")


@pytest.mark.parametrize("idle_ms, warmups", [(0.0, 1), (1.0, 0)])
def test_bursts_take_no_warm_up_launch(idle_ms, warmups):
    """Back to back, the first launches (the policy's warm-up) are dropped; after idle each launch starts
    from the same state, so none is."""
    probe = Scripted({"k": 10.0})
    spec = methods.OccupancySweep((methods.SweepPoint("k", 2, 1, {"warps": 2}),), 32, idle_ms=idle_ms)
    metric = methods.run(spec, context(probe))[0]
    timed = [launch for launch in probe.launches if launch[1] == 4]  # the whole-grid launches
    assert len(timed) == len(metric.samples) + warmups
    assert ("after 1 ms idle" in metric.notes) == bool(idle_ms)


class Metered:
    """A sampler whose every window saw a mean power of 500 W by the energy counter."""

    def window(self):
        from harness.measure.telemetry import GpuState

        class Window:
            state = GpuState(20, 1500.0, 2619.0, 520.0, 60.0, (), 0, mean_power_w=500.0, energy_seconds=2.0,
                             energy_steps=20, mean_reading_w=480.0)

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                pass

        return Window()


def test_an_energy_point_keeps_the_load_on_and_gives_work_per_joule(monkeypatch):
    """Energy points launch back to back until the window has lasted ENERGY_SECONDS (the counter steps
    every 100 ms), then store the window's mean power and the work per joule of its launches."""
    monkeypatch.setattr(methods.energy, "ENERGY_SECONDS", 0.2)
    point = (methods.SweepPoint("k", 4, 1, {"warps": 4}),)
    plain, metered = Scripted({"k": 8.0}), Scripted({"k": 8.0})
    policy = TimingPolicy(warmup=1, min_samples=3, max_samples=5, min_seconds=0.0)
    methods.run(methods.OccupancySweep(point, 32, target_cycles=100_000), context(plain))
    metrics = methods.run(methods.OccupancySweep(point, 32, target_cycles=100_000, energy=True),
                          methods.Context(metered, 4, policy, Metered(), Work(4096, "FLOP"), 4096.0))
    assert len(metered.launches) > len(plain.launches)  # more of the same load, for the counter
    by = {m.name: m for m in metrics}
    rate = float(np.median(by["throughput_tflops"].samples))
    assert by["power_mean_w"].samples.tolist() == [500.0] and by["power_mean_w"].unit == "W"
    assert by["energy_efficiency"].samples[0] == pytest.approx(rate / 500.0)
    assert by["energy_efficiency"].unit == "TFLOPS/W" and by["energy_pj_per_op"].unit == "pJ/FLOP"
    assert by["energy_pj_per_op"].samples[0] == pytest.approx(500.0 / rate)  # W / TFLOPS = pJ per FLOP
    assert "20 steps over 2.00 s" in by["power_mean_w"].notes
    with pytest.raises(ValueError):  # a burst is mostly idle: no energy figure for it
        methods.OccupancySweep(point, 32, idle_ms=250.0, energy=True)


class Rounds(Scripted):
    """A launcher of whole-job kernels in blocks (`repeat` launches, optionally a graph): each launch of
    `kernel` takes per_iter[kernel] microseconds at CLOCK_MHZ; the records say so too."""

    def run(self, kernel, grid, block, iters, timing_words, repeat=1, graph=False):
        launch = super().run(kernel, grid, block, 1, timing_words)
        time.sleep(launch.elapsed_ms * repeat * 1e-3)  # the block takes its time on the host's clock too
        return Launch(launch.out, launch.timing, launch.elapsed_ms * repeat, 1e-6)


class Windows(Metered):
    """Metered, and what the probe launched inside each window (kernel names), window by window."""

    def __init__(self, probe):
        self.probe, self.launched = probe, []

    def window(self):
        inner, outer = super().window(), self

        class Window:
            state = inner.state

            def __enter__(self):
                self.start = len(outer.probe.launches)
                return self

            def __exit__(self, *exc):
                outer.launched.append([k for k, *_ in outer.probe.launches[self.start:]])

        return Window()


def test_a_whole_kernel_with_energy_meters_the_kernel_alone_after_its_rounds(monkeypatch):
    """After the alternating rounds, the kernel alone back to back for ENERGY_SECONDS in a window of its own:
    the window's mean power, and work per joule at the window's rate (the kernel's, not the anchor's)."""
    monkeypatch.setattr(methods.energy, "ENERGY_SECONDS", 0.05)
    monkeypatch.setattr(methods.whole_kernel, "WHOLE_KERNEL_WARMUP_S", 0.0)
    probe = Rounds({"gemm": 1500.0 * 1000, "library": 1500.0 * 1200}, fixed=0.0)  # 1.0 ms and 1.2 ms a launch
    spec = methods.WholeKernel("gemm", 4, 128, anchor="library", energy=True)
    work = Work(2e12, "FLOP")  # 2 TFLOP a launch: 2000 TFLOPS at 1 ms
    policy = TimingPolicy(warmup=1, min_samples=3, max_samples=5, min_seconds=0.0)
    sampler = Windows(probe)
    metrics = methods.run(spec, methods.Context(probe, 4, policy, sampler, work, 4096.0))
    rounds, energy = sampler.launched  # the rounds' window, then the energy window
    assert set(rounds) == {"gemm", "library"} and energy and set(energy) == {"gemm"}
    by = {m.name: m for m in metrics}
    assert set(by) == {n for n, _ in spec.declares(work)}
    assert np.median(by["throughput_tflops"].samples) == pytest.approx(2000.0)
    assert by["library_fraction"].samples == pytest.approx(np.full(12, 1.2))
    assert by["power_mean_w"].samples.tolist() == [500.0]
    # the window's work over its wall time: the blocks' 2000 TFLOPS less what the host adds between them
    assert by["energy_efficiency"].samples[0] == pytest.approx(2000.0 / 500.0, rel=0.1)
    assert by["energy_pj_per_op"].samples[0] == pytest.approx(1 / by["energy_efficiency"].samples[0])
    assert "wall time" in by["energy_efficiency"].notes
    assert by["power_mean_w"].sm_clock_mhz == pytest.approx(CLOCK_MHZ, rel=1e-3)
    assert "kernel alone" in by["power_mean_w"].stop_reason
    rounds = sum(1 for k, *_ in probe.launches if k == "gemm")
    without = methods.WholeKernel("gemm", 4, 128, anchor="library")
    probe2 = Rounds({"gemm": 1500.0 * 1000, "library": 1500.0 * 1200}, fixed=0.0)
    names = {m.name for m in methods.run(without, methods.Context(probe2, 4, policy, Metered(), work, 4096.0))}
    assert "power_mean_w" not in names and rounds > sum(1 for k, *_ in probe2.launches if k == "gemm")


class Counting(Rounds):
    """Rounds whose kernels write a pipeline's counters after the records (words per block: full wait, mainloop,
    tiles): `gemm` as the timed build does (no wait counted: 0), `gemm_counted` as the counting one (700 cycles)."""

    WORDS = 3

    def run(self, kernel, grid, block, iters, timing_words, repeat=1, graph=False):
        launch = super().run(kernel, grid, block, iters, grid * RECORD_WORDS, repeat, graph)
        counters = np.tile([700 if kernel.endswith("_counted") else 0, 5000, 2], grid).astype(np.int64)
        assert timing_words == grid * (RECORD_WORDS + self.WORDS)
        return Launch(launch.out, np.concatenate([launch.timing, counters]), launch.elapsed_ms, launch.host_seconds)


def test_a_whole_kernel_reads_its_wait_counters_from_the_counting_build_launched_apart(monkeypatch):
    """The rounds time the kernel as built for timing (it reads no clock around its waits); the counters only the
    counting build writes come from one launch of it after each round, the others from the timed kernel's rounds."""
    monkeypatch.setattr(methods.whole_kernel, "WHOLE_KERNEL_WARMUP_S", 0.0)
    probe = Counting({"gemm": 1500.0 * 1000, "gemm_counted": 1500.0 * 1100, "library": 1500.0 * 1200}, fixed=0.0)
    counters = (methods.Counter("full_wait_cycles_per_tile", "cycles", 0, 2, counted=True),
                methods.Counter("cycles_per_tile", "cycles", 1, 2))
    spec = methods.WholeKernel("gemm", 4, 128, anchor="library", counters=counters, words=Counting.WORDS,
                               counted_kernel="gemm_counted")
    metrics = methods.run(spec, context(probe, work=Work(2e12, "FLOP")))
    by = {m.name: m for m in metrics}
    assert by["full_wait_cycles_per_tile"].samples.tolist() == [350.0] * 12  # 700 / 2 tiles, the counting build's
    assert by["cycles_per_tile"].samples.tolist() == [2500.0] * 12  # the timed kernel's own
    assert "gemm_counted" in by["full_wait_cycles_per_tile"].notes
    assert np.median(by["throughput_tflops"].samples) == pytest.approx(2000.0)  # 1.0 ms a launch: not 1.1
    assert by["library_fraction"].samples == pytest.approx(np.full(12, 1.2))
    counted = [iters for kernel, _, _, iters in probe.launches if kernel == "gemm_counted"]
    assert len(counted) == 12  # once a round, on the measured problem
    with pytest.raises(ValueError):  # a counted counter with no counting build to read it from
        methods.WholeKernel("gemm", 4, 128, counters=counters, words=Counting.WORDS)
