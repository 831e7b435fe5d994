"""The DSMEM probe's validation: its input (a random cyclic ring of word indices) and what each check launch must
leave in `out` (the word a chase ends on, each thread's sums, the ring after the stores, the ping-pong's flags),
every other word still poison, before any timing counts."""

from __future__ import annotations

import numpy as np

from harness.families.base import Check, Inputs
from harness.families.dsmem.cases import DsmemCase
from harness.families.dsmem.kernels import (CHASE_CHECK_THREADS, CHASE_ILP, CHASE_STRIDE, COPY_THREADS, DSMEM_THREADS,
                                            RING_WORDS, ROUNDTRIP_REPS, UNROLL, chain_partners, chase_target,
                                            output_words)
from harness.measure.methods import MAP_ROW_HEAD
from harness.measure.timing import RECORD_WORDS

POISON = 0xFFFFFFFF  # what LoadedProbe fills `out` with: words a kernel did not write


def inputs(case: DsmemCase, rng: np.random.Generator) -> Inputs:
    """A random cyclic ring of word indices (stores overwrite it: what it held before does not matter)."""
    order = rng.permutation(RING_WORDS)
    ring = np.empty(RING_WORDS, dtype=np.uint32)
    ring[order] = np.roll(order, -1)
    return Inputs(ring.view(np.uint8), {"ring": ring}, "a random cycle through the ring's words")


def decode(case: DsmemCase, words: np.ndarray) -> np.ndarray:
    return np.asarray(words[:output_words(case)], dtype=np.uint32).astype(np.float64)


def _expected(case: DsmemCase, *parts: np.ndarray) -> np.ndarray:
    """The output: `parts` (uint32 words) from word 0 on, every other word still poison."""
    out = np.full(output_words(case), POISON, dtype=np.float64)
    data = np.concatenate([np.asarray(p, dtype=np.uint32) for p in parts]) if parts else np.zeros(0)
    out[:data.size] = data
    return out


def checks(case: DsmemCase, inputs: Inputs) -> list[Check]:
    if case.op == "dsmem-store":
        return _store_checks(case)
    if case.op == "dsmem-chase":
        return _chase_checks(case, inputs.values["ring"])
    if case.op == "dsmem-map":
        return _map_checks(case, inputs.values["ring"])
    return _load_checks(case, inputs.values["ring"])


def _load_checks(case: DsmemCase, ring: np.ndarray) -> list[Check]:
    steps, word = 16 * UNROLL, 0
    for _ in range(steps):
        word = int(ring[word])
    quads = ring.reshape(-1, 4).astype(np.uint64).sum(axis=1)
    x = np.arange(DSMEM_THREADS)
    iters = 3
    sums = sum(quads[(x + u * DSMEM_THREADS + i) % quads.size] for u in range(UNROLL) for i in range(iters))
    sums = sums % (1 << 32)
    first, last = chain_partners(case)
    return [Check("probe_dsmem_chain", COPY_THREADS, steps, RECORD_WORDS * (last - first + 1),
                  _expected(case, [word]), 0.0,
                  f"{steps} steps through the ring of each of ranks {first}-{last}, the same word", grid=case.cluster),
            Check("probe_dsmem_stream", DSMEM_THREADS, iters, 5 * case.cluster,
                  _expected(case, sums.astype(np.uint32)), 0.0,
                  f"each thread's sum over the next CTA's ring, {iters} iterations", grid=case.cluster)]


def _map_checks(case: DsmemCase, ring: np.ndarray) -> list[Check]:
    """One cluster: every CTA's chases through every other CTA end on the same word, the ring walked from 0."""
    steps, word = 5 * UNROLL, 0
    for _ in range(steps):
        word = int(ring[word])
    return [Check("probe_dsmem_map", COPY_THREADS, steps, (MAP_ROW_HEAD + 2 * (case.cluster - 1)) * case.cluster,
                  _expected(case, [word] * case.cluster), 0.0,
                  f"each CTA's {steps} steps through each other CTA's ring, the same word", grid=case.cluster)]


def _chase_checks(case: DsmemCase, ring: np.ndarray, iters: int = 5) -> list[Check]:
    """Blocks 0 and 1 (ranks 0 and 1) of one cluster: chain j of thread x starts at x + j * threads and
    steps by CHASE_STRIDE x (target + 1) words, its target's stride; every kernel (each number of
    chains) is checked. The local pattern's pointer chase checks like the load cases' chain."""
    checks = []
    for ilp in CHASE_ILP:
        sums = []
        for rank in (0, 1):
            step = CHASE_STRIDE * (chase_target(case.pattern, rank, case.cluster) + 1)
            starts = np.arange(CHASE_CHECK_THREADS)[:, None] + np.arange(ilp)[None, :] * CHASE_CHECK_THREADS
            sums.append(((starts + iters * step) % RING_WORDS).sum(axis=1) % (1 << 32))
        checks.append(Check(f"probe_dsmem_chase_i{ilp}", CHASE_CHECK_THREADS, iters, 5 * case.cluster,
                            _expected(case, np.concatenate(sums).astype(np.uint32)), 0.0,
                            f"ranks 0 and 1: each thread's {ilp} chains, {iters} steps through its target "
                            f"CTA ({case.pattern})", grid=case.cluster))
    if case.pattern == "local":
        steps, word = 16 * UNROLL, 0
        for _ in range(steps):
            word = int(ring[word])
        checks.insert(0, Check("probe_dsmem_chain", COPY_THREADS, steps, RECORD_WORDS, _expected(case, [word]), 0.0,
                               f"{steps} steps through rank 0's own ring", grid=case.cluster))
    return checks


def _store_checks(case: DsmemCase, iters: int = 3) -> list[Check]:
    """The ping-pong's last flag; CTA 0's ring after the stores: slot a = x + u THREADS holds the word
    of the last iteration from thread x's store u, of the rank whose hop lands on rank 0 (the last
    rank; with .spread, the rank that warp x // 32 hops from)."""
    hops = 16 * UNROLL  # ChainSlope's short chain: an even number of hops, so the flag ends at rank 0
    slots, last = RING_WORDS // 4, iters - 1
    x, u = np.arange(slots) % DSMEM_THREADS, np.arange(slots) // DSMEM_THREADS
    hop = 1 + (x // 32) % (case.cluster - 1) if case.spread else np.ones_like(x)
    rank = (-hop) % case.cluster
    ring = np.stack([np.full(slots, last), rank, x, u], axis=1).ravel()
    partner = case.cluster - 1 if case.spread else 1
    return [Check("probe_dsmem_pingpong", COPY_THREADS, hops, 5, _expected(case, [hops]), 0.0,
                  f"{hops} hops between rank 0 and rank {partner}, the flag back at rank 0", grid=case.cluster),
            Check("probe_dsmem_roundtrip", COPY_THREADS, ROUNDTRIP_REPS, ROUNDTRIP_REPS * COPY_THREADS,
                  _expected(case, [ROUNDTRIP_REPS, ROUNDTRIP_REPS]), 0.0,
                  f"{ROUNDTRIP_REPS} round trips between rank 0 and rank {partner}: both flags at the last",
                  grid=case.cluster),
            Check("probe_dsmem_store_stream", DSMEM_THREADS, iters, 5 * case.cluster, _expected(case, ring),
                  0.0, f"rank 0's ring after {iters} iterations of stores into it", grid=case.cluster)]
