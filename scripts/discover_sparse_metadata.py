"""Find, on the GPU, which lane and nibble of mma.sp's metadata register selects the non-zeros of
each (row, chunk) of A: the experiment behind harness/sparsity.py.

    python3 scripts/discover_sparse_metadata.py mma.sp.sync.m16n8k32.row.col.s32.s8.s8.s32 ...

A is all ones (compressed); B's column n weighs the four slots of chunk n (of this pass) by 1, 2, 4, 8
and is zero elsewhere, so D[r, n] names the two slots the hardware kept for row r, chunk n. Every
lane's metadata is random (legal nibbles only); over several trials, the (lane, nibble) whose values
always match a chunk's kept slots is where that chunk's metadata lives. Prints the map, one line per
metadata lane.
"""

from __future__ import annotations

import sys

import numpy as np

from harness import dtypes
from harness.build.compile import compile_probe
from harness.registry import probe_source
from harness import sparsity
from harness.families.mma import FAMILY, fragments
from harness.families.mma.probe import chains
from harness.families.mma.cases import BITS
from harness.measure.launch import LoadedProbe
from harness.registry import parse_case_id

TRIALS = 24


def discover(case_id: str) -> None:
    case = parse_case_id(case_id)
    dtype, k = case.dtype_a, case.k
    per_slot = sparsity.SLOT_ELEMENTS.get(dtype, 1)
    width = int(4 * per_slot)  # elements per chunk
    chunks = sparsity.chunks_per_row(dtype, k)
    legal = sparsity.TF32_PAIRS if dtype == "tf32" else sparsity.PAIRS
    nibble_of = {a | (b << 2): (a, b) for a, b in legal}
    weights = {frozenset(p): sum(1 << s for s in p) for p in legal}
    by_weight = {w: p for p, w in weights.items()}
    probe_build = compile_probe(probe_source(case))
    plan = chains(case)
    rng = np.random.default_rng(0)
    ones = np.ones((16, k // 2))
    a_words = fragments.pack(BITS[dtype], dtypes.encode(dtype, ones)[fragments.a_coords(16, k // 2, BITS[dtype])])
    found: dict[tuple[int, int], set] = {}
    for first in range(0, chunks, 8):
        b = np.zeros((k, 8))
        for element in range(k):
            chunk, pos = divmod(element, width)
            if first <= chunk < first + 8:
                slot = pos * 4 // width
                if per_slot < 1:  # tf32: an element is two slots
                    weight = (1 << (2 * pos)) + (1 << (2 * pos + 1))
                elif per_slot > 1:  # s4/u4: a slot is two elements; weight 8 is 4 + 4 (s4 stops at 7)
                    weight = min(1 << slot, 4) if pos % 2 == 0 else (1 << slot) - min(1 << slot, 4)
                else:
                    weight = 1 << slot
                b[element, chunk - first] = weight
        b_words = fragments.pack(BITS[case.dtype_b], dtypes.encode(case.dtype_b, b)[fragments.b_coords(k, 8, BITS[case.dtype_b])])
        for _ in range(TRIALS):
            nibbles = rng.choice(list(nibble_of), size=(32, 8))
            words = np.bitwise_or.reduce(nibbles.astype(np.uint64) << (4 * np.arange(8, dtype=np.uint64)), axis=1)
            buffer = np.concatenate([a_words.ravel(), b_words.ravel(), words.astype(np.uint32),
                                     np.zeros(2, np.uint32)]).view(np.uint8)
            probe = LoadedProbe(probe_build, buffer, FAMILY.output_words(case))
            d = FAMILY.decode(case, probe.run(plan.kernel(1), 1, 32, plan.unroll, 5).out) / plan.unroll
            if first == 0 and _ == 0 and "-v" in sys.argv:
                print("  D of the first trial, rows 0-1:", d[:2].tolist(), "nibbles lane 0, 1:", nibbles[:2].tolist())
            for row in range(16):
                for n in range(min(8, chunks - first)):
                    kept = by_weight.get(int(round(d[row, n])))
                    candidates = {(lane, i) for lane in range(32) for i in range(8)
                                  if kept is not None and set(nibble_of[nibbles[lane, i]]) == set(kept)}
                    key = (row, first + n)
                    found[key] = candidates if key not in found else found[key] & candidates
    print(case_id)
    lanes: dict[int, list[str]] = {}
    unresolved = [key for key, places in found.items() if len(places) != 1]
    if unresolved:
        print(f"  {len(unresolved)} of {len(found)} (row, chunk) unresolved, e.g. {unresolved[:3]}")
    for (row, chunk), places in sorted(found.items()):
        if len(places) != 1:
            continue
        (lane, nibble), = places
        lanes.setdefault(lane, {})[nibble] = f"r{row}c{chunk}"
    for lane in sorted(lanes):
        print(f"  lane {lane:2d}: " + " ".join(lanes[lane].get(i, "-") for i in range(8)))


if __name__ == "__main__":
    for case_id in [a for a in sys.argv[1:] if a != "-v"]:
        discover(case_id)
