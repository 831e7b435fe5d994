"""The memory family's sections of `bench report`: each level's latency and throughput beside the
papers' (bench compare), with why a figure differs, and the distribution of single loads from the L2
and from HBM."""

from __future__ import annotations

import json

import pandas as pd

from harness.verdicts import AGREES

def figures(ctx) -> list:
    frame = ctx.measured[ctx.measured.family == "memory"]
    if frame.empty:
        return []
    rows = ctx.against[(ctx.against.family == "memory") & ctx.against.paper.notna()]
    table = rows[["case_id", "metric", "launch", "value", "basis", "clock_mhz", "clock_source", "comparable", "paper",
                  "paper_unit", "uncertainty", "paper_ratio", "cycles_ratio", "verdict"]].copy()
    table["why they differ"] = [note if v != AGREES else "" for note, v in zip(rows.note, table.verdict)]
    sections = [("Memory hierarchy beside the papers", [
        "Pointer chases (latency_cycles: the slope of two dependent chains, 256 and 4352 loads) and streams "
        "(sm_throughput: every SM, 4-32 warps of 16-byte loads, the best point) against 2402.13499 Tables IV-V and "
        "2501.12084 Tables 3 and 5. Table 3's L2 and HBM figures (and the authors' random_latency log) are wall time x "
        "1755 MHz: they compare in ns (`basis`), ours at the clock our kernels ran at (`clock_mhz`), the ratio in "
        "cycles beside; Table IV and every level within the SM in cycles. A difference counts beyond 3 % plus the "
        "95 % interval of the median (`uncertainty`). Whole-GPU L2 figures are compared per SM over the paper GPU's 114 SMs. The "
        "index chases add the word to a base each step (an IMAD.WIDE in the SASS): the 64-bit pointer chase "
        "(ld.global.u64) shows what that costs at L1."], table.round(3))]
    from harness.db.distributions import describe, samples

    each = frame[frame.launch.map(lambda launch: json.loads(launch).get("timed") == "each access")
                 & (frame.metric == "latency_cycles")]
    if len(each):
        described = pd.DataFrame([{"case_id": c, **describe(samples(ctx.store, ctx.run_id, c, "latency_cycles", l))}
                                  for c, l in zip(each.case_id, each.launch)])
        sections.append(("Memory hierarchy: single loads", [
            "Each load timed alone (clock, load, a shared store that waits for the word, clock; net of the same "
            "without the load), 508 of them: their spread is where the line sat (near or far L2 partition, an open "
            "DRAM page or not), not noise."], described))
    return sections
