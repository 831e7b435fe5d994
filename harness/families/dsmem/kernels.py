"""The DSMEM probe's kernels (ptx/dsmem.cu.in): their launch shapes, the rings and the chases' geometry, which
partners a chain chases, the output each writes, and the parameters the template is filled with (template_params)."""

from __future__ import annotations

from harness.families.dsmem.cases import PORTABLE_CLUSTER, DsmemCase, check
from harness.measure.methods import MAP_ROW_HEAD

ROUNDTRIP_REPS = 260  # round trips per launch (ptx/dsmem.cu.in roundtrip), the first 4 dropped
ROUNDTRIP_UNPADDED = 1 << 16  # ptx/dsmem.cu.in: a bit of `iters` that runs the round trips without their pad
OP_CODES = {"dsmem": 0, "dsmem-store": 1, "dsmem-chase": 2, "dsmem-map": 3}  # ptx/dsmem.cu.in: the kernels each compiles
# dsmem-chase: the target CTA of rank r per pattern (ptx/dsmem.cu.in dsmem_chase), as C and as NumPy sees it
CHASE_TARGETS = {"ring": "(cluster_ctarank() + 1) % CLUSTER", "pair": "cluster_ctarank() ^ 1u", "broadcast": "0u",
                 "local": "cluster_ctarank()"}
CHASE_THREADS = (256, 512, 1024)  # the papers' blocks are 1024 threads
CHASE_ILP = (1, 2, 4)  # independent chains per thread
CHASE_CHECK_THREADS = 64
CHASE_STRIDE = 256  # words each step moves on, times the target's rank + 1 (ptx/dsmem.cu.in dsmem_chase)
COPY_THREADS = 32  # the chain and ping-pong kernels: one warp, thread 0 works
UNROLL = 4  # 16-byte accesses per thread per iteration (streams); chain steps per loop body
RING_WORDS = 8192  # 32 KB per CTA (THREADS x UNROLL 16-byte words: no two loads of a thread alike)
DSMEM_THREADS = 512  # block size of the streams
CHAIN_CLUSTERS = 16  # clusters of a chain launch, each on its own SMs: samples over placements
MAP_STEPS = 128  # dependent loads per pair in the map: the two clock reads and the loop's entry are < 0.5 %
MAP_LAUNCHES = 16  # launches of the map: samples of each pair of SMs its clusters landed on
# Dynamic shared memory (unused) of a map CTA beside its 32 KiB ring: two would need more than an SM's 228 KiB
MAP_SHARED_BYTES = 96 << 10


def chain_partners(case) -> tuple[int, int]:
    """The ranks whose rings rank 0 chases through, in turn (first, last): every other CTA of the cluster
    for the loads, as the authors' OneToAll log; the last alone for .spread; its own for the local chase."""
    if case.op == "dsmem-chase":
        return 0, 0
    return (case.cluster - 1, case.cluster - 1) if case.spread else (1, case.cluster - 1)


def chain_units(case) -> int:
    """Timing records of a chain launch: one per cluster and partner."""
    first, last = chain_partners(case)
    return CHAIN_CLUSTERS * (last - first + 1)


def chase_target(pattern: str, rank: int, cluster: int) -> int:
    return {"ring": (rank + 1) % cluster, "pair": rank ^ 1, "broadcast": 0, "local": rank}[pattern]


def output_words(case: DsmemCase) -> int:
    if case.op == "dsmem-map":
        return case.cluster
    if case.op == "dsmem-store":
        return RING_WORDS
    if case.op == "dsmem-chase":
        return 2 * CHASE_CHECK_THREADS
    return DSMEM_THREADS


def template_params(case: DsmemCase) -> dict[str, object]:
    check(case)
    local = case.op == "dsmem-chase" and case.pattern == "local"
    return {
        "op": OP_CODES[case.op],
        "cluster": case.cluster,
        # a non-portable size is given at launch time (Attachment.runtime_cluster), not in the source
        "cluster_attr": f"__cluster_dims__({case.cluster}, 1, 1)" if case.cluster <= PORTABLE_CLUSTER else "",
        "threads": DSMEM_THREADS,
        "unroll": UNROLL,
        "ring_words": RING_WORDS,
        "spread": "true" if case.spread else "false",
        "local_chain": 1 if local else 0,
        "chain_first": f"{chain_partners(case)[0]}u",
        "chain_last": f"{chain_partners(case)[1]}u",
        "chase_target": CHASE_TARGETS.get(case.pattern, CHASE_TARGETS["ring"]),
        "chase_stride": CHASE_STRIDE,
        "chase_check_threads": CHASE_CHECK_THREADS,
        "map_row": MAP_ROW_HEAD + 2 * (case.cluster - 1),
        "roundtrip_unpadded": f"1 << {ROUNDTRIP_UNPADDED.bit_length() - 1}",
        "chase_kernels": "\n".join(f"KERNEL probe_dsmem_chase_i{i}(ARGS) {{\n  planted_fault<PLANTED_FAULT>(iters, out);\n"
                                   f"  dsmem_chase<{i}>(in, out, timing, iters);\n}}"
                                   for i in CHASE_ILP) if case.op == "dsmem-chase" else "",
    }
