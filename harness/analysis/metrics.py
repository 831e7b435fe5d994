"""Every metric, declared once: what compare and report need to treat it (docs/architecture.md, "Metrics").

    basis   "cycles": counted by clock64, independent of the clock speed, compare across GPUs as is;
            "seconds": timed by CUDA events, follow the SM clock (scaled by the in-kernel clock);
            "ratio": derived from another metric.
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
    MetricInfo("latency_cycles", "cycles", "cycles", None, "lower",
               "one instruction from issue to completion: a dependent chain's slope, or net of a bracketing sequence"),
    MetricInfo("latency_raw_cycles", "cycles", "cycles", None, "lower",
               "the bracketed sequence with the instruction, its overhead included"),
    MetricInfo("latency_first_use_cycles", "cycles", "cycles", None, "lower",
               "latency_cycles of the first repetition of a launch (a tensor map's first use in it)"),
    MetricInfo("sm_throughput", "work/cycle/SM", "cycles", "work", "higher",
               "work per cycle per SM with every SM busy, by clock64 (FLOP, OP or bytes)"),
    MetricInfo("throughput_tflops", "TFLOPS", "seconds", "work", "higher",
               "whole-GPU work per second by CUDA events (TFLOPS, or TOPS for integer and bit types)"),
    MetricInfo("peak_fraction", "ratio", "ratio", None, "higher",
               "throughput_tflops over the dense tensor-core peak at the SM clock measured in the kernel"),
    MetricInfo("bandwidth_gbps", "GB/s", "seconds", "bytes", "higher", "whole-GPU bytes per second (1e9 B/s)"),
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
