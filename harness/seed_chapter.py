"""The seed architecture chapter's H100 SXM figures (harness/db/data/references/seed_gpu_architecture_h100.csv):
our case and metric for each, in our units, or why none of our cases measures it. Above the families, as
harness/published.py is: it names the cases the memory, simt and tma families measure the figure with.

The tensor-core and FP64 peaks carry an instruction and shape: the wgmma and mma families map them
(Family.paper_case), each beside the boost clock the chapter prints with it (its sm_clock rows), so that
compare takes them per cycle at that clock. A range ("~20-30 cycles") is loaded as its low end with the
high end in its notes (RANGE), and compare judges ours against the nearer end."""

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


def _chase(level: str) -> str:
    return {"shared": "ld.shared.u32.ptrchase", "l1": "ld.global.u64.pchase.l1", "l2": "ld.global.cg.u32.pchase.l2",
            "hbm": "ld.global.cg.u32.pchase.hbm"}[level]


SHARED_STREAM = "ld.shared.v4.u32.stream"
L2_STREAM = "ld.global.cg.v4.u32.stream.l2"
READ_ROOFLINE = "ld.global.v4.u32"  # the tma family's plain HBM reader (its roofline case)
FFMA, MUFU = "simt.fma.rn.f32", "simt.ex2.approx.ftz.f32"
LATENCIES = {"latency_shared": "shared", "latency_l1": "l1", "latency_l2": "l2", "latency_hbm": "hbm"}

_DEVICE = ("a device property, not a measurement: every run stores its device (`bench sql \"SELECT * FROM devices\"`)"
           " and no case times it")
_LIMIT = "a launch limit the CUDA occupancy API reports, not a rate or a latency: no case times it"
REASONS = {
    "sm_count": _DEVICE + " (results.sm_count: 132 on the H100 runs of record)",
    "memory_capacity": _DEVICE, "memory_bus_width": _DEVICE, "l2_capacity": _DEVICE, "hbm_stacks": _DEVICE,
    "hbm_stack_capacity": _DEVICE, "register_file_per_sm": _DEVICE, "l1_shared_per_sm": _DEVICE,
    "shared_memory_per_sm_max": _LIMIT, "max_threads_per_sm": _LIMIT, "max_blocks_per_sm": _LIMIT,
    "max_threads_per_block": _LIMIT, "max_warps_per_sm": _LIMIT,
    "power_limit": "the board's power limit: NVML reads it with every run; no case measures a limit",
    "boost_clock": ("a clock, not a measurement: compare takes each spec-box peak per cycle per SM at it (its "
                    "sm_clock rows); ours is measured in every kernel (results.sm_clock_mhz)"),
    "fp32_lanes_total": "arithmetic (132 SMs x 128 lanes): the per-SM rate is mapped (fp32_lanes_per_sm)",
    "tensor_cores_per_sm": ("a count of units: the tensor-core peaks it implies are mapped (wgmma throughput_tflops "
                            "at the boost clock)"),
    "texture_units_per_sm": "no case of ours uses the texture path",
    "tpc_count": ("a count of units: the dsmem maps (suite maps) pair SMs by distance, a finding in the report, "
                  "not a metric"),
    "bandwidth_nvlink": "a link between GPUs: every case runs on one GPU", "bandwidth_nvswitch":
        "a link between GPUs: every case runs on one GPU",
    "bandwidth_pcie": "the host link: no case times transfers between host and GPU",
    "warp_schedulers_per_sm": ("a count of units: the dispatch rate it implies (4 warp instructions a cycle) is "
                               "mapped from Sec. 7.1"),
    "warps_per_scheduler": ("resident warps are a launch limit, not timed; and it does not hold: Sec. 2.4's 64 warps "
                            "per SM over 4 schedulers is 16 each"),
    "register_allocation_unit": ("a launch limit, not timed; and it does not hold as its code uses it: registers "
                                 "are allocated 256 per warp (8 per thread), not per thread"),
    "latency_register": ("no probe isolates an operand read: it is inside every instruction's dependent latency "
                         "(simt.fma.rn.f32 latency_cycles: 4)"),
    "bandwidth_register_per_sm": ("no case measures the register file's bandwidth; the FFMA stream (simt.fma.rn.f32 "
                                  "sm_throughput) reads at most 3 x 4 bytes a lane, a lower bound"),
    "register_banks": "no case of ours provokes register-bank conflicts (Sec. 7.1's read ports: see its row)",
    "register_file_read_per_sm": ("no case reads registers alone; and it does not hold: simt.fma.rn.f32 makes 122 "
                                  "results a cycle an SM (run 114), each reading at least one 32-bit register, "
                                  "over 15 x the 8 a cycle this allows"),
    "shared_memory_banks": ("the bank structure: 32 x 4 bytes a cycle is the 128 B/cycle/SM mapped from the same "
                            "section; the banks suite (docs/banks.md) measures the 32-bank model itself, whose "
                            "cases each predict a rate, not a bank count"),
}


def counterpart(row: dict) -> dict | str | None:
    """Our case, metric and value of one of the chapter's rows, a reason (str), or None where a family maps the
    row by its instruction (Family.paper_case: the tensor-core and FP64 peaks)."""
    metric, value, unit = row["metric"], float(row["value"]), row["unit"]
    if metric in LATENCIES:
        return {"case_id": _chase(LATENCIES[metric]), "metric": "latency_cycles"}
    if metric in ("bandwidth_shared", "bandwidth_shared_per_sm", "shared_memory_bank_width"):
        if metric == "bandwidth_shared_per_sm":  # TB/s per SM at the 1.8 GHz of its own arithmetic
            per_cycle = value * 1e12 / (CHAPTER_CLOCK_MHZ * 1e6)
            why = f"printed {value:g} {unit} per SM = {per_cycle:.0f} B/cycle at its {CHAPTER_CLOCK_MHZ:g} MHz. "
        elif metric == "shared_memory_bank_width":  # bits a bank a cycle x 32 banks
            per_cycle = value / 8 * 32
            why = f"printed {value:g} bits a bank a cycle x 32 banks = {per_cycle:.0f} B/cycle/SM. "
        else:
            per_cycle, why = value, ""
        return {"case_id": SHARED_STREAM, "metric": "sm_throughput", "value": per_cycle, "unit": "B/cycle/SM",
                "notes": why + row["notes"]}
    if metric == "bandwidth_l2":  # the whole GPU's TB/s: per SM and cycle at the spec box's SMs and boost clock
        per_cycle = value * 1e12 / (SMS * BOOST_CLOCK_MHZ * 1e6)
        return {"case_id": L2_STREAM, "metric": "sm_throughput", "value": per_cycle, "unit": "B/cycle/SM",
                "notes": f"printed {value:g} {unit} = {per_cycle:.1f} B/cycle/SM over {SMS} SMs at the "
                         f"{BOOST_CLOCK_MHZ:g} MHz boost clock (our L2 stream stores per cycle). {row['notes']}"}
    if metric == "bandwidth_hbm":  # wall time, like ours (compare: basis "wall time per SM")
        return {"case_id": READ_ROOFLINE, "metric": "bandwidth_gbps"}
    if metric in ("fp32_lanes_per_sm", "dispatch_warp_instructions"):
        results = value * (32 if metric == "dispatch_warp_instructions" else 1)
        return {"case_id": FFMA, "metric": "sm_throughput", "value": results, "unit": "result/cycle/SM",
                "notes": f"{value:g} {unit} = {results:g} FFMA results a cycle an SM. {row['notes']}".strip()}
    if metric == "sfu_per_sm":
        return {"case_id": MUFU, "metric": "sm_throughput", "value": value, "unit": "result/cycle/SM",
                "notes": f"{value:g} SFUs = {value:g} MUFU results a cycle an SM. {row['notes']}"}
    if row["instruction"] == "fma.rn.f32" and metric in ("throughput", "sm_clock"):  # FMA = 2 FLOP, ours in results
        if metric == "sm_clock":
            return {"case_id": FFMA, "metric": "sm_clock_mhz"}
        return {"case_id": FFMA, "metric": "throughput_tflops", "value": value / 2, "unit": "Tresult/s",
                "notes": f"printed {value:g} {unit} = {value / 2:g} T FMA results/s. {row['notes']}"}
    if row["instruction"] != "na":
        return None
    return REASONS.get(metric, f"a figure ({metric}) with no case of ours")
