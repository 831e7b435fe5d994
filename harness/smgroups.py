"""Groups of SMs read from pairs of SMs: what the maps of two families share (the DSMEM map's GPC groups, the
L2's near and far hits by pair of SMs), each computed from plain (SM, SM) data, never from a family.

- `components`: SMs linked by the pairs seen, transitively (the DSMEM map: SMs that shared a cluster share a GPC).
- `two_sides`: the split of the SMs into two sides that explains which pairs are slow. Every pair's latency (SM a
  reads what SM b did) is called slow or fast by the exact two-means of all the pairs' latencies; the sides are
  then the signs of the leading eigenvector of the +1 (fast) / -1 (slow) matrix, made symmetric, improved by
  moving single SMs while that lowers the pairs the split gets wrong (a local optimum of the cut, which the
  eigenvector starts close to). A pair the split gets wrong is a conflict: a structure of two sides explains
  the data where there are few; many say the pairs' speed is not a question of two sides at all.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from harness.stats import kmeans_1d

MIN_GAP_CYCLES = 20.0  # slow - fast centre below which the pairs are called one class (no split)


def components(pairs) -> list[list[int]]:
    """SMs linked by `pairs` ((a, b) pairs of ids), transitively: largest first, then by their first SM."""
    parent: dict[int, int] = {}

    def root(x: int) -> int:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in pairs:
        ra, rb = root(int(a)), root(int(b))
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    found: dict[int, list[int]] = {}
    for sm in list(parent):
        found.setdefault(root(sm), []).append(sm)
    return sorted((sorted(g) for g in found.values()), key=lambda g: (-len(g), g[0]))


@dataclass(frozen=True)
class Sides:
    sms: np.ndarray  # the ids of the rows and columns of the matrix
    side: np.ndarray  # per SM 0 or 1 (side 0 holds the first SM); all 0 where there is no split
    fast: float  # the two classes' centres (cycles)
    slow: float
    threshold: float  # a pair above it is slow
    pairs: int  # pairs with a latency (off the diagonal)
    conflicts: list = field(default_factory=list)  # (a, b, cycles) that the split calls wrongly

    @property
    def split(self) -> bool:
        return bool(self.slow - self.fast >= MIN_GAP_CYCLES and 0 < self.side.sum() < self.side.size)

    def of(self) -> dict[int, int]:
        return {int(s): int(v) for s, v in zip(self.sms, self.side)}


def _local_moves(signs: np.ndarray, votes: np.ndarray) -> np.ndarray:
    """Flip single SMs while one disagrees with more of its pairs than it agrees with."""
    signs = signs.copy()
    for _ in range(4 * signs.size):
        support = signs * (votes @ signs)
        worst = int(np.argmin(support))
        if support[worst] >= 0:
            break
        signs[worst] = -signs[worst]
    return signs


def two_sides(sms, cycles: np.ndarray) -> Sides:
    """The two sides of the SMs that explain which pairs are slow: `cycles[a, b]`, SM a's latency to what SM b
    did (NaN: not measured; the diagonal is ignored)."""
    sms = np.asarray(sms)
    cycles = np.asarray(cycles, dtype=np.float64)
    off = ~np.eye(sms.size, dtype=bool) & np.isfinite(cycles)
    values = cycles[off]
    if values.size < 2:
        return Sides(sms, np.zeros(sms.size, dtype=int), float("nan"), float("nan"), float("nan"), int(values.size))
    classes = kmeans_1d(values, 2)
    if classes.centres.size < 2:
        centre = float(classes.centres[0])
        return Sides(sms, np.zeros(sms.size, dtype=int), centre, centre, float("nan"), int(values.size))
    fast, slow = (float(c) for c in classes.centres)
    threshold = classes.threshold
    votes = np.where(off, np.where(cycles > threshold, -1.0, 1.0), 0.0)
    votes = votes + votes.T
    _, vectors = np.linalg.eigh(votes)
    signs = np.where(vectors[:, -1] >= 0, 1.0, -1.0)
    signs = _local_moves(signs, votes)
    side = (signs != signs[0]).astype(int)
    if slow - fast < MIN_GAP_CYCLES:
        side = np.zeros(sms.size, dtype=int)
    slow_pair = cycles > threshold
    wrong = off & (slow_pair != (side[:, None] != side[None, :]))
    conflicts = [(int(sms[a]), int(sms[b]), float(cycles[a, b])) for a, b in zip(*np.nonzero(wrong))]
    return Sides(sms, side, fast, slow, threshold, int(values.size), conflicts)


def agreement(a: dict[int, int], b: dict[int, int]) -> tuple[int, int]:
    """(SMs on the same side in both, SMs in both): two splits into two sides, whichever way round b's names go."""
    common = sorted(set(a) & set(b))
    same = sum(a[s] == b[s] for s in common)
    return max(same, len(common) - same), len(common)


def sides_of_groups(side: dict[int, int], groups) -> list[tuple[int, int, int]]:
    """Per group (a list of SM ids): (its index, its SMs on side 0, on side 1); SMs with no side are left out."""
    rows = []
    for g, members in enumerate(groups):
        known = [side[s] for s in members if s in side]
        rows.append((g, known.count(0), known.count(1)))
    return rows
