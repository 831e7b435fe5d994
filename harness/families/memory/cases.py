"""Memory cases: what each measures, its canonical id, and what is legal.

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
    ld.global.cg.u32.pchase.l2.footprint48m
                                      the L2 chase over a ring of 48 MiB (any whole number of MiB, FOOTPRINT_MIB),
                                      the whole ring loaded once by the block before each launch's chase is timed,
                                      each launch from its own place in the cycle: one point of the footprint sweep
                                      (the `memory-l2-capacity` suite; capacity.py: the capacity it shows)
    ld.global.ca.u32.pchase.l1.footprint192k
                                      the L1 chase over a ring of 192 KiB (any whole number of KiB, FOOTPRINT_KIB),
                                      warmed the same way (ld.global.ca, one block: one SM's L1), launched with the
                                      shared-memory carve-out preference 0 (the largest L1 the SM gives): one point of
                                      the L1's footprint sweep (the `memory-l1-capacity` suite; l1_capacity_kib)
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
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from harness.errors import IllegalShapeError, SpecError
from harness.spec import Case

LEVELS = {"shared": ("shared", None), "l1": ("global.ca", "l1"), "l2": ("global.cg", "l2"), "hbm": ("global.cg", "hbm")}
CHUNK_WORDS = 16  # 64-byte chunks
RING_BYTES = {"shared": 4 << 10, "l1": 16 << 10, "l2": 8 << 20, "hbm": 256 << 20}
STREAM_BYTES = {"shared": 32 << 10, "l1": 16 << 10, "l2": 16 << 20}

# The footprint sweep's rings: a whole number of MiB, at most 512 (a 512 MiB ring is 2^27 word indices; the host builds
# its permutation of 8 M chunks in a second)
FOOTPRINT_MIB = (1, 512)
# The footprint sweep: from well inside either half of the L2 (8 MiB) past the whole of it to 128 MiB, 4 MiB apart
# from 8 to 64 MiB: around half the L2 and the whole of it, where a knee may fall (the H100 SXM5's L2, 50 MiB as the
# device reports it, "50 MB"; the H200's 60 MiB), then coarser up to 128 MiB
SWEEP_MIB = (8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 52, 56, 60, 64, 80, 96, 128)
# The L1 chase's rings: a whole number of KiB, at most 4 MiB (beyond that the L2 sweep's MiB)
FOOTPRINT_KIB = (1, 4096)
# The L1's footprint sweep: the L1 and shared memory are 256 KiB an SM together, the L1 what the carve-out leaves it
# (at preference 0 about 256 less the smallest shared-memory carve-out, 8 KiB: a block's 1 KiB the system reserves);
# from today's 16 KiB ring, 32 KiB apart from 64 to 192 KiB (a knee there: a carve-out larger than asked for, 64 to
# 164 KiB of shared memory), 16 KiB apart from 192 to 256 KiB (where the L1 at preference 0 should end: 248 KiB),
# then past the whole 256 KiB to twice it (the curve's rise toward the L2's latency, which closes the knee)
SWEEP_KIB = (16, 32, 64, 96, 128, 160, 192, 208, 224, 240, 256, 288, 320, 384, 512)

_ID = re.compile(r"^ld\.(?P<space>shared|global\.ca|global\.cg|global)\.(?P<width>u32|u64|v4\.u32)\.(?P<kind>pchase|ptrchase|stream|map|pairs)"
                 r"(?:\.(?P<level>l1|l2|hbm))?(?:\.footprint(?P<size>[0-9]+)(?P<unit>[mk]))?$")


@dataclass(frozen=True)
class MemoryCase(Case):
    family: ClassVar[str] = "memory"
    kind: str  # "pchase" (an index chase), "ptrchase" (shared memory: a chase of addresses), "stream" or "map"
    level: str  # shared, l1, l2, hbm
    weak: bool = False  # a plain ld.global.u64 of 64-bit pointers (the L1 chase), not ld.global.ca of an index
    footprint_mib: int = 0  # the L2 chase's ring in MiB, warmed before each launch's chase (0: the level's RING_BYTES)
    footprint_kib: int = 0  # the L1 chase's ring in KiB, the same way (0: the level's RING_BYTES)
    # the GPU tests' sample (tests/gpu/sample.py): each chase at its own ring and its sweep's largest, not every point
    size_fields: ClassVar[tuple[str, ...]] = ("footprint_mib", "footprint_kib")

    @property
    def space(self) -> str:
        return "global" if self.weak else LEVELS[self.level][0]

    @property
    def instruction(self) -> str:
        return f"ld.{self.space}." + ("v4.u32" if self.kind == "stream" else "u64" if self.weak else "u32")

    @property
    def base_id(self) -> str:
        return (f"{self.instruction}.{self.kind}" + ("" if self.level == "shared" else f".{self.level}")
                + (f".footprint{self.footprint_mib}m" if self.footprint_mib else "")
                + (f".footprint{self.footprint_kib}k" if self.footprint_kib else ""))

    @property
    def footprint_bytes(self) -> int:
        """A footprint sweep's ring (the L2's in MiB, the L1's in KiB), warmed before each launch; 0: not a sweep's."""
        return (self.footprint_mib << 20) + (self.footprint_kib << 10)

    @property
    def region_bytes(self) -> int:
        if self.footprint_bytes:
            return self.footprint_bytes
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
    size, unit = match["size"], match["unit"]
    if size is not None and (size.startswith("0") or not _footprint_fits(int(size), unit)):
        low, high = FOOTPRINT_MIB if unit == "m" else FOOTPRINT_KIB
        raise IllegalShapeError(f"{case_id!r}: a footprint is a whole number of {'MiB' if unit == 'm' else 'KiB'} "
                                f"from {low} to {high}, without leading zeros (e.g. "
                                f"{'.footprint48m' if unit == 'm' else '.footprint192k'})")
    case = MemoryCase(match["kind"], level, weak, int(size) if unit == "m" else 0, int(size) if unit == "k" else 0)
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
    for size, level, unit in ((case.footprint_mib, "l2", "m"), (case.footprint_kib, "l1", "k")):
        if size and (case.kind != "pchase" or case.level != level or case.weak
                     or (case.footprint_mib and case.footprint_kib)):
            raise IllegalShapeError(f"{case}: a footprint is the L2 chase's in MiB "
                                    "(ld.global.cg.u32.pchase.l2.footprint<MiB>m) or the L1 chase's in KiB "
                                    "(ld.global.ca.u32.pchase.l1.footprint<KiB>k)")
        if size and not _footprint_fits(size, unit):
            low, high = FOOTPRINT_MIB if unit == "m" else FOOTPRINT_KIB
            raise IllegalShapeError(f"{case}: a footprint is a whole number of {'MiB' if unit == 'm' else 'KiB'} "
                                    f"from {low} to {high}")


def _footprint_fits(size: int, unit: str = "m") -> bool:
    low, high = FOOTPRINT_MIB if unit == "m" else FOOTPRINT_KIB
    return low <= size <= high


def cases() -> list[MemoryCase]:
    return ([MemoryCase("pchase", level) for level in ("shared", "l1", "l2", "hbm")] + [MemoryCase("pchase", "l1", True)]
            + [MemoryCase("ptrchase", "shared")]
            + [MemoryCase("stream", level) for level in ("shared", "l1", "l2")])



def map_cases() -> list[MemoryCase]:
    return [MemoryCase("map", "l2")]


def pair_cases() -> list[MemoryCase]:
    return [MemoryCase("pairs", "l2")]


def footprint_cases() -> list[MemoryCase]:
    """The L2 chase's footprint sweep (the `memory-l2-capacity` suite)."""
    return [MemoryCase("pchase", "l2", footprint_mib=mib) for mib in SWEEP_MIB]


def l1_footprint_cases() -> list[MemoryCase]:
    """The L1 chase's footprint sweep (the `memory-l1-capacity` suite)."""
    return [MemoryCase("pchase", "l1", footprint_kib=kib) for kib in SWEEP_KIB]


def all_cases() -> list[MemoryCase]:
    """The family's cases: the `memory` suite's, the map's (the `maps` suite's) and the footprint sweeps'."""
    return cases() + map_cases() + pair_cases() + footprint_cases() + l1_footprint_cases()
