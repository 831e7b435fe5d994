"""An L2 map: every SM's latency to the same LINES lines of a region resident in the L2, read one way or another
(a plain load, ld.global.cg.u32.map.l2; a bulk copy, cp.async.bulk.shared::cluster.global.128B.map.l2: each
case of the family that owns its instruction). What the maps share: the ring every map walks (the same chunks
from the same seed, so two maps of one GPU compare line by line), the reference walk, the matrix and its split into
the L2's two partitions.

The matrix: the median over launches of each (SM, line). The lines fall into two groups, the L2's two partitions,
by their profile over the SMs: a line of partition A is near the SMs of side A and far from the others, a line of B
the reverse. So the lines split by the sign of their score on the matrix's first principal component (the rows
centred), which uses every SM at once and needs no threshold (it holds too where every SM sees the same lines as
far); each SM's near partition is then the group it reaches sooner. What it cannot tell: the partitions' physical
layout (which half of the die, which memory controllers), or why an SM sits on a side. A split is reported only
where it stands out of the noise: the SMs' median difference far - near above MIN_SPLIT_CYCLES.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

LINES = 64  # lines every map walks
REGION_BYTES = 8 << 20  # spread over 8 MiB: in the L2 of every Hopper (50-60 MiB)
CHUNK_WORDS = 16  # 64-byte chunks
MIN_SPLIT_CYCLES = 10.0  # far - near, median over SMs, below which the lines are called one group


def ring(rng: np.random.Generator) -> np.ndarray:
    """An L2 map's words: LINES chunks drawn from the 8 MiB region, in a random cycle from chunk 0 (the
    walk starts at word 0); every other word zero."""
    chunks = REGION_BYTES // (4 * CHUNK_WORDS)
    lines = np.concatenate([[0], 1 + rng.choice(chunks - 1, LINES - 1, replace=False)])
    order = np.concatenate([[0], rng.permutation(lines[1:])])
    words = np.zeros(chunks * CHUNK_WORDS, dtype=np.uint32)
    words[order * CHUNK_WORDS] = np.roll(order, -1) * CHUNK_WORDS
    return words


def chase(words: np.ndarray, start: int, steps: int) -> int:
    """The word a chase from `start` ends on after `steps` loads."""
    for _ in range(steps):
        start = int(words[start])
    return start


@dataclass(frozen=True)
class L2Map:
    sms: np.ndarray  # %smid of each row of `cycles`
    cycles: np.ndarray  # SMs x lines: the median over launches
    partition: np.ndarray  # per line: 0 or 1 (all 0 where there is no split)
    split: bool  # the lines fall into two groups whose latencies differ by MIN_SPLIT_CYCLES or more

    def per_sm(self) -> pd.DataFrame:
        """Per SM: its latency to each partition (median over the partition's lines), its near partition,
        and far - near."""
        rows = []
        for sm, row in zip(self.sms, self.cycles):
            a = float(np.median(row[self.partition == 0]))
            b = float(np.median(row[self.partition == 1])) if self.split else a
            rows.append({"sm": int(sm), "partition 0": a, "partition 1": b, "near": 0 if a <= b else 1,
                         "near cycles": min(a, b), "far cycles": max(a, b), "far - near": abs(b - a)})
        return pd.DataFrame(rows)


def matrix(per_sm: dict[int, np.ndarray], lines: int) -> tuple[np.ndarray, np.ndarray]:
    """(%smids, SMs x lines medians) from each SM's samples, launch by launch (`lines` a launch)."""
    sms = np.array(sorted(per_sm))
    cycles = np.array([np.median(np.asarray(per_sm[s], dtype=float).reshape(-1, lines), axis=0) for s in sms])
    return sms, cycles


def partitions(cycles: np.ndarray) -> np.ndarray:
    """Each line's group (0 or 1) by the sign of its score on the first principal component of the lines'
    profiles over the SMs; group 0 holds the line the first SM reaches soonest (a fixed naming)."""
    # per SM: what is near or far, not how fast it is overall (the lines' means are kept: where every SM is on one
    # side, the lines still split)
    centred = cycles - cycles.mean(axis=1, keepdims=True)
    _, _, vt = np.linalg.svd(centred.T, full_matrices=False)
    score = centred.T @ vt[0] if vt.size else np.zeros(cycles.shape[1])
    groups = (score > 0).astype(int)
    if groups[int(np.argmin(cycles[0]))] == 1:
        groups = 1 - groups
    return groups


def l2_map(per_sm: dict[int, np.ndarray], lines: int) -> L2Map:
    sms, cycles = matrix(per_sm, lines)
    groups = partitions(cycles)
    split = bool(0 < groups.sum() < groups.size)
    if split:
        a = np.median(cycles[:, groups == 0], axis=1)
        b = np.median(cycles[:, groups == 1], axis=1)
        split = float(np.median(np.abs(a - b))) >= MIN_SPLIT_CYCLES
    return L2Map(sms, cycles, groups if split else np.zeros_like(groups), split)


def by_gpu(rows: pd.DataFrame, launches: list[dict], arrays: dict) -> dict[str, L2Map]:
    """{gpu: L2Map} from an L2 map's stored rows (one per SM, launch {"map": "l2", "lines": n, "sm": s}) and their
    samples; a GPU whose rows mix two numbers of lines (two versions of the map) has no matrix."""
    found: dict[str, L2Map] = {}
    for gpu in sorted(set(rows.gpu_name)):
        mine = [(l, int(i)) for l, i, g in zip(launches, rows.measurement_id, rows.gpu_name) if g == gpu]
        lines = {l["lines"] for l, _ in mine}
        if len(lines) != 1:
            continue
        per_sm = {l["sm"]: arrays[i] for l, i in mine if i in arrays}
        if per_sm:
            found[gpu] = l2_map(per_sm, lines.pop())
    return found


def heatmap(ax, found: L2Map, title: str):
    """SMs (rows, by their near partition) x lines (columns, by partition): cycles."""
    table = found.per_sm()
    rows = np.lexsort((table.sm.values, table.near.values))
    cols = np.lexsort((np.arange(found.partition.size), found.partition))
    image = ax.imshow(found.cycles[rows][:, cols], aspect="auto", interpolation="nearest", cmap="viridis")
    ax.set_title(title, fontsize=9)
    ax.set_xlabel("line (grouped by partition: " + " | ".join(f"{p}: {n}" for p, n in
                                                              enumerate(np.bincount(found.partition, minlength=2))) + ")")
    ax.set_ylabel("SM (grouped by near partition)")
    step = max(1, len(rows) // 12)
    ax.set_yticks(range(0, len(rows), step), [str(s) for s in table.sm.values[rows][::step]], fontsize=6)
    return image
