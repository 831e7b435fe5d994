"""The mma.sync sections of `bench report`: latency and issue interval per form, the best rate per
form against its type's peak (sparse: the sparse peak), and the warps x ILP table of one form with a figure."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

SHOWN_CASE = "mma.sync.m16n8k16.row.col.f32.f16.f16.f32"  # the warps x ILP table and figure


def _launch(frame: pd.DataFrame, key: str) -> pd.Series:
    return frame.launch.map(lambda text: json.loads(text).get(key))


def _figure(path, table: pd.DataFrame, title: str) -> None:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    for ilp in table.columns:
        ax.plot(table.index, table[ilp], "o-", ms=4, lw=1.2, label=f"ILP {ilp}")
    ax.axhline(4096, color="black", ls="--", lw=1, label="dense f16 peak 4096 (wgmma)")
    ax.set_xscale("log", base=2)
    ax.set_xticks(list(table.index), labels=[str(w) for w in table.index])
    ax.set_xlabel("warps per SM")
    ax.set_ylabel("FLOP per cycle per SM")
    ax.set_ylim(0, 4500)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    ax.set_title(title, fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def figures(ctx) -> list:
    frame = ctx.measured[ctx.measured.family == "mma"].copy()
    if frame.empty:
        return []
    frame["warps"], frame["ilp"] = _launch(frame, "warps"), _launch(frame, "ilp")
    emulated = frame.groupby("case_id").emulated.first().fillna(False).astype(bool)
    executes = frame.groupby("case_id").executes.first()
    cycles = frame[frame.metric.isin(["latency_cycles", "issue_interval_cycles", "call_interval_cycles"])]
    cycles = cycles.pivot_table(index="case_id", columns="metric", values="value", aggfunc="first")
    interval = cycles.get("issue_interval_cycles", pd.Series(dtype=float))
    if "call_interval_cycles" in cycles:  # an emulated form's: per routine call (metric registry)
        interval = interval.reindex(cycles.index).fillna(cycles["call_interval_cycles"])
    best = frame[frame.metric == "sm_throughput"].sort_values("value", ascending=False).groupby("case_id").first()
    fractions = frame[frame.metric == "peak_fraction"].groupby("case_id").value.max()
    table = pd.DataFrame({
        "latency (cycles)": cycles.get("latency_cycles"),
        "issue interval, ILP 8 (cycles; emulated: per call)": interval,
        "best per SM per cycle": best.value.round(1),
        "unit": best.unit,
        "at warps x ILP": best.warps.astype("Int64").astype(str) + " x " + best.ilp.astype("Int64").astype(str),
        "of the type's peak": fractions.round(3),
        "runs as": executes,
        "emulated": np.where(emulated, "emulated", ""),
    }).reset_index().rename(columns={"index": "case_id"})
    sections = [("mma.sync: latency, issue interval and best rate per form", [
        "Latency: one warp's dependent chain (each mma accumulates onto the one before). Issue interval: one warp "
        "with 8 independent accumulators. Best rate: every SM with 1..32 warps x 1, 2 or 4 independent "
        "accumulators each, the best of the sweep. The type's peak is its datasheet tensor rate "
        "(wgmma's), twice it for mma.sp (dense-equivalent work against the sparse peak, the metric registry's "
        "peak_fraction rule); int4 and binary have none published. Emulated forms have no native instruction on "
        "sm_90: 'runs as' is what the SASS check found in their place, and their rates are not tensor-core "
        "rates."], table)]
    shown = frame[(frame.case_id == SHOWN_CASE) & (frame.metric == "sm_throughput")]
    if len(shown):
        grid = shown.pivot_table(index="warps", columns="ilp", values="value", aggfunc="first").sort_index()
        path = ctx.directory / "mma_warps_ilp.png"
        _figure(path, grid, f"{ctx.gpu}, run {ctx.run_id}: {SHOWN_CASE}, every SM busy")
        best_fraction = float(fractions.get(SHOWN_CASE, np.nan))
        sections.append((f"mma.sync: warps x ILP for {SHOWN_CASE}", [
            f"FLOP per cycle per SM against warps per SM, one line per ILP. The best point reaches "
            f"{best_fraction:.1%} of the dense f16 peak that wgmma reaches."], path))
        sections.append((f"mma.sync: the warps x ILP table ({SHOWN_CASE}, FLOP/cycle/SM)", [],
                         grid.round(1).rename(columns=lambda ilp: f"ILP {ilp}").reset_index()))
    return sections
