"""The memory family's sections of `bench report`: each level's latency and throughput beside the
papers' (bench compare), with why a figure differs, the distribution of single loads from the L2
and from HBM, and the L2 by SM (the map: a heat map per GPU, and the site's finding)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from harness.verdicts import AGREES


def _is_map(launch) -> bool:
    return "map" in (json.loads(launch) if isinstance(launch, str) else launch)


def figures(ctx) -> list:
    frame = ctx.measured[ctx.measured.family == "memory"]
    if frame.empty:
        return []
    maps = map_sections(ctx) + partition_sections(ctx, ctx.measured)
    frame = frame[~frame.launch.map(_is_map)]
    if frame.empty:
        return maps
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
    return sections + maps


MAP_METHOD = ("Every SM (one block each, shared memory enough that no two share an SM) walks the same 64 lines, "
              "spread over an 8 MiB region resident in the L2, each from its own place in the cycle, with "
              "ld.global.cg, each load timed alone (clock, load, a "
              "shared store that waits for the word, clock, less the least of 16 empty brackets), over 16 launches; "
              "a cell is the median over launches. The lines are put in two groups by their profile over the SMs "
              "(harness/l2lines.py); each SM's near partition is the group it reaches sooner. "
              "docs/data-movement.md, 'Maps of the chip'.")


def _map_figure(maps: dict, directory, name: str):
    from harness.families.memory.maps import heatmap
    from harness.plotting import gpu_panels

    return gpu_panels(maps, lambda axes, gpu, found: heatmap(axes[0], found, f"{gpu}: L2 load latency by SM and "
                                                             "line (cycles)"), directory / name)


def map_sections(ctx) -> list:
    """The report's L2 map: the heat map, the sentence, and per SM its near and far latency."""
    from harness.families.memory.maps import describe, load

    maps = load(ctx.store, ctx.measured)
    if not maps:
        return pair_sections(ctx, ctx.measured)
    path = _map_figure(maps, ctx.directory, "memory_l2_map.png")
    tables = pd.concat([found.per_sm().assign(gpu=gpu) for gpu, found in maps.items()]).round(1)
    return [("The L2 by SM: near and far partition", [describe(gpu, found) for gpu, found in maps.items()]
             + [MAP_METHOD], path),
            ("The L2 by SM, in numbers", ["Per SM: the median over each partition's lines, its near partition, far - "
                                          "near."], tables)] + pair_sections(ctx, ctx.measured)


PAIRS_METHOD = ("Every SM (one block each) loads 17 lines of a fresh 2 MiB slab (the L2 evicted before the probe, the "
                "TLB warmed; each load timed alone: misses), waits at a counter in global memory until every block "
                "has, then times its first access to one line of each of 16 other SMs' and its own last line again "
                "(ld.global.cg, clock, load, a shared store that waits for the word, clock, less the least empty "
                "bracket), 18 launches. A cell is the median over a pair's samples; the two sides are those that best "
                "explain which pairs are slow (harness/smgroups.py). docs/data-movement.md, 'Maps of the chip': near "
                "and far hits by pair of SMs.")


def _pairs_figure(maps: dict, directory, name: str):
    from harness.families.memory.pairs import heatmap
    from harness.plotting import gpu_panels

    return gpu_panels(maps, lambda axes, gpu, found: heatmap(axes[0], found, f"{gpu}: first access to another SM's "
                                                             "L2 line (cycles)"), directory / name)


def _map_runs(frame, gpu: str, kind: str) -> set:
    """The runs among `frame` whose rows of `gpu` hold a map of `kind` ({"map": kind} launches)."""
    rows = frame[(frame.gpu_name == gpu) & (frame.metric == "latency_cycles")]
    return {int(run) for run, launch in zip(rows.run_id, rows.launch)
            if (json.loads(launch) if isinstance(launch, str) else launch).get("map") == kind}


def pair_sections(ctx, frame) -> list:
    """The pairs' report section (or the site's finding): the heat map, the sentences, Table 4's clusters."""
    from harness.families.memory.maps import load as load_l2
    from harness.families.memory.pairs import describe, gpc_groups, load

    found = load(ctx.store, frame)
    if not found:
        return []
    near, groups = {}, {}
    for gpu in found:  # the other maps of the pairs' own run only: SM ids are numbered per physical GPU
        runs = _map_runs(frame, gpu, "l2pairs")
        if len(runs) != 1:
            continue
        same = frame[frame.run_id == runs.pop()]
        l2 = load_l2(ctx.store, same).get(gpu)
        if l2 is not None and l2.split:
            near[gpu] = {int(r.sm): int(r.near) for r in l2.per_sm().itertuples()}
        if gpu in (found_groups := gpc_groups(ctx.store, same)):
            groups[gpu] = found_groups[gpu]
    lines = [line for gpu, pm in found.items() for line in describe(gpu, pm, near.get(gpu), groups.get(gpu))]
    path = _pairs_figure(found, ctx.directory, "memory_l2_pairs.png")
    table = pd.concat([pm.clusters().assign(gpu=gpu) for gpu, pm in found.items()]).round(2)
    table4 = table4_figures(ctx.store)
    spread = _clusters_figure(found, table4, ctx.directory, "memory_l2_table4.png")
    return [("The L2's near and far hits, by pair of SMs", lines + [PAIRS_METHOD], path),
            ("The L2's near and far hits against 2501.12084 Table 4", [
                line for gpu, pm in found.items() for line in [table4_sentence(gpu, pm.clusters(), table4)]] + [
                TABLE4_METHOD], spread),
            ("The L2's near and far hits: 2501.12084 Table 4's clusters", [
                "Our samples split as Table 4 splits its single loads (1-D k-means: hits in two, misses in two); "
                "centre: the cluster's mean, as the paper's; bench compare holds each beside the paper's."], table)]


TABLE4 = ("near hit", "far hit", "near miss", "far miss")  # clusters.cluster's names, in Table 4's order
TABLE4_METHOD = ("Every first access to a line another SM brought into the L2 (hits) and every SM's own first loads "
                 "(misses), as counted: each pool split in two by 1-D k-means, as 2501.12084 Table 4 splits its "
                 "single loads on the H800 PCIe; solid lines our clusters' centres (means), dashed Table 4's. Cycles "
                 "of the SM clock on both sides: the paper reads clock() around each access.")


def table4_figures(store) -> dict[str, float]:
    """2501.12084 Table 4's four H800 PCIe centres (cycles) as the references map them, by cluster name."""
    from harness.paper import PAPER_GPU

    try:
        refs = store.query(f"""SELECT value, launch FROM reference_values WHERE case_id = 'ld.global.cg.u32.pairs.l2'
                               AND metric = 'latency_cycles' AND gpu_name = '{PAPER_GPU}'""")
    except Exception:  # a store without the references view: the figure shows ours alone
        return {}
    out = {}
    for ref in refs.itertuples():
        launch = json.loads(ref.launch) if isinstance(ref.launch, str) else (ref.launch or {})
        if launch.get("pool") in ("hits", "misses") and launch.get("cluster") in (0, 1):
            side = ("near", "far")[launch["cluster"]]
            out[f"{side} {'hit' if launch['pool'] == 'hits' else 'miss'}"] = float(ref.value)
    return out


def table4_sentence(gpu: str, clusters: pd.DataFrame, table4: dict[str, float]) -> str:
    """Our four centres beside Table 4's, and the far-over-near ratio of the hits on each side."""
    ours = clusters.set_index("cluster").centre
    parts = [f"{name} {ours[name]:.0f}" + (f" ({table4[name]:.0f})" if name in table4 else "")
             for name in TABLE4 if name in ours.index]
    line = f"{gpu}: " + ", ".join(parts) + " cycles (Table 4's H800 PCIe in brackets)"
    if {"near hit", "far hit"} <= set(ours.index):
        line += f"; far over near hit {ours['far hit'] / ours['near hit']:.2f} x"
        if {"near hit", "far hit"} <= set(table4):
            line += f" ({table4['far hit'] / table4['near hit']:.2f} x)"
    return line + "."


def _clusters_figure(found: dict, table4: dict[str, float], directory, name: str):
    """One panel a GPU: the hits' and misses' cycles (step histograms), our centres (solid) and Table 4's (dashed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(found), figsize=(6.5 * len(found), 4.5), squeeze=False)
    for ax, (gpu, pm) in zip(axes[0], found.items()):
        values = np.concatenate([pm.hits, pm.misses])
        bins = np.linspace(np.percentile(values, 0.5), np.percentile(values, 99.5), 120)
        for pool, colour in ((pm.hits, "tab:blue"), (pm.misses, "tab:orange")):
            ax.hist(pool, bins=bins, histtype="step", color=colour,
                    label="first access to another SM's line" if pool is pm.hits else "own first load (a miss)")
        centres = pm.clusters().set_index("cluster").centre
        for cluster in TABLE4:
            colour = "tab:blue" if cluster.endswith("hit") else "tab:orange"
            if cluster in centres.index:
                ax.axvline(centres[cluster], color=colour, lw=1.2)
            if cluster in table4:
                ax.axvline(table4[cluster], color=colour, lw=1.2, ls="--")
        ax.set_xlabel("cycles (solid: our centres; dashed: 2501.12084 Table 4, H800 PCIe)")
        ax.set_ylabel("accesses")
        ax.set_title(f"{gpu}: single L2 accesses, hits and misses", fontsize=10)
        ax.legend(fontsize=8)
    fig.tight_layout()
    path = directory / name
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


PARTITIONS_METHOD = ("Three partitions of the SMs, each from its own map of the same run (SM ids are numbered per "
                     "physical GPU, so maps of two runs cannot be compared): the L2 map's near/far split (each SM's "
                     "near partition), the far-hit sides of the pairs, and the DSMEM map's GPC groups (SMs that shared "
                     "a cluster, transitively). For each pair: its contingency table (SMs per pair of groups); the "
                     "adjusted Rand index (1: the same partition, whatever the groups are called; about 0: no more "
                     "alike than chance); and the fraction of SM pairs on which the two agree (both put the two SMs "
                     "together, or both apart) beside the fraction two independent partitions of the same group sizes "
                     "would agree on (harness/smgroups.py agreement_of). Suite `maps-sides` runs the three maps in one "
                     "run.")


def partition_sections(ctx, frame) -> list:
    """The partitions of the SMs compared, for each run among `frame` whose maps give two or more of the three (one
    run's only: the report's run, or the runs of the newest rows); a run that lacks one says which, and a run with the
    pairs alone says that nothing was compared."""
    from harness.families.memory.maps import load as load_l2
    from harness.families.memory.pairs import GPCS, HALVES, PARTITION_WORDS, SIDES, gpc_groups, load, partitions, \
        reconcile

    sections = []
    for run_id in sorted(set(frame.run_id)):
        rows = frame[frame.run_id == run_id]
        pairs, l2 = load(ctx.store, rows), load_l2(ctx.store, rows)
        if not pairs and not l2:
            continue
        groups = gpc_groups(ctx.store, rows)
        for gpu in sorted(set(pairs) | set(l2)):
            parts = partitions(l2.get(gpu), pairs.get(gpu), groups.get(gpu))
            lacking = [PARTITION_WORDS[name] for name in (HALVES, SIDES, GPCS) if name not in parts]
            why = (f"Run {run_id} lacks {'; '.join(lacking)} (a map not run, or one that found no split): `bench run "
                   "--suite maps-sides` runs the three maps in one run.") if lacking else None
            if len(parts) < 2:
                if gpu in pairs:
                    sections.append((f"The three partitions of the SMs ({gpu}, run {run_id})",
                                     [f"Not compared. {why}"], None))
                continue
            lines, summary, tables = reconcile(gpu, parts)
            sections.append((f"The partitions of the SMs compared ({gpu}, run {run_id})",
                             lines + ([why] if why else []) + [PARTITIONS_METHOD], summary))
            sections += [(f"Contingency: {name} ({gpu}, run {run_id})", ["SMs in each pair of groups."], table)
                         for name, table in tables]
    return sections

def findings(ctx) -> list:
    """Which SMs are far from which half of the L2, per GPU model (the newest map of each)."""
    from harness.families.memory.maps import describe, load

    maps = load(ctx.store, ctx.latest)
    found = pair_sections(ctx, ctx.latest)
    pairs = [("Which SMs find the L2 lines that other SMs brought in far?", *section[1:]) for section in found[:1]]
    pairs += [("How far is a far hit? The L2's single accesses against 2501.12084 Table 4", *section[1:])
              for section in found[1:2]]
    if not maps:
        return pairs
    path = _map_figure(maps, ctx.directory, "memory_l2_map.png")
    return [("Which SMs are far from which half of the L2?", [describe(gpu, found) for gpu, found in maps.items()]
             + [MAP_METHOD], path)] + pairs
