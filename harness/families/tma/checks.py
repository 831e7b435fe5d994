"""The TMA probe's validation: its inputs, the output its kernels write and what each check launch must leave there
(NumPy's copy of the box, swizzled in shared memory or unswizzled in global memory; the baselines' sums and rings; the
barrier's phases), before any timing counts."""

from __future__ import annotations

import numpy as np

import harness.families.tma.maps as _maps
import harness.families.tma.model as model
from harness.families.base import Check, Inputs
from harness.families.tma.cases import COPY_OPS, STORE_OPS, TmaCase
from harness.families.tma.kernels import (BASELINE_THREADS, CHECK_REPS, COLD_STRIDE, COPY_THREADS, PREFETCH_FIRST,
                                          UNROLL, check_tile, hot_tile, prefetches)
from harness.families.tma.layout import geometry, stream_stages

POISON = 0xFFFFFFFF  # what LoadedProbe fills `out` with: words a kernel did not write


def inputs(case: TmaCase, rng: np.random.Generator) -> Inputs:
    """Stores: random box bytes for shared memory. Copies and baselines read the source tensor, which
    attach() fills on the GPU. The map: the memory family's L2 map ring (maps.py)."""
    if case.l2map:
        return _maps.inputs(rng)
    if case.op in STORE_OPS:
        pattern = rng.integers(0, 256, case.box_bytes, dtype=np.uint8)
        return Inputs(pattern, {"pattern": pattern}, "source word w = mix(w); random box bytes to store")
    return Inputs(np.zeros(16, dtype=np.uint8), {}, "source word w = mix(w) (harness/families/tma/model.py)")

def output_words(case: TmaCase) -> int:
    if case.l2map:
        return case.box_bytes // 4 + 1
    if case.op in COPY_OPS:
        per_stage = (case.box_bytes * (case.cluster if case.multicast else 1)) // 4
        return case.cluster * max(stream_stages(case)) * per_stage
    if case.op in ("cp.async", "ld+st"):
        return 2 * UNROLL * BASELINE_THREADS * 4
    return 2 * BASELINE_THREADS  # the read check's sums, then words no kernel may write (512, as before)

def decode(case: TmaCase, words: np.ndarray) -> np.ndarray:
    return np.asarray(words[:output_words(case)], dtype=np.uint32).astype(np.float64)

def _expected(case: TmaCase, *parts: np.ndarray) -> np.ndarray:
    """The output: `parts` (uint32 words) from word 0 on, every other word still poison."""
    out = np.full(output_words(case), POISON, dtype=np.float64)
    data = np.concatenate([np.asarray(p, dtype=np.uint32) for p in parts]) if parts else np.zeros(0)
    out[:data.size] = data
    return out

def _stage(case: TmaCase, geom: model.Geometry, first_tile: int) -> np.ndarray:
    """A stage's bytes after a copy round: slot r holds tile first_tile + r (one slot unless multicast)."""
    slots = case.cluster if case.multicast else 1
    span = case.swizzle if case.tensor else 0
    return np.concatenate([model.landed(geom.logical_box(first_tile + r), span) for r in range(slots)])

def checks(case: TmaCase, inputs: Inputs) -> list[Check]:
    if case.l2map:
        steps = _maps.check_steps()
        return [Check(_maps.KERNEL, COPY_THREADS, steps, _maps.template_params()["map_row"],
                      _maps.expected(inputs.values["words"], steps), 0.0,
                      f"the 128-byte line of the last of {steps} copies (NumPy's), then the word the walk ended on",
                      grid=1)]
    if case.op in ("load", "bulk"):
        return _copy_checks(case)
    if case.op in STORE_OPS:
        return _store_checks(case, inputs.values["pattern"])
    if case.op in ("read", "cp.async", "ld+st"):
        return [_baseline_check(case)]
    return [Check("probe_barrier", COPY_THREADS, CHECK_REPS, CHECK_REPS * COPY_THREADS,
                  _expected(case, [CHECK_REPS]), 0.0,
                  f"{CHECK_REPS} rounds, each completing exactly one phase (test_wait.parity)")]

def _copy_checks(case: TmaCase) -> list[Check]:
    # Tiles below 1000 only: every tensor has more, so no tile number wraps in a check.
    geom = geometry(case, tiles=1 << 20)
    tile, c = check_tile(case), case.cluster
    one = model.words(_stage(case, geom, tile))
    checks = [Check("probe_check", COPY_THREADS, 1, 1, _expected(case, *[one] * c), 0.0,
                    "one copy: the box, swizzled, in shared memory" + (f" of all {c} CTAs" if c > 1 else ""),
                    grid=c),
              Check("probe_latency", COPY_THREADS, CHECK_REPS, CHECK_REPS * COPY_THREADS,
                    _expected(case, model.words(_stage(case, geom, hot_tile(case, CHECK_REPS - 1)))),
                    0.0, f"after {CHECK_REPS} copies of the L2 tiles in turn (the last: tile "
                         f"{hot_tile(case, CHECK_REPS - 1)})", grid=c)]
    cold = (CHECK_REPS - 1) * COLD_STRIDE
    checks.append(Check("probe_latency_cold", COPY_THREADS, CHECK_REPS, CHECK_REPS * COPY_THREADS,
                        _expected(case, model.words(_stage(case, geom, cold))), 0.0,
                        f"after {CHECK_REPS} copies of fresh tiles (the last: tile {cold})", grid=c))
    if prefetches(case):
        last = PREFETCH_FIRST + cold
        checks.append(Check("probe_latency_prefetched", COPY_THREADS, CHECK_REPS, CHECK_REPS * COPY_THREADS,
                            _expected(case, model.words(_stage(case, geom, last))), 0.0,
                            f"after {CHECK_REPS} copies of prefetched tiles (the last: tile {last})"))
    for k in stream_stages(case):
        n = 2 * k + 1
        last = {i % k: i for i in range(n)}  # the copy each stage holds last
        parts = [model.words(_stage(case, geom, last[s] * c)) for _ in range(c) for s in range(k)]
        checks.append(Check(f"probe_stream_k{k}", COPY_THREADS, n, c * 5, _expected(case, *parts), 0.0,
                            f"{k} stages after {n} copies" + (f", every CTA of {c}" if c > 1 else ""), grid=c))
    return checks

def _store_checks(case: TmaCase, pattern: np.ndarray) -> list[Check]:
    """Stores: the tile read back is the shared box, unswizzled. The reduction adds it to the tile as
    32-bit words (wrapping), once per copy: each check's expectation counts every add to its tile
    by the checks before it (they run in order, on the same tensor)."""
    span = case.swizzle if case.tensor else 0
    geom = geometry(case, tiles=1 << 20)
    box = model.words(model.stored(pattern, span)).astype(np.uint64)
    adds: dict[int, int] = {}

    def back(tile: int, copies: dict[int, int]) -> np.ndarray:
        for t, n in copies.items():
            adds[t] = adds.get(t, 0) + n
        if case.op != "reduce":
            return box
        source = model.words(geom.logical_box(tile)).astype(np.uint64)
        return ((source + adds[tile] * box) % (1 << 32)).astype(np.uint32)

    tile = check_tile(case)
    checks = [Check("probe_check", COPY_THREADS, 1, 1, _expected(case, back(tile, {tile: 1})), 0.0,
                    "one copy: the box in global memory, unswizzled"),
              Check("probe_latency", COPY_THREADS, CHECK_REPS, CHECK_REPS * COPY_THREADS,
                    _expected(case, back(hot_tile(case, CHECK_REPS - 1),
                                              {hot_tile(case, i): 1 for i in range(CHECK_REPS)})), 0.0,
                    f"after {CHECK_REPS} copies to the L2 tiles in turn, the last read back")]
    for k in stream_stages(case):
        n = 2 * k + 1
        checks.append(Check(f"probe_stream_k{k}", COPY_THREADS, n, 5,
                            _expected(case, back(n - 1, {t: 1 for t in range(n)})), 0.0,
                            f"the last of {n} copies with {k} in flight, read back"))
    return checks

def _baseline_check(case: TmaCase, iters: int = 3) -> Check:
    """One block of BASELINE_THREADS: thread x reads 16-byte word x + (i UNROLL + u) THREADS."""
    x = np.arange(BASELINE_THREADS)
    index = x[None, :] + (np.arange(iters * UNROLL)[:, None]) * BASELINE_THREADS  # (iters*UNROLL, threads)
    quads = model.source_words(4 * index[..., None] + np.arange(4)).astype(np.uint64)  # (.., threads, 4)
    if case.op == "read":
        sums = (quads.sum(axis=(0, 2)) % (1 << 32)).astype(np.uint32)
        return Check("probe_stream_baseline", BASELINE_THREADS, iters, 5, _expected(case, sums), 0.0,
                     f"each thread's sum of {iters * UNROLL} 16-byte words")
    ring = np.zeros((2, UNROLL, BASELINE_THREADS, 4), dtype=np.uint32)
    for i in range(iters):
        ring[i % 2] = quads[i * UNROLL:(i + 1) * UNROLL]
    return Check("probe_stream_baseline", BASELINE_THREADS, iters, 5, _expected(case, ring.ravel()), 0.0,
                 f"the shared ring after {iters} iterations")
