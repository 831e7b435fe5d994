"""The tma family's finding (the results site's question and a report's first bullet): what a box, and copies
in flight, deliver against the read roofline, on every GPU model's newest 2-D load measurements."""

from __future__ import annotations

import pandas as pd

from harness.families.tma.fitting import load_latency_metric as latency_metric
from harness.families.tma.plots import figure_box_and_stages
from harness.families.tma.rows import NEAR, ROOFLINE_CASES, box_size_cases, tma_frame


def findings(ctx) -> list:
    """The results site's question for TMA (harness/analysis/site.py): what does a box, and copies in
    flight, deliver? Every GPU model's newest 2-D load measurements, against the read roofline."""
    latest = ctx.latest[ctx.latest.family == "tma"].copy()
    if latest.empty:
        return []
    frame = tma_frame(latest.assign(launch=latest.launch_key))
    roofs = ctx.latest[ctx.latest.case_id.isin(ROOFLINE_CASES) & (ctx.latest.metric == "bandwidth_gbps")]
    boxes = box_size_cases(frame)
    bandwidth = boxes[boxes.metric == "bandwidth_gbps"]
    if bandwidth.empty:
        return []
    rooflines = {}
    for gpu in bandwidth.groupby("gpu_name").groups:
        roof = roofs[roofs.gpu_name == gpu].value
        rooflines[gpu] = float(roof.max()) if len(roof) else None
    path = ctx.directory / "tma_box_and_stages.png"
    figure_box_and_stages(path, bandwidth, rooflines)
    rows = [_gpu_row(gpu, part, rooflines[gpu], frame, boxes) for gpu, part in bandwidth.groupby("gpu_name")]
    table = pd.DataFrame(rows).round(3)
    text = [f"{r['gpu']}: the best TMA load reaches {r['best TMA load GB/s']:.0f} GB/s"
            + (f" ({r['of the roofline']:.0%} of the {r['read roofline GB/s']:.0f} GB/s read roofline)"
               if r["read roofline GB/s"] else "")
            + f"; within 5 % of it from a {r['smallest box within 5 % (B)']}-byte box, or with "
              f"{_copies(r['fewest copies in flight per SM within 5 %'])} in flight per SM." for r in rows]
    return [("What does a TMA box, and copies in flight, deliver?", text + [
        "A box alone does not reach the roofline: the bytes in flight per SM do (Little's law: latency x "
        "bandwidth). The latency columns are one copy's issue-to-mbarrier time for the box sizes above "
        "(median over boxes); docs/data-movement.md explains the method."], path),
        ("TMA: box and copies in flight, in numbers", [], table)]


def _gpu_row(gpu: str, part: pd.DataFrame, roofline: float | None, frame: pd.DataFrame, boxes: pd.DataFrame) -> dict:
    """One GPU's row: its roofline, best TMA load, the smallest box and fewest copies in flight within 5 % of
    it, and one copy's latency from each source (median over the boxes)."""
    best = part.groupby("box_bytes").value.max().sort_index()
    inflight = part.assign(inflight=part.stages * part.blocks_per_sm)
    top = float(best.max())
    near = inflight[inflight.value >= NEAR * top]
    latency = frame[(frame.gpu_name == gpu) & (frame.metric == latency_metric(frame[frame.gpu_name == gpu]))
                    & frame.source.notna()
                    & frame.case_id.isin(set(boxes.case_id))]
    return {"gpu": gpu, "read roofline GB/s": roofline, "best TMA load GB/s": top,
            "of the roofline": top / roofline if roofline else None,
            "smallest box within 5 % (B)": int(near.box_bytes.min()),
            "fewest copies in flight per SM within 5 %": int(near.inflight.min()),
            **{f"latency from {source} (cycles)": float(group.value.median())
               for source, group in latency.groupby("source")}}


def _copies(count: int) -> str:
    return f"{count} cop{'y' if count == 1 else 'ies'}"
