"""What a wgmma case measures and how (the measurement methods' specs): one warpgroup's chain (issue interval), one
wgmma bracketed by the same sequence without it, every SM with 1 and with the most warpgroups, and at N = 256 the
other input distributions, energy and bursts after idle."""

from __future__ import annotations

from dataclasses import replace

from harness.families.wgmma.cases import DEFAULT_LAYOUT, PAPER_N, WgmmaCase
from harness.families.wgmma.checks import INPUT_DISTRIBUTIONS
from harness.families.wgmma.fragments import WARPGROUP_THREADS
from harness.families.wgmma.probe import UNROLL
from harness.measure.methods import BracketedLatency, ChainSlope, OccupancySweep, SweepPoint

MAX_WARPGROUPS_PER_SM = 4  # 512 threads: what 4 SM sub-partitions issue from
DISTRIBUTION_N = 256  # the N whose throughput is measured on every input distribution
# At DISTRIBUTION_N the types of 2501.12084 Table 13 (power and energy efficiency of wgmma at N = 256)
# are also measured for energy on these distributions: ours, all zeros, and the paper program's fill.
ENERGY_TYPES = {("f16", "f16"), ("f16", "f32"), ("tf32", "f32"), ("e4m3", "f16"), ("e4m3", "f32"), ("s8", "s32")}
ENERGY_INPUTS = ("random", "zeros", "uniform11")
# Sustained against burst. Our whole-GPU samples are back-to-back launches of ~9 ms: a sustained load,
# clocked down by the power cap. The paper's program (HPMLL/NVIDIA-Hopper-Benchmark) times one ~7 ms
# launch per process, a burst from an idle GPU. At N = 256 the dense forms are also timed that way,
# on that program's two fills: each sampled launch follows BURST_IDLE_MS of idle. A chosen setting, not a
# measured threshold: runs 39/40 used 100 ms, after which 4 of the H200's burst rows stayed up to 0.12 %
# under the minimum of that program's launches (one process each, so idle for longer); hence 250 ms.
BURST_INPUTS = ("zeros", "uniform11")
BURST_IDLE_MS = 250.0


def plan(case: WgmmaCase, device=None) -> list:
    """The issue interval of one warpgroup's chain; fence+wgmma+commit+wait against the same
    without the wgmma; every SM with 1 warpgroup, then with 4 (or the most the registers allow); at
    N = 256 (default layout) also with one warpgroup on each other input distribution (validated
    first), to show what the data do to power and clock, and (dense) as bursts after idle on
    BURST_INPUTS.

    Work per cycle per SM (clock64) is measured in every case; the whole-GPU rate (CUDA events, ~9 ms
    launches, ~0.2 s a point) only where a published figure compares with it: the paper's N
    (PAPER_N), default layout. Under the power cap its samples swing by 1-2 % as the controller settles, so each point
    takes 14-20 of them; at every N they were 40 % of the `tensor` suite's time.
    Runs 1-19 swept 1, 2, 3 and 4 warpgroups: one warpgroup already issued at the full rate of every
    case (2244 cases, all within 0.04 %), so 2 and 3 added no information, only time; 4 stays, by
    clock64, as the check that one is enough."""
    one = {"warpgroups": 1, "ilp": 1}
    point = lambda w: SweepPoint("probe_chain", w, 1, {"warpgroups": w, "ilp": 1})  # noqa: E731
    full = range(MAX_WARPGROUPS_PER_SM, 1, -1)
    most = replace(point(full[0]), fallback=tuple(point(w) for w in full[1:]))
    compared = case.n in PAPER_N and case.layout == DEFAULT_LAYOUT  # where the paper has a point
    distributions = case.energy and case.n == DISTRIBUTION_N and case.layout == DEFAULT_LAYOUT
    energy = distributions and (case.dtype_a, case.dtype_acc) in ENERGY_TYPES and case.dtype_b == case.dtype_a
    others = []
    if distributions:
        others = [OccupancySweep((SweepPoint("probe_chain", 1, 1, {**one, "inputs": name}),), WARPGROUP_THREADS,
                                 UNROLL, inputs=name, energy=energy and name in ENERGY_INPUTS)
                  for name in INPUT_DISTRIBUTIONS if name != "random"]
        if not case.sparse:
            others += [OccupancySweep((SweepPoint("probe_chain", 1, 1,
                                                  {**one, "inputs": name, "idle_ms": BURST_IDLE_MS}),),
                                      WARPGROUP_THREADS, UNROLL, inputs=name, idle_ms=BURST_IDLE_MS)
                       for name in BURST_INPUTS]
    return [ChainSlope("issue_interval_cycles", "probe_chain", WARPGROUP_THREADS, unroll=UNROLL, launch=one),
            # One wgmma's round trip (fence to results usable) is latency_raw_cycles; less the same
            # sequence without it, what it adds (latency_added_cycles): the empty sequence's wait
            # overlaps the wgmma, so that is no latency and can be below the issue interval.
            BracketedLatency("probe_latency", "probe_latency_empty", WARPGROUP_THREADS,
                             "fence+commit+wait_group 0 without the wgmma", launch=one,
                             net_metric="latency_added_cycles"),
            OccupancySweep((point(1),), WARPGROUP_THREADS, UNROLL,
                           whole_gpu="every" if compared else "none", energy=energy),
            OccupancySweep((most,), WARPGROUP_THREADS, UNROLL, whole_gpu="none")] + others
