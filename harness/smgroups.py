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


# -- partitions of the SMs compared (issue 45, section 4: the L2 map's halves, the pairs' sides, the GPC groups) ------
# A partition is {SM id: label}. Two are compared on the SMs both label: their contingency table (SMs per pair of
# labels), the adjusted Rand index (1: the same partition whatever the labels' names; about 0: no more alike than
# two random partitions of the same group sizes), and the fraction of SM pairs they agree on (both put the two SMs
# together, or both apart: the Rand index) beside the fraction two independent partitions of those sizes would
# agree on by chance.


def group_labels(groups) -> dict[int, int]:
    """{SM: the index of its group} of a list of groups (lists of SM ids)."""
    return {int(s): g for g, members in enumerate(groups) for s in members}


def contingency(a: dict[int, int], b: dict[int, int]) -> tuple[list, list, np.ndarray]:
    """(a's labels, b's labels, SMs with each pair of labels) over the SMs both partitions label."""
    common = sorted(set(a) & set(b))
    rows, cols = sorted({a[s] for s in common}), sorted({b[s] for s in common})
    table = np.zeros((len(rows), len(cols)), dtype=int)
    for s in common:
        table[rows.index(a[s]), cols.index(b[s])] += 1
    return rows, cols, table


def _pairs(n) -> np.ndarray:
    n = np.asarray(n, dtype=float)
    return n * (n - 1) / 2


@dataclass(frozen=True)
class Agreement:
    """Two partitions on their common SMs: the contingency table and how alike they are."""

    sms: int  # SMs both label
    rows: list  # the first partition's labels
    cols: list  # the second's
    table: np.ndarray  # SMs per (row label, column label)
    rand: float  # fraction of SM pairs both partitions put together, or both apart
    chance: float  # the same fraction expected of two independent partitions with these group sizes
    adjusted: float  # adjusted Rand index: (rand - chance) / (1 - chance); 1: the same partition

    @property
    def same(self) -> bool:
        """The same partition (each label of one is exactly one label of the other)."""
        return self.refines(0) and self.refines(1)

    def refines(self, axis: int) -> bool:
        """Whether each group of the first partition (axis 0; the second, axis 1) lies wholly inside one group of the
        other: that partition's groups are unions of these."""
        table = self.table if axis == 0 else self.table.T
        return bool(self.sms) and bool(((table > 0).sum(axis=1) <= 1).all())

    def split_groups(self, axis: int) -> list[tuple[object, list[int]]]:
        """The groups of the first partition (axis 0; the second, axis 1) that straddle the other's: (label, SMs of it
        in each of the other's groups)."""
        table, labels = (self.table, self.rows) if axis == 0 else (self.table.T, self.cols)
        return [(label, [int(x) for x in row if x]) for label, row in zip(labels, table) if (row > 0).sum() > 1]


def agreement_of(a: dict[int, int], b: dict[int, int]) -> Agreement:
    """How alike two partitions of the SMs are, on the SMs both label (module section above)."""
    rows, cols, table = contingency(a, b)
    n = int(table.sum())
    total = _pairs(n)
    if total == 0:
        return Agreement(n, rows, cols, table, float("nan"), float("nan"), float("nan"))
    together = _pairs(table).sum()  # pairs both put together
    in_a, in_b = _pairs(table.sum(axis=1)).sum(), _pairs(table.sum(axis=0)).sum()
    rand = (total + 2 * together - in_a - in_b) / total  # together in both, plus apart in both
    p_a, p_b = in_a / total, in_b / total
    chance = p_a * p_b + (1 - p_a) * (1 - p_b)
    expected = in_a * in_b / total
    top = (in_a + in_b) / 2
    adjusted = 1.0 if top == expected else float((together - expected) / (top - expected))
    return Agreement(n, rows, cols, table, float(rand), float(chance), adjusted)
