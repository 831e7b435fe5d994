"""The seed architecture chapter's H100 SXM figures (harness/db/data/references/seed_gpu_architecture_h100.csv):
the words every reader of them shares. Below the families: each family that measures one of the chapter's
figures maps its row in its own `paper_row` (or `paper_case`, for the tensor-core and FP64 peaks, which carry
an instruction and shape), with the chapter's clocks and SM count from here; harness/published.py asks them,
and a figure no family claims keeps the reason given here (a device property, a limit, a link).

The peaks stand beside the boost clock the chapter prints with them (its sm_clock rows), so that compare takes
them per cycle at that clock. A range ("~20-30 cycles") is loaded as its low end with the high end in its notes
(RANGE), and compare judges ours against the nearer end."""

from __future__ import annotations

import re

SOURCE = "seed-gpu-architecture-h100"
FILE = "seed_gpu_architecture_h100.csv"
RANGE = re.compile(r"^stated as the range ([0-9.]+)-([0-9.]+) ")  # written by range_note, read by compare
CHAPTER_CLOCK_MHZ = 1800.0  # the "1.8 GHz" its shared-memory arithmetic (Sec. 4.1) multiplies by
BOOST_CLOCK_MHZ = 1830.0  # the spec box's boost clock (Sec. 1.2), beside its peaks
SMS = 132  # the spec box's SMs


def range_note(low: str, high: str, unit: str) -> str:
    return f"stated as the range {low}-{high} {unit}; compared with its nearer end. "


def figure_range(notes: str | None) -> tuple[float, float] | None:
    """(low, high) of a figure stated as a range (range_note), else None."""
    match = RANGE.match(notes or "")
    return (float(match.group(1)), float(match.group(2))) if match else None


_DEVICE = ("a device property, not a measurement: every run stores its device (`bench sql \"SELECT * FROM devices\"`)"
           " and no case times it")
_LIMIT = "a launch limit the CUDA occupancy API reports, not a rate or a latency: no case times it"
REASONS = {
    "sm_count": _DEVICE + " (results.sm_count: 132 on the H100 runs of record)",
    "memory_capacity": _DEVICE, "memory_bus_width": _DEVICE, "hbm_stacks": _DEVICE,
    "hbm_stack_capacity": _DEVICE, "register_file_per_sm": _DEVICE, "l1_shared_per_sm": _DEVICE,
    "shared_memory_per_sm_max": _LIMIT, "max_threads_per_sm": _LIMIT, "max_blocks_per_sm": _LIMIT,
    "max_threads_per_block": _LIMIT, "max_warps_per_sm": _LIMIT,
    "power_limit": "the board's power limit: NVML reads it with every run; no case measures a limit",
    "boost_clock": ("a clock, not a measurement: compare takes each spec-box peak per cycle per SM at it (its "
                    "sm_clock rows); ours is measured in every kernel (results.sm_clock_mhz)"),
    "fp32_lanes_total": "arithmetic (132 SMs x 128 lanes): the per-SM rate is mapped (fp32_lanes_per_sm)",
    "texture_units_per_sm": "no case of ours uses the texture path",
    "bandwidth_nvlink": "a link between GPUs: every case runs on one GPU", "bandwidth_nvswitch":
        "a link between GPUs: every case runs on one GPU",
    "warp_schedulers_per_sm": ("a count of units: the dispatch rate it implies (4 warp instructions a cycle) is "
                               "mapped from Sec. 7.1"),
    "warps_per_scheduler": ("resident warps are a launch limit, not timed; and it does not hold: Sec. 2.4's 64 warps "
                            "per SM over 4 schedulers is 16 each"),
    "register_allocation_unit": ("a launch limit, not timed; and it does not hold as its code uses it: registers "
                                 "are allocated 256 per warp (8 per thread), not per thread"),
    "register_banks": ("PTX names virtual registers and ptxas assigns the physical ones, and with them their banks: "
                       "no probe written in PTX can put an instruction's operands in one bank on purpose (Sec. 7.1's "
                       "read ports: see its row)"),
    "shared_memory_banks": ("the bank structure: 32 x 4 bytes a cycle is the 128 B/cycle/SM mapped from the same "
                            "section; the bank-conflict suite measures the 32-bank model itself, "
                            "whose cases each predict a rate, not a bank count"),
}


def unmapped_reason(metric: str) -> str:
    """Why a figure of the chapter that no family claims (Family.paper_row) has no case of ours."""
    return REASONS.get(metric, f"a figure ({metric}) with no case of ours")
