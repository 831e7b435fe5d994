"""HostCall: a host-issued operation (a copy through the copy engines, a library call) timed as the host issues it.

The operation is the probe's host kernel (harness/measure/launch.py HostKernel: a call that enqueues its work on
CuPy's current stream, and may fork to other streams and join them back). A sample is a block of calls back to back
between two CUDA events on the current stream (LoadedProbe.run), sized to about `round_ms`; its rate is the family's
Work per call (bytes, FLOP, ...) times the calls over the events' time. The samples are collected under the run's
timing policy (warm-up, then until the spread settles: harness/measure/timing.py) and stored as every method's are
(the median is the value, the samples its spread). Unlike WholeKernel, which stores a kernel's rate as
throughput_tflops with its in-kernel clock, the spec names the metric and its scale (bandwidth_gbps: 1e9 B/s), and
no clock is claimed: a host call writes no timing record.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from harness.measure.measurement import Metric, Work
from harness.measure.methods.base import Context, Method, MethodSpec, Row, Simulation, declare
from harness.measure.timing import collect

HOST_CALL_ROUND_MS = 20.0  # the length of one sample's block of calls


@dataclass(frozen=True)
class HostCall(MethodSpec):
    """`kernel`: the host kernel that is the operation; its rate stored as `metric` in `unit`, work per second over
    `scale` (the family's Work per call). `simulated`: what the simulated GPU answers (never a measurement)."""

    kernel: str
    metric: str = "bandwidth_gbps"
    unit: str = "GB/s"
    scale: float = 1e9
    launch: dict = field(default_factory=dict)
    notes: str = ""
    round_ms: float = HOST_CALL_ROUND_MS
    simulated: float = 1.0

    def declares(self, work: Work) -> list[tuple[str, str]]:
        return [(self.metric, self.unit)]


def calls_per_sample(elapsed_ms, round_ms: float) -> int:
    """Calls in a sample of about `round_ms`: from one call, then from a block of that many (`elapsed_ms(calls)`)."""
    calls = 1
    for _ in range(2):
        calls = max(1, int(calls * round_ms / max(elapsed_ms(calls), 1e-3)))
    return calls


@declare
class HostCallMethod(Method):
    spec = HostCall

    def measure(self, spec: HostCall, ctx: Context) -> list[Metric]:
        def block(calls: int):
            return ctx.probe.run(spec.kernel, 1, 1, 1, 1, repeat=calls)

        calls = calls_per_sample(lambda n: block(n).elapsed_ms, spec.round_ms)
        host_bound = []

        def sample() -> float:
            launch = block(calls)
            host_bound.append(launch.host_seconds >= 0.9 * launch.elapsed_ms * 1e-3)
            return ctx.work.amount * calls / (launch.elapsed_ms * 1e-3) / spec.scale

        window = ctx.sampler.window()
        with window:
            collected = collect(sample, ctx.policy)
        kept = len(collected.values)
        bound = sum(host_bound[-kept:])
        note = (f"{calls} calls of {spec.kernel} per sample between CUDA events"
                + (f", the host still issuing at the end in {bound} of {kept} samples" if bound else "")
                + (f"; {spec.notes}" if spec.notes else ""))
        return [Metric(spec.metric, spec.unit, np.asarray(collected.values), dict(spec.launch), sm_clock_mhz=None,
                       notes=note, stop_reason=collected.stop_reason, gpu_state=window.state)]

    def simulate(self, spec: HostCall, sim: Simulation) -> list[Row]:
        return [(spec.metric, spec.unit, spec.simulated, spec.launch)]
