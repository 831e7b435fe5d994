"""Every metric, declared once: what compare and report need to treat it (docs/architecture.md, "Metrics").

    basis   "cycles": counted by clock64, independent of the clock speed, compare across GPUs as is;
            "seconds": timed by CUDA events, follow the SM clock (scaled by the in-kernel clock);
            "ratio": derived from another metric;
            "energy": NVML's energy counter over a timed series (power and efficiency follow the GPU's
                      power limit, its inputs and its clock: compared for context, never per cycle).
    work    what the metric counts per unit time ("work": FLOP, OP or bytes, as the family says), or None
    better  "lower" or "higher"
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.errors import SpecError


@dataclass(frozen=True)
class MetricInfo:
    name: str
    unit: str
    basis: str
    work: str | None
    better: str
    description: str


METRICS = {m.name: m for m in (
    MetricInfo("issue_interval_cycles", "cycles", "cycles", None, "lower",
               "steady-state cycles per instruction of a back-to-back chain on one SM"),
    MetricInfo("call_interval_cycles", "cycles", "cycles", None, "lower",
               "an emulated form (no native instruction: ptxas runs a routine of other instructions) timed as an "
               "issue interval would be, cycles per PTX instruction of one warp with independent accumulators; "
               "nothing is issued as one instruction, and independent calls can cost more each than dependent "
               "ones (register pressure), so it may exceed the form's latency_cycles"),
    MetricInfo("latency_cycles", "cycles", "cycles", None, "lower",
               "one instruction from issue to completion: a dependent chain's slope, or net of two clock reads"),
    MetricInfo("latency_added_cycles", "cycles", "cycles", None, "lower",
               "what one instruction adds to the sequence that must bracket it (a fence before it, a commit and a wait after it); part of "
               "that sequence overlaps the instruction, so this is below the round trip (latency_raw_cycles) and "
               "may be below the issue interval"),
    MetricInfo("store_drain_cycles", "cycles", "cycles", None, "lower",
               "a store from shared to global memory, from issue to its completion as the issuing thread sees it, "
               "net of the same wait without the store: the SM sending the data out, not its arrival in the L2 or "
               "its visibility to another SM"),
    MetricInfo("pingpong_hop_cycles", "cycles", "cycles", None, "lower",
               "one hop of a flag passed between two CTAs (a store into the other's shared memory, seen by its "
               "spin): the store's visibility plus the receiver's detection and its own next store, the same to a "
               "thousandth of a cycle hop after hop, on the grid of the pollers' loops (docs/data-movement.md); "
               "not the store's latency"),
    MetricInfo("roundtrip_cycles", "cycles", "cycles", None, "lower",
               "a flag stored into another CTA's shared memory and stored back by it on seeing it, from the first "
               "store's issue to the reply seen by the sender's spin: two stores' latencies to visibility and two "
               "detections. The sender sees the reply only at its own polls, which start at its store: values lie "
               "on the grid of its poll loop and bound the round trip from above within one period "
               "(docs/data-movement.md)"),
    MetricInfo("latency_raw_cycles", "cycles", "cycles", None, "lower",
               "the bracketed sequence with the instruction, its overhead included (where that sequence is what "
               "using the result takes, the instruction's full round trip, with two clock reads)"),
    MetricInfo("latency_first_use_cycles", "cycles", "cycles", None, "lower",
               "the first repetition of a launch (a tensor map's first use in it), net of the bracketing sequence "
               "without the instruction as latency_added_cycles is"),
    MetricInfo("sm_throughput", "work/cycle/SM", "cycles", "work", "higher",
               "work per cycle per SM with every SM busy, by clock64 (FLOP, OP, bytes or results, as the family counts its work)"),
    MetricInfo("throughput_tflops", "TFLOPS", "seconds", "work", "higher",
               "whole-GPU work per second by CUDA events (TFLOPS, or TOPS for integer and bit types)"),
    MetricInfo("peak_fraction", "ratio", "ratio", None, "higher",
               "throughput_tflops over the published peak of the same kind at the SM clock measured in the "
               "kernel. Tensor cores: dense-equivalent work (2 M N K, K the logical K) against the datasheet's dense "
               "peak, or, for a sparse instruction, against the sparse peak (twice the dense, as the datasheets' "
               "'with sparsity' rates); at most 1. Work counted in results: against the CUDA Programming Guide's "
               "rate for the instruction's row (the family's peak)"),
    MetricInfo("power_mean_w", "W", "energy", None, "lower",
               "mean board power over a whole-GPU timed series: NVML's energy counter difference over the "
               "series' wall time (the mean of the power readings where the GPU has no counter)"),
    MetricInfo("power_burst_w", "W", "energy", None, "lower",
               "board power during a burst (a batch of launches after idle: WholeKernel.idle_s): the mean of NVML's "
               "instantaneous power readings taken while the batch ran, one sample per burst"),
    MetricInfo("energy_efficiency", "work/s/W", "energy", "work", "higher",
               "throughput_tflops over power_mean_w of the same series (TFLOPS/W, TOPS/W)"),
    MetricInfo("energy_pj_per_op", "pJ", "energy", None, "lower",
               "energy per unit of work (FLOP or OP, dense-equivalent): power_mean_w / throughput_tflops"),
    MetricInfo("bandwidth_gbps", "GB/s", "seconds", "bytes", "higher", "whole-GPU bytes per second (1e9 B/s)"),
    MetricInfo("library_fraction", "ratio", "ratio", None, "higher",
               "a kernel's throughput_tflops over a library's on the same problem and inputs, round by "
               "round: rounds of each alternate, so both see the same clock and power state"),
    MetricInfo("cycles_per_kblock", "cycles", "cycles", None, "lower",
               "a pipelined kernel's mainloop cycles per block of the reduction dimension (k-block), the median over "
               "thread blocks"),
    MetricInfo("full_wait_cycles_per_tile", "cycles", "cycles", None, "lower",
               "cycles a consumer warpgroup waited for a slot to fill (the feed was short), per output tile"),
    MetricInfo("empty_wait_cycles_per_tile", "cycles", "cycles", None, "lower",
               "cycles the producer waited for a slot to empty (the tensor cores were busy), per output tile"),
    MetricInfo("epilogue_cycles_per_tile", "cycles", "cycles", None, "lower",
               "cycles a consumer warpgroup spent writing C, per output tile"),
    MetricInfo("l2_capacity_mib", "MiB", "ratio", None, "higher",
               "the L2's capacity as one SM's chase sees it: the footprint (MiB) at which the L2 chase's latency "
               "rises 10 % above its small-footprint plateau, interpolated in the footprint sweep "
               "(harness/families/memory/capacity.py; derived by compare across the sweep's cases)"),
    MetricInfo("l1_capacity_kib", "KiB", "ratio", None, "higher",
               "the L1's capacity as one SM's chase sees it: the footprint (KiB) at which the L1 chase's latency "
               "rises 10 % above its small-footprint plateau, interpolated in the L1's footprint sweep, at the "
               "shared-memory carve-out preference 0 (harness/families/memory/capacity.py SWEEPS; derived by "
               "compare across the sweep's cases)"),
    MetricInfo("roofline_fraction", "ratio", "ratio", None, "higher",
               "bandwidth_gbps over the read roofline measured in the same run (its family's roofline case; "
               "derived by compare)"),
)}


def info(name: str) -> MetricInfo:
    try:
        return METRICS[name]
    except KeyError:
        raise SpecError(f"unknown metric {name!r}: expected one of {', '.join(METRICS)}") from None


def names(basis: str | None = None) -> list[str]:
    return [m.name for m in METRICS.values() if basis is None or m.basis == basis]


def lower_is_better(name: str) -> bool:
    return name in METRICS and METRICS[name].better == "lower"
