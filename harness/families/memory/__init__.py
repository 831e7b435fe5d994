"""The memory hierarchy (sm_90): the Family object. Pointer chases and streams through shared memory, L1, L2, HBM.

The baseline the papers put TMA beside (arXiv 2402.13499 Tables IV and V, 2501.12084 Tables 3-5):
what one ordinary load costs at each level, and what each level delivers. Its own family, not part
of `tma`: nothing here is a bulk copy, a tensor map or a cluster, and its probes (one template,
ptx/memory.cu.in) share none of the TMA template's kernels.

Cases and ids (a chase, a stream, the L2 map, the L2's pairs of SMs at each level, the L2 chase's footprint sweep):
cases.py; the L2's capacity compare derives from the sweep (Family.derived): capacity.py.

Metrics: `latency_cycles` of a chase, by chain slope ({"timed": "chain"}: two chains of 256 and 4352
dependent loads, the difference over the difference of lengths; the headline) and, for L2 and HBM,
each load timed alone ({"timed": "each access"}: clock, load, a shared store that waits for the word,
clock; net of the same without the load), whose samples show the near and far L2 partitions as two
modes; `sm_throughput` of a stream in B/cycle/SM (clock64, warps per SM 4..32); the map's `latency_cycles`
per SM ({"map": "l2", "lines": MAP_LINES, "sm": s}: every line's load, MAP_LAUNCHES launches; methods.SmMap).
The pairs' `latency_cycles` per SM and owner ({"map": "l2pairs", "sm": s, "owner": o}: o another SM's %smid, -1 the
SM's own first loads (misses), -2 its own line again), and pooled ({"map": "l2pairs", "pool": "hits" | "misses",
"cluster": 0 | 1}: every SM's loads of other SMs' lines, or its misses, split in two by 1-D k-means, as 2501.12084
Table 4 clusters its single loads; "own": the own lines' hits).

Rings are random cycles through 64-byte chunks (the papers' chunk size): word 16 c of chunk c holds
the word index of the next chunk, so consecutive loads fall in unrelated lines.

Beside this wiring: the kernels' launch shapes, geometry and the template's parameters, kernels.py; the SASS
expected, sass.py; inputs and checks, checks.py; what is measured, plan.py; the suites, suites.py; the seed
chapter's figures, chapter.py; what the L2 map and the pairs show, maps.py and pairs.py. The published figures'
mapping (paper_row, explain) stays here: the references' digest hashes it with the family package's functions it
calls.
"""

from __future__ import annotations

import re

from harness import seed_chapter
from harness.errors import HarnessError
from harness.families.base import Attachment, Family, Reason, Work, known_cause
import harness.families.memory.checks as _checks
import harness.families.memory.kernels as _kernels
import harness.families.memory.plan as _plan
import harness.families.memory.sass as _sass
import harness.families.memory.suites as _suites
from harness.families.memory.cases import (  # noqa: F401 (the family's names, as before the split)
    CHUNK_WORDS,
    LEVELS,
    RING_BYTES,
    STREAM_BYTES,
    MemoryCase,
    _chapter_chase,
    _latency_case,
    _stream_case,
    all_cases,
    cases,
    check,
    footprint_cases,
    l1_footprint_cases,
    map_cases,
    pair_cases,
    parse,
)
from harness.families.memory.chapter import chapter_row
from harness.families.memory.checks import pair_sums, ring, stream_sums  # noqa: F401
from harness.families.memory.kernels import (  # noqa: F401
    CHECK_WARPS,
    EACH_REPS,
    HBM_LAUNCH_STEP,
    L1_CARVEOUT,
    MAP_EMPTY,
    MAP_LAUNCHES,
    MAP_SHARED_BYTES,
    PAIR_CHECK_BLOCKS,
    PAIR_LAUNCHES,
    PAIR_ROW_TARGETS,
    PAIR_SLAB_BYTES,
    PAIR_SLABS,
    PAIR_SLOT_BYTES,
    PAIR_STRIPE_BYTES,
    PAIR_TARGETS,
    PAIR_WARM_BYTES,
    SPACES,
    STREAM_UNROLL,
    SWEEP_WARPS,
    UNROLL,
    pair_layout,
    pair_owner,
)
from harness.families.memory.plan import PAIR_POOLS  # noqa: F401
from harness.l2lines import LINES as MAP_LINES  # noqa: F401 (the family's name for it)
from harness.l2lines import chase  # noqa: F401
from harness.l2lines import ring as map_ring  # noqa: F401


# Levels beyond the SM, whose latency is not all in SM cycles: a paper figure of wall time x a clock is compared
# with ours as time (compare's basis "ns"), with cycles beside it.
BEYOND_SM = ("l2", "hbm")
# The clock each GPU's random_latency log multiplies wall time by (HPMLL/NVIDIA-Hopper-Benchmark, "clock N MHz"),
# which 2501.12084 Table 3 prints the same figures of
LOG_CLOCK_MHZ = {"H800 PCIe": 1755.0, "A100 PCIe": 1395.0, "RTX4090": 2235.0}
# Shared memory: 32 banks x 4 B per cycle per SM (CUDA C++ Programming Guide, compute capability 9.0).
SHARED_PEAK = 128


# Why a memory-level figure of ours differs from the papers': causes that do not close the gap by themselves
# (explain; bench compare shows them on the row). docs/data-movement.md.
CAUSES = {
    ("ld.global.cg.u32.pchase.l2", "latency_cycles"):
        "a mean over the L2's lines, near and far from the SM (single loads: the report's next section); "
        "2501.12084 Table 3 prints 264.5 to 502 for the two partitions",
    ("ld.global.cg.u32.pchase.hbm", "latency_cycles"):
        "HBM3 / HBM3e against the H800 PCIe's HBM2e; the chase is random over 256 MiB, as 2501.12084 Table 3's "
        "(2402.13499's 478.8 is a fixed stride with a warmed TLB)",
    ("ld.global.cg.u32.pairs.l2", "latency_cycles"):
        "another GPU (the H800 PCIe: 114 SMs, HBM2e); 2501.12084 finds its four centres by k-means over one chase's "
        "accesses (the means of the clusters); ours split hits from misses by construction, then each in two, and "
        "compare a cluster's median",
    ("ld.global.cg.u32.pchase.l2.footprint128m", "l2_capacity_mib"):
        "the capacity one SM's chase sees, not the L2's size: the L2 is two partitions, and a line one SM reads may "
        "be kept in both (its near copy), so a chase may leave the L2 near half of it; the estimate is the footprint "
        "at which the latency has risen 10 % (about 10 % above where misses begin) and the TLB's reach may add a "
        "knee of its own (docs/data-movement.md, 'The L2's capacity')",
    ("ld.global.ca.u32.pchase.l1.footprint512k", "l1_capacity_kib"):
        "the L1's part of the SM's 256 KB of L1 and shared memory together: the rest is the shared-memory carve-out, "
        "which the driver sets from the kernel's preference (ours 0: the largest L1) and its shared memory (at least "
        "the 8 KiB step that holds a block's 1 KiB reserved); the estimate is the footprint at which the latency has "
        "risen 10 % (about 2 % past where misses begin) (docs/data-movement.md, 'The L1's capacity')",
    ("ld.global.cg.v4.u32.stream.l2", "sm_throughput"):
        "the L2 is shared by all SMs: per SM it is the whole GPU's rate over this GPU's SMs, and the paper's over "
        "the H800's 114 (whole GPU: the value x SMs)",
}


class MemoryFamily(Family):
    name = "memory"
    description = "the memory hierarchy: pointer chases and streams through shared memory, L1, L2 and HBM"
    id_prefixes = ("ld.shared.u32.pchase", "ld.shared.u32.ptrchase", "ld.shared.v4.u32.stream", "ld.global.ca.", "ld.global.cg.",
                   "ld.global.u64.pchase")
    example_id = "ld.global.cg.u32.pchase.l2"
    template = "memory.cu.in"

    cases = staticmethod(all_cases)
    parse = staticmethod(parse)
    check = staticmethod(check)
    suites = staticmethod(_suites.suites)

    # -- the probe (kernels.py), what its SASS must show (sass.py) -------------------------------------

    template_params = staticmethod(_kernels.template_params)
    sass_expectation = staticmethod(_sass.expectation)

    # -- correctness (checks.py) -------------------------------------------------------------------

    inputs = staticmethod(_checks.inputs)
    output_words = staticmethod(_kernels.output_words)
    decode = staticmethod(_checks.decode)
    checks = staticmethod(_checks.checks)

    # -- measurement -------------------------------------------------------------------------------

    def work(self, case: MemoryCase) -> Work:
        return Work(32 * 16 if case.kind == "stream" else 4, "B")  # one warp's v4 load; one chase word

    def peak(self, case: MemoryCase) -> float | None:
        return SHARED_PEAK if case.kind == "stream" and case.level in ("shared", "l1") else None

    plan = staticmethod(_plan.plan)

    def attach(self, case: MemoryCase, probe, device) -> Attachment:
        """The map's blocks one per SM (MAP_SHARED_BYTES); the L1's footprint sweep's chase at the shared-memory
        carve-out preference L1_CARVEOUT (0: the largest L1). The chases' launch counters start at zero for every probe (its checks expect it; a module loaded
        again in one process keeps its globals). After the ring's upload the L2 holds its last tens of
        MiB: write twice the L2 elsewhere, so that the HBM chase's first launches find none of it there."""
        import cupy

        smem = {}
        if case.kind == "map":  # shared memory no two blocks fit on one SM beside: one block per SM
            smem["probe_map"] = MAP_SHARED_BYTES
        if case.kind == "pairs":  # one block per SM, all resident (the flag waits for all), from a fresh counter
            if device.sm_count * PAIR_STRIPE_BYTES > PAIR_SLAB_BYTES:
                raise HarnessError(f"{case}: {device.sm_count} SMs' stripes of {PAIR_STRIPE_BYTES >> 10} KiB do not "
                                   f"fit a {PAIR_SLAB_BYTES >> 20} MiB slab")
            smem["probe_pairs"] = MAP_SHARED_BYTES
            for name in ("pairs_launches", "pairs_arrived", "pairs_departed"):
                cupy.ndarray((1,), cupy.uint32, probe.module.get_global(name)).fill(0)
        if case.kind in ("pchase", "ptrchase"):
            for name in ("chain_launches", "each_launches"):
                cupy.ndarray((1,), cupy.uint32, probe.module.get_global(name)).fill(0)
        # the L1's footprint sweep: the largest L1 the SM gives (the rest of its 256 KiB is shared memory)
        carveout = {"probe_chain": L1_CARVEOUT} if case.footprint_kib else {}
        if case.level == "hbm" or case.kind == "pairs":
            scratch = cupy.ones(max(2 * (device.l2_bytes or 50 << 20), 1 << 20) // 4, dtype=cupy.uint32)
            scratch += 1
            cupy.cuda.get_current_stream().synchronize()
        return Attachment(dynamic_smem=smem, shared_carveout=carveout)

    @staticmethod
    def within_sm(case: MemoryCase) -> bool:
        """Shared memory and L1 are the SM's; the L2 and HBM (BEYOND_SM) are the board's, which a GPU with the same
        SM builds its own way (the H200 SXM's HBM3e against the H100 SXM5's HBM3; 60 MB of L2 against 50):
        figure_gpus compares only the levels inside the SM across GPUs that share it."""
        return case.level not in BEYOND_SM

    @staticmethod
    def paper_row(row: dict) -> dict | str | None:
        """Our counterpart of a published memory-level figure (2402.13499 Tables IV-V, 2501.12084 Tables 3-5,
        the authors' random_latency logs), in our units; a string says why one has none; None: not ours."""
        if row["paper"] == seed_chapter.SOURCE:  # the seed chapter's levels: our chases and streams
            return chapter_row(row, _chapter_chase, _stream_case)
        table, metric, how = row["table_or_figure"], row["metric"], row["instruction"]
        if table.startswith(("Sec. IV-B ", "Sec. 4.1 ", "Sec. 4.2 ", "Sec. 7.1 ", "Sec. 7.2 ")):
            return _memory_text(row)
        if not (table.startswith(("Table IV ", "Table 3 ", "Table 4 ", "Table V ", "Table 5 "))
                or "RegularUnits/random_latency" in table):
            return None
        if "RegularUnits/random_latency" in table:  # chains of 2 KB (L1), ~4 MB (L2), over 1 GB (HBM)
            size = float(row["shape"].split()[1])
            level = "l1" if size < 64 else "l2" if size < 64 << 10 else "hbm"
            found = dict(case_id=_latency_case(level, plain=True), metric="latency_cycles",
                         gpu=row["gpu"].replace(" (inferred)", ""))
            # "cycles = time per access x clock": beyond the SM (L2, HBM) compared as the time it is
            clock = re.search(r"clock (\d+) MHz", row["notes"])
            return {**found, "wall_clock_mhz": float(clock.group(1))} if level in BEYOND_SM and clock else found
        if table.startswith("Table 4 "):  # k-means centres of single loads: ours the pairs' pooled clusters
            side, which = metric.removeprefix("latency_l2_cache_").split("_")
            return dict(case_id=str(MemoryCase("pairs", "l2")), metric="latency_cycles",
                        launch={"map": "l2pairs", "pool": which + ("s" if which == "hit" else "es"),
                                "cluster": 0 if side == "near" else 1})
        if metric.startswith("latency_"):
            level = {"latency_l1": "l1", "latency_shared": "shared", "latency_l2": "l2", "latency_global": "hbm"}[metric]
            if level == "hbm" and "fixed stride" in how:
                return ("a fixed-stride chase with a warmed TLB; ours walks random 64-byte chunks (2501.12084 Table 3's "
                        "method), compared with that table")
            # Table IV times ld.ca (L1) and ld.cg (L2); Table 3 a plain random-stride load, its figures those of
            # the authors' random_latency log (264.5, 656.8): wall time x 1755 MHz, compared as time beyond the SM
            found = dict(case_id=_latency_case(level, plain=table.startswith("Table 3 ")), metric="latency_cycles")
            wall = table.startswith("Table 3 ") and level in BEYOND_SM
            return {**found, "wall_clock_mhz": LOG_CLOCK_MHZ[row["gpu"]]} if wall else found
        if metric in ("bandwidth_l1", "bandwidth_l2", "bandwidth_shared"):
            if row["dtype_ab"] not in ("FP32.v4", "na"):
                return f"{row['dtype_ab']} loads; our streams load 16 bytes a thread (FP32.v4)"
            level = metric.split("_")[1]
            case = f"ld.{LEVELS[level][0]}.v4.u32.stream" + ("" if level == "shared" else f".{level}")
            if row["unit"] == "byte/clk":  # the whole GPU: per SM, over the paper GPU's SMs (references divides)
                return dict(case_id=case, metric="sm_throughput", per_sm=True, unit="B/cycle/SM")
            return dict(case_id=case, metric="sm_throughput", unit="B/cycle/SM")
        return ("a read-and-write copy (5 reads + 1 write per thread), or a ratio of two figures: the tma suite's read "
                "roofline (ld.global.v4.u32) is reads alone")

    @staticmethod
    def explain(case_id: str, metric: str, value: float, paper: float, launch: dict) -> Reason | None:
        """CAUSES: the L2's two partitions, another memory, a shared L2 counted per SM."""
        return known_cause(CAUSES, case_id, metric)

    def headline(self, metric: str) -> dict | None:
        return {"timed": "chain"} if metric in ("latency_cycles", "latency_raw_cycles") else None

    def figures(self, context) -> list:
        from harness.families.memory.figures import figures

        return figures(context)

    @staticmethod
    def derived(frame) -> list:
        """The L2's and the L1's capacities from the footprint sweeps (capacity.py: l2_capacity_mib, l1_capacity_kib)."""
        from harness.families.memory.capacity import derived

        return derived(frame)

    def findings(self, context) -> list:
        """Which SMs are far from which half of the L2 (the map, ld.global.cg.u32.map.l2)."""
        from harness.families.memory.figures import findings

        return findings(context)

    def describe(self, case: MemoryCase) -> list[str]:
        what = {"pchase": "a pointer chase" if case.level != "shared" else "an index chase (base + word each step)",
                "ptrchase": "a chase of addresses (the word loaded is the next address)"}.get(
            case.kind, "every thread streaming 16-byte loads")
        if case.footprint_mib:
            return [f"{what} with {case.instruction} over a ring of {case.footprint_mib} MiB, the whole ring loaded "
                    "before each launch's chase (the L2's footprint sweep: compare derives l2_capacity_mib)"]
        if case.footprint_kib:
            return [f"{what} with {case.instruction} over a ring of {case.footprint_kib} KiB, the whole ring loaded "
                    f"by one block (one SM's L1) before each launch's chase, at the shared-memory carve-out "
                    f"preference {L1_CARVEOUT} (the L1's footprint sweep: compare derives l1_capacity_kib)"]
        return [f"{what} with {case.instruction} over {case.region_bytes >> 10} KiB ({case.level})"]


def _memory_text(row: dict) -> dict | str | None:
    """The memory levels as the papers' text states them (2402.13499 Sec. IV-B, 2501.12084 Secs. 4.1, 4.2, and
    7.1-7.2's shared-memory figures): the plain shared-memory chase maps; the rest are ranges, ratios or
    arithmetic whose terms the tables give. None: not a memory-level figure (DSMEM: the dsmem family's)."""
    metric = row["metric"]
    if metric == "latency_shared" and row["gpu"] == "H800 PCIe":  # Sec. 7.1: ld.shared beside the DSM chases
        return dict(case_id=_latency_case("shared", plain=False), metric="latency_cycles")
    if metric == "bandwidth_shared_theoretical_per_sm":
        return "arithmetic (1755 MHz x 128 B a cycle), not a measurement"
    if metric == "bandwidth_fraction_of_theoretical":
        return ("a fraction of that arithmetic (225 GB/s); ld.shared.v4.u32.stream's sm_throughput (B/cycle/SM, of "
                "128) is mapped from the tables")
    if metric.startswith(("latency_l1_range", "latency_shared_range")):
        return "a range stated over the three GPUs (\"around 32-33\", \"29~31\"): Tables IV and 3 per GPU are mapped"
    if row["gpu"] not in ("H800 PCIe", "all three"):
        return f"another GPU's ({row['gpu']}) figure"
    if metric.startswith("ratio_"):
        return ("a ratio of two figures (over the three GPUs, or against another GPU): its H800 terms, the chases' "
                "latency_cycles and the streams' sm_throughput, are mapped apart")
    if metric == "global_bandwidth_fraction_of_theoretical":
        return ("a fraction of the datasheet bandwidth (a device property): the tma suite's read roofline "
                "(ld.global.v4.u32 bandwidth_gbps) is our numerator, and Table V's 1861.5 GB/s the authors'")
    return None


FAMILY = MemoryFamily()
