"""The SM-to-SM map (ld.shared::cluster.u32.clusterC.map): DSMEM latency between the SMs clusters land on,
and the chip's structure inferred from it.

The map's measurements are one per pair of SMs a cluster landed on (launch {"map": "dsmem", "cluster": C,
"sm": a, "peer": b}; samples: cycles per load of a's chases through b's shared memory, launch by launch).

- GPCs: a cluster always lives in one GPC, so SMs that ever shared a cluster share a GPC. The groups are the
  connected components of the pairs seen, over every cluster size: at least as fine as the GPCs (two groups
  may be one GPC whose SMs never shared a cluster, where a GPC holds more SMs than the largest cluster and
  the hardware always placed it the same way).
- TPCs: the two SMs of a TPC share its connection to the GPC; a pair of SMs each other's nearest, by
  MIN_TPC_GAP cycles or more against the next nearest, is reported as one (a guess from latency: the map
  cannot see the die).
- Which SMs are far: each SM's median latency to the others of its group, against the group's median.

What it cannot tell: pairs in different GPCs (no cluster spans two), and a GPC's SMs that no cluster placed
together in these launches.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd

from harness.smgroups import components

MIN_TPC_GAP = 3.0  # cycles: a mutual nearest pair counts as a TPC if its next nearest is this much slower
TPC_SHARE = 0.25  # the share of the SMs such pairs must cover before the map is said to show TPCs at all
FAR_CYCLES = 5.0  # an SM whose median to its group is this much above the group's median is "far"


@dataclass(frozen=True)
class Pairs:
    """Every pair's samples: a frame of (cluster, sm, peer, samples)."""

    frame: pd.DataFrame

    def medians(self) -> pd.DataFrame:
        """(sm, peer) -> the median of every sample of the pair, over cluster sizes."""
        return self._medians.copy()

    @cached_property
    def _medians(self) -> pd.DataFrame:
        """medians(), computed once a map (a report asks for them several times): each group's arrays in the
        order of the frame's rows, as groupby's apply hands them over, without its cost a group."""
        grouped = self.frame.groupby(["sm", "peer"])
        parts: list[list] = [[] for _ in range(grouped.ngroups)]
        for code, samples in zip(grouped.ngroup().tolist(), self.frame.samples.tolist()):
            if code == code and code >= 0:  # a row whose key is missing is in no group
                parts[int(code)].append(samples)
        medians = pd.Series([float(np.median(np.concatenate(part))) for part in parts],
                            index=grouped.size().index, name="samples", dtype=float if parts else object)
        return medians.reset_index(name="cycles")


def load(store, frame: pd.DataFrame) -> dict[str, Pairs]:
    """Every GPU's map pairs among `frame`'s rows (a run's, or the newest of each GPU): {gpu: Pairs}."""
    from harness.db.distributions import map_rows

    found_rows = map_rows(store, frame, "dsmem", "dsmem")
    if found_rows is None:
        return {}
    rows, launches, arrays = found_rows
    found = pd.DataFrame({"gpu": rows.gpu_name.values, "cluster": [l["cluster"] for l in launches],
                          "sm": [l["sm"] for l in launches], "peer": [l["peer"] for l in launches],
                          "samples": [arrays.get(int(i)) for i in rows.measurement_id]})
    found = found[found.samples.notna()]
    return {gpu: Pairs(part.drop(columns="gpu").reset_index(drop=True)) for gpu, part in found.groupby("gpu")}


def matrix(pairs: Pairs) -> tuple[np.ndarray, np.ndarray]:
    """(%smids, SMs x SMs median cycles, NaN where the pair never shared a cluster)."""
    med = pairs.medians()
    sms = np.array(sorted(set(med.sm) | set(med.peer)))
    index = {s: i for i, s in enumerate(sms)}
    cycles = np.full((sms.size, sms.size), np.nan)
    for sm, peer, value in med.itertuples(index=False):
        cycles[index[sm], index[peer]] = value
    return sms, cycles


def groups(pairs: Pairs) -> list[list[int]]:
    """SMs that shared a cluster, transitively (the connected components of the pairs seen): GPCs or parts of
    them, largest first, then by their first SM."""
    return components(zip(pairs.frame.sm, pairs.frame.peer))


def tpcs(sms: np.ndarray, cycles: np.ndarray) -> list[tuple[int, int, float, float]]:
    """(a, b, their latency, the next nearest of either) for pairs each other's nearest by MIN_TPC_GAP."""
    both = np.fmax(cycles, cycles.T)  # the slower way of a pair; a pair measured one way only keeps that way
    found = []
    for i in range(sms.size):
        row = both[i]
        if np.isnan(row).all():
            continue
        j = int(np.nanargmin(row))
        if j <= i or int(np.nanargmin(both[j])) != i:
            continue
        rest = np.concatenate([np.delete(row, [i, j]), np.delete(both[j], [i, j])])
        rest = rest[~np.isnan(rest)]
        if rest.size and rest.min() - row[j] >= MIN_TPC_GAP:
            found.append((int(sms[i]), int(sms[j]), float(row[j]), float(rest.min())))
    return found


def per_sm(pairs: Pairs) -> pd.DataFrame:
    """Per SM: its group, the median of its chases to the others (and theirs to it), and how far that is
    above its group's median."""
    med = pairs.medians()
    member = {sm: g for g, sms in enumerate(groups(pairs)) for sm in sms}
    both = pd.concat([med[["sm", "cycles"]], med[["peer", "cycles"]].rename(columns={"peer": "sm"})])
    table = both.groupby("sm").cycles.median().reset_index(name="median cycles")
    table["group"] = table.sm.map(member)
    table["group median"] = table.groupby("group")["median cycles"].transform("median")
    table["above the group"] = table["median cycles"] - table["group median"]
    return table


def describe(gpu: str, pairs: Pairs) -> list[str]:
    """Sentences with the run's numbers: the groups, the TPC pairs, the far SMs, the fastest pair per cluster size."""
    sms, cycles = matrix(pairs)
    found = groups(pairs)
    pairs_tpc = tpcs(sms, cycles)
    table = per_sm(pairs)
    far = table[table["above the group"] >= FAR_CYCLES].sort_values("above the group", ascending=False)
    sizes = ", ".join(str(len(g)) for g in found)
    structure = 2 * len(pairs_tpc) >= TPC_SHARE * sms.size  # enough mutual nearest pairs to call them TPCs
    tpc_text = (f"{len(pairs_tpc)} pairs of SMs are each other's nearest by {MIN_TPC_GAP:g} cycles or more (TPCs, "
                f"as latency sees them), at {np.median([p[2] for p in pairs_tpc]):.0f} cycles against "
                f"{np.median([p[3] for p in pairs_tpc]):.0f} to the next nearest (medians)" if structure else
                f"latency shows no TPC structure: {len(pairs_tpc)} pairs of its {sms.size} SMs are each other's nearest "
                f"by {MIN_TPC_GAP:g} cycles or more")
    text = [f"{gpu}: {sms.size} SMs in {len(found)} groups that shared clusters (GPCs or parts of them; sizes {sizes}); "
            + tpc_text + "."]
    if len(far):
        text.append(f"{gpu}: far from the rest of their group (median latency {FAR_CYCLES:g} cycles or more above the "
                    "group's): " + ", ".join(f"SM {int(r.sm)} (+{r['above the group']:.0f}, {r['median cycles']:.0f} "
                                             "cycles)" for _, r in far.head(8).iterrows())
                    + (f" and {len(far) - 8} more" if len(far) > 8 else "") + ".")
    else:
        text.append(f"{gpu}: no SM is {FAR_CYCLES:g} cycles or more above its group's median latency.")
    text.append(f"{gpu}: fastest / median / slowest pair by cluster size"
                + (", and the share of its pairs within a TPC: " if structure else ": ")
                + "; ".join(f"{int(c)}: {r['min']:.0f} / {r['median']:.0f} / {r['max']:.0f}"
                            + (f" ({r['tpc']:.0%})" if structure else "")
                            for c, r in by_cluster(pairs, pairs_tpc).iterrows())
                + " cycles per load.")
    return text


def by_cluster(pairs: Pairs, pairs_tpc: list) -> pd.DataFrame:
    """Per cluster size: the fastest, median and slowest pair (their medians), and the share of pairs that
    are TPC pairs (whether a cluster's CTAs share TPCs: the pairs' latency at each size follows from it)."""
    tpc = {frozenset((a, b)) for a, b, _, _ in pairs_tpc}
    frame = pairs.frame.assign(median=pairs.frame.samples.map(lambda s: float(np.median(s))),
                               tpc=[frozenset((a, b)) in tpc for a, b in zip(pairs.frame.sm, pairs.frame.peer)])
    return frame.groupby("cluster").agg(min=("median", "min"), median=("median", "median"), max=("median", "max"),
                                        tpc=("tpc", "mean"))


def heatmap(ax, pairs: Pairs, title: str):
    """SM x SM cycles, the SMs ordered by group then id; blank: never in one cluster."""
    sms, cycles = matrix(pairs)
    order = [s for g in groups(pairs) for s in g]
    index = {s: i for i, s in enumerate(sms)}
    idx = [index[s] for s in order]
    image = ax.imshow(np.ma.masked_invalid(cycles[np.ix_(idx, idx)]), interpolation="nearest", cmap="viridis")
    ax.set_title(title, fontsize=9)
    step = max(1, len(order) // 16)
    ax.set_xticks(range(0, len(order), step), [str(s) for s in order[::step]], fontsize=6, rotation=90)
    ax.set_yticks(range(0, len(order), step), [str(s) for s in order[::step]], fontsize=6)
    ax.set_xlabel("chased SM (peer), by group")
    ax.set_ylabel("chasing SM, by group")
    return image
