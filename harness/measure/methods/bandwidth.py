"""Bandwidth: every SM runs B blocks that each move a known number of bytes per loop iteration; whole-GPU bytes
per second from CUDA events, launches sized to a few milliseconds."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from harness.measure.measurement import Metric, Work
from harness.measure.methods.base import Context, Method, MethodSpec, Row, Simulation, declare
from harness.measure.timing import RECORD_WORDS, Records, collect

CALIBRATION_COPIES = 32  # loop iterations of the first launch that sizes a bandwidth launch


@dataclass(frozen=True)
class BandwidthPoint:
    kernel: str
    blocks_per_sm: int
    threads: int
    bytes_per_iter: int  # bytes one block moves per loop iteration
    launch: dict


@dataclass(frozen=True)
class Bandwidth(MethodSpec):
    points: tuple[BandwidthPoint, ...]
    grid_multiple: int = 1  # the kernel's cluster size: the grid is a multiple of it
    notes: str = ""
    target_ms: float = 3.0  # the length of a timed launch

    def declares(self, work: Work) -> list[tuple[str, str]]:
        return [("bandwidth_gbps", "GB/s")] if self.points else []


@declare
class BandwidthMethod(Method):
    spec = Bandwidth

    def measure(self, spec: Bandwidth, ctx: Context) -> list[Metric]:
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
            note = (f"{grid} blocks x {iters} iterations x {point.bytes_per_iter} B"
                    + (f"; {spec.notes}" if spec.notes else ""))
            metrics.append(Metric("bandwidth_gbps", "GB/s", np.asarray(collected.values), dict(point.launch),
                                  sm_clock_mhz=float(np.median(clocks[-kept:])), notes=note,
                                  stop_reason=collected.stop_reason, gpu_state=window.state))
        return metrics

    def simulate(self, spec: Bandwidth, sim: Simulation) -> list[Row]:
        """More in flight, more bytes per second, up to 3000 GB/s."""
        return [("bandwidth_gbps", "GB/s", min(3000.0, 250.0 * point.blocks_per_sm * point.launch.get("stages", 4)),
                 point.launch) for point in spec.points]
