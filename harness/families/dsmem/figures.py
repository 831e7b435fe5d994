"""The DSMEM sections of `bench report`: latency and bandwidth by cluster size, the papers' chase patterns
beside our streams in bytes per cycle per SM, the spread of the chases over SM placements, the hop model,
the papers' figures beside ours, and the SM-to-SM map (a heat map per GPU, and the site's finding)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from harness.families.dsmem.cases import parse
from harness.verdicts import AGREES


def _frame(ctx) -> pd.DataFrame:
    frame = ctx.measured[ctx.measured.family == "dsmem"].copy()
    if frame.empty:
        return frame
    cases = {c: parse(c) for c in set(frame.case_id)}
    frame["op"] = [cases[c].op for c in frame.case_id]
    frame["cluster"] = [cases[c].cluster for c in frame.case_id]
    frame["blocks_per_sm"] = [json.loads(launch).get("blocks_per_sm") for launch in frame.launch]
    return frame


def figures(ctx) -> list:
    frame = _frame(ctx)
    if frame.empty:
        return []
    maps = map_sections(ctx)
    frame = frame[frame.op != "dsmem-map"]
    if frame.empty:
        return maps
    sections = []
    rows = frame[frame.metric.isin(("latency_cycles", "pingpong_hop_cycles", "bandwidth_gbps"))]
    if len(rows):
        what = np.select([rows.metric == "bandwidth_gbps", rows.metric == "pingpong_hop_cycles"],
                         ["best GB/s", "ping-pong hop (cycles)"], "latency (cycles)")
        summary = (rows.assign(what=what)
                   .groupby(["case_id", "cluster", "what"]).value.max().unstack("what").reset_index()
                   .sort_values(["case_id", "cluster"]).round(1))
        sections.append(("DSMEM by cluster size", [
            ("Loads (ld.shared::cluster): latency of a pointer chase through another CTA's shared memory; bandwidth "
            "of every thread reading the next CTA's (.spread: each warp another CTA's). Stores (st.shared::cluster): "
            "one hop of a flag passed between two CTAs (a store into the other's shared memory until its spin sees "
            "it; runs before 84 stored it as latency_cycles): not the store's latency, as a hop holds the receiver's "
            "detection and its next store; the round trip (roundtrip_cycles) takes the same values whatever the "
            "phase it is sent at, on the grid of the sender's poll loop (an upper bound within one period); bandwidth of every thread storing into the next CTA's.")], summary))
    sections += _patterns(frame)
    from harness.db.distributions import spread_summary

    total, wide, table = spread_summary(frame)
    if total:
        sections.append(("DSMEM: spread of the cycle measurements", [
            (f"{wide} of {total} cycle measurements of this run spread (interquartile range over median) by more "
            "than 1 %: the chases run in 16 clusters at once, one sample per cluster, a distribution over SM "
            "placements, not noise around one value.")], table))
    sections += _models(frame)
    sections += _paper_section(ctx)
    return sections + maps


def _patterns(frame: pd.DataFrame) -> list:
    """Distributed shared memory in bytes per cycle per SM: the papers' chase patterns and ours."""
    rows = frame[frame.metric == "bandwidth_gbps"]
    if rows.empty:
        return []
    per_sm = rows.value * 1e3 / (rows.sm_count * rows.sm_clock_mhz)
    best = rows.assign(per_sm=per_sm).sort_values("per_sm", ascending=False).groupby("case_id", as_index=False).first()
    best["pattern"] = [_pattern(c) for c in best.case_id]
    table = best[["pattern", "cluster", "case_id", "value", "per_sm", "launch"]].rename(
        columns={"value": "best GB/s", "per_sm": "B/cycle/SM"}).sort_values(["pattern", "cluster"]).round(1)
    return [("DSMEM: the papers' patterns beside ours", [
        ("The papers' ring, pair and broadcast (chase: every thread follows dependent 4-byte loads through its target "
        "CTA, every lane of a warp stepping by the same stride, so a warp reads 128 contiguous bytes; 256-1024 "
        "threads x 1-4 chains per thread, the best point shown) and local (through the CTA's own window), beside "
        "ours (stream: every thread's 16-byte loads or stores into the next CTA, or .spread each warp another). "
        "B/cycle/SM divides by every SM of the GPU and the clock measured during the point.")], table)]


def _pattern(case_id: str) -> str:
    case = parse(case_id)
    if case.op == "dsmem-chase":
        return f"chase {case.pattern}"
    kind = "store stream" if case.op == "dsmem-store" else "load stream"
    return kind + (" .spread" if case.spread else " next")


def _models(frame: pd.DataFrame) -> list:
    from harness.families.dsmem.fitting import DsmemModel

    report = DsmemModel().fit(frame, "", "")
    if report is None:
        return []
    return [("DSMEM models (bench model --run)", [
        ("DSMEM hop = one constant, the mean of the pointer chases to the other CTAs over the cluster sizes (it does "
         "not grow with the cluster), with their spread; the ring and pair chases' bandwidth from threads x ilp requests "
         "in flight, that hop and the run's load stream to the next CTA (a closed queue, exact MVA): the parameters, "
         "then each point's residual (rows 'at the stream': the queue is busy 95 % of the time or more, the stream's "
         "value, not a prediction).")],
        report.parameters), ("DSMEM models: residuals", [], report.residuals)]


def _paper_section(ctx) -> list:
    rows = ctx.against[(ctx.against.family == "dsmem") & ctx.against.paper.notna()]
    if rows.empty:
        return []
    table = rows[["case_id", "metric", "launch", "statistic", "n_compared", "value", "basis", "clock_mhz", "clock_source",
                  "comparable", "paper", "paper_unit", "uncertainty", "paper_ratio", "cycles_ratio", "verdict",
                  "distribution"]].copy()
    table["why they differ"] = [note if v != AGREES else "" for note, v in zip(rows.note, table.verdict)]
    return [("DSMEM beside the papers", [
        ("Every distributed-shared-memory figure of the papers and the authors' logs that a case here measures "
        "(bench compare): latency in cycles, our minimum over 16 placements against their fastest rank pair "
        "(n = 16; `distribution`), and the local chase's median against their one figure. A difference counts "
        "beyond 3 % plus the 95 % interval of the statistic (`uncertainty`).")], table.round(3))]


MAP_METHOD = ("Clusters of 2, 4, 8 and 16 CTAs, one CTA per SM (shared memory enough that no two share one): every "
              "CTA's thread 0 chases each other CTA of its cluster in turn (128 dependent ld.shared::cluster loads, the "
              "chain's cycles per load, as the latency cases' chain), and reads its %smid; 16 launches per size. A "
              "cell is the median over launches and sizes; blank: the two SMs never shared a cluster. Groups: SMs that "
              "shared a cluster, transitively (a cluster lives in one GPC). harness/families/dsmem/maps.py; "
              "docs/data-movement.md, 'Maps of the chip'.")


def _map_figure(maps: dict, directory, name: str):
    from harness.families.dsmem.maps import heatmap
    from harness.plotting import gpu_panels

    return gpu_panels(maps, lambda axes, gpu, pairs: heatmap(axes[0], pairs, f"{gpu}: DSMEM latency SM to SM "
                                                             "(cycles per load)"), directory / name, size=(7, 6.5))


def map_sections(ctx) -> list:
    from harness.families.dsmem.maps import describe, load, per_sm

    maps = load(ctx.store, ctx.measured)
    if not maps:
        return []
    path = _map_figure(maps, ctx.directory, "dsmem_sm_map.png")
    text = [line for gpu, pairs in maps.items() for line in describe(gpu, pairs)]
    table = pd.concat([per_sm(pairs).assign(gpu=gpu) for gpu, pairs in maps.items()]).round(1)
    return [("DSMEM by SM: the SM-to-SM map", text + [MAP_METHOD], path),
            ("DSMEM by SM, in numbers", ["Per SM: its group (SMs that shared a cluster), the median of its chases to "
                                         "the others and theirs to it, and how far that is above its group's median."],
             table)]


def findings(ctx) -> list:
    """Which SMs are far from which, and the GPCs and TPCs the DSMEM map implies, per GPU model."""
    from harness.families.dsmem.maps import describe, load

    maps = load(ctx.store, ctx.latest)
    if not maps:
        return []
    path = _map_figure(maps, ctx.directory, "dsmem_sm_map.png")
    return [("Which SMs are far from which, through distributed shared memory?",
             [line for gpu, pairs in maps.items() for line in describe(gpu, pairs)] + [MAP_METHOD], path)]
