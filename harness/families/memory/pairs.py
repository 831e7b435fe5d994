"""The L2's near and far hits by pair of SMs (ld.global.cg.u32.pairs.l2): what the stored rows show.

The probe's measurements (launch {"map": "l2pairs", "sm": s, "owner": o}): o >= 0, SM s's first access to lines SM
o brought into the L2 (o's own loads of them, misses, came first in the launch); o = -1, s's own first loads of fresh
lines (misses); o = -2, s's own line read again (a hit on a line it brought itself: what the L2 map times). The pooled
ones ({"pool": "hits" | "misses", "cluster": c}) are the same samples split by 1-D k-means, as 2501.12084 Table 4
clusters its single loads (its four centres: near hit, far hit, near miss, far miss).

What is read here:
- the pair matrix: the median over samples of each (s, o), SMs x SMs;
- the two sides of the SMs that explain which pairs are slow (harness/smgroups.py two_sides), and its conflicts;
- the four clusters' centres, and beside them the own line's hits;
- the sides against the L2 map's near partition per SM (its 29-cycle split) and against the DSMEM map's GPC groups,
  where the same store holds them;
- the three partitions of the SMs compared within one run that holds all three maps (`reconcile`: suite
  `maps-sides`): a contingency table of each pair, the adjusted Rand index, the fraction of SM pairs the two agree on
  beside what chance gives, and the answer in words (is the 29-cycle split the far-hit sides? are the sides, and the
  halves, unions of GPC groups?). Only one run's maps are compared: SM ids are numbered per physical GPU.
What it cannot tell: where on the die a side is, or why a line another SM brought in is slower to reach (the paper's
reading: a far hit crosses between the L2's two partitions).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from harness.families.memory.maps import ranges
from harness.smgroups import (Agreement, Sides, agreement, agreement_of, components, group_labels, sides_of_groups,
                              two_sides)
from harness.stats import kmeans_1d

OWNER_MISS, OWNER_OWN = -1, -2  # the owner of an SM's own first loads (misses), of its own line read again


@dataclass(frozen=True)
class PairMap:
    sms: np.ndarray  # %smid of each row and column
    cycles: np.ndarray  # SMs x SMs: row s, column o: the median of s's first accesses to o's lines (NaN: none)
    sides: Sides
    hits: np.ndarray  # every first access to another SM's line
    misses: np.ndarray  # every SM's own first loads
    own: np.ndarray  # every own line read again

    def clusters(self) -> pd.DataFrame:
        """Table 4's four clusters from our samples (1-D k-means of the hits, of the misses), and the own hits."""
        rows = []
        for pool, values in (("hits", self.hits), ("misses", self.misses)):
            if values.size < 2:
                continue
            found = kmeans_1d(values, 2)
            for c, side in enumerate(("near", "far")[:found.centres.size]):
                members = values[found.labels == c]
                rows.append({"cluster": f"{side} {pool[:-1] if pool == 'hits' else 'miss'}", "centre": members.mean(),
                             "median": float(np.median(members)), "n": int(members.size),
                             "share": members.size / values.size})
        if self.own.size:
            rows.append({"cluster": "own line again", "centre": self.own.mean(), "median": float(np.median(self.own)),
                         "n": int(self.own.size), "share": 1.0})
        return pd.DataFrame(rows)


def pair_map(per_key: dict[tuple[int, int], np.ndarray]) -> PairMap:
    """From {(sm, owner): samples} (owner -1: misses, -2: own line again)."""
    def pooled(select) -> np.ndarray:
        parts = [np.asarray(v, dtype=float) for (s, o), v in per_key.items() if select(s, o)]
        values = np.concatenate(parts) if parts else np.array([])
        return values[np.isfinite(values)]

    pairs = {(s, o): np.asarray(v, dtype=float) for (s, o), v in per_key.items() if o >= 0 and o != s}
    sms = np.array(sorted({s for s, _ in per_key} | {o for _, o in pairs}))
    index = {int(s): i for i, s in enumerate(sms)}
    cycles = np.full((sms.size, sms.size), np.nan)
    for (s, o), values in pairs.items():
        values = values[np.isfinite(values)]
        if values.size:
            cycles[index[s], index[o]] = np.median(values)
    return PairMap(sms, cycles, two_sides(sms, cycles), pooled(lambda s, o: o >= 0 and o != s),
                   pooled(lambda s, o: o == OWNER_MISS), pooled(lambda s, o: o == OWNER_OWN))


def by_gpu(rows: pd.DataFrame, launches: list[dict], arrays: dict) -> dict[str, PairMap]:
    """{gpu: PairMap} from the probe's stored rows (launch {"map": "l2pairs", "sm": s, "owner": o}; pooled rows
    are left out: they hold the same samples)."""
    found = {}
    for gpu in sorted(set(rows.gpu_name)):
        per_key = {(int(l["sm"]), int(l["owner"])): arrays[int(i)]
                   for l, i, g in zip(launches, rows.measurement_id, rows.gpu_name)
                   if g == gpu and "owner" in l and "sm" in l and int(i) in arrays}
        if per_key:
            found[gpu] = pair_map(per_key)
    return found


def load(store, frame: pd.DataFrame) -> dict[str, PairMap]:
    from harness.db.distributions import map_rows

    found_rows = map_rows(store, frame, "memory", "l2pairs")
    return by_gpu(*found_rows) if found_rows is not None else {}


def gpc_groups(store, frame: pd.DataFrame) -> dict[str, list[list[int]]]:
    """Per GPU, the SMs that shared a cluster in the DSMEM map's rows among `frame` (launch {"map": "dsmem", "sm":
    a, "peer": b}), transitively: GPCs or parts of them (the groups that map infers, from the same pairs)."""
    from harness.db.distributions import map_rows

    found_rows = map_rows(store, frame, None, "dsmem")
    if found_rows is None:
        return {}
    rows, launches, _ = found_rows
    found: dict[str, list] = {}
    for gpu, launch in zip(rows.gpu_name, launches):
        if "sm" in launch and "peer" in launch:
            found.setdefault(gpu, []).append((launch["sm"], launch["peer"]))
    return {gpu: components(pairs) for gpu, pairs in found.items()}


def describe(gpu: str, found: PairMap, near_partition: dict[int, int] | None = None,
             groups: list[list[int]] | None = None) -> list[str]:
    """Sentences with the run's numbers: the clusters, the sides and their conflicts, the two other maps."""
    sides = found.sides
    measured = int(np.isfinite(found.cycles).sum() - np.isfinite(np.diag(found.cycles)).sum())
    table = found.clusters().set_index("cluster")
    centres = "; ".join(f"{name} {row.centre:.0f} cycles (n = {row.n})" for name, row in table.iterrows())
    lines = [f"{gpu}: first accesses by pair of SMs ({measured} pairs of {found.sms.size} SMs): {centres}."]
    if not sides.split:
        lines.append(f"{gpu}: no two sides: the pairs' latencies fall in one class (slow - fast centre "
                     f"{sides.slow - sides.fast:.0f} cycles).")
        return lines
    side = sides.of()
    members = [ranges([s for s, v in side.items() if v == g]) for g in (0, 1)]
    counts = [int((sides.side == g).sum()) for g in (0, 1)]
    lines.append(f"{gpu}: two sides explain which pairs are slow (fast {sides.fast:.0f}, slow {sides.slow:.0f} "
                 f"cycles; a pair is slow across the sides): side 0 SMs {members[0]} ({counts[0]}), side 1 SMs "
                 f"{members[1]} ({counts[1]}); {len(sides.conflicts)} of {sides.pairs} pairs conflict with the split.")
    if near_partition:
        same, common = agreement(side, near_partition)
        lines.append(f"{gpu}: against the L2 map's near partition per SM (its split of the own lines): {same} of "
                     f"{common} SMs on matching sides" + (" (the same split)." if same == common else
                                                          " (not the same split)."))
    if groups:
        placed = sides_of_groups(side, groups)
        whole = sum(1 for _, a, b in placed if a == 0 or b == 0)
        lines.append(f"{gpu}: against the DSMEM map's {len(groups)} GPC groups: {whole} lie wholly on one side"
                     + ("" if whole == len(groups) else ", the rest are split: " + ", ".join(
                         f"group {g} ({a} + {b})" for g, a, b in placed if a and b)) + ".")
    return lines


def heatmap(ax, found: PairMap, title: str):
    """SMs (rows: who reads; columns: who brought the lines in), both by side: cycles."""
    order = np.lexsort((found.sms, found.sides.side))
    image = ax.imshow(found.cycles[order][:, order], aspect="auto", interpolation="nearest", cmap="viridis")
    ax.set_title(title, fontsize=9)
    ax.set_xlabel("SM that brought the lines in (by side)")
    ax.set_ylabel("SM reading them first (by side)")
    step = max(1, order.size // 12)
    ticks = [str(s) for s in found.sms[order][::step]]
    ax.set_yticks(range(0, order.size, step), ticks, fontsize=6)
    ax.set_xticks(range(0, order.size, step), ticks, fontsize=6)
    return image


# The three partitions of the SMs (issue 45, section 4), by the names the report gives them
HALVES, SIDES, GPCS = "L2 halves", "far-hit sides", "GPC groups"
PARTITION_WORDS = {HALVES: "the L2 map's near/far split of the SMs (each SM's near partition)",
                   SIDES: "the far-hit sides (the split that explains which pairs of SMs see far hits)",
                   GPCS: "the DSMEM map's GPC groups (SMs that shared a cluster, transitively)"}
LABEL = {HALVES: "half", SIDES: "side", GPCS: "GPC group"}
PLURAL = {HALVES: "halves", SIDES: "sides", GPCS: "GPC groups"}


def partitions(l2=None, pairs: PairMap | None = None, groups: list[list[int]] | None = None) -> dict[str, dict]:
    """{name: {SM: label}} of the partitions one run's maps give: the L2 map's halves (an L2Map with a split), the
    pairs' sides (a PairMap whose sides split), the DSMEM map's groups; those a map does not give are left out."""
    found = {}
    if l2 is not None and l2.split:
        found[HALVES] = {int(r.sm): int(r.near) for r in l2.per_sm().itertuples()}
    if pairs is not None and pairs.sides.split:
        found[SIDES] = pairs.sides.of()
    if groups:
        found[GPCS] = group_labels(groups)
    return found


def compared(parts: dict[str, dict]) -> list[tuple[str, str, Agreement]]:
    """Each pair of the partitions, in the order HALVES, SIDES, GPCS: (first, second, their agreement)."""
    names = [name for name in (HALVES, SIDES, GPCS) if name in parts]
    return [(a, b, agreement_of(parts[a], parts[b])) for i, a in enumerate(names) for b in names[i + 1:]]


def _moved(found: Agreement) -> int:
    """SMs that must change group for two splits in two to be the same (either way round the names go)."""
    table = found.table
    return int(found.sms - max(np.trace(table), np.trace(table[:, ::-1])))


def _sentence(gpu: str, a: str, b: str, found: Agreement) -> str:
    scores = (f"adjusted Rand index {found.adjusted:.2f}; the two agree on {found.rand:.1%} of the SM pairs, "
              f"{found.chance:.1%} by chance")
    if a == HALVES and b == SIDES:
        if found.same:
            return f"{gpu}: the L2 map's near/far split of the SMs is the far-hit sides: the same partition of the " \
                   f"{found.sms} SMs ({scores})."
        moved = f"{_moved(found)} of the {found.sms} SMs would have to change side" if found.table.shape == (2, 2) \
            else f"{found.table.shape[0]} halves against {found.table.shape[1]} sides"
        return f"{gpu}: the L2 map's near/far split of the SMs is not the far-hit sides: {moved} ({scores})."
    coarse, fine = (a, b) if b == GPCS else (b, a)
    groups_axis = 1 if b == GPCS else 0
    n_groups = found.table.shape[groups_axis]
    if found.refines(groups_axis):
        return (f"{gpu}: the {PLURAL[coarse]} are unions of GPC groups: each of the {n_groups} groups lies wholly on "
                f"one {LABEL[coarse]} ({scores}).")
    split = found.split_groups(groups_axis)
    return (f"{gpu}: the {PLURAL[coarse]} are not unions of GPC groups: {len(split)} of the {n_groups} groups straddle "
            f"them (" + ", ".join(f"group {g}: {' + '.join(map(str, counts))} SMs" for g, counts in split) +
            f"; {scores}).")


def reconcile(gpu: str, parts: dict[str, dict]) -> tuple[list[str], pd.DataFrame, list[tuple[str, pd.DataFrame]]]:
    """The partitions of one run compared: (the findings in words, one row per pair of partitions, and per pair its
    contingency table: the first's groups as rows, the second's as columns, SMs in each)."""
    lines, rows, tables = [], [], []
    for a, b, found in compared(parts):
        lines.append(_sentence(gpu, a, b, found))
        rows.append({"gpu": gpu, "first": a, "second": b, "SMs": found.sms, "groups": f"{len(found.rows)} x "
                     f"{len(found.cols)}", "adjusted Rand": round(found.adjusted, 3),
                     "SM pairs agreeing": round(found.rand, 3), "by chance": round(found.chance, 3),
                     "same partition": found.same, "first's groups inside the second's": found.refines(0),
                     "second's groups inside the first's": found.refines(1)})
        table = pd.DataFrame(found.table, columns=[f"{LABEL[b]} {c}" for c in found.cols])
        table.insert(0, a, [f"{LABEL[a]} {r}" for r in found.rows])
        tables.append((f"{a} x {b}", table))
    return lines, pd.DataFrame(rows), tables
