"""The bank-conflict section of `bench report`: per case, the bank model's wavefronts and prediction beside
the best measured bytes per cycle per SM."""

from __future__ import annotations

import pandas as pd

from harness.families.banks.cases import parse
from harness.families.banks.model import predicted


def figures(ctx) -> list:
    frame = ctx.measured[(ctx.measured.family == "banks") & (ctx.measured.metric == "sm_throughput")]
    if frame.empty:
        return []
    best = frame.groupby("case_id").value.max()
    cases = {case_id: parse(case_id) for case_id in best.index}
    table = pd.DataFrame({
        "case_id": list(best.index),
        "wavefronts (model)": [cases[c].wavefronts() for c in best.index],
        "predicted B/cycle/SM": [round(predicted(cases[c]), 1) for c in best.index],
        "best B/cycle/SM": best.round(1).tolist(),
    })
    table["measured / predicted"] = (table["best B/cycle/SM"] / table["predicted B/cycle/SM"]).round(3)
    return [("Shared-memory bank conflicts against the bank model", [
        "Every SM with 1..32 warps of independent accesses at the addresses of each layout (`bench show CASE` "
        "prints the layout and its bank map); the prediction is the bytes the access moves over its "
        "wavefronts (per 128-byte phase, the most distinct words one bank holds) x 128 B per bank cycle."], table)]
