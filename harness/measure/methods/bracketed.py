"""BracketedLatency: each repetition times one sequence with and without the instruction, by clock64 on every
thread; the difference is the instruction's latency."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from harness.measure.measurement import Metric, Work
from harness.measure.methods.base import Context, Method, MethodSpec, Row, Simulation, declare

FIRST_USE_LAUNCHES = 16  # launches whose first repetition BracketedLatency(first_use=True) keeps


@dataclass(frozen=True)
class BracketedLatency(MethodSpec):
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


@declare
class BracketedLatencyMethod(Method):
    spec = BracketedLatency

    def measure(self, spec: BracketedLatency, ctx: Context) -> list[Metric]:
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
                                  notes=f"from the clock before the issue, net of {clocks:g} cycles for two clock "
                                        "reads timed in the same launch"))
        metrics += [Metric(spec.net_metric, "cycles", raw - overhead,
                           notes=f"net of {overhead:g} cycles for {spec.overhead}", **common),
                    Metric("latency_raw_cycles", "cycles", raw, **common)]
        if first is not None:
            once = f"fixed: the first repetition of {FIRST_USE_LAUNCHES} launches"
            metrics.append(Metric("latency_first_use_cycles", "cycles", first - overhead, **dict(common, stop_reason=once),
                                  notes=f"the first repetition of each launch, net of {overhead:g} cycles for "
                                        f"{spec.overhead}"))
        return metrics

    def simulate(self, spec: BracketedLatency, sim: Simulation) -> list[Row]:
        first = [("latency_first_use_cycles", "cycles", sim.interval + 60, spec.launch)] if spec.first_use else []
        issued = [("latency_cycles", "cycles", sim.interval + 70, spec.launch)] if spec.issue_stamps else []
        return [*issued, (spec.net_metric, "cycles", sim.interval + 40, spec.launch),
                ("latency_raw_cycles", "cycles", sim.interval + 90, spec.launch), *first]
