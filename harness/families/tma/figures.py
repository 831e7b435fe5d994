"""The TMA sections of `bench report`: bandwidth against box size and copies in flight, against the read
roofline measured in the same run; latency from L2 and from HBM; what it takes to reach the roofline
(Little's law on the measured figures, checked against the sweep); multicast by cluster size; the paper's
H800 PCIe log figures beside ours. Distributed shared memory has its own sections (the dsmem family).
The rows they read are rows.py's, the figures plots.py's; the family's finding is findings.py's."""

from __future__ import annotations

import numpy as np
import pandas as pd

from harness.families.tma.cases import GEMM_PITCH
from harness.families.tma.fitting import load_latency_metric as latency_metric
from harness.families.tma.plots import figure_bandwidth, figure_latency
from harness.families.tma.rows import NEAR, ROOFLINE_CASES, box_size_cases, latency_words, tma_frame
from harness.verdicts import AGREES


def figures(ctx) -> list:
    """[(heading, paragraphs, Path | DataFrame | None)] for the report (harness/analysis/report.py)."""
    frame = tma_frame(ctx.measured)
    if frame.empty:
        return []
    bandwidth = frame[frame.metric == "bandwidth_gbps"]
    roof = bandwidth[bandwidth.case_id.isin(ROOFLINE_CASES)].value  # the best plain reader of the run (compare)
    roofline = float(roof.max()) if len(roof) else None
    sm_count = int(frame.sm_count.iloc[0]) if "sm_count" in frame and frame.sm_count.notna().any() else 132
    sections = [_roofline_section(frame, bandwidth, roofline)]
    box_cases = box_size_cases(frame)
    if len(box_cases[box_cases.metric == "bandwidth_gbps"]):
        path = ctx.directory / "tma_bandwidth.png"
        figure_bandwidth(path, box_cases, roofline, f"{ctx.gpu}, run {ctx.run_id}: TMA load bandwidth by box size "
                                                    "and copies in flight")
        sections.append(("TMA: bandwidth against box size and copies in flight", [
            "Left: the best over blocks per SM, per number of copies each block keeps in flight. Right: the same "
            "data against copies in flight per SM. One thread per block issues; the source is many times the L2, "
            "walked once per pass, so the copies come from HBM."], path))
    latency = _latency_table(frame)
    if len(latency):
        sections.append(("TMA: latency from L2 and from HBM", [
            f"One load {latency_words(latency_metric(frame))} ({latency_metric(frame)}). L2: the same tile again; HBM: a "
            "fresh tile each time, across a tensor many times the L2. Stores are not here: their bulk group "
            "completes once the SM has sent the tile (store_drain_cycles, 29 + bytes / 32 cycles), which says "
            "nothing of the L2."], latency))
    little_text, little = _little(frame, roofline, sm_count)
    if len(little):
        sections.append(("TMA: how many copies in flight (Little's law)", little_text, little))
    return (sections + _multicast_sections(frame) + _geometry(frame) + _distributions(ctx, frame) + _models(frame)
            + _paper_section(ctx))


def _roofline_section(frame: pd.DataFrame, bandwidth: pd.DataFrame, roofline: float | None) -> tuple:
    """Each case's best bandwidth against the run's read roofline, and what the best TMA load takes to get there."""
    best = (bandwidth.sort_values("value", ascending=False).groupby("case_id", as_index=False).first()
            .sort_values("value", ascending=False))
    single = best[best.cluster == 1]  # multicast counts other bytes: its own section
    table = single[["case_id", "value", "stages", "blocks_per_sm"]].rename(columns={"value": "best GB/s"})
    if roofline:
        table["of the roofline"] = (table["best GB/s"] / roofline).round(3)
    # im2col counts the bytes that land: zero-filled pixels (outside the image) are not read, and the
    # filter positions of neighbouring columns read some pixels again, so it is no read-roofline figure.
    loads = best[best.op.isin(["load", "bulk"]) & (best.cluster == 1) & ~best.im2col.astype(bool)]
    text = []
    if roofline and len(loads):
        top = loads.iloc[0]
        near = bandwidth[bandwidth.op.isin(["load", "bulk"]) & (bandwidth.cluster == 1)
                         & ~bandwidth.im2col.astype(bool) & (bandwidth.value >= NEAR * float(top.value))].copy()
        near["inflight"] = near.stages * near.blocks_per_sm
        smallest = near.sort_values(["box_bytes", "inflight"]).iloc[0]
        fewest = near.sort_values(["inflight", "box_bytes"]).iloc[0]
        from harness.datasheets import pin_rate_gbps

        pin = pin_rate_gbps(str(frame.gpu_name.iloc[0])) if "gpu_name" in frame else float("nan")
        text = [f"The read roofline of this run (the best plain reader: {', '.join(ROOFLINE_CASES)}) is "
                f"{roofline:.0f} GB/s" + (f", {roofline / pin:.1%} of the datasheet's {pin:.0f} GB/s pin rate"
                                          if pin == pin else "") + f". The best TMA load, {top.case_id} with "
                f"{int(top.stages)} cop{'y' if int(top.stages) == 1 else 'ies'} in flight and "
                f"{int(top.blocks_per_sm)} blocks per SM, reaches {float(top.value):.0f} GB/s: "
                f"{float(top.value) / roofline:.1%} of it.",
                f"Within 5 % of that best: the smallest box is {int(smallest.box_bytes)} B ({smallest.case_id}, "
                f"{int(smallest.stages)} in flight x {int(smallest.blocks_per_sm)} blocks per SM); the fewest copies "
                f"in flight per SM are {int(fewest.inflight)} ({fewest.case_id}, box {int(fewest.box_bytes)} B).",
                "im2col loads count the bytes that land in shared memory: a pixel outside the image is zero-filled "
                "without a read, and neighbouring columns' filter positions read some pixels again (from the L2), "
                "so an im2col rate can exceed the read roofline; it is left out of the two statements above."]
    return ("TMA: bandwidth against the read roofline", text, table.round(1))


def _multicast_sections(frame: pd.DataFrame) -> list:
    """Multicast by cluster size: the best bandwidth and the latency of each cluster's loads."""
    clusters = frame[(frame.cluster > 1)]
    if not len(clusters):
        return []
    rows = clusters[(clusters.metric == latency_metric(frame)) | (clusters.metric == "bandwidth_gbps")]
    what = np.where(rows.metric == "bandwidth_gbps", "best GB/s",
                    "latency (cycles)" + np.where(rows.source.notna(), " from " + rows.source.fillna(""), ""))
    summary = (rows.assign(what=what)
               .groupby(["case_id", "cluster", "what"]).value.max().unstack("what").reset_index()
               .sort_values(["case_id", "cluster"]).round(1))
    return [("TMA: multicast by cluster size", [
        "Multicast: each CTA of the cluster loads one box a round into every CTA's shared memory; GB/s counts "
        "the bytes that land (global memory is read once per cluster)."], summary)]


def _geometry(frame: pd.DataFrame) -> list:
    """A GEMM's tile (a matrix GEMM_PITCH bytes a row) against a contiguous box of the same bytes."""
    wide, contiguous = box_size_cases(frame, GEMM_PITCH), box_size_cases(frame, 0)
    if wide.empty or contiguous.empty:
        return []
    metric = latency_metric(frame)

    def summary(part: pd.DataFrame) -> pd.DataFrame:
        lat = part[(part.metric == metric) & part.source.isin(["L2", "HBM"])]
        table = lat.pivot_table(index="box_bytes", columns="source", values="value")
        table["best GB/s"] = part[part.metric == "bandwidth_gbps"].groupby("box_bytes").value.max()
        return table

    a, b = summary(wide), summary(contiguous)
    rows = []
    for box in sorted(set(a.index) & set(b.index)):
        row = {"box bytes": int(box)}
        for column in ("L2", "HBM", "best GB/s"):
            if column in a and column in b:
                name = f"latency from {column} (cycles)" if column != "best GB/s" else column
                row[f"{name}, tile"], row[f"{name}, contiguous"] = a.at[box, column], b.at[box, column]
                row[f"{column}: tile / contiguous"] = a.at[box, column] / b.at[box, column]
        rows.append(row)
    table = pd.DataFrame(rows)
    text = [f"The same 2-D boxes (64 b16 a row, 128-byte swizzle) as a GEMM reads them, tiles of a row-major "
            f"matrix {GEMM_PITCH} bytes a row (K = {GEMM_PITCH // 2} b16; the suite's default, `.pitch{GEMM_PITCH}`), "
            "and as contiguous boxes (a tensor one box wide). Latency is the median, its metric " + metric
            + "; bandwidth the best over copies in flight."]
    if "HBM: tile / contiguous" in table:
        hbm = table["HBM: tile / contiguous"]
        text.append(f"From HBM a tile takes {hbm.min():.2f} to {hbm.max():.2f} times as long as a contiguous box of its "
                    "bytes" + (f"; from the L2 {table['L2: tile / contiguous'].min():.2f} to "
                               f"{table['L2: tile / contiguous'].max():.2f}" if "L2: tile / contiguous" in table else "")
                    + ".")
    return [("TMA: a GEMM's tile against a contiguous box", text, table.round(3))]


def _latency_table(frame: pd.DataFrame) -> pd.DataFrame:
    lat = frame[(frame.metric == latency_metric(frame)) & frame.source.notna()]
    table = lat.pivot_table(index=["case_id", "box_bytes"], columns="source", values="value").reset_index()
    return table.sort_values(["box_bytes", "case_id"]).round(1)


def _little(frame: pd.DataFrame, roofline: float | None, sm_count: int) -> tuple[list[str], pd.DataFrame]:
    """Bytes in flight per SM that cover the HBM latency at the roofline (Little's law), and the copies
    in flight per SM that makes for each box, against the fewest the sweep needed to get within 5 %."""
    if not roofline:
        return [], pd.DataFrame()
    loads = box_size_cases(frame)
    rows = []
    for box, group in loads.groupby("box_bytes"):
        cold = group[(group.metric == latency_metric(frame)) & (group.source == "HBM")]
        bw = group[group.metric == "bandwidth_gbps"]
        if cold.empty or bw.empty:
            continue
        mhz = float(bw.sm_clock_mhz.median())
        latency_ns = float(cold.value.iloc[0]) / mhz * 1e3
        per_sm = roofline / sm_count  # GB/s = bytes per ns
        needed_bytes = per_sm * latency_ns
        inflight = bw.stages * bw.blocks_per_sm
        good = bw[bw.value >= NEAR * roofline]
        rows.append({"box bytes": int(box), "HBM latency (cycles)": round(float(cold.value.iloc[0])),
                     "bytes in flight per SM (Little)": round(needed_bytes),
                     "copies in flight per SM (Little)": round(needed_bytes / box, 1),
                     "fewest copies in flight within 5 % of the roofline (measured)":
                         int((good.stages * good.blocks_per_sm).min()) if len(good) else None,
                     "best GB/s": round(float(bw.value.max())),
                     "at copies in flight": int(inflight[bw.value.idxmax()])})
    text = [f"Little's law: to keep the read roofline ({roofline:.0f} GB/s, {roofline / sm_count:.1f} B/ns per SM) "
            "busy, each SM needs roofline x latency bytes in flight; divided by the box, the copies in flight "
            "per SM. The last columns are what the sweep found: where the model says more copies than the "
            "sweep needed, part of the latency overlaps (the HBM latency is measured one copy at a time)."]
    return text, pd.DataFrame(rows)


def _paper_section(ctx) -> list:
    rows = ctx.against[(ctx.against.family == "tma") & ctx.against.paper.notna()]
    if rows.empty:
        return []
    table = rows[["case_id", "metric", "launch", "statistic", "n_compared", "value", "basis", "clock_mhz", "clock_source",
                  "comparable", "paper", "paper_unit", "uncertainty", "paper_ratio", "cycles_ratio", "roofline_gbps",
                  "roofline_case", "pin_rate_gbps", "verdict", "distribution"]].copy()
    table["why they differ"] = [note if v != AGREES else "" for note, v in zip(rows.note, table.verdict)]
    return [("TMA beside the papers", [
        "Every TMA figure of the papers and the authors' logs that a case here measures (bench compare). Each "
        "verdict is in the basis the paper measured in (`basis`): the authors' TMA latency log is wall time x "
        "1755 MHz, so it compares in ns, ours at the clock our kernels ran at (`clock_mhz`, from `clock_source`), "
        "with the ratio in cycles beside it. Bandwidth is a fraction of "
        "each GPU's own read roofline (the authors' float4 global-memory figure on theirs; on ours the best plain "
        "reader of this run, `roofline_case`, beside the datasheet's pin rate), both in decimal GB/s (the logs' GiB/s "
        "converted). A difference counts beyond 3 % plus the 95 % interval of the statistic (`uncertainty`). A "
        "figure of one launch (a latency from HBM, one copy in flight per block) is compared with that launch."],
        table.round(3))]


def _distributions(ctx, frame: pd.DataFrame) -> list:
    """Tile-load latency as a curve of box bytes (median and quartiles per source, from the samples), the
    first use of a tensor map against later ones, and the spread of every cycle measurement."""
    from harness.db.distributions import describe, samples, spread_summary

    loads = box_size_cases(frame)
    metric = latency_metric(frame)
    lat = loads[(loads.metric == metric) & loads.source.notna()]
    sections = []
    if len(lat):
        rows = []
        for (case_id, box, source, launch), _ in lat.groupby(["case_id", "box_bytes", "source", "launch"]):
            rows.append({"box bytes": int(box), "source": source,
                         **describe(samples(ctx.store, ctx.run_id, case_id, metric, launch))})
        table = pd.DataFrame(rows).sort_values(["source", "box bytes"])
        path = ctx.directory / "tma_latency.png"
        figure_latency(path, table, f"{ctx.gpu}, run {ctx.run_id}: one tile load's latency by box size")
        sections.append(("TMA: tile-load latency against box size", [
            f"One 2-D load (64 x rows of b16, 128-byte swizzle{', a tile of a matrix %d bytes a row' % GEMM_PITCH if (loads.pitch == GEMM_PITCH).any() else ', a contiguous box'}) "
            f"{latency_words(metric)} ({metric}); the whole warp waits, lane 0 issues. Per repetition: L2, 16 tiles in turn "
            "that are in the L2; HBM, a fresh tile; prefetched, a fresh tile prefetched to the L2 4000 cycles before. "
            "Dots are medians, bars the quartiles; `modes` splits the samples at their widest gap where both groups "
            "hold a tenth of them or more (two L2 partitions, or a prefetch that had not landed); `grid` is a coarse "
            "grid the samples fall on (none: resolved to the cycle)."], path))
        sections.append(("TMA: tile-load latency samples", [], table))
    first = frame[frame.metric == "latency_first_use_cycles"]
    if len(first):
        # like for like: both net of the bracketing sequence without the copy (latency_added_cycles)
        later = frame[(frame.metric == "latency_added_cycles") & (frame.source == "L2")].set_index("case_id").value
        table = first[["case_id", "value"]].rename(columns={"value": "first copy of a launch"})
        table["later copies"] = table.case_id.map(later)
        table["first - later"] = table["first copy of a launch"] - table["later copies"]
        sections.append(("TMA: a tensor map's first use", [
            "The first copy of each of 16 launches against the median of later ones, from the L2: what fetching the "
            "map costs a launch, by value (a kernel parameter) and in global memory (after its acquire fence)."],
            table.round(1)))
    total, wide, table = spread_summary(frame)
    sections.append(("TMA: spread of the cycle measurements", [
        f"{wide} of {total} cycle measurements of this run spread (interquartile range over median) by more than "
        "1 %. They are distributions, not noise around one value: HBM latencies (DRAM, and which L2 partition a "
        "fresh tile lands in) and prefetched tiles (landed or not)."], table))
    return sections


def _models(frame: pd.DataFrame) -> list:
    from harness.families.tma.fitting import TmaModel

    report = TmaModel().fit(frame, "", "")
    if report is None:
        return []
    residuals = report.residuals
    summary = (residuals.assign(abs_rel=residuals.relative.abs())
               .groupby("model").agg(points=("case_id", "size"), median_abs_relative=("abs_rel", "median"),
                                      max_abs_relative=("abs_rel", "max")).reset_index().round(3))
    predicted = residuals[residuals.predicts.astype(bool)]  # not the rows whose value is the roofline given
    worst = predicted.loc[predicted.relative.abs().sort_values(ascending=False).index[:8]]
    return [("Data-movement models (bench model --run)", [
        "Copy latency = base + bytes / rate per source, least squares over the single-CTA tile and bulk loads; "
        "copies in flight: each SM a closed queueing network solved by mean-value analysis (each block's copies "
        "through its issue loop, the fitted issue cycles a copy; the SM's share of the read roofline; the rest of "
        "the HBM latency line as a delay). The parameters, then how far each model misses, then its worst points; "
        "rows '(at the roofline)' are streams where the model's memory queue is busy 95 % of the time or more, "
        "whose value is the roofline the model was given: not predictions, and not among the worst."],
        report.parameters), ("Data-movement models: residuals", [], summary),
        ("Data-movement models: the largest misses", [], worst)]
