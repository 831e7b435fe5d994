"""Measurement methods: named, reusable ways to time a validated probe (docs/architecture.md, "Methods").

A family's plan is a list of the specs below; `run(spec, context)` turns each into Metrics. No
method knows which instruction it times: the spec names the kernel, the launch and how many
instructions each loop iteration issues, and the family says how much work one instruction is.

    ChainSlope         one block on one SM runs a chain of `iters` iterations twice (short, long);
                       cycles per instruction = the slope, so fixed costs cancel. A dependent chain
                       gives latency, independent accumulators (ILP) give the issue interval. With
                       `short_body`, the same chain in shorter loop bodies too: what a body costs once
                       cancels as well (docs/chains.md).
    BracketedLatency   each repetition times one sequence with and without the instruction, by
                       clock64 on every thread; the difference is the instruction's latency.
    OccupancySweep     every SM runs U units (warps, groups of warps) x ILP independent chains; work per
                       cycle per SM from clock64 (~1 ms launches), and whole-GPU work per second from
                       CUDA events (~9 ms launches) at every point, at the best one, or nowhere.
                       Samples are back-to-back launches (a sustained load), or with `idle_ms` each one
                       follows that much idle time (a burst from a cool GPU, as a short program sees).
    Bandwidth          every SM runs B blocks that each move a known number of bytes per loop iteration;
                       whole-GPU bytes per second from CUDA events, launches sized to a few milliseconds.
    WholeKernel        one launch is the whole job (a GEMM): rounds of back-to-back launches timed by
                       CUDA events, alternating with an anchor (a library call on the same inputs) whose
                       rounds give the ratio; the kernel's per-block counters say where its time went.
                       With `idle_s`, bursts instead (whole_kernel_burst): a batch of launches after the GPU
                       idled, the SM clock and power read by NVML while it runs.
    SmMap              every block times its accesses to a list of targets (lines of the L2, the shared
                       memory of other SMs) and says which SM it ran on: a map of the chip, by SM and
                       target, over many launches (docs/data-movement.md, "Maps of the chip"); with
                       `pools`, also every SM's samples of a range of targets pooled and split into
                       clusters (1-D k-means), one measurement per cluster.

Every kernel has the argument shape of ptx/common.cuh and writes one timing record per unit.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Protocol

import numpy as np

from harness.measure.measurement import Metric, Work
from harness.measure.telemetry import burst_state
from harness.stats import kmeans_1d
from harness.measure.timing import RECORD_WORDS, Records, TimingPolicy, collect

THROUGHPUT_CYCLES = 2_000_000  # cycles each unit runs in a per-SM throughput launch (~1 ms)
# Whole-GPU launches run longer: a launch's fixed cost (its start, the last SM's tail) was 2.6 % of a
# 1 ms launch on an H100 (3989 of 4096 FLOP/cycle/SM by events, at the clock the kernel measured); at
# ~9 ms it is a third of a percent, and the launch is longer than the paper's program's 7 ms ones.
WHOLE_GPU_CYCLES = 16_000_000
CALIBRATION_ITERATIONS = 64  # loop iterations of the launch that sizes a throughput launch
# A point measured for energy (OccupancySweep.energy) keeps launching, back to back, until its window has
# lasted this long: NVML's energy counter steps every 100 ms, and the mean power is taken between its
# first and last step in the window, each timed to the sampler's 10 ms (about 1 % of 2 s).
ENERGY_SECONDS = 2.0
FIRST_USE_LAUNCHES = 16  # launches whose first repetition BracketedLatency(first_use=True) keeps


class Launcher(Protocol):
    """What a method needs of a loaded probe (harness/measure/launch.py LoadedProbe)."""

    def run(self, kernel: str, grid: int, block: int, iters: int, timing_words: int): ...
    def max_threads(self, kernel: str) -> int: ...


@dataclass
class Context:
    probe: Launcher
    sm_count: int
    policy: TimingPolicy
    sampler: object  # harness.measure.telemetry Sampler or NullSampler
    work: Work
    peak: float | None  # work per cycle per SM at full rate (None: no published peak)
    # Load and validate inputs of another distribution (None: the case's own); returns its description.
    use_inputs: object = None


@dataclass(frozen=True)
class ChainSlope:
    metric: str  # issue_interval_cycles (independent chains) or latency_cycles (one dependent chain)
    kernel: str
    threads: int  # one block of this many threads, on one SM
    units: int = 1  # timing records the kernel writes (one per unit); the first is read
    per_iter: int = 1  # instructions per loop iteration of one unit (its ILP)
    unroll: int = 16  # iterations per unrolled loop body: iters is a multiple of it
    launch: dict = field(default_factory=dict)
    notes: str | None = None
    short_bodies: int = 16  # chain lengths (in loop bodies) of the two launches
    long_bodies: int = 272
    grid: int = 1  # blocks launched (a cluster kernel's cluster size); the first block's record is read
    # Every unit's slope is a sample (units that ran at once on other SMs: a distribution over where they
    # ran); the stopping rule watches their median.
    every_unit: bool = False
    # (kernel, unroll): the same chain in shorter loop bodies. The slope above still holds what a loop
    # body costs once (its compare and branch, or a different schedule where the body ends), spread
    # over the body's instructions; with both bodies timed, cycles per body are b + U x L for either, and
    # L, the cost per instruction in straight-line code, is their difference over the bodies' lengths.
    short_body: tuple[str, int] | None = None

    def declares(self, work: Work) -> list[tuple[str, str]]:
        return [(self.metric, "cycles")]


@dataclass(frozen=True)
class BracketedLatency:
    kernel: str  # per repetition: clock, sequence with the instruction, clock; one word per thread
    empty_kernel: str  # the same sequence without the instruction
    threads: int
    overhead: str  # what the empty sequence is, for the notes
    launch: dict = field(default_factory=dict)
    reps: int = 64  # repetitions per launch
    skip: int = 4  # first repetitions dropped (instruction cache, first touch)
    grid: int = 1  # blocks launched (a cluster kernel's cluster size); block 0 writes the times
    # Also time the first repetition of FIRST_USE_LAUNCHES launches alone (latency_first_use_cycles): what
    # the instruction costs the first time a launch uses it (a tensor map's first fetch, say).
    first_use: bool = False
    # What the raw time less the empty sequence is: latency_cycles where the empty sequence is only what
    # times it (two clock reads), latency_added_cycles where it is work that overlaps the instruction
    # (a fence, commit and wait around an asynchronous instruction: its own latency is then latency_raw_cycles).
    net_metric: str = "latency_cycles"
    # The kernel also writes words 1 and 2 of each repetition's row (lanes 1 and 2's words, in the same
    # launch as the raw time): the instruction alone, from a clock read just before it issues (after what
    # arms it: an mbarrier's expect_tx, a cluster barrier) to the one after its completion is seen, and two
    # clock reads back to back. latency_cycles is then the first less the median of the second: nothing
    # measured in another launch is subtracted (a bracket's median from another launch took away more than
    # the sequence adds to some samples: issue 34 item 11). net_metric must then name the other difference.
    issue_stamps: bool = False

    def __post_init__(self):
        if self.issue_stamps and self.net_metric == "latency_cycles":
            raise ValueError("with issue_stamps the issue-to-completion time is latency_cycles: "
                             "net_metric names raw less the empty sequence (latency_added_cycles)")
        if self.issue_stamps and self.threads < 3:
            raise ValueError("issue_stamps needs three words per repetition (threads >= 3)")

    def declares(self, work: Work) -> list[tuple[str, str]]:
        first = [("latency_first_use_cycles", "cycles")] if self.first_use else []
        issued = [("latency_cycles", "cycles")] if self.issue_stamps else []
        return [*issued, (self.net_metric, "cycles"), ("latency_raw_cycles", "cycles"), *first]


@dataclass(frozen=True)
class SweepPoint:
    kernel: str
    units: int  # issuing units per block; one block per SM
    per_iter: int  # instructions per loop iteration of one unit (its ILP)
    launch: dict
    fallback: tuple["SweepPoint", ...] = ()  # tried in order when this point's block does not fit


WHOLE_GPU_AT = ("every", "best", "none")


@dataclass(frozen=True)
class OccupancySweep:
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
    # Whole-GPU points also get the mean board power over at least ENERGY_SECONDS of back-to-back
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
            names += energy_metrics(work)
        return names


def energy_metrics(work: Work) -> list[tuple[str, str]]:
    return [("power_mean_w", "W"), ("energy_efficiency", f"{throughput_unit(work)}/W"),
            ("energy_pj_per_op", f"pJ/{work.unit}")]


@dataclass(frozen=True)
class BandwidthPoint:
    kernel: str
    blocks_per_sm: int
    threads: int
    bytes_per_iter: int  # bytes one block moves per loop iteration
    launch: dict


@dataclass(frozen=True)
class Bandwidth:
    points: tuple[BandwidthPoint, ...]
    grid_multiple: int = 1  # the kernel's cluster size: the grid is a multiple of it
    notes: str = ""
    target_ms: float = 3.0  # the length of a timed launch

    def declares(self, work: Work) -> list[tuple[str, str]]:
        return [("bandwidth_gbps", "GB/s")] if self.points else []


@dataclass(frozen=True)
class Counter:
    """A per-block int64 the kernel writes after its timing records (word `index` of `words` per block):
    stored as `metric`, the median over blocks of counter / counter `per` (None: over the block's cycles
    from its record)."""

    metric: str
    unit: str
    index: int
    per: int | None = None


WHOLE_KERNEL_ROUNDS = 12  # alternating rounds of the kernel and its anchor (each a block of launches)
WHOLE_KERNEL_ROUND_MS = 25.0  # the length of one round's block of launches
WHOLE_KERNEL_WARMUP_S = 0.5  # launches before the first round: clocks and power settle


@dataclass(frozen=True)
class WholeKernel:
    """`kernel` is the whole job: `grid` blocks of `threads`, launched with `iters` (the problem it runs).
    Samples are rounds of back-to-back launches (a block of calls sized to WHOLE_KERNEL_ROUND_MS, captured
    once into a CUDA graph and replayed, so that a kernel shorter than a launch call's host time is not timed
    at the host's dispatch rate; a contender that cannot be captured is launched call by call, and a round
    whose enqueueing took the host 90 % of the GPU's time is counted host-bound in the notes), timed by CUDA
    events; work per launch is the family's
    Work. With an `anchor` (another kernel of the probe, e.g. a library call on the same inputs), rounds
    alternate kernel, anchor, kernel, ... and each pair gives `anchor_metric`, the kernel's rate over the
    anchor's: both see the same clock and power state, which a long run of one then the other does not.
    The block's counters (`counters`, `words` per block after the records) become metrics too."""

    kernel: str
    grid: int
    threads: int
    iters: int = 1
    anchor: str | None = None
    anchor_metric: str = "library_fraction"
    counters: tuple[Counter, ...] = ()
    words: int = 0  # counter words per block
    launch: dict = field(default_factory=dict)
    notes: str = ""
    # The kernel writes a timing record per block (ptx/common.cuh): the SM clock it ran at, and the peak
    # fraction at that clock. A host call (a library) writes none: no clock is claimed for it.
    records: bool = True
    # After the rounds, the kernel alone back to back for ENERGY_SECONDS: the board's mean power over that
    # window, and from it energy_efficiency and energy_pj_per_op (the rounds, 0.3 s of each contender
    # interleaved, are too short for NVML's energy counter and mix the two)
    energy: bool = False
    # The burst protocol (whole_kernel_burst), where idle_s > 0: each sample is `burst_launches` launches back to back
    # after `idle_s` seconds of an idle GPU, timed by CUDA events as one batch, `bursts` samples; no anchor alongside.
    idle_s: float = 0.0
    burst_launches: int = 8
    bursts: int = 5

    def __post_init__(self):
        if self.idle_s and (self.anchor or self.energy or self.counters):
            raise ValueError("a burst (idle_s) times the kernel alone: no anchor, energy window or counters")

    def declares(self, work: Work) -> list[tuple[str, str]]:
        if self.idle_s:
            return ([("throughput_tflops", throughput_unit(work))] + ([("peak_fraction", "ratio")] if self.records else [])
                    + [("power_burst_w", "W")])
        names = [("throughput_tflops", throughput_unit(work))] + ([("peak_fraction", "ratio")] if self.records else [])
        names += [(self.anchor_metric, "ratio")] if self.anchor else []
        names += energy_metrics(work) if self.energy else []
        return names + [(c.metric, c.unit) for c in self.counters]


MAP_ROW_HEAD = 2  # words of a map row before its (target, cycles) pairs: the block's %smid, the bracket's cost


@dataclass(frozen=True)
class SmMap:
    """`grid` blocks (0: one per SM, the SM count rounded down to `grid_multiple`, a cluster's size) of
    `threads`, `launches` times, each launch with `iters`. Block b writes timing words [b * row, (b + 1) * row),
    row = MAP_ROW_HEAD + 2 x `targets`: its %smid, the cycles its bracket costs without an access (subtracted
    from every time; 0: none), then per target its id (a line's index, another SM's %smid) and the cycles
    its `steps` dependent accesses to it took. Each time, less the bracket and over `steps`, is a sample.
    `by_target` False: one Metric per SM, launch {**launch, "sm": s}, its samples whole rows in launch order
    (row k's target j is sample k x targets + j: the targets are the same in every row, a fixed walk);
    True: one Metric per SM and target, launch {**launch, "sm": s, target_key: t} (targets that differ
    from launch to launch: the SMs a cluster landed on). A block that ran where another block of the same
    launch ran adds its row too."""

    metric: str
    kernel: str
    threads: int
    targets: int
    iters: int
    launches: int
    launch: dict = field(default_factory=dict)
    grid: int = 0
    grid_multiple: int = 1
    steps: int = 1
    by_target: bool = False
    target_key: str = "target"
    notes: str = ""
    # with by_target: (label, lowest target, highest target, clusters): every SM's samples of the targets in the
    # range pooled, split into that many clusters by value (stats.kmeans_1d, ascending), one Metric per
    # cluster, launch {**launch, "pool": label, "cluster": c}
    pools: tuple[tuple[str, int, int, int], ...] = ()

    @property
    def row_words(self) -> int:
        return MAP_ROW_HEAD + 2 * self.targets

    def blocks(self, sm_count: int) -> int:
        return self.grid or sm_count // self.grid_multiple * self.grid_multiple

    def declares(self, work: Work) -> list[tuple[str, str]]:
        return [(self.metric, "cycles")]


def map_samples(spec: SmMap, rows: list[np.ndarray]) -> dict[tuple[int, int | None], np.ndarray]:
    """{(sm, target or None): samples} from each launch's rows (int64, blocks x row_words), as SmMap says."""
    found: dict[tuple[int, int | None], list[float]] = {}
    for table in rows:
        for row in np.asarray(table, dtype=np.int64).reshape(-1, spec.row_words):
            sm, overhead = int(row[0]), float(row[1])
            pairs = row[MAP_ROW_HEAD:].reshape(spec.targets, 2)
            times = (pairs[:, 1].astype(np.float64) - overhead) / spec.steps
            if spec.by_target:
                for target, value in zip(pairs[:, 0].tolist(), times.tolist()):
                    found.setdefault((sm, int(target)), []).append(value)
            else:
                found.setdefault((sm, None), []).extend(times.tolist())
    return {key: np.asarray(values) for key, values in sorted(found.items())}


def map_launches(spec: SmMap, rows: list[np.ndarray]) -> list[tuple[dict, np.ndarray]]:
    """(launch, samples) of every measurement a map's rows make: per SM (and target), then the pools' clusters."""
    found = map_samples(spec, rows)
    out = [({**spec.launch, "sm": sm} | ({spec.target_key: target} if spec.by_target else {}), values)
           for (sm, target), values in found.items()]
    for label, low, high, k in spec.pools if spec.by_target else ():
        pooled = [values for (_, target), values in found.items() if low <= target <= high]
        values = np.concatenate(pooled) if pooled else np.array([])
        values = values[np.isfinite(values)]
        if not values.size:
            continue
        clusters = kmeans_1d(values, k)
        for c in range(clusters.centres.size):
            out.append(({**spec.launch, "pool": label, "cluster": c}, values[clusters.labels == c]))
    return out


def sm_map(spec: SmMap, ctx: Context) -> list[Metric]:
    grid = spec.blocks(ctx.sm_count)
    words = grid * spec.row_words
    window = ctx.sampler.window()
    with window:
        ctx.probe.run(spec.kernel, grid, spec.threads, spec.iters, words)  # warm-up: the lines, the TLB, the code
        rows = [ctx.probe.run(spec.kernel, grid, spec.threads, spec.iters, words).timing for _ in range(spec.launches)]
    reason = f"fixed: {spec.launches} launches of {grid} blocks"
    return [Metric(spec.metric, "cycles", values, launch, notes=spec.notes, stop_reason=reason, gpu_state=window.state)
            for launch, values in map_launches(spec, rows)]


def throughput_unit(work: Work) -> str:
    return {"FLOP": "TFLOPS", "OP": "TOPS"}.get(work.unit, f"T{work.unit}/s")


def run(spec, ctx: Context) -> list[Metric]:
    """The metrics of one spec; each is taken inside a telemetry window, whose state it carries."""
    method = {ChainSlope: chain_slope, BracketedLatency: bracketed_latency, OccupancySweep: occupancy_sweep,
              Bandwidth: bandwidth, WholeKernel: whole_kernel, SmMap: sm_map}
    return method[type(spec)](spec, ctx)


def chain_slope(spec: ChainSlope, ctx: Context) -> list[Metric]:
    words = spec.units * RECORD_WORDS
    clocks: list[float] = []
    slopes: list[np.ndarray] = []

    def per_body(kernel: str, unroll: int) -> np.ndarray:
        """Cycles per loop body of each unit: the slope between the short and the long launch."""
        a = Records.from_words(ctx.probe.run(kernel, spec.grid, spec.threads, spec.short_bodies * unroll, words).timing)
        b = Records.from_words(ctx.probe.run(kernel, spec.grid, spec.threads, spec.long_bodies * unroll, words).timing)
        clocks.append(b.sm_clock_mhz())
        return (b.cycles - a.cycles).astype(np.float64) / (spec.long_bodies - spec.short_bodies)

    def sample() -> float:
        body = per_body(spec.kernel, spec.unroll)
        if spec.short_body is None:
            slopes.append(body / (spec.unroll * spec.per_iter))
        else:
            kernel, unroll = spec.short_body
            slopes.append((body - per_body(kernel, unroll)) / ((spec.unroll - unroll) * spec.per_iter))
        return float(np.median(slopes[-1])) if spec.every_unit else float(slopes[-1][0])

    window = ctx.sampler.window()
    with window:
        collected = collect(sample, ctx.policy)
    kept = len(collected.values)
    values = np.concatenate(slopes[-kept:]) if spec.every_unit else collected.values
    return [Metric(spec.metric, "cycles", values, dict(spec.launch), sm_clock_mhz=float(np.median(clocks)),
                   notes=spec.notes, stop_reason=collected.stop_reason, gpu_state=window.state)]


def bracketed_latency(spec: BracketedLatency, ctx: Context) -> list[Metric]:
    def rows(kernel: str) -> np.ndarray:
        """Each kept repetition's row of words (word 0: thread 0's bracketed time)."""
        words = spec.reps * spec.threads
        ctx.probe.run(kernel, spec.grid, spec.threads, spec.reps, words)  # warm-up
        launch = ctx.probe.run(kernel, spec.grid, spec.threads, spec.reps, words)
        return launch.timing.reshape(spec.reps, spec.threads)[spec.skip:].astype(np.float64)

    def first_uses() -> np.ndarray:
        words = spec.reps * spec.threads
        return np.array([ctx.probe.run(spec.kernel, spec.grid, spec.threads, spec.reps, words).timing[0]
                         for _ in range(FIRST_USE_LAUNCHES)], dtype=np.float64)

    window = ctx.sampler.window()
    with window:
        timed, empty = rows(spec.kernel), rows(spec.empty_kernel)[:, 0]
        first = first_uses() if spec.first_use else None
    raw = timed[:, 0]
    overhead = float(np.median(empty))
    reason = f"fixed: {spec.reps - spec.skip} repetitions in one launch"
    common = dict(launch=dict(spec.launch), stop_reason=reason, gpu_state=window.state)
    metrics = []
    if spec.issue_stamps:
        clocks = float(np.median(timed[:, 2]))
        metrics.append(Metric("latency_cycles", "cycles", timed[:, 1] - clocks, **common,
                              notes=f"from the clock before the issue, net of {clocks:g} cycles for two clock reads "
                                    "timed in the same launch"))
    metrics += [Metric(spec.net_metric, "cycles", raw - overhead, notes=f"net of {overhead:g} cycles for {spec.overhead}",
                       **common),
                Metric("latency_raw_cycles", "cycles", raw, **common)]
    if first is not None:
        metrics.append(Metric("latency_first_use_cycles", "cycles", first - overhead,
                              **dict(common, stop_reason=f"fixed: the first repetition of {FIRST_USE_LAUNCHES} launches"),
                              notes=f"the first repetition of each launch, net of {overhead:g} cycles for {spec.overhead}"))
    return metrics


def _iterations(spec: OccupancySweep, point: SweepPoint, ctx: Context, block: int, cycles: int) -> int:
    """Loop iterations that keep every unit busy for about `cycles`, from one short launch."""
    iters = CALIBRATION_ITERATIONS * spec.unroll
    records = Records.from_words(ctx.probe.run(point.kernel, 1, block, iters, point.units * RECORD_WORDS).timing)
    per_iter = max(float(np.median(records.cycles)) / iters, 1e-3)
    return max(spec.unroll, int(cycles / per_iter) // spec.unroll * spec.unroll)


def occupancy_sweep(spec: OccupancySweep, ctx: Context) -> list[Metric]:
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
    energy = whole_gpu and spec.energy
    window = ctx.sampler.window()
    with window:
        started = time.perf_counter()
        collected = collect(sample, policy)
        end = len(rates)
        while energy and time.perf_counter() - started < ENERGY_SECONDS:
            sample()  # more of the same load, so the energy counter steps often enough inside the window
    kept_at = slice(end - len(collected.values), end)  # the warm-up samples come first
    note = (f"{iters} x {point.per_iter} instructions per unit of {spec.unit_threads} threads, "
            f"{point.units} units per SM; {min(sms[kept_at])} distinct SMs of {grid} blocks"
            + (f"; each launch after {spec.idle_ms:g} ms idle (a burst)" if spec.idle_ms else ""))
    return _Timed(np.asarray(per_sm[kept_at]), np.asarray(rates[kept_at]), float(np.median(clocks[kept_at])),
                  collected.stop_reason, window.state, note,
                  float(np.median(rates)) if energy else None)


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
        metrics += _energy_metrics(timed.gpu_state, timed.window_rate, ctx.work, common)
    return metrics


def _energy_metrics(state, rate: float, work: Work, common: dict,
                    rate_is: str = "the median launch of the window") -> list[Metric]:
    """Mean power over a window (the energy counter's steps, else the mean power reading), and the work per
    joule of the launches in it at `rate` (their median): one value each, for the window as a whole."""
    if state is None or not state.samples:
        return []
    if state.mean_power_w is not None:
        watts = state.mean_power_w
        readings = "" if state.mean_reading_w is None else f" (mean power reading {state.mean_reading_w:.0f} W)"
        how = f"NVML energy counter: {state.energy_steps} steps over {state.energy_seconds:.2f} s{readings}"
    elif state.mean_reading_w is not None:
        watts = state.mean_reading_w
        how = "no energy counter: the mean of the window's own power readings"
    else:
        return []  # neither: the window was shorter than the counter's steps and the readings' average
    note = f"{how}; {rate:.1f} {throughput_unit(work)}, {rate_is}"
    (power, w), (efficiency, e), (per_op, j) = energy_metrics(work)
    return [Metric(power, w, np.array([watts]), notes=note, **common),
            Metric(efficiency, e, np.array([rate / watts]), notes=note, **common),
            Metric(per_op, j, np.array([watts / rate]), notes=note, **common)]


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


CALIBRATION_COPIES = 32  # loop iterations of the first launch that sizes a bandwidth launch


def bandwidth(spec: Bandwidth, ctx: Context) -> list[Metric]:
    """Per point: two short launches size the loop to about `target_ms` (the second one long enough that
    the launch's fixed cost no longer skews the estimate), then samples of bytes moved / event time."""
    metrics = []
    for point in spec.points:
        grid = ctx.sm_count * point.blocks_per_sm // spec.grid_multiple * spec.grid_multiple
        words = grid * RECORD_WORDS

        def elapsed(iters: int) -> float:
            return ctx.probe.run(point.kernel, grid, point.threads, iters, words).elapsed_ms

        iters = CALIBRATION_COPIES
        for _ in range(2):
            iters = max(CALIBRATION_COPIES, int(iters * spec.target_ms / max(elapsed(iters), 1e-3)))
        moved = grid * iters * point.bytes_per_iter
        clocks: list[float] = []

        def sample() -> float:
            launch = ctx.probe.run(point.kernel, grid, point.threads, iters, words)
            clocks.append(Records.from_words(launch.timing).sm_clock_mhz())
            return moved / (launch.elapsed_ms * 1e-3) / 1e9

        window = ctx.sampler.window()
        with window:
            collected = collect(sample, ctx.policy)
        kept = len(collected.values)
        note = f"{grid} blocks x {iters} iterations x {point.bytes_per_iter} B" + (f"; {spec.notes}" if spec.notes else "")
        metrics.append(Metric("bandwidth_gbps", "GB/s", np.asarray(collected.values), dict(point.launch),
                              sm_clock_mhz=float(np.median(clocks[-kept:])), notes=note,
                              stop_reason=collected.stop_reason, gpu_state=window.state))
    return metrics


def _whole_kernel_energy(spec: WholeKernel, ctx: Context, run_block, calls: int, common: dict) -> list[Metric]:
    """The kernel's rounds again, alone and back to back for ENERGY_SECONDS inside one telemetry window: its
    mean power (the energy counter's steps) and the work per joule at the window's own rate: all the work
    launched in it over its wall time, so the host's gaps between blocks (their sync, the records' reading)
    count in the rate as they do in the power. The window's own GPU state (power, reasons) and in-kernel clock
    go with these metrics (a library call: no clock); host-bound blocks are counted in the notes."""
    clocks, blocks, host_bound = [], 0, 0
    window = ctx.sampler.window()
    with window:
        started = time.perf_counter()
        while time.perf_counter() - started < ENERGY_SECONDS:
            launch = run_block()
            blocks += 1
            host_bound += launch.host_seconds >= 0.9 * launch.elapsed_ms * 1e-3
            if spec.records:  # the clock the kernel measured, as for the rounds
                clocks.append(Records.from_words(launch.timing[:spec.grid * RECORD_WORDS]).sm_clock_mhz())
        seconds = time.perf_counter() - started
    rate = ctx.work.amount * calls * blocks / seconds / 1e12
    own = dict(common, gpu_state=window.state, sm_clock_mhz=float(np.median(clocks)) if clocks else None,
               stop_reason=f"fixed: {ENERGY_SECONDS:g} s of back-to-back rounds of the kernel alone")
    metrics = _energy_metrics(window.state, rate, ctx.work, own, "the window's work over its wall time")
    for metric in metrics:
        metric.notes += f"; {blocks} blocks of {calls} launches" + (f", {host_bound} host-bound" if host_bound else "")
    return metrics


def whole_kernel(spec: WholeKernel, ctx: Context) -> list[Metric]:
    if spec.idle_s:
        return whole_kernel_burst(spec, ctx)
    words = spec.grid * (RECORD_WORDS + spec.words)

    graphs: dict[str, bool] = {}  # contender -> its block of launches replays a CUDA graph
    uncaptured: dict[str, str] = {}  # contender -> why it could not be captured

    def block(kernel: str, calls: int):
        if graphs.setdefault(kernel, True):
            try:
                return ctx.probe.run(kernel, spec.grid, spec.threads, spec.iters, words, repeat=calls, graph=True)
            except Exception as exc:  # noqa: BLE001 (a call that cannot be captured: launched one by one)
                graphs[kernel] = False
                uncaptured[kernel] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:120] if str(exc) else ''}"
        return ctx.probe.run(kernel, spec.grid, spec.threads, spec.iters, words, repeat=calls)

    def calls_for(kernel: str) -> int:
        """Launches per round: enough for WHOLE_KERNEL_ROUND_MS, from one launch and then a block of them."""
        calls = 1
        for _ in range(2):
            calls = max(1, int(calls * WHOLE_KERNEL_ROUND_MS / max(block(kernel, calls).elapsed_ms, 1e-3)))
        return calls

    contenders = [spec.kernel] + ([spec.anchor] if spec.anchor else [])
    per_round = {name: calls_for(name) for name in contenders}
    started = time.perf_counter()
    while time.perf_counter() - started < WHOLE_KERNEL_WARMUP_S:
        for name in contenders:
            block(name, per_round[name])
    rates: dict[str, list[float]] = {name: [] for name in contenders}
    host_bound: dict[str, int] = {name: 0 for name in contenders}
    dispatch: dict[str, list[bool]] = {name: [] for name in contenders}  # per round: host-bound
    clocks, counters = [], []
    window = ctx.sampler.window()
    with window:
        for _ in range(WHOLE_KERNEL_ROUNDS):
            for name in contenders:
                launch = block(name, per_round[name])
                rates[name].append(ctx.work.amount * per_round[name] / (launch.elapsed_ms * 1e-3) / 1e12)
                # the host took nearly as long to enqueue the block as the GPU to run it: a rate of dispatch
                dispatch[name].append(launch.host_seconds >= 0.9 * launch.elapsed_ms * 1e-3)
                host_bound[name] += dispatch[name][-1]
                if name == spec.kernel and spec.records:
                    records = Records.from_words(launch.timing[:spec.grid * RECORD_WORDS])
                    clocks.append(records.sm_clock_mhz())
                    counters.append((records, launch.timing[spec.grid * RECORD_WORDS:].reshape(spec.grid, spec.words)))
    ours = np.asarray(rates[spec.kernel])
    clock = float(np.median(clocks)) if clocks else None
    reason = f"fixed: {WHOLE_KERNEL_ROUNDS} rounds" + (", alternating with the anchor" if spec.anchor else "")
    note = (f"{spec.grid} blocks of {spec.threads} threads, {per_round[spec.kernel]} launches per round"
            + (f"; anchor {spec.anchor}: {per_round[spec.anchor]} per round" if spec.anchor else "")
            + (f"; {spec.notes}" if spec.notes else "")
            + "".join(f"; {name}: " + ("one CUDA graph per round" if graphs.get(name) else
                                        f"launched one by one (not captured: {uncaptured.get(name, '')})")
                      + (f", host-bound in {host_bound[name]} of {WHOLE_KERNEL_ROUNDS} rounds" if host_bound[name] else "")
                      for name in contenders))
    common = dict(launch=dict(spec.launch), sm_clock_mhz=clock, stop_reason=reason, gpu_state=window.state)
    metrics = [Metric("throughput_tflops", throughput_unit(ctx.work), ours, notes=note, **common)]
    if ctx.peak and clocks:
        round_clocks = np.asarray(clocks)
        peak = ctx.sm_count * ctx.peak * round_clocks * 1e6 / 1e12
        metrics.append(Metric("peak_fraction", "ratio", ours / peak,
                              notes=f"each round against the peak at its own in-kernel clock ({clock:.0f} MHz median)",
                              **common))
    if spec.anchor:
        theirs = np.asarray(rates[spec.anchor])
        # a round where either side's enqueueing kept up with the GPU only barely timed the host: left out
        fair = ~(np.asarray(dispatch[spec.kernel]) | np.asarray(dispatch[spec.anchor]))
        kept = fair if fair.sum() >= WHOLE_KERNEL_ROUNDS // 2 else np.ones_like(fair)
        left = int((~kept).sum())
        metrics.append(Metric(spec.anchor_metric, "ratio", (ours / theirs)[kept],
                              notes=f"round by round over {spec.anchor} (median {np.median(theirs):.1f} "
                                    f"{throughput_unit(ctx.work)})"
                                    + (f"; {left} host-bound rounds left out" if left else "")
                                    + ("; most rounds host-bound: all kept" if not fair.sum() >= WHOLE_KERNEL_ROUNDS // 2
                                       else ""), **common))
    if spec.energy:
        metrics += _whole_kernel_energy(spec, ctx, lambda: block(spec.kernel, per_round[spec.kernel]),
                                        per_round[spec.kernel], common)
    for counter in spec.counters:
        values = []
        for records, table in counters:
            denominator = (records.cycles if counter.per is None else table[:, counter.per]).astype(np.float64)
            used = denominator > 0
            values.append(float(np.median(table[used, counter.index] / denominator[used])) if used.any() else np.nan)
        metrics.append(Metric(counter.metric, counter.unit, np.asarray(values),
                              notes="the median over blocks of each round's last launch", **common))
    return metrics


# -- WholeKernel's burst protocol --------------------------------------------------------------------------------------

def whole_kernel_burst(spec: WholeKernel, ctx: Context) -> list[Metric]:
    """A burst after idle (WholeKernel.idle_s), as a short program times a kernel: one batch of the launches to load
    its code and data, then `bursts` times: the GPU idle for idle_s (the host sleeps, nothing enqueued), then
    `burst_launches` launches back to back between two CUDA events (no graph: the calls as a program makes them),
    while NVML is read as fast as it answers (telemetry.BurstReadings: the SM clock, the board's instantaneous
    power). Per burst: the batch's rate, the in-kernel clock of its last launch (records), and power_burst_w, the
    mean of the instantaneous power readings taken while it ran (none where NVML has no instantaneous field or no
    reading fell inside the batch)."""
    words = spec.grid * (RECORD_WORDS + spec.words)

    def batch():
        return ctx.probe.run(spec.kernel, spec.grid, spec.threads, spec.iters, words, repeat=spec.burst_launches)

    batch()
    rates, clocks, watts, seen = [], [], [], []
    for _ in range(spec.bursts):
        time.sleep(spec.idle_s)
        with ctx.sampler.burst() as readings:
            launch = batch()
        rates.append(ctx.work.amount * spec.burst_launches / (launch.elapsed_ms * 1e-3) / 1e12)
        if spec.records:
            clocks.append(Records.from_words(launch.timing[:spec.grid * RECORD_WORDS]).sm_clock_mhz())
        watts.append(readings.power_w)
        seen += readings.readings
    ours = np.asarray(rates)
    clock = float(np.median(clocks)) if clocks else None
    reason = f"fixed: {spec.bursts} bursts of {spec.burst_launches} launches, each after {spec.idle_s:g} s idle"
    common = dict(launch=dict(spec.launch), sm_clock_mhz=clock, stop_reason=reason, gpu_state=burst_state(seen))
    note = (f"{spec.grid} blocks of {spec.threads} threads; each sample a batch of {spec.burst_launches} launches after "
            f"{spec.idle_s:g} s idle, timed as one; {len(seen)} NVML readings during the batches"
            + (f"; {spec.notes}" if spec.notes else ""))
    metrics = [Metric("throughput_tflops", throughput_unit(ctx.work), ours, notes=note, **common)]
    if ctx.peak and clocks:
        peak = ctx.sm_count * ctx.peak * np.asarray(clocks) * 1e6 / 1e12
        metrics.append(Metric("peak_fraction", "ratio", ours / peak, notes="each burst against the peak at the "
                              "in-kernel clock of its last launch", **common))
    measured = np.asarray([w for w in watts if w is not None], dtype=np.float64)
    if measured.size:
        metrics.append(Metric("power_burst_w", "W", measured, notes=f"NVML's instantaneous board power during the "
                              f"batch, its readings' mean per burst ({measured.size} of {spec.bursts} bursts had one)",
                              **common))
    return metrics
