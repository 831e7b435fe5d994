"""The SIMT sections of `bench report`: latency, issue interval and best rate per instruction, against the CUDA
Programming Guide's rate where one was found (reference.py), and what each instruction compiles to."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from harness.families.simt.ops import OPS
from harness.families.simt.reference import PEAK_RESULTS_PER_SM


def figures(ctx) -> list:
    frame = ctx.measured[ctx.measured.family == "simt"].copy()
    if frame.empty:
        return []
    frame["warps"] = frame.launch.map(lambda text: json.loads(text).get("warps"))
    frame["ilp"] = frame.launch.map(lambda text: json.loads(text).get("ilp"))
    cycles = frame[frame.metric.isin(["latency_cycles", "issue_interval_cycles", "call_interval_cycles"])]
    cycles = cycles.pivot_table(index="case_id", columns="metric", values="value", aggfunc="first")
    interval = cycles.get("issue_interval_cycles", pd.Series(dtype=float))
    if "call_interval_cycles" in cycles:
        interval = interval.reindex(cycles.index).fillna(cycles["call_interval_cycles"])
    best = frame[frame.metric == "sm_throughput"].sort_values("value", ascending=False).groupby("case_id").first()
    names = pd.Series({case_id: case_id.removeprefix("simt.") for case_id in cycles.index})
    guide = names.map(lambda name: PEAK_RESULTS_PER_SM.get(OPS[name].throughput) if name in OPS else None)
    table = pd.DataFrame({
        "latency (cycles)": cycles.get("latency_cycles").round(2),
        "issue interval, one warp, 8 chains (cycles)": interval.round(2),
        "best results/cycle/SM": best.value.round(1),
        "at warps x ILP": best.warps.astype("Int64").astype(str) + " x " + best.ilp.astype("Int64").astype(str),
        "guide, CC 9.0": guide,
        "of the guide": (best.value / guide.astype(float)).round(3),
        "runs as": names.map(lambda name: OPS[name].executes if name in OPS else ""),
    }).reset_index().rename(columns={"index": "case_id"})
    return [("SIMT instructions: latency, issue interval and best rate", [
        "Latency: one warp's dependent chain of the instruction (its step: `bench show CASE`; ex2 and rcp chain "
        "through a negation folded into the MUFU operand, lg2's step is lg2 then ex2). Issue interval: one warp "
        "with 8 independent chains. Best rate: every SM with 1..32 warps x 1, 2 or 4 chains, results per cycle "
        "per SM as the CUDA Programming Guide counts them (an x2 instruction makes two). 'guide, CC 9.0': the "
        "guide's rate where a copy of its 9.0 column was found (docs/simt.md); blank where none was."], table)]
