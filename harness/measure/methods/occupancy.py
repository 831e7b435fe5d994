"""OccupancySweep: every SM runs U units (warps, groups of warps) x ILP independent chains; work per cycle per SM
from clock64 (~1 ms launches), and whole-GPU work per second from CUDA events (~9 ms launches) at every point, at
the best one, or nowhere. Samples are back-to-back launches (a sustained load), or with `idle_ms` each one follows
that much idle time (a burst from a cool GPU, as a short program sees)."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np

from harness.measure.measurement import Metric, Work
import harness.measure.methods.energy as energy
from harness.measure.methods.base import Context, Method, MethodSpec, Row, Simulation, declare, throughput_unit
from harness.measure.timing import RECORD_WORDS, Records, collect

THROUGHPUT_CYCLES = 2_000_000  # cycles each unit runs in a per-SM throughput launch (~1 ms)
# Whole-GPU launches run longer: a launch's fixed cost (its start, the last SM's tail) was 2.6 % of a
# 1 ms launch on an H100 (3989 of 4096 FLOP/cycle/SM by events, at the clock the kernel measured); at
# ~9 ms it is a third of a percent, and the launch is longer than the paper's program's 7 ms ones.
WHOLE_GPU_CYCLES = 16_000_000
CALIBRATION_ITERATIONS = 64  # loop iterations of the launch that sizes a throughput launch


@dataclass(frozen=True)
class SweepPoint:
    kernel: str
    units: int  # issuing units per block; one block per SM
    per_iter: int  # instructions per loop iteration of one unit (its ILP)
    launch: dict
    fallback: tuple["SweepPoint", ...] = ()  # tried in order when this point's block does not fit


WHOLE_GPU_AT = ("every", "best", "none")


@dataclass(frozen=True)
class OccupancySweep(MethodSpec):
    """Which points also get the whole-GPU rate (throughput_tflops, peak_fraction), `whole_gpu`:
    "every": each point is timed on long launches, by CUDA events and clock64 alike;
    "best": each point is timed on short launches by clock64 (work per cycle per SM needs no more), then
            the one of highest median work per cycle per SM again on long launches, by CUDA events;
    "none": work per cycle per SM only, on short launches."""

    points: tuple[SweepPoint, ...]
    unit_threads: int  # threads per unit (32: a warp)
    unroll: int = 16
    whole_gpu: str = "every"
    inputs: str | None = None  # another input distribution (Family.inputs pattern), validated first
    target_cycles: int | None = None  # cycles each unit runs per launch (default: long or short, as above)
    idle_ms: float = 0.0  # idle time before each sampled launch (0: back to back, a sustained load)
    # Whole-GPU points also get the mean board power over at least ENERGY_SECONDS (energy.py) of back-to-back
    # launches, and from it energy_efficiency and energy_pj_per_op (not with idle_ms: bursts are mostly idle).
    energy: bool = False

    def __post_init__(self):
        if self.whole_gpu not in WHOLE_GPU_AT:
            raise ValueError(f"whole_gpu={self.whole_gpu!r}: expected one of {', '.join(WHOLE_GPU_AT)}")
        if self.energy and (self.idle_ms or self.whole_gpu == "none"):
            raise ValueError("energy needs whole-GPU points launched back to back (whole_gpu != 'none', no idle_ms)")

    def cycles(self, whole_gpu: bool) -> int:
        """Cycles each unit runs per launch: long where the launch is timed by CUDA events."""
        return self.target_cycles or (WHOLE_GPU_CYCLES if whole_gpu else THROUGHPUT_CYCLES)

    def declares(self, work: Work) -> list[tuple[str, str]]:
        names = [("sm_throughput", f"{work.unit}/cycle/SM")]
        if self.whole_gpu != "none":
            names += [("throughput_tflops", throughput_unit(work)), ("peak_fraction", "ratio")]
        if self.energy:
            names += energy.energy_metrics(work)
        return names


def _iterations(spec: OccupancySweep, point: SweepPoint, ctx: Context, block: int, cycles: int) -> int:
    """Loop iterations that keep every unit busy for about `cycles`, from one short launch."""
    iters = CALIBRATION_ITERATIONS * spec.unroll
    records = Records.from_words(ctx.probe.run(point.kernel, 1, block, iters, point.units * RECORD_WORDS).timing)
    per_iter = max(float(np.median(records.cycles)) / iters, 1e-3)
    return max(spec.unroll, int(cycles / per_iter) // spec.unroll * spec.unroll)


def _measure(spec: OccupancySweep, ctx: Context) -> list[Metric]:
    if spec.inputs is None:
        return _occupancy_sweep(spec, ctx)
    distribution = ctx.use_inputs(spec.inputs)
    try:
        metrics = _occupancy_sweep(spec, ctx)
    finally:
        ctx.use_inputs(None)
    for metric in metrics:
        metric.input_distribution = distribution
    return metrics


@dataclass
class _Timed:
    """The kept samples of one sweep point: work per cycle per SM, whole-GPU rate, clock, and how."""

    per_sm: np.ndarray
    rates: np.ndarray
    clock: float
    stop_reason: str
    gpu_state: object
    note: str
    window_rate: float | None = None  # energy points: the median rate of every launch in the window


def _time_point(spec: OccupancySweep, point: SweepPoint, ctx: Context, whole_gpu: bool) -> _Timed:
    """Sample one point until the stopping rule holds: on its whole-GPU rate by CUDA events (long
    launches) or on its work per cycle per SM by clock64 (short ones)."""
    grid = ctx.sm_count
    block = point.units * spec.unit_threads
    iters = _iterations(spec, point, ctx, block, spec.cycles(whole_gpu))
    per_block = ctx.work.amount * point.per_iter * iters * point.units
    clocks, per_sm, sms, rates = [], [], [], []

    def sample() -> float:
        if spec.idle_ms:
            time.sleep(spec.idle_ms / 1e3)
        launch = ctx.probe.run(point.kernel, grid, block, iters, grid * point.units * RECORD_WORDS)
        records = Records.from_words(launch.timing)
        clocks.append(records.sm_clock_mhz())
        cycles = (records.clk_stop.reshape(grid, point.units).max(1)
                  - records.clk_start.reshape(grid, point.units).min(1))
        per_sm.append(float(np.median(per_block / cycles)))
        sms.append(len(set(records.smid.reshape(grid, point.units)[:, 0].tolist())))
        rates.append(per_block * grid / (launch.elapsed_ms * 1e-3) / 1e12)
        return rates[-1] if whole_gpu else per_sm[-1]

    # After idle every launch starts from the same cool state: a warm-up launch would be one more sample.
    policy = replace(ctx.policy, warmup=0) if spec.idle_ms else ctx.policy
    metered = whole_gpu and spec.energy
    window = ctx.sampler.window()
    with window:
        started = time.perf_counter()
        collected = collect(sample, policy)
        end = len(rates)
        while metered and time.perf_counter() - started < energy.ENERGY_SECONDS:
            sample()  # more of the same load, so the energy counter steps often enough inside the window
    kept_at = slice(end - len(collected.values), end)  # the warm-up samples come first
    note = (f"{iters} x {point.per_iter} instructions per unit of {spec.unit_threads} threads, "
            f"{point.units} units per SM; {min(sms[kept_at])} distinct SMs of {grid} blocks"
            + (f"; each launch after {spec.idle_ms:g} ms idle (a burst)" if spec.idle_ms else ""))
    return _Timed(np.asarray(per_sm[kept_at]), np.asarray(rates[kept_at]), float(np.median(clocks[kept_at])),
                  collected.stop_reason, window.state, note,
                  float(np.median(rates)) if metered else None)


def _stored_with(point: SweepPoint, timed: _Timed) -> dict:
    """What every metric of one timed point carries besides its samples."""
    return dict(launch=dict(point.launch), sm_clock_mhz=timed.clock, stop_reason=timed.stop_reason,
                gpu_state=timed.gpu_state)


def _whole_gpu_metrics(point: SweepPoint, timed: _Timed, ctx: Context, note: str) -> list[Metric]:
    common = _stored_with(point, timed)
    metrics = [Metric("throughput_tflops", throughput_unit(ctx.work), timed.rates, notes=note, **common)]
    if ctx.peak:
        peak = ctx.sm_count * ctx.peak * timed.clock * 1e6 / 1e12
        metrics.append(Metric("peak_fraction", "ratio", timed.rates / peak,
                              notes=f"peak {peak:.1f} at {timed.clock:.0f} MHz", **common))
    if timed.window_rate is not None:
        metrics += energy.window_energy_metrics(timed.gpu_state, timed.window_rate, ctx.work, common)
    return metrics


def _occupancy_sweep(spec: OccupancySweep, ctx: Context) -> list[Metric]:
    metrics: list[Metric] = []
    skipped = []
    measured: list[dict] = []
    every = spec.whole_gpu == "every"
    best: tuple[float, SweepPoint] | None = None
    for wanted in spec.points:
        fits = [p for p in (wanted, *wanted.fallback)
                if p.units * spec.unit_threads <= ctx.probe.max_threads(p.kernel) and p.launch not in measured]
        if not fits:
            skipped.append(wanted.launch)
            continue
        point = fits[0]
        measured.append(point.launch)
        timed = _time_point(spec, point, ctx, whole_gpu=every)
        metrics.append(Metric("sm_throughput", f"{ctx.work.unit}/cycle/SM", timed.per_sm, notes=timed.note,
                              **_stored_with(point, timed)))
        if every:
            metrics += _whole_gpu_metrics(point, timed, ctx, timed.note)
        rate = float(np.median(timed.per_sm))
        if best is None or rate > best[0]:
            best = (rate, point)
    if spec.whole_gpu == "best" and best:
        timed = _time_point(spec, best[1], ctx, whole_gpu=True)
        metrics += _whole_gpu_metrics(best[1], timed, ctx, f"{timed.note}; the sweep's best point by work per "
                                                           f"cycle per SM, timed again on long launches")
    if skipped and metrics:
        metrics[-1].notes += f"; not launched (too many threads for the kernel's registers): {skipped}"
    return metrics


@declare
class OccupancySweepMethod(Method):
    spec = OccupancySweep

    def measure(self, spec: OccupancySweep, ctx: Context) -> list[Metric]:
        return _measure(spec, ctx)

    def simulate(self, spec: OccupancySweep, sim: Simulation) -> list[Row]:
        """Every point at the model's interval (ILP past 4 adds nothing), capped at the peak; whole-GPU rates at
        the simulated clock where the spec asks for them."""
        work, peak = sim.work, sim.peak
        rows, rated = [], []
        for point in spec.points:
            per_sm = work.amount * min(point.units * point.per_iter, 4) / sim.interval
            per_sm = min(per_sm, peak) if peak else per_sm
            rows.append(("sm_throughput", f"{work.unit}/cycle/SM", per_sm, point.launch))
            rated.append((per_sm, point))
        if spec.whole_gpu == "best":
            rated = [max(rated, key=lambda r: r[0])]  # the first of the highest, as the real method picks
        for per_sm, point in rated if spec.whole_gpu != "none" else ():
            rate = per_sm * sim.sm_count * sim.clock_mhz * 1e6 / 1e12
            rows.append(("throughput_tflops", throughput_unit(work), rate, point.launch))
            if peak:
                rows.append(("peak_fraction", "ratio", per_sm / peak, point.launch))
            if spec.energy:
                rows += energy.simulated_energy(work, rate, sim.power_w, point.launch)
        return rows
