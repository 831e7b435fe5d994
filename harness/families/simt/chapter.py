"""The seed architecture chapter's CUDA-core figures (harness/seed_chapter.py) mapped to the simt family's cases:
its FP32 lanes, dispatch rate and FP32 peak to the FFMA stream, its SFUs to the MUFU stream; and why its
register-file figures have none."""

from __future__ import annotations

FFMA, MUFU = "simt.fma.rn.f32", "simt.ex2.approx.ftz.f32"
WARP = 32  # threads a warp instruction issues for

REASONS = {
    "latency_register": ("no probe isolates an operand read: it is inside every instruction's dependent latency "
                         f"({FFMA} latency_cycles: 4)"),
    "bandwidth_register_per_sm": (f"no case measures the register file's bandwidth; the FFMA stream ({FFMA} "
                                  "sm_throughput) reads at most 3 x 4 bytes a lane, a lower bound"),
    "register_file_read_per_sm": (f"no case reads registers alone; and it does not hold: {FFMA} makes 122 "
                                  "results a cycle an SM (run 114), each reading at least one 32-bit register, "
                                  "over 15 x the 8 a cycle this allows"),
}


def chapter_row(row: dict) -> dict | str | None:
    """Our case, metric and value of one of the chapter's rows, why it has none (a string), or None: not ours."""
    metric, value, unit = row["metric"], float(row["value"]), row["unit"]
    if metric in REASONS:
        return REASONS[metric]
    if metric in ("fp32_lanes_per_sm", "dispatch_warp_instructions"):
        results = value * (WARP if metric == "dispatch_warp_instructions" else 1)
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
    return None
