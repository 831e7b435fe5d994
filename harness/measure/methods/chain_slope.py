"""ChainSlope: one block on one SM runs a chain of `iters` iterations twice (short, long); cycles per instruction
is the slope, so fixed costs cancel. A dependent chain gives latency, independent accumulators (ILP) the issue
interval. With `short_body`, the same chain in shorter loop bodies too: what a body costs once cancels as well
(docs/chains.md)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from harness.measure.measurement import Metric, Work
from harness.measure.methods.base import Context, Method, MethodSpec, Row, Simulation, declare
from harness.measure.timing import RECORD_WORDS, Records, collect


@dataclass(frozen=True)
class ChainSlope(MethodSpec):
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


@declare
class ChainSlopeMethod(Method):
    spec = ChainSlope

    def measure(self, spec: ChainSlope, ctx: Context) -> list[Metric]:
        words = spec.units * RECORD_WORDS
        clocks: list[float] = []
        slopes: list[np.ndarray] = []

        def per_body(kernel: str, unroll: int) -> np.ndarray:
            """Cycles per loop body of each unit: the slope between the short and the long launch."""
            def records(bodies: int) -> Records:
                return Records.from_words(ctx.probe.run(kernel, spec.grid, spec.threads, bodies * unroll, words).timing)

            a, b = records(spec.short_bodies), records(spec.long_bodies)
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

    def simulate(self, spec: ChainSlope, sim: Simulation) -> list[Row]:
        """The model's interval; a dependent chain (latency) twice that."""
        value = sim.interval if spec.metric == "issue_interval_cycles" else 2 * sim.interval
        return [(spec.metric, "cycles", value, spec.launch)]
