"""The memory probe's validation: its inputs (the chases' rings, the streams' and the pairs' random words, the map's
ring) and what each check launch must leave in `out` (the word after a walk of the ring, each thread's or block's
sum of the words it loaded), before any timing counts."""

from __future__ import annotations

import numpy as np

from harness.families.base import Check, Inputs
from harness.families.memory.cases import CHUNK_WORDS, MemoryCase
from harness.families.memory.kernels import (CHECK_WARPS, PAIR_CHECK_BLOCKS, PAIR_ROW_TARGETS, PAIR_SLAB_BYTES,
                                             PAIR_SLABS, PAIR_TARGETS, PAIR_WARM_BYTES, STREAM_UNROLL, UNROLL,
                                             WARM_THREADS, output_words, pair_layout, pair_owner)
from harness.l2lines import LINES as MAP_LINES
from harness.l2lines import chase
from harness.l2lines import ring as map_ring
from harness.measure.methods import MAP_ROW_HEAD


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


def inputs(case: MemoryCase, rng: np.random.Generator) -> Inputs:
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


def checks(case: MemoryCase, inputs: Inputs) -> list[Check]:
    words = inputs.values["words"]
    if case.kind == "stream":
        threads, iters = 32 * CHECK_WARPS, 3
        return [Check("probe_stream", threads, iters, 5 * CHECK_WARPS,
                      _expected(case, stream_sums(words, threads, iters)), 0.0,
                      f"each thread's sum of {iters * STREAM_UNROLL} 16-byte words")]
    if case.kind == "pairs":
        row = MAP_ROW_HEAD + 2 * PAIR_ROW_TARGETS
        return [Check("probe_pairs", 32, PAIR_TARGETS, row * PAIR_CHECK_BLOCKS,
                      _expected(case, pair_sums(words, PAIR_CHECK_BLOCKS)), 0.0,
                      f"each of {PAIR_CHECK_BLOCKS} blocks' sum of every word it loads (its TLB words, its own "
                      f"lines, {PAIR_TARGETS} of the other blocks' lines, its own line again)",
                      grid=PAIR_CHECK_BLOCKS)]
    if case.kind == "map":  # a walk of fewer steps than the cycle, which would end where it began
        steps = MAP_LINES // 2 + 3
        return [Check("probe_map", 32, steps, MAP_ROW_HEAD + 2 * MAP_LINES,
                      _expected(case, [chase(words, 0, steps)]), 0.0,
                      f"the word after the warm walk of {MAP_LINES} lines and {steps} timed steps", grid=1)]
    steps = 2 * UNROLL
    if case.footprint_bytes:  # the timed launches' block (its warm pass), launch 0 from word 0
        return [Check("probe_chain", WARM_THREADS, steps, 5, _expected(case, [chase(words, 0, steps)]), 0.0,
                      f"the word after the warm pass and {steps} steps of the chase")]
    checks = [Check("probe_chain", 32, steps, 5, _expected(case, [chase(words, 0, steps)]), 0.0,
                    f"the word after {steps} steps of the chase")]
    if case.level in ("l2", "hbm"):
        first = CHUNK_WORDS if case.level == "hbm" else 0  # ptx/memory.cu.in first_word: launch 0 of probe_each
        checks.append(Check("probe_each", 32, UNROLL, UNROLL * 32, _expected(case, [chase(words, first, UNROLL)]),
                            0.0, f"the word after {UNROLL} steps timed alone"))
    return checks


def _expected(case: MemoryCase, values) -> np.ndarray:
    out = np.zeros(output_words(case))
    values = np.asarray(values, dtype=np.float64)
    out[:values.size] = values
    return out


def decode(case: MemoryCase, words: np.ndarray) -> np.ndarray:
    return np.asarray(words[:output_words(case)], dtype=np.uint32).astype(np.float64)
