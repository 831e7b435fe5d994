"""The ldmatrix/stmatrix section of `bench report`: latency and the best shared-memory bytes per cycle
per SM, per form."""

from __future__ import annotations

import json

import pandas as pd

from harness.families.loaders.model import B_BANK as PEAK_BYTES_PER_CYCLE


def _launch(frame: pd.DataFrame, key: str) -> pd.Series:
    return frame.launch.map(lambda text: json.loads(text).get(key))


def figures(ctx) -> list:
    """ldmatrix/stmatrix: latency and the best shared-memory bytes per cycle per SM, per form."""
    frame = ctx.measured[ctx.measured.family == "loaders"].copy()
    if frame.empty:
        return []
    frame["warps"] = _launch(frame, "warps")
    latency = frame[frame.metric == "latency_cycles"].groupby("case_id").value.first()
    rates = frame[frame.metric == "sm_throughput"]
    best = rates.sort_values("value", ascending=False).groupby("case_id").first()
    one = rates[rates.warps == 1].groupby("case_id").value.first()
    table = pd.DataFrame({
        "latency (cycles)": latency.round(1),
        "B/cycle/SM, 1 warp": one.round(1),
        "best B/cycle/SM": best.value.round(1),
        "at warps per SM": best.warps.astype("Int64"),
        f"of {PEAK_BYTES_PER_CYCLE} B/cycle": (best.value / PEAK_BYTES_PER_CYCLE).round(3),
    }).reset_index().rename(columns={"index": "case_id"})
    return [("ldmatrix and stmatrix: latency and shared-memory bandwidth", [
        "Latency, ldmatrix: one warp's pointer chase (each load's row addresses are the registers the previous "
        "load returned, no arithmetic between). Latency, stmatrix: a store then an ld.shared of what the lane "
        f"stored, which feeds the next store: the round trip. Bandwidth: every SM with 1..32 warps of "
        f"independent instructions; {PEAK_BYTES_PER_CYCLE} B/cycle is 32 banks x 4 B."], table)]
