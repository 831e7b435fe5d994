"""The DSMEM sections of `bench report`: latency and bandwidth by cluster size, the papers' chase patterns
beside our streams in bytes per cycle per SM, the spread of the chases over SM placements, the hop model,
the papers' figures beside ours, and the SM-to-SM map (a heat map per GPU, and the site's finding)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from harness.families.dsmem.cases import parse
from harness.paper import PAPER_CLOCK_MHZ, PAPER_GPU, PAPER_SMS
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
        return ring_findings(ctx)
    path = _map_figure(maps, ctx.directory, "dsmem_sm_map.png")
    return [("Which SMs are far from which, through distributed shared memory?",
             [line for gpu, pairs in maps.items() for line in describe(gpu, pairs)] + [MAP_METHOD], path)] \
        + ring_findings(ctx)


SCALED, PAPERS, CLOCK = f"ours on {PAPER_SMS} SMs", "papers' GB/s", "SM MHz (ours, in-kernel)"
RING_METHOD = ("The papers' ring copy (2402.13499 Sec. IV-E / Fig. 8, 2501.12084 Sec. 7.2 / Fig. 11: every CTA of a "
               "cluster reads its neighbour's shared memory, every SM busy) is a wall-clock bandwidth of their H800 PCIe "
               "(114 SMs), its clock not printed. bench compare holds it in wall time: ours (the launch it compares: "
               "threads x chains, each cluster size's) scaled to their 114 SMs, with the SM clock measured in our "
               "kernels beside it. Per cycle per SM, theirs is at least its figure over 114 SMs at the H800 PCIe's "
               "highest clock, 1755 MHz (it ran there or lower), so ours is at most the ratio shown.")


def ring_rows(against: pd.DataFrame, sms: float, gpu: str, run_id: int) -> pd.DataFrame:
    """The ring chases' rows of a run against the papers' figures: wall time and per cycle per SM."""
    rows = against[against.case_id.str.contains(r"\.chase\.ring$") & against.paper.notna()
                   & (against.metric == "bandwidth_gbps") & (against.paper_gpu == PAPER_GPU)]
    out = []
    for r in rows.itertuples():
        ours = r.value * 1e3 / (sms * r.clock_mhz)
        theirs = r.paper * 1e3 / (PAPER_SMS * PAPER_CLOCK_MHZ)
        out.append({"gpu": gpu, "run": run_id, "cluster": parse(r.case_id).cluster, "launch": r.launch,
                    "ours GB/s": r.value, CLOCK: r.clock_mhz, SCALED: r.comparable, PAPERS: r.paper,
                    "where": r.paper_table,
                    "wall-time ratio": r.paper_ratio, "ours B/cycle/SM": ours,
                    "theirs B/cycle/SM (at least)": theirs, "per cycle (at most)": ours / theirs,
                    "verdict": r.verdict})
    return pd.DataFrame(out)


def _ring_figure(path, table: pd.DataFrame):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    clusters = sorted(set(table.cluster))
    gpus = sorted(set(table.gpu))
    fig, ax = plt.subplots(figsize=(8, 4.8))
    width = 0.8 / (len(gpus) + 1)
    x = np.arange(len(clusters))
    for i, gpu in enumerate(gpus):
        mine = table[table.gpu == gpu].groupby("cluster")[SCALED].first()
        ax.bar(x + i * width, [mine.get(c, np.nan) for c in clusters], width, label=f"{gpu}, scaled to {PAPER_SMS} SMs")
    papers = table.groupby(["cluster", "where"])[PAPERS].first()
    ax.bar(x + len(gpus) * width, [papers[c].max() for c in clusters], width, color="tab:gray",
           label="the papers' figure (the larger of the two)")
    ax.set_xticks(x + width * len(gpus) / 2, labels=[f"cluster {c}" for c in clusters])
    ax.set_ylabel("ring copy, GB/s (wall time)")
    ax.set_title("DSMEM ring copy against the papers' H800 PCIe (clock not printed)", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def ring_findings(ctx) -> list:
    """Per GPU model, its newest run of ring chases against the papers' figures (ctx.against: bench compare's rows)."""
    against_of = getattr(ctx, "against", None)
    if against_of is None:
        return []
    latest = ctx.latest
    rings = latest[(latest.family == "dsmem") & latest.case_id.str.contains(r"\.chase\.ring$")
                   & (latest.metric == "bandwidth_gbps")]
    tables = []
    for gpu, part in sorted(rings.groupby("gpu_name")):
        run_id = int(part.run_id.max())
        found = ring_rows(against_of(run_id), float(part.sm_count.iloc[0]), gpu, run_id)
        if len(found):
            tables.append(found)
    if not tables:
        return []
    table = pd.concat(tables, ignore_index=True)
    lines = [f"{r['gpu']} (run {r['run']}), cluster {r['cluster']}: {r[SCALED]:.0f} GB/s on {PAPER_SMS} SMs against "
             f"{r[PAPERS]:.0f} ({r['where']}): {r['wall-time ratio']:.3f} x in wall time at {r[CLOCK]:.0f} MHz; per "
             f"cycle per SM at most {r['per cycle (at most)']:.3f} x ({r['verdict']})." for r in table.to_dict("records")]
    path = _ring_figure(ctx.directory / "dsmem_ring.png", table)
    return [("Does the DSMEM ring copy reach the papers' bandwidth?", lines + [RING_METHOD], path),
            ("DSMEM ring copy against the papers, in numbers", [], table.round(3))]
