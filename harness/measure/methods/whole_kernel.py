"""WholeKernel: one launch is the whole job (a GEMM): rounds of back-to-back launches timed by CUDA events,
alternating with an anchor (a library call on the same inputs) whose rounds give the ratio; the kernel's per-block
counters say where its time went. With `idle_s`, bursts instead (_measure_burst): a batch of launches after the GPU
idled, the SM clock and power read by NVML while it runs (the seed HGEMM worklog's protocol, docs/gemm.md)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from harness.measure.gpustate import burst_state
from harness.measure.measurement import Metric, Work
import harness.measure.methods.energy as energy
from harness.measure.methods.base import Context, Method, MethodSpec, Row, Simulation, declare, throughput_unit
from harness.measure.timing import RECORD_WORDS, Records

# The simulated GPU's answer: the kernel's work at this fraction of the peak rate, its anchor's at that one
SIMULATED_FRACTION, SIMULATED_ANCHOR_FRACTION = 0.7, 0.72
# ... and a burst's (idle_s): a cool board's higher clock, the power of a short batch
SIMULATED_BURST_CLOCK_MHZ, SIMULATED_BURST_POWER_W = 1980.0, 450.0


@dataclass(frozen=True)
class Counter:
    """A per-block int64 the kernel writes after its timing records (word `index` of `words` per block):
    stored as `metric`, the median over blocks of counter / counter `per` (None: over the block's cycles
    from its record). `counted`: only the counting build writes it (WholeKernel.counted_kernel), so it is read from
    that kernel's launch after each round, not from the timed kernel's."""

    metric: str
    unit: str
    index: int
    per: int | None = None
    counted: bool = False


WHOLE_KERNEL_ROUNDS = 12  # alternating rounds of the kernel and its anchor (each a block of launches)
WHOLE_KERNEL_ROUND_MS = 25.0  # the length of one round's block of launches
WHOLE_KERNEL_WARMUP_S = 0.5  # launches before the first round: clocks and power settle


@dataclass(frozen=True)
class WholeKernel(MethodSpec):
    """`kernel` is the whole job: `grid` blocks of `threads`, launched with `iters` (the problem it runs).
    Samples are rounds of back-to-back launches (a block of calls sized to WHOLE_KERNEL_ROUND_MS, captured
    once into a CUDA graph and replayed, so that a kernel shorter than a launch call's host time is not timed
    at the host's dispatch rate; a contender that cannot be captured is launched call by call, and a round
    whose enqueueing took the host 90 % of the GPU's time is counted host-bound in the notes), timed by CUDA
    events; work per launch is the family's
    Work. With an `anchor` (another kernel of the probe, e.g. a library call on the same inputs), rounds
    alternate kernel, anchor, kernel, ... and each pair gives `anchor_metric`, the kernel's rate over the
    anchor's: both see the same clock and power state, which a long run of one then the other does not.
    The block's counters (`counters`, `words` per block after the records) become metrics too; those only a
    counting build of the kernel writes (Counter.counted: a pipeline's waits, whose clock reads would slow the timed
    kernel) come from one launch of `counted_kernel` after each round, outside the rounds' timing."""

    kernel: str
    grid: int
    threads: int
    iters: int = 1
    anchor: str | None = None
    anchor_metric: str = "library_fraction"
    counters: tuple[Counter, ...] = ()
    words: int = 0  # counter words per block
    counted_kernel: str | None = None  # the build that writes the Counter.counted counters (launched apart)
    launch: dict = field(default_factory=dict)
    notes: str = ""
    # The kernel writes a timing record per block (ptx/common.cuh): the SM clock it ran at, and the peak
    # fraction at that clock. A host call (a library) writes none: no clock is claimed for it.
    records: bool = True
    # After the rounds, the kernel alone back to back for ENERGY_SECONDS: the board's mean power over that
    # window, and from it energy_efficiency and energy_pj_per_op (the rounds, 0.3 s of each contender
    # interleaved, are too short for NVML's energy counter and mix the two)
    energy: bool = False
    # The burst protocol (_measure_burst), where idle_s > 0: each sample is `burst_launches` launches back to back
    # after `idle_s` seconds of an idle GPU, timed by CUDA events as one batch, `bursts` samples; no anchor alongside.
    idle_s: float = 0.0
    burst_launches: int = 8
    bursts: int = 5

    def __post_init__(self):
        if self.idle_s and (self.anchor or self.energy or self.counters):
            raise ValueError("a burst (idle_s) times the kernel alone: no anchor, energy window or counters")
        if any(c.counted for c in self.counters) and not self.counted_kernel:
            raise ValueError("a counted counter needs the counting build (counted_kernel) to read it from")

    def declares(self, work: Work) -> list[tuple[str, str]]:
        if self.idle_s:
            return ([("throughput_tflops", throughput_unit(work))] + ([("peak_fraction", "ratio")] if self.records else [])
                    + [("power_burst_w", "W")])
        names = [("throughput_tflops", throughput_unit(work))] + ([("peak_fraction", "ratio")] if self.records else [])
        names += [(self.anchor_metric, "ratio")] if self.anchor else []
        names += energy.energy_metrics(work) if self.energy else []
        return names + [(c.metric, c.unit) for c in self.counters]


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
        while time.perf_counter() - started < energy.ENERGY_SECONDS:
            launch = run_block()
            blocks += 1
            host_bound += launch.host_seconds >= 0.9 * launch.elapsed_ms * 1e-3
            if spec.records:  # the clock the kernel measured, as for the rounds
                clocks.append(Records.from_words(launch.timing[:spec.grid * RECORD_WORDS]).sm_clock_mhz())
        seconds = time.perf_counter() - started
    rate = ctx.work.amount * calls * blocks / seconds / 1e12
    own = dict(common, gpu_state=window.state, sm_clock_mhz=float(np.median(clocks)) if clocks else None,
               stop_reason=f"fixed: {energy.ENERGY_SECONDS:g} s of back-to-back rounds of the kernel alone")
    metrics = energy.window_energy_metrics(window.state, rate, ctx.work, own, "the window's work over its wall time")
    for metric in metrics:
        metric.notes += f"; {blocks} blocks of {calls} launches" + (f", {host_bound} host-bound" if host_bound else "")
    return metrics


def _measure(spec: WholeKernel, ctx: Context) -> list[Metric]:
    if spec.idle_s:
        return _measure_burst(spec, ctx)
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

    period = getattr(ctx.probe, "period", 1)  # launches before the inputs' copies repeat (Attachment.rotation)

    def calls_for(kernel: str) -> int:
        """Launches per round: enough for WHOLE_KERNEL_ROUND_MS, from one launch and then a block of them, in whole
        turns of the inputs' copies."""
        calls = period
        for _ in range(2):
            calls = max(1, int(calls * WHOLE_KERNEL_ROUND_MS / max(block(kernel, calls).elapsed_ms, 1e-3)))
            calls = -(-calls // period) * period
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
    clocks, counters, counted = [], [], []
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
            if spec.counted_kernel:  # one launch of the counting build, untimed by the rounds
                launch = ctx.probe.run(spec.counted_kernel, spec.grid, spec.threads, spec.iters, words)
                records = Records.from_words(launch.timing[:spec.grid * RECORD_WORDS])
                counted.append((records, launch.timing[spec.grid * RECORD_WORDS:].reshape(spec.grid, spec.words)))
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
        for records, table in (counted if counter.counted else counters):
            denominator = (records.cycles if counter.per is None else table[:, counter.per]).astype(np.float64)
            used = denominator > 0
            values.append(float(np.median(table[used, counter.index] / denominator[used])) if used.any() else np.nan)
        source = (f"of a launch of {spec.counted_kernel} (the build that counts its waits) after each round"
                  if counter.counted else "of each round's last launch")
        metrics.append(Metric(counter.metric, counter.unit, np.asarray(values),
                              notes=f"the median over blocks {source}", **common))
    return metrics


# -- WholeKernel's burst protocol --------------------------------------------------------------------------------------

def _measure_burst(spec: WholeKernel, ctx: Context) -> list[Metric]:
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


@declare
class WholeKernelMethod(Method):
    spec = WholeKernel

    def measure(self, spec: WholeKernel, ctx: Context) -> list[Metric]:
        return _measure(spec, ctx)

    def simulate(self, spec: WholeKernel, sim: Simulation) -> list[Row]:
        work, peak = sim.work, sim.peak
        if spec.idle_s:  # a burst: the same fraction of the peak at a cool board's clock, and its power
            rate = SIMULATED_FRACTION * (peak or 1024.0) * sim.sm_count * SIMULATED_BURST_CLOCK_MHZ * 1e6 / 1e12
            rows = [("throughput_tflops", throughput_unit(work), rate, spec.launch)]
            rows += [("peak_fraction", "ratio", SIMULATED_FRACTION, spec.launch)] if peak and spec.records else []
            return rows + [("power_burst_w", "W", SIMULATED_BURST_POWER_W, spec.launch)]
        per_second = SIMULATED_FRACTION * (peak or 1024.0) * sim.sm_count * sim.clock_mhz * 1e6
        rate = work.amount / (work.amount / per_second) / 1e12
        rows = [("throughput_tflops", throughput_unit(work), rate, spec.launch)]
        rows += [("peak_fraction", "ratio", SIMULATED_FRACTION, spec.launch)] if peak and spec.records else []
        ratio = SIMULATED_FRACTION / SIMULATED_ANCHOR_FRACTION
        rows += [(spec.anchor_metric, "ratio", ratio, spec.launch)] if spec.anchor else []
        rows += energy.simulated_energy(work, rate, sim.power_w, spec.launch) if spec.energy else []
        return rows + [(c.metric, c.unit, 1000.0, spec.launch) for c in spec.counters]
