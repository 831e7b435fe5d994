"""The memory hierarchy (sm_90): pointer chases and streams through shared memory, L1, L2 and HBM.

The baseline the papers put TMA beside (arXiv 2402.13499 Tables IV and V, 2501.12084 Tables 3-5):
what one ordinary load costs at each level, and what each level delivers. Its own family, not part
of `tma`: nothing here is a bulk copy, a tensor map or a cluster, and its probes (one template,
ptx/memory.cu.in) share none of the TMA template's kernels.

Ids spell the PTX load, then what is timed and where the data lives:

    ld.shared.u32.pchase              an index chase through shared memory: each step adds the loaded word
                                      index to the ring's base (address arithmetic between the loads), as the
                                      papers' chases do: the figure compared with theirs
    ld.shared.u32.ptrchase            a pointer chase through shared memory: the loaded word is the next
                                      address, nothing between two loads: the load's own latency
    ld.global.ca.u32.pchase.l1        ... through global memory cached in L1 (a 16 KiB ring)
    ld.global.u64.pchase.l1           ... the same ring as 64-bit pointers through a plain ld.global: no
                                      address arithmetic between loads (the u32 chases add an index)
    ld.global.cg.u32.pchase.l2        ... cached in L2 only (an 8 MiB ring, resident in the L2)
    ld.global.cg.u32.pchase.hbm       ... over 256 MiB, each launch on chunks no launch touched before
    ld.shared.v4.u32.stream           every thread of every SM loading 16-byte words: bytes per cycle per SM
    ld.global.ca.v4.u32.stream.l1     ... from a 16 KiB region each SM keeps in its L1
    ld.global.cg.v4.u32.stream.l2     ... from a 16 MiB region spread over the L2
    ld.global.cg.u32.map.l2           the L2 by SM: one block per SM walks MAP_LINES lines spread over 8 MiB
                                      (in the L2), timing each load alone: a map of the L2's latency from
                                      every SM to every line, whose lines fall into the near and far partition
                                      (maps.py; the `maps` suite)
    ld.global.cg.u32.pairs.l2         the L2's near and far hits and misses by pair of SMs: one block per SM brings
                                      lines of a fresh slab into the L2 (each load timed: a miss), then, after
                                      every block has (a flag in global memory), times its first access to lines
                                      16 other SMs brought in, and its own line again (pairs.py; the `maps` suite)

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
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from harness import seed_chapter
from harness.errors import HarnessError, IllegalShapeError, SpecError
from harness.families.base import (
    Attachment,
    Check,
    Family,
    Inputs,
    KernelExpectation,
    Reason,
    SassExpectation,
    Suite,
    Work,
    known_cause,
)
from harness.families.memory.chapter import chapter_row
from harness.families.memory.pairs import OWNER_MISS, OWNER_OWN
from harness.l2lines import LINES as MAP_LINES  # noqa: F401 (the family's name for it)
from harness.l2lines import chase
from harness.l2lines import ring as map_ring
from harness.measure.methods import (
    MAP_ROW_HEAD,
    BracketedLatency,
    ChainSlope,
    OccupancySweep,
    SmMap,
    SweepPoint,
)
from harness.spec import Case

LEVELS = {"shared": ("shared", None), "l1": ("global.ca", "l1"), "l2": ("global.cg", "l2"), "hbm": ("global.cg", "hbm")}
SPACES = {"shared": 0, "global.ca": 1, "global.cg": 2, "global": 3}  # ptx/memory.cu.in SPACE (3: pointers)
CHUNK_WORDS = 16  # 64-byte chunks
RING_BYTES = {"shared": 4 << 10, "l1": 16 << 10, "l2": 8 << 20, "hbm": 256 << 20}
STREAM_BYTES = {"shared": 32 << 10, "l1": 16 << 10, "l2": 16 << 20}
# The HBM chase: launch k starts at word k * LAUNCH_STEP, 2 MiB on: 128 launches before the ring
# wraps, each walking at most 4352 of its 4M chunks.
HBM_LAUNCH_STEP = (2 << 20) // 4
UNROLL = 16  # chase steps per loop body
STREAM_UNROLL = 4  # 16-byte loads per thread per iteration
SWEEP_WARPS = (4, 8, 16, 32)
EACH_REPS = 512  # loads timed alone per launch
CHECK_WARPS = 4
# The L2 map (ld.global.cg.u32.map.l2): lines walked by every SM, spread over an 8 MiB region (in the L2 of
# every Hopper: 50-60 MiB), each timed alone; launches, each a sample of every (SM, line).
MAP_LAUNCHES = 16
MAP_EMPTY = 16  # empty brackets each block times first; the least is the bracket's cost
# Dynamic shared memory (unused) of a map block: more than half of an SM's 228 KiB, so no two blocks share an SM
# and a grid of one block per SM lands on every SM (CUDA C++ Programming Guide, compute capability 9.0).
MAP_SHARED_BYTES = 120 << 10
# The pairs (ld.global.cg.u32.pairs.l2, ptx/memory.cu.in KIND 3): launch k reads slab k mod PAIR_SLABS of `in`; in
# it block b's stripe, lines a slot apart; a word every PAIR_WARM_BYTES loaded first (the TLB). A block times
# PAIR_TARGETS other blocks' lines a launch: PAIR_LAUNCHES x PAIR_TARGETS >= 2 x 131 offsets, every pair of SMs
# of a 132-SM GPU at least twice (the blocks' offsets shift by PAIR_TARGETS a launch).
PAIR_TARGETS = 16
PAIR_ROW_TARGETS = 2 * PAIR_TARGETS + 2  # its PAIR_TARGETS + 1 misses, the others' lines, its own line again
PAIR_SLAB_BYTES = 2 << 20
PAIR_STRIPE_BYTES = 8 << 10  # a block's: at most 256 blocks a slab
PAIR_SLOT_BYTES = 256  # between two lines (two 128-byte lines: no line holds two of them)
PAIR_WARM_BYTES = 64 << 10
PAIR_SLABS = 32  # 64 MiB (and one slab more: the last slab's TLB word): no launch of a probe reuses a slab
PAIR_LAUNCHES = 18
PAIR_CHECK_BLOCKS = 4  # the check's grid (every block's sum checked)
PAIR_POOLS = (("hits", 0, 1 << 20, 2), ("misses", OWNER_MISS, OWNER_MISS, 2), ("own", OWNER_OWN, OWNER_OWN, 1))
# Levels beyond the SM, whose latency is not all in SM cycles: a paper figure of wall time x a clock is compared
# with ours as time (compare's basis "ns"), with cycles beside it.
BEYOND_SM = ("l2", "hbm")
# The clock each GPU's random_latency log multiplies wall time by (HPMLL/NVIDIA-Hopper-Benchmark, "clock N MHz"),
# which 2501.12084 Table 3 prints the same figures of
LOG_CLOCK_MHZ = {"H800 PCIe": 1755.0, "A100 PCIe": 1395.0, "RTX4090": 2235.0}
# Shared memory: 32 banks x 4 B per cycle per SM (CUDA C++ Programming Guide, compute capability 9.0).
SHARED_PEAK = 128

_ID = re.compile(r"^ld\.(?P<space>shared|global\.ca|global\.cg|global)\.(?P<width>u32|u64|v4\.u32)\.(?P<kind>pchase|ptrchase|stream|map|pairs)"
                 r"(?:\.(?P<level>l1|l2|hbm))?$")


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
    ("ld.global.cg.v4.u32.stream.l2", "sm_throughput"):
        "the L2 is shared by all SMs: per SM it is the whole GPU's rate over this GPU's SMs, and the paper's over "
        "the H800's 114 (whole GPU: the value x SMs)",
}


@dataclass(frozen=True)
class MemoryCase(Case):
    family: ClassVar[str] = "memory"
    kind: str  # "pchase" (an index chase), "ptrchase" (shared memory: a chase of addresses), "stream" or "map"
    level: str  # shared, l1, l2, hbm
    weak: bool = False  # a plain ld.global.u64 of 64-bit pointers (the L1 chase), not ld.global.ca of an index

    @property
    def space(self) -> str:
        return "global" if self.weak else LEVELS[self.level][0]

    @property
    def instruction(self) -> str:
        return f"ld.{self.space}." + ("v4.u32" if self.kind == "stream" else "u64" if self.weak else "u32")

    @property
    def base_id(self) -> str:
        return f"{self.instruction}.{self.kind}" + ("" if self.level == "shared" else f".{self.level}")

    @property
    def region_bytes(self) -> int:
        return (STREAM_BYTES if self.kind == "stream" else RING_BYTES)[self.level]

    def columns(self) -> dict[str, object]:
        return dict(instruction=self.instruction, layout=self.level)


def _latency_case(level: str, plain: bool = False) -> str:
    """The chase at a level; `plain`: L1 through a plain ld.global of 64-bit pointers, as the authors'
    random-stride chases load."""
    if level == "l1" and plain:
        return "ld.global.u64.pchase.l1"
    return str(MemoryCase("pchase", level))


def _chapter_chase(level: str) -> str:
    """The chase the seed chapter's latency of a level compares with: shared memory's chase of addresses, the
    authors' plain chase of 64-bit pointers in L1, the index chase beyond."""
    return str(MemoryCase("ptrchase", "shared")) if level == "shared" else _latency_case(level, plain=True)


def _stream_case(level: str) -> str:
    return str(MemoryCase("stream", level))


def parse(case_id: str) -> MemoryCase:
    match = _ID.match(case_id)
    if not match:
        raise SpecError(f"cannot parse case id {case_id!r}: expected e.g. 'ld.global.cg.u32.pchase.l2' or "
                        "'ld.shared.v4.u32.stream' (see `bench list --suite memory`)")
    level = match["level"] or ("shared" if match["space"] == "shared" else "")
    weak = match["space"] == "global"
    case = MemoryCase(match["kind"], level, weak)
    levels_fit = (level == "l1" and match["kind"] == "pchase") if weak else LEVELS.get(level, ("",))[0] == match["space"]
    if not levels_fit or case.case_id != case_id:
        raise IllegalShapeError(f"{case_id!r}: a chase loads u32 words (the plain L1 chase ld.global.u64 pointers), a "
                                "stream v4.u32; shared memory names no level, ld.global.ca reads l1, ld.global.cg l2 "
                                "or hbm")
    check(case)
    return case


def check(case: MemoryCase) -> None:
    if case.kind not in ("pchase", "ptrchase", "stream", "map", "pairs") or case.level not in LEVELS:
        raise SpecError(f"{case}: unknown kind {case.kind!r} or level {case.level!r}")
    if case.kind == "ptrchase" and (case.level != "shared" or case.weak):
        raise IllegalShapeError(f"{case}: the chase of addresses is shared memory's (global memory's is ld.global.u64)")
    if case.kind == "map" and (case.level != "l2" or case.weak):
        raise IllegalShapeError(f"{case}: the map is the L2's (ld.global.cg.u32.map.l2)")
    if case.kind == "pairs" and (case.level != "l2" or case.weak):
        raise IllegalShapeError(f"{case}: the pairs are the L2's (ld.global.cg.u32.pairs.l2)")
    if case.kind == "stream" and case.level == "hbm":
        raise IllegalShapeError(f"{case}: the HBM stream is the tma suite's read baseline (ld.global.v4.u32)")


def cases() -> list[MemoryCase]:
    return ([MemoryCase("pchase", level) for level in ("shared", "l1", "l2", "hbm")] + [MemoryCase("pchase", "l1", True)]
            + [MemoryCase("ptrchase", "shared")]
            + [MemoryCase("stream", level) for level in ("shared", "l1", "l2")])


def ring(chunks: int, rng: np.random.Generator) -> np.ndarray:
    """Words of a random cycle through `chunks` 64-byte chunks: word 16 c holds the word index of the
    chunk after c; the other words are zero."""
    order = rng.permutation(chunks)
    words = np.zeros(chunks * CHUNK_WORDS, dtype=np.uint32)
    words[order * CHUNK_WORDS] = np.roll(order, -1) * CHUNK_WORDS
    return words


def stream_sums(words: np.ndarray, threads: int, iters: int) -> np.ndarray:
    """Each thread's sum (mod 2^32) of the v4 words it loads (ptx/memory.cu.in, one block of `threads`)."""
    quads = words.reshape(-1, 4).astype(np.uint64).sum(axis=1)
    x = np.arange(threads)
    steps = np.arange(iters * STREAM_UNROLL)
    index = (x[None, :] + steps[:, None] * threads) % quads.size
    return (quads[index].sum(axis=0) % (1 << 32)).astype(np.uint32)


def map_cases() -> list[MemoryCase]:
    return [MemoryCase("map", "l2")]


def pair_cases() -> list[MemoryCase]:
    return [MemoryCase("pairs", "l2")]


def pair_layout(k: int, block: int, slot: int) -> int:
    """The word index in `in` of slot `slot` of block `block`'s stripe in launch k's slab."""
    return ((k % PAIR_SLABS) * PAIR_SLAB_BYTES + block * PAIR_STRIPE_BYTES + slot * PAIR_SLOT_BYTES) // 4


def pair_owner(k: int, block: int, t: int, blocks: int) -> int:
    """The block whose slot 1 + t block `block` reads in launch k (ptx/memory.cu.in KIND 3, step 4)."""
    return (block + 1 + (k * PAIR_TARGETS + t) % (blocks - 1)) % blocks


def pair_sums(words: np.ndarray, blocks: int, k: int = 0) -> np.ndarray:
    """Each block's sum mod 2^32 of the words it loads in launch k of `blocks` blocks."""
    warm = [((k % PAIR_SLABS) * PAIR_SLAB_BYTES + w) // 4 for w in range(0, PAIR_SLAB_BYTES + 1, PAIR_WARM_BYTES)]
    sums = []
    for b in range(blocks):
        loaded = (warm + [pair_layout(k, b, 1 + i) for i in range(PAIR_TARGETS + 1)]
                  + [pair_layout(k, pair_owner(k, b, t, blocks), 1 + t) for t in range(PAIR_TARGETS)]
                  + [pair_layout(k, b, 1 + PAIR_TARGETS)])
        sums.append(int(words[loaded].astype(np.uint64).sum() % (1 << 32)))
    return np.array(sums, dtype=np.uint32)


def all_cases() -> list[MemoryCase]:
    """The family's cases: the `memory` suite's and the map's (the `maps` suite's)."""
    return cases() + map_cases() + pair_cases()


def _suites() -> dict[str, Suite]:
    return {"memory": Suite("the memory hierarchy: pointer-chase latency through shared memory, L1, L2 and HBM (each "
                            "load also timed alone for L2 and HBM), and load throughput per SM from shared memory, L1 "
                            "and L2", cases),
            "maps-l2": Suite("the L2 by SM: every SM's latency to each of 64 lines (near and far partition)", map_cases,
                             part_of=("maps", "maps-sides")),
            "maps-l2pairs": Suite("the L2's near and far hits and misses by pair of SMs: every SM's first access to "
                                  "lines other SMs brought into the L2, and its own misses", pair_cases,
                                  part_of=("maps", "maps-sides"))}


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
    suites = staticmethod(_suites)

    def template_params(self, case: MemoryCase) -> dict[str, object]:
        self.check(case)
        words = case.region_bytes // 4
        return {"kind": {"stream": 1, "map": 2, "pairs": 3}.get(case.kind, 0), "space": SPACES[case.space],
                "ring_words": words,
                "pointers": "true" if case.kind == "ptrchase" else "false",
                "shared_words": words if case.level == "shared" else 4,
                "launch_step": HBM_LAUNCH_STEP if case.level == "hbm" else 0,
                "unroll": STREAM_UNROLL if case.kind == "stream" else UNROLL, "out_threads": self.output_words(case),
                "map_lines": MAP_LINES, "map_empty": MAP_EMPTY,
                "map_row": MAP_ROW_HEAD + 2 * (PAIR_ROW_TARGETS if case.kind == "pairs" else MAP_LINES),
                "pair_targets": PAIR_TARGETS, "pair_slabs": PAIR_SLABS, "slab_words": PAIR_SLAB_BYTES // 4,
                "stripe_words": PAIR_STRIPE_BYTES // 4, "slot_words": PAIR_SLOT_BYTES // 4,
                "warm_words": PAIR_WARM_BYTES // 4}

    def sass_expectation(self, case: MemoryCase) -> SassExpectation:
        """The chase's UNROLL dependent loads (LDS, or LDG.E with .cg's STRONG.GPU); the stream's loads."""
        if case.level == "shared":
            load = "LDS.128" if case.kind == "stream" else "LDS"
        else:
            strength = {"global.cg": ".STRONG.GPU", "global.ca": ".STRONG.SM", "global": ""}[case.space]
            load = "LDG.E" + (".128" if case.kind == "stream" else ".64" if case.weak else "") + strength
        if case.kind == "stream":
            return SassExpectation((("probe_stream", KernelExpectation(load, STREAM_UNROLL)),), executes=load)
        if case.kind == "pairs":  # the TLB words', the misses', the others' lines', the own line's
            return SassExpectation((("probe_pairs", KernelExpectation(load, 4)),), executes=load,
                                   spill_kernels=("probe_pairs",))
        if case.kind == "map":  # the warm walk's load and the timed one's; local memory would be a spill
            return SassExpectation((("probe_map", KernelExpectation(load, 2)),), executes=load,
                                   spill_kernels=("probe_map",))
        # a chase of addresses holds nothing between its loads: no address arithmetic (the index chase's IMAD/LEA)
        between = ("IMAD", "IADD", "LEA", "SHF", "ISCADD") if case.kind == "ptrchase" else ()
        kernels = [("probe_chain", KernelExpectation(load, UNROLL, forbidden=between,
                                                     exclude=(load + ".",) if load == "LDS" else ()))]
        if case.level in ("l2", "hbm"):
            kernels.append(("probe_each", KernelExpectation(load, 1)))
        return SassExpectation(tuple(kernels), executes=load)

    # -- correctness -------------------------------------------------------------------------------

    def inputs(self, case: MemoryCase, rng: np.random.Generator) -> Inputs:
        if case.kind == "pairs":  # every slab and the word after the last (the last launch's TLB word)
            words = rng.integers(0, 1 << 32, (PAIR_SLABS * PAIR_SLAB_BYTES + PAIR_WARM_BYTES) // 4,
                                 dtype=np.uint64).astype(np.uint32)
            return Inputs(words.view(np.uint8), {"words": words},
                          f"uniform random 32-bit words over {PAIR_SLABS} slabs of {PAIR_SLAB_BYTES >> 20} MiB")
        if case.kind == "map":
            words = map_ring(rng)
            return Inputs(words.view(np.uint8), {"words": words},
                          f"a random cycle through {MAP_LINES} 64-byte chunks of an 8 MiB region")
        if case.kind in ("pchase", "ptrchase"):
            words = ring(case.region_bytes // (4 * CHUNK_WORDS), rng)
            how = f"a random cycle through {words.size // CHUNK_WORDS} 64-byte chunks"
            if case.weak:  # room for the kernel's ring of pointers after the ring of indices
                return Inputs(np.concatenate([words, np.zeros_like(words)]).view(np.uint8), {"words": words},
                              how + ", as 64-bit pointers")
        else:
            words = rng.integers(0, 1 << 32, case.region_bytes // 4, dtype=np.uint64).astype(np.uint32)
            how = "uniform random 32-bit words"
        return Inputs(words.view(np.uint8), {"words": words}, how)

    def checks(self, case: MemoryCase, inputs: Inputs) -> list[Check]:
        words = inputs.values["words"]
        if case.kind == "stream":
            threads, iters = 32 * CHECK_WARPS, 3
            return [Check("probe_stream", threads, iters, 5 * CHECK_WARPS,
                          self._expected(case, stream_sums(words, threads, iters)), 0.0,
                          f"each thread's sum of {iters * STREAM_UNROLL} 16-byte words")]
        if case.kind == "pairs":
            row = MAP_ROW_HEAD + 2 * PAIR_ROW_TARGETS
            return [Check("probe_pairs", 32, PAIR_TARGETS, row * PAIR_CHECK_BLOCKS,
                          self._expected(case, pair_sums(words, PAIR_CHECK_BLOCKS)), 0.0,
                          f"each of {PAIR_CHECK_BLOCKS} blocks' sum of every word it loads (its TLB words, its own "
                          f"lines, {PAIR_TARGETS} of the other blocks' lines, its own line again)",
                          grid=PAIR_CHECK_BLOCKS)]
        if case.kind == "map":  # a walk of fewer steps than the cycle, which would end where it began
            steps = MAP_LINES // 2 + 3
            return [Check("probe_map", 32, steps, MAP_ROW_HEAD + 2 * MAP_LINES,
                          self._expected(case, [chase(words, 0, steps)]), 0.0,
                          f"the word after the warm walk of {MAP_LINES} lines and {steps} timed steps", grid=1)]
        steps = 2 * UNROLL
        checks = [Check("probe_chain", 32, steps, 5, self._expected(case, [chase(words, 0, steps)]), 0.0,
                        f"the word after {steps} steps of the chase")]
        if case.level in ("l2", "hbm"):
            first = CHUNK_WORDS if case.level == "hbm" else 0  # ptx/memory.cu.in first_word: launch 0 of probe_each
            checks.append(Check("probe_each", 32, UNROLL, UNROLL * 32, self._expected(case, [chase(words, first, UNROLL)]),
                                0.0, f"the word after {UNROLL} steps timed alone"))
        return checks

    def _expected(self, case: MemoryCase, values) -> np.ndarray:
        out = np.zeros(self.output_words(case))
        values = np.asarray(values, dtype=np.float64)
        out[:values.size] = values
        return out

    def output_words(self, case: MemoryCase) -> int:
        return 32 * CHECK_WARPS if case.kind == "stream" else PAIR_CHECK_BLOCKS if case.kind == "pairs" else 1

    def decode(self, case: MemoryCase, words: np.ndarray) -> np.ndarray:
        return np.asarray(words[:self.output_words(case)], dtype=np.uint32).astype(np.float64)

    # -- measurement -------------------------------------------------------------------------------

    def work(self, case: MemoryCase) -> Work:
        return Work(32 * 16 if case.kind == "stream" else 4, "B")  # one warp's v4 load; one chase word

    def peak(self, case: MemoryCase) -> float | None:
        return SHARED_PEAK if case.kind == "stream" and case.level in ("shared", "l1") else None

    def plan(self, case: MemoryCase, device=None) -> list:
        if case.kind == "pairs":
            return [SmMap("latency_cycles", "probe_pairs", 32, PAIR_ROW_TARGETS, PAIR_TARGETS, PAIR_LAUNCHES,
                          {"map": "l2pairs"}, by_target=True, target_key="owner", pools=PAIR_POOLS,
                          notes=f"each block (one per SM) loads {PAIR_TARGETS + 1} lines of a fresh 2 MiB slab (the L2 "
                                "evicted; the TLB warmed; each load timed: misses, owner -1), waits for every block (a "
                                f"counter in global memory), then times its first access to one line of each of "
                                f"{PAIR_TARGETS} other blocks (owner: that block's %smid) and its own last line "
                                "again (owner -2), with ld.global.cg, each load bracketed alone (clock, load, a shared "
                                "store that waits for the word, clock) less the least of 16 empty brackets; pools: "
                                "every SM's samples of other SMs' lines (hits) and of its own first loads (misses), "
                                "each split in two by 1-D k-means")]
        if case.kind == "map":
            return [SmMap("latency_cycles", "probe_map", 32, MAP_LINES, MAP_LINES, MAP_LAUNCHES,
                          {"map": "l2", "lines": MAP_LINES},
                          notes=f"each block (one per SM) walks {MAP_LINES} lines of an 8 MiB region (resident in the "
                                f"L2), block b from line b mod {MAP_LINES}, with ld.global.cg, each load timed alone "
                                "(clock, load, a shared store that waits for the word, clock) less the least of 16 "
                                "empty brackets; samples: launch by launch, the lines in walk order from word 0")]
        if case.kind == "stream":
            points = tuple(SweepPoint("probe_stream", w, STREAM_UNROLL, {"warps": w}) for w in SWEEP_WARPS)
            return [OccupancySweep(points, 32, 1, whole_gpu="none")]
        where = {"shared": "shared memory (4 KiB)", "l1": "a 16 KiB ring in global memory, cached in L1 after the "
                 "first pass (the short chain's misses cancel in the slope)", "l2": "an 8 MiB ring, resident in the L2",
                 "hbm": "256 MiB, every launch on chunks no launch touched before"}[case.level]
        how = ("a chase of shared addresses (the word loaded is the next address)" if case.kind == "ptrchase" else
               "an index chase (each step adds the word loaded to the ring's base)" if case.level == "shared" else "")
        plan = [ChainSlope("latency_cycles", "probe_chain", 32, unroll=UNROLL, launch={"timed": "chain"},
                           notes=f"one thread's dependent {case.instruction} through {where}" + (f": {how}" if how else ""))]
        if case.level in ("l2", "hbm"):
            plan.append(BracketedLatency("probe_each", "probe_each_empty", 32,
                                         "two clock reads and a shared store of the word", launch={"timed": "each access"},
                                         reps=EACH_REPS))
        return plan

    def attach(self, case: MemoryCase, probe, device) -> Attachment:
        """The map's blocks one per SM (MAP_SHARED_BYTES). The chases' launch counters start at zero for every probe (its checks expect it; a module loaded
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
        if case.level == "hbm" or case.kind == "pairs":
            scratch = cupy.ones(max(2 * (device.l2_bytes or 50 << 20), 1 << 20) // 4, dtype=cupy.uint32)
            scratch += 1
            cupy.cuda.get_current_stream().synchronize()
        return Attachment(dynamic_smem=smem)

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

    def findings(self, context) -> list:
        """Which SMs are far from which half of the L2 (the map, ld.global.cg.u32.map.l2)."""
        from harness.families.memory.figures import findings

        return findings(context)

    def describe(self, case: MemoryCase) -> list[str]:
        what = {"pchase": "a pointer chase" if case.level != "shared" else "an index chase (base + word each step)",
                "ptrchase": "a chase of addresses (the word loaded is the next address)"}.get(
            case.kind, "every thread streaming 16-byte loads")
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
