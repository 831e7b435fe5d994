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
    overlap = frame[frame.case_id.str.startswith("simt.overlap.")]
    frame = frame[~frame.case_id.str.startswith("simt.overlap.")]
    sections = _overlap_sections(overlap)
    if frame.empty:
        return sections
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
    return [*sections, ("SIMT instructions: latency, issue interval and best rate", [
        "Latency: one warp's dependent chain of the instruction (its step: `bench show CASE`; ex2 and rcp chain "
        "through a negation folded into the MUFU operand, lg2's step is lg2 then ex2). Issue interval: one warp "
        "with 8 independent chains. Best rate: every SM with 1..32 warps x 1, 2 or 4 chains, results per cycle "
        "per SM as the CUDA Programming Guide counts them (an x2 instruction makes two). 'guide, CC 9.0': the "
        "guide's rate where a copy of its 9.0 column was found (docs/simt.md); blank where none was."], table)]


HEAD_DIMS = (64, 128, 256)


def findings(ctx) -> list:
    """The results site's question for the SIMT family: can MUFU keep up with the tensor cores in attention?
    Per GPU model, from the newest measurements: MUFU's ex2 rate and latency, the tensor cores' best dense rate
    (wgmma's rows of the same GPU, f16 and e4m3), and the share of MUFU's rate that one exp per score takes at each
    head dim (QK^T and PV cost 4 d FLOP a score)."""
    latest = ctx.latest
    ex2 = latest[(latest.case_id == "simt.ex2.approx.ftz.f32")]
    if ex2.empty:
        return []
    rows = []
    for gpu, part in ex2.groupby("gpu_name"):
        rate = part[part.metric == "sm_throughput"].value.max()
        latency = part[part.metric == "latency_cycles"].value.min()
        tensor = latest[(latest.gpu_name == gpu) & (latest.family == "wgmma") & (latest.metric == "sm_throughput")
                        & ~latest.is_sparse.fillna(False).astype(bool)]
        row = {"gpu": gpu, "ex2 results/cycle/SM": round(float(rate), 2), "ex2 latency (cycles)": round(float(latency), 2)}
        for dtype in ("f16", "e4m3"):
            best = tensor[tensor.dtype_a == dtype].value.max()
            if best == best:  # measured on this GPU
                row[f"wgmma {dtype} FLOP/cycle/SM"] = round(float(best))
                for d in HEAD_DIMS:
                    row[f"{dtype} d={d}: exps of MUFU"] = round(float(best) / (4 * d) / float(rate), 2)
        rows.append(row)
    return [("Beside the tensor cores: can MUFU keep up with attention?", [
        "An attention forward pass spends 4 d FLOP on the tensor cores per score (QK^T and PV, d the head dim) and one "
        "exponential on MUFU. At the tensor cores' best dense rate, 'exps of MUFU' is the share of MUFU's measured ex2 "
        "rate the softmax needs: 1.0 means MUFU is as busy as the tensor cores, so softmax can hide only if the two "
        "overlap perfectly and nothing else needs MUFU. From each GPU model's newest measurements; docs/simt.md."],
        pd.DataFrame(rows))]


def _overlap_sections(frame: pd.DataFrame) -> list:
    """What runs beside the tensor cores: per SIMT instruction (rows) and wgmma N (columns), the share of wgmma's
    rate it keeps with the instruction running beside it (its interval alone over beside), and the share of the
    instruction's rate kept beside wgmma."""
    frame = frame[frame.metric == "issue_interval_cycles"].copy()
    if frame.empty:
        return []
    frame["role"] = frame.launch.map(lambda text: json.loads(text).get("role"))
    parts = frame.case_id.str.removeprefix("simt.overlap.").str.rsplit(".", n=1)
    frame["op"], frame["shape"] = parts.str[0], parts.str[1]
    wgmma = frame[frame.role == "wgmma"].pivot_table(index="op", columns="shape", values="value", aggfunc="first")
    simt = frame[frame.role == "simt"].pivot_table(index="op", columns="shape", values="value", aggfunc="first")
    rows = []
    for op in [o for o in simt.index]:
        row = {"beside wgmma": op, "alone (cycles/instr, a warp)": round(float(simt.loc[op].get("alone", np.nan)), 2)}
        for shape in [c for c in wgmma.columns]:
            alone_w = wgmma.loc["none", shape] if "none" in wgmma.index else np.nan
            together_w = wgmma.loc[op, shape] if op in wgmma.index else np.nan
            row[f"{shape}: wgmma kept"] = round(float(alone_w / together_w), 3)
            row[f"{shape}: {op.split('.')[0]} kept"] = round(float(simt.loc[op].get("alone", np.nan) / simt.loc[op, shape]), 3) \
                if shape in simt.columns else np.nan
        rows.append(row)
    intervals = wgmma.round(2).reset_index().rename(columns={"op": "beside"})
    return [("Beside the tensor cores: what each side keeps of its rate", [
        "One SM: warpgroup 0 issues wgmma m64nNk16 (f16 -> f32, A and B in shared memory) back to back; warpgroup 1's "
        "four warps (one per scheduler) run 8 independent chains each of a SIMT instruction. Each side is timed while "
        "the other runs (the other runs until it is done), and alone. 'kept' is the side's interval alone over its "
        "interval beside the other: 1 means the other costs it nothing."], pd.DataFrame(rows)),
            ("Beside the tensor cores: cycles per wgmma", [
        "Warpgroup 0's cycles per wgmma, alone (beside 'none') and beside each instruction."], intervals)]
