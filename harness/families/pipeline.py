"""What a warp-specialized pipeline case is (ptx/pipeline.cuh), declared once for every kernel-level family.

A pipeline family (GEMM today, attention next) subclasses `PipelineCase` for its cases and renders
`skeleton_params(case)` into its template beside its own parameters; its kernel's by-value argument is a
`KernelStruct` (declared here once: rendered into the template as C and into NumPy as the host's view, with the
offsets checked against each other by the compiler, tests/test_pipeline_layer.py); its in-kernel counters are
`PIPELINE_COUNTERS` (rendered into the template as the enum ptx/pipeline.cuh writes).

The layer below the families holds what they share: ptx/warpgroup.cuh and ptx/pipeline.cuh on the device,
harness/tensormaps.py (TMA maps) and harness/dtypes.py (rounding) on the host.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from harness.spec import Case

SCHEDULES = ("cooperative", "pingpong")
CLUSTERS = (1, 2, 4)  # CTAs of a cluster along M sharing B by multicast (each loads 1/cluster of it)  # ptx/pipeline.cuh SCHEDULE_COOPERATIVE, SCHEDULE_PINGPONG
ORDERS = ("row", "grouped", "hilbert")  # ptx/pipeline.cuh ORDER_ROW, ORDER_GROUPED, ORDER_HILBERT
EPILOGUES = ("regs", "tmastore")
GROUP = 8  # rows of work items a grouped order walks at a time
MAX_STAGES = 7
SPLITS = (1, 2, 3, 4, 6, 8, 16)  # split-K: runs of k-blocks per tile
STREAMK = (0, 2, 4, 8)  # stream-K: the most runs a tile of the last wave is split in (0: none)
MAX_SMS = 1024  # a persistent grid's SMs, at most (a GPU with fewer refuses the case when it runs)
WARPGROUP_THREADS = 128
PRODUCER_REGS, CONSUMER_REGS = 40, 232  # setmaxnreg: 128 x 40 + 256 x 232 = 64512 of 65536 registers
SMEM_LIMIT = 227 * 1024  # dynamic shared memory per block on sm_90 (cudaDevAttrMaxSharedMemoryPerBlockOptin)
SMEM_SLACK = 1024  # the skeleton aligns its dynamic shared memory to 1024 bytes itself
ACC_REGISTER_LIMIT = 128  # f32 accumulators per thread beyond which ptxas serializes the wgmma (C7511)

# The counters every pipeline writes per CTA after its timing record, in this order (ptx/pipeline.cuh
# PipelineCounter, rendered from this list): cycles the first consumer warpgroup waited on full slots, cycles the
# producer waited on empty ones, the consumer's epilogue and mainloop cycles, its tiles and k-blocks.
PIPELINE_COUNTERS = ("full_wait", "empty_wait", "epilogue", "mainloop", "tiles", "kblocks")


@dataclass(frozen=True, kw_only=True)
class PipelineCase(Case):
    """The skeleton's dimensions: a tile of bm x bn over k-blocks of bk, a ring of `stages` slots, `consumers`
    consumer warpgroups (setmaxnreg rebalancing registers from the producer when `rebalance`), a cluster of
    `cluster` CTAs sharing B by multicast, a persistent grid or one CTA per tile, the tile order, the schedule
    and the epilogue. A family adds its problem and its types."""

    bm: int = 128
    bn: int = 256
    bk: int = 64
    stages: int = 3
    consumers: int = 2
    rebalance: bool = False
    cluster: int = 1
    persistent: bool = False
    order: str = "row"
    epilogue: str = "regs"
    grid_sms: int = 0  # a persistent grid's CTAs: one per SM on this many SMs (0: every SM of the GPU)
    schedule: str = "cooperative"  # SCHEDULES
    # split-K: each tile's k-blocks in `splits` contiguous runs, each a work item of its own; every run writes its
    # f32 sums to a workspace and the tile's last run to finish adds them, in run order, and writes C
    # (ptx/pipeline.cuh TileScheduler, the kernel's epilogue)
    splits: int = 1
    # stream-K: the tiles past the grid's last whole wave split along K over its CTAs, a tile in at most about
    # `streamk` runs (0: none); their sums added as split-K's (ptx/pipeline.cuh TileScheduler)
    streamk: int = 0

    def params(self) -> dict[str, object]:
        values = super().params()
        for name in ("splits", "streamk"):  # the defaults: the params of the cases stored before either was a dimension
            if values[name] == (1 if name == "splits" else 0):
                del values[name]
        return values

    @property
    def pingpong(self) -> bool:
        return self.schedule == "pingpong"

    @property
    def wg_rows(self) -> int:
        """Rows of a tile one consumer warpgroup computes: its share (cooperative) or all (ping-pong)."""
        return self.bm if self.pingpong else self.bm // self.consumers

    @property
    def threads(self) -> int:
        return WARPGROUP_THREADS * (1 + self.consumers)

    def check_skeleton(self) -> str | None:
        """Why the skeleton cannot run these dimensions, in one line, or None."""
        if self.schedule not in SCHEDULES:
            return f"schedule {self.schedule!r}: expected one of {', '.join(SCHEDULES)}"
        if self.pingpong and (self.consumers != 2 or not self.persistent):
            return "ping-pong alternates two consumer warpgroups over a persistent CTA's tiles: wg2 and persistent"
        if self.consumers not in (1, 2) or self.wg_rows % 64:
            return f"{self.consumers} consumer warpgroups cannot split {self.bm} rows into blocks of 64"
        if self.rebalance and self.consumers != 2:
            return "setmaxnreg rebalances registers from the producer to two consumer warpgroups"
        if self.cluster not in CLUSTERS:
            return f"cluster {self.cluster}: expected one of {', '.join(map(str, CLUSTERS))}"
        if self.order not in ORDERS or self.epilogue not in EPILOGUES:
            return f"order {self.order!r} / epilogue {self.epilogue!r}: expected {ORDERS} / {EPILOGUES}"
        if self.grid_sms and not self.persistent:
            return (f"sms{self.grid_sms}: only a persistent grid chooses its SMs (a grid of one CTA per tile takes "
                    "them all)")
        if self.grid_sms and (not self.cluster <= self.grid_sms <= MAX_SMS or self.grid_sms % self.cluster):
            return f"sms{self.grid_sms}: expected a multiple of the cluster ({self.cluster}) up to {MAX_SMS}"
        if not 1 <= self.stages <= MAX_STAGES:
            return f"{self.stages} stages: expected 1..{MAX_STAGES}"
        if self.splits not in SPLITS:
            return f"splitk{self.splits}: expected one of {', '.join(map(str, SPLITS))}"
        if self.splits > 1 and (self.pingpong or self.cluster > 1):
            return "split-K runs the cooperative schedule with no cluster (a run of k-blocks is a work item alone)"
        if self.streamk not in STREAMK:
            return f"streamk{self.streamk}: expected one of {', '.join(map(str, STREAMK[1:]))}"
        if self.streamk and (self.pingpong or self.cluster > 1 or not self.persistent or self.splits > 1):
            return ("stream-K splits the last wave's tiles over a persistent grid: the cooperative schedule, no cluster, "
                    "no split-K")
        return None


def skeleton_params(case: PipelineCase) -> dict[str, object]:
    """The template parameters of ptx/pipeline.cuh's skeleton for this case (a family adds its own)."""
    return {
        "stages": case.stages, "consumers": case.consumers, "schedule": f"SCHEDULE_{case.schedule.upper()}",
        "rebalance": str(case.rebalance).lower(), "producer_regs": PRODUCER_REGS, "consumer_regs": CONSUMER_REGS,
        "cluster": case.cluster, "persistent": str(case.persistent).lower(), "order": ORDERS.index(case.order),
        "group": GROUP, "splits": case.splits, "streamk": case.streamk, "epilogue_tma": str(case.epilogue == "tmastore").lower(),
        "cluster_attr": f"__cluster_dims__({case.cluster}, 1, 1)" if case.cluster > 1 else "",
        "counters": render_counters(),
    }


@dataclass(frozen=True)
class StreamK:
    """ptx/pipeline.cuh TileScheduler's stream-K walk, the same integer arithmetic on the host: `tiles` tiles of
    `kblocks` k-blocks on a persistent grid of `grid` CTAs, the last partial wave's tiles cut in at most about `runs`
    runs. The host sizes the workspace from it; tests/test_pipeline_layer.py walks it."""

    tiles: int
    kblocks: int
    grid: int
    runs: int

    @property
    def whole(self) -> int:  # tiles walked whole: the grid's whole waves
        return self.tiles - self.tiles % self.grid

    @property
    def total(self) -> int:  # k-blocks of the split tiles
        return (self.tiles - self.whole) * self.kblocks

    @property
    def parts(self) -> int:  # ranges of them, one a CTA
        return min(self.grid, self.total, (self.tiles - self.whole) * self.runs)

    @property
    def stride(self) -> int:
        """Workspace slots a split tile has: the most ranges it can touch (each at least total // parts long)."""
        return (self.kblocks - 1) // (self.total // self.parts) + 2 if self.parts else 0

    def range_of(self, g: int) -> int:
        return ((g + 1) * self.parts - 1) // self.total

    def items(self, cta: int) -> list[tuple[int, int, int, int, int]]:
        """CTA `cta`'s work items in order: (tile, first k-block, k-blocks, the tile's runs, the run's slot)."""
        out = [(q, 0, self.kblocks, 1, 0) for q in range(cta, self.whole, self.grid)]
        if cta < self.parts:
            b, e = cta * self.total // self.parts, (cta + 1) * self.total // self.parts
            while b < e:
                split = b // self.kblocks
                end = min(e, (split + 1) * self.kblocks)
                opener = self.range_of(split * self.kblocks)
                runs = self.range_of((split + 1) * self.kblocks - 1) - opener + 1
                out.append((self.whole + split, b - split * self.kblocks, end - b, runs, cta - opener))
                b = end
        return out

    def workspace_slots(self) -> int:
        """Slots of the workspace (each a tile's f32 sums) and of the counters (each one a consumer warpgroup)."""
        return (self.tiles - self.whole) * self.stride


def hilbert_cell(rows: int, cols: int, q: int) -> tuple[int, int]:
    """Cell q (row, col) of a generalized Hilbert curve over a rows x cols grid of any sizes: ptx/pipeline.cuh
    hilbert_cell, the same integer arithmetic (tests/test_pipeline_layer.py has the compiler check the two agree).

    A rectangle is walked from its corner (0, 0) along its major side (the longer; columns on a tie) to the far
    corner of that side: one of length 1 in a line; a long one (major > 1.5 x minor) as two halves along the major
    side, each walked the same way; else as three, a U: the first `h2` lines of the minor side walked with the axes
    swapped (out along the minor side), the rest of the minor side across the whole major side, and back along the
    minor side over the far part of the major side. Halves are rounded so that the parts' lengths are even where
    they can be; the curve then steps between grid neighbours, except once (one diagonal step) on a grid whose
    shorter side is even and above 2 and whose longer side is odd. Powers of two give Hilbert's curve. The index is
    taken down the parts to its cell: a loop of at most about 2 log2(max side) levels, no recursion."""
    x, y = 0, 0
    # (row, col) unit vectors of the major and the minor side, and their lengths
    (ax, ay, bx, by), w, h = ((0, 1, 1, 0), cols, rows) if cols >= rows else ((1, 0, 0, 1), rows, cols)
    while True:
        if h == 1:
            return x + ax * q, y + ay * q
        if w == 1:
            return x + bx * q, y + by * q
        if 2 * w > 3 * h:  # two halves along the major side
            w2 = w // 2
            w2 += 1 if w2 % 2 and w > 2 else 0
            if q < w2 * h:
                w = w2
            else:
                q -= w2 * h
                x, y, w = x + ax * w2, y + ay * w2, w - w2
        else:  # out along the minor side, across, and back
            h2, w2 = h // 2, w // 2
            h2 += 1 if h2 % 2 and h > 2 else 0
            if q < h2 * w2:
                ax, ay, bx, by, w, h = bx, by, ax, ay, h2, w2
            elif q < h2 * w2 + w * (h - h2):
                q -= h2 * w2
                x, y, h = x + bx * h2, y + by * h2, h - h2
            else:
                q -= h2 * w2 + w * (h - h2)
                x, y = x + ax * (w - 1) + bx * (h2 - 1), y + ay * (w - 1) + by * (h2 - 1)
                ax, ay, bx, by, w, h = -bx, -by, -ax, -ay, h2, w - w2


def tile_walk(order: str, rows: int, cols: int) -> tuple[np.ndarray, np.ndarray]:
    """ptx/pipeline.cuh TileScheduler.place on the host: the row and column of the q-th work item (a cluster's
    tiles) of a rows x cols grid of them in `order`, for every q."""
    items = np.arange(rows * cols)
    if order == "row":
        return items // cols, items % cols
    if order == "grouped":  # GROUP rows at a time, column by column within the group
        per_group = GROUP * cols
        first = items // per_group * GROUP
        height = np.minimum(rows - first, GROUP)
        r = items % per_group
        return first + r % height, r // height
    if order == "hilbert":
        cells = np.array([hilbert_cell(rows, cols, int(q)) for q in items], dtype=np.int64).reshape(-1, 2)
        return cells[:, 0], cells[:, 1]
    raise ValueError(f"order {order!r}: expected one of {', '.join(ORDERS)}")


def render_counters() -> str:
    """PIPELINE_COUNTERS as the C enum ptx/pipeline.cuh indexes its counters with."""
    names = ", ".join(name.upper() for name in PIPELINE_COUNTERS)
    return f"enum PipelineCounter {{ {names}, PIPELINE_COUNTERS }};"


def counter_index(name: str) -> int:
    return PIPELINE_COUNTERS.index(name)


COUNTER_WORDS = len(PIPELINE_COUNTERS)  # words per CTA after its timing record
# Dense f16/bf16 FLOP per cycle per SM: 4 tensor cores x 1024 (the wgmma family measures it; fp8 twice that)
TENSOR_FLOPS_PER_CYCLE = 4096


def counter_metrics(apart: bool = True):
    """The metrics every pipeline's counters give (methods.Counter: a metric, its unit, the counter summed and the
    one it is divided by): cycles per k-block, and the waits and the epilogue per tile. `apart`: the waits are
    counted by the kernel's counting build, launched apart from the timed one (gemm/sass.py both_builds); else the timed kernel
    counts them itself (a template that builds the counting kernel only)."""
    from harness.measure.methods import Counter

    full, empty, epilogue, mainloop, tiles, kblocks = (counter_index(name) for name in PIPELINE_COUNTERS)
    return (Counter("cycles_per_kblock", "cycles", mainloop, kblocks),
            Counter("full_wait_cycles_per_tile", "cycles", full, tiles, counted=apart),
            Counter("empty_wait_cycles_per_tile", "cycles", empty, tiles, counted=apart),
            Counter("epilogue_cycles_per_tile", "cycles", epilogue, tiles))


# -- the two builds of a pipeline kernel ----------------------------------------------------------------------
# A template's kernel is built twice in one module (ptx/pipeline.cuh WaitClock): the timed kernel reads the clock at
# its start and end and around each tile's mainloop and epilogue only (TIMED_CLOCK_READS sites in its SASS), the
# counting one (`<kernel>_counted`) around every wait on the ring as well, for the wait counters (counter_metrics'
# `counted` ones), which WholeKernel reads from a launch of it after each round. The GEMM builds both; attention
# builds the counting kernel only and times it (without the reads ptxas spills its overlapped kernel, C7512).
TIMED_CLOCK_READS = 5


def counted_kernel(kernel: str) -> str:
    return kernel + "_counted"


# -- kernel argument structs ------------------------------------------------------------------------------

MAP_WORDS = 16  # a CUtensorMap: 128 bytes, 64-byte aligned
_C_TYPES = {"map": ("TmaMap", None), "u64": ("unsigned long long", np.uint64), "i32": ("int", np.int32)}
_SIZES = {"map": 128, "u64": 8, "i32": 4}


@dataclass(frozen=True)
class KernelStruct:
    """A by-value kernel argument: `fields` as (name, kind) with kind "map" (a TMA map), "u64" or "i32", aligned
    to 64 bytes (a tensor map's alignment). One declaration gives the C struct and the NumPy dtype."""

    name: str
    fields: tuple[tuple[str, str], ...]
    align: ClassVar[int] = 64
    comment: str = field(default="", compare=False)

    def offsets(self) -> dict[str, int]:
        offset, out = 0, {}
        for name, kind in self.fields:
            size = _SIZES[kind]
            offset = -(-offset // min(size, self.align)) * min(size, self.align)
            out[name] = offset
            offset += size
        return out

    @property
    def itemsize(self) -> int:
        name, kind = self.fields[-1]
        end = self.offsets()[name] + _SIZES[kind]
        return -(-end // self.align) * self.align

    def dtype(self) -> np.dtype:
        spec = {"names": [], "formats": [], "offsets": [], "itemsize": self.itemsize}
        for (name, kind), offset in zip(self.fields, self.offsets().values()):
            spec["names"].append(name)
            spec["formats"].append((np.uint64, (MAP_WORDS,)) if kind == "map" else _C_TYPES[kind][1])
            spec["offsets"].append(offset)
        return np.dtype(spec)

    def render(self) -> str:
        """The C declaration (with TmaMap's), for a template's ${...}."""
        lines = ["struct __align__(64) TmaMap {", "  unsigned long long w[16];", "};"]
        if self.comment:
            lines += [f"// {line}" for line in self.comment.splitlines()]
        lines.append(f"struct __align__({self.align}) {self.name} {{")
        lines += [f"  {_C_TYPES[kind][0]} {name};" for name, kind in self.fields]
        lines.append("};")
        return "\n".join(lines)

    def check_layout_source(self) -> str:
        """static_asserts that the compiler's layout of the struct is the NumPy dtype's (compiled by the tests)."""
        asserts = [f'static_assert(sizeof({self.name}) == {self.itemsize}, "{self.name}: size");']
        asserts += [f'static_assert(offsetof({self.name}, {name}) == {offset}, "{self.name}.{name}: offset");'
                    for name, offset in self.offsets().items()]
        return "\n".join(asserts)
