"""SmMap: every block times its accesses to a list of targets (lines of the L2, the shared memory of other SMs)
and says which SM it ran on: a map of the chip, by SM and target, over many launches (docs/data-movement.md,
"Maps of the chip"); with `pools`, also every SM's samples of a range of targets pooled and split into clusters
(1-D k-means), one measurement per cluster. The simulated GPU answers it with a chip of its own (below)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from harness.measure.measurement import Metric, Work
from harness.measure.methods.base import Context, Method, MethodSpec, Row, Simulation, declare
from harness.stats import kmeans_1d

MAP_ROW_HEAD = 2  # words of a map row before its (target, cycles) pairs: the block's %smid, the bracket's cost


@dataclass(frozen=True)
class SmMap(MethodSpec):
    """`grid` blocks (0: one per SM, the SM count rounded down to `grid_multiple`, a cluster's size) of
    `threads`, `launches` times, each launch with `iters`. Block b writes timing words [b * row, (b + 1) * row),
    row = MAP_ROW_HEAD + 2 x `targets`: its %smid, the cycles its bracket costs without an access (subtracted
    from every time; 0: none), then per target its id (a line's index, another SM's %smid) and the cycles
    its `steps` dependent accesses to it took. Each time, less the bracket and over `steps`, is a sample.
    `by_target` False: one Metric per SM, launch {**launch, "sm": s}, its samples whole rows in launch order
    (row k's target j is sample k x targets + j: the targets are the same in every row, a fixed walk);
    True: one Metric per SM and target, launch {**launch, "sm": s, target_key: t} (targets that differ
    from launch to launch: the SMs a cluster landed on). A block that ran where another block of the same
    launch ran adds its row too."""

    metric: str
    kernel: str
    threads: int
    targets: int
    iters: int
    launches: int
    launch: dict = field(default_factory=dict)
    grid: int = 0
    grid_multiple: int = 1
    steps: int = 1
    by_target: bool = False
    target_key: str = "target"
    notes: str = ""
    # with by_target: (label, lowest target, highest target, clusters): every SM's samples of the targets in the
    # range pooled, split into that many clusters by value (stats.kmeans_1d, ascending), one Metric per
    # cluster, launch {**launch, "pool": label, "cluster": c}
    pools: tuple[tuple[str, int, int, int], ...] = ()

    @property
    def row_words(self) -> int:
        return MAP_ROW_HEAD + 2 * self.targets

    def blocks(self, sm_count: int) -> int:
        return self.grid or sm_count // self.grid_multiple * self.grid_multiple

    def declares(self, work: Work) -> list[tuple[str, str]]:
        return [(self.metric, "cycles")]


def map_samples(spec: SmMap, rows: list[np.ndarray]) -> dict[tuple[int, int | None], np.ndarray]:
    """{(sm, target or None): samples} from each launch's rows (int64, blocks x row_words), as SmMap says."""
    found: dict[tuple[int, int | None], list[float]] = {}
    for table in rows:
        for row in np.asarray(table, dtype=np.int64).reshape(-1, spec.row_words):
            sm, overhead = int(row[0]), float(row[1])
            pairs = row[MAP_ROW_HEAD:].reshape(spec.targets, 2)
            times = (pairs[:, 1].astype(np.float64) - overhead) / spec.steps
            if spec.by_target:
                for target, value in zip(pairs[:, 0].tolist(), times.tolist()):
                    found.setdefault((sm, int(target)), []).append(value)
            else:
                found.setdefault((sm, None), []).extend(times.tolist())
    return {key: np.asarray(values) for key, values in sorted(found.items())}


def map_launches(spec: SmMap, rows: list[np.ndarray]) -> list[tuple[dict, np.ndarray]]:
    """(launch, samples) of every measurement a map's rows make: per SM (and target), then the pools' clusters."""
    found = map_samples(spec, rows)
    out = [({**spec.launch, "sm": sm} | ({spec.target_key: target} if spec.by_target else {}), values)
           for (sm, target), values in found.items()]
    for label, low, high, k in spec.pools if spec.by_target else ():
        pooled = [values for (_, target), values in found.items() if low <= target <= high]
        values = np.concatenate(pooled) if pooled else np.array([])
        values = values[np.isfinite(values)]
        if not values.size:
            continue
        clusters = kmeans_1d(values, k)
        for c in range(clusters.centres.size):
            out.append(({**spec.launch, "pool": label, "cluster": c}, values[clusters.labels == c]))
    return out


def _measure(spec: SmMap, ctx: Context) -> list[Metric]:
    grid = spec.blocks(ctx.sm_count)
    words = grid * spec.row_words
    window = ctx.sampler.window()
    with window:
        ctx.probe.run(spec.kernel, grid, spec.threads, spec.iters, words)  # warm-up: the lines, the TLB, the code
        rows = [ctx.probe.run(spec.kernel, grid, spec.threads, spec.iters, words).timing for _ in range(spec.launches)]
    reason = f"fixed: {spec.launches} launches of {grid} blocks"
    return [Metric(spec.metric, "cycles", values, launch, notes=spec.notes, stop_reason=reason, gpu_state=window.state)
            for launch, values in map_launches(spec, rows)]


# A simulated chip for the maps: two L2 halves, SMs in GPCs of 16 and 18, TPCs of 2.
SIMULATED_GPC_SMS = (16, 18, 16, 18, 16, 16, 16, 16)  # 132 SMs
SIMULATED_L2_CYCLES = (260.0, 420.0)  # a line in the SM's own half, in the other
SIMULATED_DSMEM_CYCLES = (190.0, 205.0)  # another SM of the same TPC, of the same GPC
SIMULATED_LAUNCHES = 2


def _simulated_gpc(sm: int) -> int:
    return int(np.searchsorted(np.cumsum(SIMULATED_GPC_SMS), sm, side="right"))


def _simulated_rows(spec: SmMap, sm_count: int) -> np.ndarray:
    """One launch's rows as the kernel writes them: each L2 line in one half (by its index), an SM's half by
    its GPC; clusters packed into the GPCs in order, each CTA timing every other CTA of its cluster; pairs with no
    cluster (by target, grid_multiple 1): each block timing the next SMs' lines, far where the two SMs' halves
    differ."""
    blocks = spec.blocks(sm_count)
    rows = np.zeros((blocks, spec.row_words), dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(SIMULATED_GPC_SMS)])
    c = spec.grid_multiple
    placed = [int(starts[g]) + i for g, n in enumerate(SIMULATED_GPC_SMS) for i in range(n // c * c)]
    for b in range(blocks):
        sm = placed[b % len(placed)] if spec.by_target else b % sm_count
        rows[b, 0] = sm
        for j in range(spec.targets):
            if spec.by_target and c == 1:  # pairs with no cluster: another SM's lines, near or far by the two halves
                peer = placed[(b + 1 + j) % len(placed)]
                cycles = SIMULATED_L2_CYCLES[int((_simulated_gpc(peer) < 4) != (_simulated_gpc(sm) < 4))]
            elif spec.by_target:
                peer = placed[(b // c * c + (b % c + 1 + j) % c) % len(placed)]
                cycles = SIMULATED_DSMEM_CYCLES[0 if peer // 2 == sm // 2 else 1] * spec.steps
            else:
                peer, cycles = j, SIMULATED_L2_CYCLES[int(j % 2 != (_simulated_gpc(sm) < 4))]
            rows[b, MAP_ROW_HEAD + 2 * j:MAP_ROW_HEAD + 2 * j + 2] = (peer, cycles)
    return rows


@declare
class SmMapMethod(Method):
    spec = SmMap

    def measure(self, spec: SmMap, ctx: Context) -> list[Metric]:
        return _measure(spec, ctx)

    def simulate(self, spec: SmMap, sim: Simulation) -> list[Row]:
        """The simulated chip's rows, two launches of them, read as the real map's are."""
        rows = [_simulated_rows(spec, sim.sm_count) for _ in range(SIMULATED_LAUNCHES)]
        return [(spec.metric, "cycles", values, launch) for launch, values in map_launches(spec, rows)]
