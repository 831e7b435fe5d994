"""Distributed shared memory (sm_90a clusters): the Family object.

Cases and ids: cases.py. Probe template: ptx/dsmem.cu.in. Every CTA of a cluster holds a ring of
RING_WORDS words in its shared memory; the probes reach another CTA's through mapa and
ld.shared::cluster / st.shared::cluster:

    latency_cycles   loads: a pointer chase by rank 0 through each other CTA's ring in turn (every partner,
                     as the authors' OneToAll log; .spread: the last rank alone), in CHAIN_CLUSTERS clusters
                     at once, one sample per cluster and partner (a distribution over SM placements and
                     partners); the local chase: rank 0 through its own ring, by ld.shared::cluster
    pingpong_hop_cycles  stores: one hop of a flag passed between two CTAs, each hop a store into the
                     other's shared memory that its spin sees. Not a latency: a hop is the store's
                     visibility, the receiver's detection and its next store, one value hop after hop
                     (on the grid of the pollers' loops; docs/data-movement.md)
    roundtrip_cycles stores: rank 0 stores a flag into the partner's shared memory and spins until the
                     partner, spinning on its own, stores it back, net of the two clock reads: two stores'
                     latencies to visibility and two detections. Each round is padded by a dependent chain of
                     0-63 multiply-adds, so the stores reach the partner at varying phases of its poll; the
                     rounds take the unpadded rounds' few values, on the grid of the sender's own poll loop
                     (it sees the reply only at its polls): an upper bound within one poll period
    bandwidth_gbps   the whole GPU, CUDA events: every thread of every CTA streaming 16-byte loads from (or
                     stores into) the next CTA's ring (.spread: each warp another CTA's); the papers' chase
                     patterns (ring, pair, broadcast, local): every thread following `ilp` dependent chains
                     through its target CTA, 256 to 1024 threads per block
    latency_cycles   the map (.map): every CTA of every cluster (one per SM) chases each other CTA of its cluster
    (map)            in turn, MAP_STEPS dependent loads each, and records its own and the other's %smid: one
                     measurement per pair of SMs ({"map": "dsmem", "cluster": C, "sm": a, "peer": b}), samples
                     over MAP_LAUNCHES launches; maps.py infers GPCs and TPCs from them

These cases were the tma family's until schema 11 (harness/migrations/versions/0011_dsmem_family.py):
their ids, parameters and kernels are unchanged. The `tma` suite is composed of tma-copies and this
family's `dsmem` suite (harness/suites.py COMPOSED).
"""

from __future__ import annotations

import numpy as np

import harness.families.dsmem.cases as _cases
from harness import seed_chapter
from harness.families.base import (Attachment, Check, Family, Inputs, KernelExpectation, Reason, SassExpectation, Suite,
                                   Work, known_cause)
from harness.families.dsmem.cases import PORTABLE_CLUSTER, DsmemCase
from harness.measure.methods import MAP_ROW_HEAD, Bandwidth, BandwidthPoint, BracketedLatency, ChainSlope, SmMap
from harness.measure.timing import RECORD_WORDS

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
POISON = 0xFFFFFFFF  # what LoadedProbe fills `out` with: words a kernel did not write
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


def _suites() -> dict[str, Suite]:
    return {
        "dsmem": Suite("distributed shared memory: loads and stores to another CTA (the next, or spread over the "
                       "cluster) in clusters of 2/4/8/16, and the papers' chase patterns (ring, pair, broadcast, "
                       "local) over block sizes and chains per thread", _cases.cases, part_of=("tma",)),
        "maps-dsmem": Suite("the SM-to-SM map: every CTA of clusters of 2/4/8/16 chases every other, by %smid",
                            _cases.map_cases, part_of=("maps", "maps-sides")),
    }


# Why a DSMEM figure of ours differs from the papers' (arXiv 2501.12084 and the authors' logs): causes that
# do not close the gap by themselves (explain; bench compare shows them on the row). docs/data-movement.md.
CAUSES = {
    ("ld.shared::cluster.u32.cluster2.chase.local", "latency_cycles"):
        "ours adds the loaded word to the window's base each step (address arithmetic between the loads, as the "
        "shared-memory index chase ld.shared.u32.pchase does, which the memory family measures beside the pointer "
        "chase ld.shared.u32.ptrchase); a DSMEM pointer chase is not measured yet",
}

# Causes of one case alone (not its variants: .spread chases the last rank, .map every pair).
EXACT_CAUSES = {
    ("ld.shared::cluster.u32.cluster16", "latency_cycles"):
        "every chase of this case starts from rank 0, and in a cluster of 16 the hardware places rank 0 on the "
        "first SM of a GPC (reports/investigation/dsmem-rank0-h100.txt); the maps suite's SM-to-SM map "
        "(ld.shared::cluster.u32.cluster16.map) finds those SMs' fastest partner in a cluster of 16 slower than "
        "the other SMs' (its report's DSMEM section), so the fastest pair here is bounded by where rank 0 lands; "
        "the paper's rank 0 had a nearer partner on the H800's floorplan",
}

# A chain latency stored before rank 0 chased every partner (its launch has no `partners`).
ONE_PARTNER = ("this run chased rank 1 alone (runs before 82; before 47, in a single cluster), where the paper's figure "
               "is rank 0's fastest pair over every partner; which two SMs a pair lands on moves its latency by tens "
               "of cycles (the maps suite's SM-to-SM map), and from run 82 on rank 0 chases every partner in 16 "
               "clusters")


class DsmemFamily(Family):
    name = "dsmem"
    description = "distributed shared memory: ld/st.shared::cluster between the CTAs of a cluster"
    id_prefixes = ("ld.shared::cluster", "st.shared::cluster")
    example_id = "ld.shared::cluster.u32.cluster4"
    template = "dsmem.cu.in"

    @property
    def model(self):
        """The DSMEM hop (a constant) and the chases' bandwidth from requests in flight (fitting.py)."""
        from harness.families.dsmem.fitting import DsmemModel

        return DsmemModel()

    cases = staticmethod(_cases.all_cases)
    parse = staticmethod(_cases.parse)
    check = staticmethod(_cases.check)
    suites = staticmethod(_suites)

    # -- the probe ---------------------------------------------------------------------------------

    def template_params(self, case: DsmemCase) -> dict[str, object]:
        self.check(case)
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

    def sass_expectation(self, case: DsmemCase) -> SassExpectation:
        """The chain's UNROLL loads per loop body and the stream's UNROLL 16-byte ones; the ping-pong's
        one store and the store stream's UNROLL; each chase kernel's `ilp` loads."""
        if case.op == "dsmem-map":  # the peer's %smid and the chain's UNROLL loads, nothing else remote
            return SassExpectation((("probe_dsmem_map", KernelExpectation("LD.E", 1 + UNROLL, exclude=("LD.E.",))),),
                                   executes="LD.E", spill_kernels=("probe_dsmem_map",))
        if case.op == "dsmem-chase":
            return SassExpectation(tuple((f"probe_dsmem_chase_i{i}", KernelExpectation("LD.E", i, exclude=("LD.E.",)))
                                         for i in CHASE_ILP), executes="LD.E")
        if case.op == "dsmem-store":
            return SassExpectation((("probe_dsmem_pingpong", KernelExpectation("ST.E.STRONG.GPU", 1)),
                                    ("probe_dsmem_roundtrip", KernelExpectation("ST.E.STRONG.GPU", 2)),
                                    ("probe_dsmem_store_stream", KernelExpectation("ST.E.128", UNROLL))),
                                   executes="ST.E.128")
        return SassExpectation((("probe_dsmem_chain", KernelExpectation("LD.E", UNROLL)),
                                ("probe_dsmem_stream", KernelExpectation("LD.E.128", UNROLL))), executes="LD.E")

    # -- correctness -------------------------------------------------------------------------------

    def inputs(self, case: DsmemCase, rng: np.random.Generator) -> Inputs:
        """A random cyclic ring of word indices (stores overwrite it: what it held before does not matter)."""
        order = rng.permutation(RING_WORDS)
        ring = np.empty(RING_WORDS, dtype=np.uint32)
        ring[order] = np.roll(order, -1)
        return Inputs(ring.view(np.uint8), {"ring": ring}, "a random cycle through the ring's words")

    def output_words(self, case: DsmemCase) -> int:
        if case.op == "dsmem-map":
            return case.cluster
        if case.op == "dsmem-store":
            return RING_WORDS
        if case.op == "dsmem-chase":
            return 2 * CHASE_CHECK_THREADS
        return DSMEM_THREADS

    def decode(self, case: DsmemCase, words: np.ndarray) -> np.ndarray:
        return np.asarray(words[:self.output_words(case)], dtype=np.uint32).astype(np.float64)

    def _expected(self, case: DsmemCase, *parts: np.ndarray) -> np.ndarray:
        """The output: `parts` (uint32 words) from word 0 on, every other word still poison."""
        out = np.full(self.output_words(case), POISON, dtype=np.float64)
        data = np.concatenate([np.asarray(p, dtype=np.uint32) for p in parts]) if parts else np.zeros(0)
        out[:data.size] = data
        return out

    def checks(self, case: DsmemCase, inputs: Inputs) -> list[Check]:
        if case.op == "dsmem-store":
            return self._store_checks(case)
        if case.op == "dsmem-chase":
            return self._chase_checks(case, inputs.values["ring"])
        if case.op == "dsmem-map":
            return self._map_checks(case, inputs.values["ring"])
        return self._load_checks(case, inputs.values["ring"])

    def _load_checks(self, case: DsmemCase, ring: np.ndarray) -> list[Check]:
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
                      self._expected(case, [word]), 0.0,
                      f"{steps} steps through the ring of each of ranks {first}-{last}, the same word", grid=case.cluster),
                Check("probe_dsmem_stream", DSMEM_THREADS, iters, 5 * case.cluster,
                      self._expected(case, sums.astype(np.uint32)), 0.0,
                      f"each thread's sum over the next CTA's ring, {iters} iterations", grid=case.cluster)]

    def _map_checks(self, case: DsmemCase, ring: np.ndarray) -> list[Check]:
        """One cluster: every CTA's chases through every other CTA end on the same word, the ring walked from 0."""
        steps, word = 5 * UNROLL, 0
        for _ in range(steps):
            word = int(ring[word])
        return [Check("probe_dsmem_map", COPY_THREADS, steps, (MAP_ROW_HEAD + 2 * (case.cluster - 1)) * case.cluster,
                      self._expected(case, [word] * case.cluster), 0.0,
                      f"each CTA's {steps} steps through each other CTA's ring, the same word", grid=case.cluster)]

    def _chase_checks(self, case: DsmemCase, ring: np.ndarray, iters: int = 5) -> list[Check]:
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
                                self._expected(case, np.concatenate(sums).astype(np.uint32)), 0.0,
                                f"ranks 0 and 1: each thread's {ilp} chains, {iters} steps through its target "
                                f"CTA ({case.pattern})", grid=case.cluster))
        if case.pattern == "local":
            steps, word = 16 * UNROLL, 0
            for _ in range(steps):
                word = int(ring[word])
            checks.insert(0, Check("probe_dsmem_chain", COPY_THREADS, steps, RECORD_WORDS, self._expected(case, [word]), 0.0,
                                   f"{steps} steps through rank 0's own ring", grid=case.cluster))
        return checks

    def _store_checks(self, case: DsmemCase, iters: int = 3) -> list[Check]:
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
        return [Check("probe_dsmem_pingpong", COPY_THREADS, hops, 5, self._expected(case, [hops]), 0.0,
                      f"{hops} hops between rank 0 and rank {partner}, the flag back at rank 0", grid=case.cluster),
                Check("probe_dsmem_roundtrip", COPY_THREADS, ROUNDTRIP_REPS, ROUNDTRIP_REPS * COPY_THREADS,
                      self._expected(case, [ROUNDTRIP_REPS, ROUNDTRIP_REPS]), 0.0,
                      f"{ROUNDTRIP_REPS} round trips between rank 0 and rank {partner}: both flags at the last",
                      grid=case.cluster),
                Check("probe_dsmem_store_stream", DSMEM_THREADS, iters, 5 * case.cluster, self._expected(case, ring),
                      0.0, f"rank 0's ring after {iters} iterations of stores into it", grid=case.cluster)]

    # -- on the GPU ----------------------------------------------------------------------------------

    def attach(self, case: DsmemCase, probe, device) -> Attachment:
        """A cluster of more CTAs than the portable 8 is launched with its size as an attribute. The map's CTAs
        take MAP_SHARED_BYTES more shared memory: one per SM, so that a CTA's partners are other SMs."""
        return Attachment(runtime_cluster=case.cluster if case.cluster > PORTABLE_CLUSTER else 0,
                          dynamic_smem={"probe_dsmem_map": MAP_SHARED_BYTES} if case.op == "dsmem-map" else {})

    # -- measurement ---------------------------------------------------------------------------------

    def work(self, case: DsmemCase) -> Work:
        return Work(16, "B")

    def peak(self, case: DsmemCase) -> float | None:
        return None

    def plan(self, case: DsmemCase, device=None) -> list:
        c = case.cluster
        if case.op == "dsmem-map":
            return [SmMap("latency_cycles", "probe_dsmem_map", COPY_THREADS, c - 1, MAP_STEPS, MAP_LAUNCHES,
                          {"map": "dsmem", "cluster": c}, grid_multiple=c, steps=MAP_STEPS, by_target=True,
                          target_key="peer",
                          notes=f"clusters of {c}, one CTA per SM: every CTA's thread 0 chases each other CTA of its "
                                f"cluster in turn ({MAP_STEPS} dependent ld.shared::cluster; at any time every CTA is "
                                "chased by one other), cycles per load; sm: the chasing CTA's %smid, peer: the "
                                "chased one's")]
        if case.op == "dsmem-chase":
            points = tuple(BandwidthPoint(f"probe_dsmem_chase_i{i}", 1, t, t * i * 4,
                                          {"cluster": c, "threads": t, "ilp": i}) for t in CHASE_THREADS for i in CHASE_ILP)
            plan = [Bandwidth(points, grid_multiple=c, notes=f"every thread chases {case.pattern}: dependent 4-byte "
                              "ld.shared::cluster loads, `ilp` chains per thread, one block per SM")]
            if case.pattern == "local":
                plan.insert(0, ChainSlope("latency_cycles", "probe_dsmem_chain", COPY_THREADS, unroll=UNROLL,
                                          launch={"cluster": c}, grid=c * CHAIN_CLUSTERS, units=CHAIN_CLUSTERS,
                                          every_unit=True,
                                          notes="a pointer chase by rank 0 through its own shared memory, by "
                                                "ld.shared::cluster through mapa"))
            return plan
        if case.op == "dsmem-store":
            partner = f"rank {c - 1}" if case.spread else "rank 1"
            points = tuple(BandwidthPoint("probe_dsmem_store_stream", b, DSMEM_THREADS, DSMEM_THREADS * UNROLL * 16,
                                          {"blocks_per_sm": b, "cluster": c}) for b in (1, 2))
            # pingpong_hop_cycles, not a latency: a hop holds a detection and the next store (docs/data-movement.md)
            return [ChainSlope("pingpong_hop_cycles", "probe_dsmem_pingpong", COPY_THREADS, unroll=UNROLL,
                               launch={"cluster": c}, grid=c,
                               notes=f"a flag passed between rank 0 and {partner}: each hop a st.relaxed.cluster into "
                                     "the other CTA's shared memory, seen by its spin on ld.relaxed"),
                    BracketedLatency("probe_dsmem_roundtrip", "probe_dsmem_roundtrip_empty", COPY_THREADS,
                                     "the two clock reads", launch={"cluster": c}, reps=ROUNDTRIP_REPS, grid=c,
                                     net_metric="roundtrip_cycles"),
                    Bandwidth(points, grid_multiple=c, notes="every thread stores into "
                              + ("another CTA's shared memory, warp by warp" if case.spread else "the next CTA's shared memory"))]
        points = tuple(BandwidthPoint("probe_dsmem_stream", b, DSMEM_THREADS, DSMEM_THREADS * UNROLL * 16,
                                      {"blocks_per_sm": b, "cluster": c}) for b in (1, 2))
        first, last = chain_partners(case)
        chased = f"rank {last}" if first == last else f"each of ranks {first}-{last} in turn"
        partners = last - first + 1  # in the launch where more than one, as the samples per launch grow with it
        return [ChainSlope("latency_cycles", "probe_dsmem_chain", COPY_THREADS, unroll=UNROLL,
                           launch={"cluster": c} | ({"partners": partners} if partners > 1 else {}),
                           notes=f"a pointer chase by rank 0 through the shared memory of {chased}, in each of "
                                 f"{CHAIN_CLUSTERS} clusters at once (each its own SMs): one sample per cluster"
                                 + ("" if first == last else " and partner"),
                           grid=c * CHAIN_CLUSTERS, units=chain_units(case), every_unit=True),
                Bandwidth(points, grid_multiple=c, notes="every thread reads the next CTA's shared memory")]

    @staticmethod
    def paper_row(row: dict) -> dict | str | None:
        """Our counterpart of the authors' DSM latency logs (HPMLL/NVIDIA-Hopper-Benchmark); a string says
        why one has none; None: not ours. The seed architecture chapter's count of TPCs: why it is no figure."""
        if row["paper"] == seed_chapter.SOURCE:
            return ("a count of units: the DSMEM map (suite maps-dsmem) looks for TPCs as pairs of SMs each other's "
                    "nearest by a few cycles and says whether latency shows them (its report and the site's finding), "
                    "a finding, not a metric to compare") if row["metric"] == "tpc_count" else None
        table, metric = row["table_or_figure"], row["metric"]
        if table.startswith(("Sec. III-D ", "Sec. IV-E ", "Sec. 7.1 ", "Sec. 7.2 ", "Sec. 7.3 ")) and (
                "DSM" in row["instruction"] or "global store" in row["instruction"]):
            return _dsm_text(row)
        if "NewFeatures/DSM/Latency" not in table:
            return None
        gpu = row["gpu"].replace(" (inferred)", "")
        cluster = int(row["shape"].split()[-1])
        if metric == "latency_dsm_remote_max":
            return "the slowest rank pair of the log; compared: the fastest (latency_dsm_remote_min)"
        if metric == "latency_dsm_local" and cluster != 2:
            return "the same local chase at every cluster size (33 cycles); compared at cluster 2"
        if metric == "latency_dsm_remote_min" and cluster not in _cases.CLUSTERS:
            return f"a cluster of {cluster}: ours are {', '.join(map(str, _cases.CLUSTERS))}"
        case = (DsmemCase("dsmem-chase", cluster=2, pattern="local") if metric == "latency_dsm_local"
                else DsmemCase("dsmem", cluster=cluster))
        return {"case_id": case.case_id, "metric": "latency_cycles", "gpu": gpu}

    def paper_statistic(self, case_id: str, metric: str, launch: dict | None = None) -> tuple | None:
        """The chases' latency is CHAIN_CLUSTERS placements measured at once, each with every partner of
        rank 0 in turn (one sample per cluster, partner and launch, repeated): n is the placements x
        partners. The remote chase (ld.shared::cluster.u32.clusterN) compares the minimum over them, as
        the authors' figure is the fastest rank pair of their OneToAll log; the local chase (one value in
        their log at every cluster size) the median over the placements. A launch without `partners` (runs
        before every partner was chased, and clusters of 2) chased rank 1 alone: n is the placements."""
        if metric != "latency_cycles" or not case_id.startswith("ld.shared::cluster."):
            return None
        case = _cases.parse(case_id)
        if case.op == "dsmem" and not case.spread:
            partners = (launch or {}).get("partners", 1)
            return (("minimum", CHAIN_CLUSTERS, "placements") if partners == 1
                    else ("minimum", CHAIN_CLUSTERS * partners, "placements x partners", partners))
        return ("median", CHAIN_CLUSTERS) if case.op == "dsmem-chase" and case.pattern == "local" else None

    @staticmethod
    def explain(case_id: str, metric: str, value: float, paper: float, launch: dict) -> Reason | None:
        """CAUSES: the local chase's address arithmetic; where rank 0 lands in a cluster of 16. A chain latency
        whose launch has no `partners` chased rank 1 alone (runs before every partner was): ONE_PARTNER."""
        if metric == "latency_cycles" and case_id.startswith("ld.shared::cluster."):
            case = _cases.parse(case_id)
            if case.op == "dsmem" and not case.spread and "partners" not in (launch or {}):
                return Reason(ONE_PARTNER, accounts=False)
        if (case_id, metric) in EXACT_CAUSES:
            return Reason(EXACT_CAUSES[case_id, metric], accounts=False)
        return known_cause(CAUSES, case_id, metric)

    def headline(self, metric: str) -> dict | None:
        return None  # the best over launches (clusters, blocks per SM, threads and chains)

    def describe(self, case: DsmemCase) -> list[str]:
        where = f"a cluster of {case.cluster} CTAs" + (" (launched with its size as an attribute: above the portable 8)"
                                                        if case.cluster > PORTABLE_CLUSTER else "")
        if case.op == "dsmem-chase":
            what = f"the papers' {case.pattern} chase: every thread's dependent loads through its target CTA"
        elif case.op == "dsmem-map":
            what = "the SM-to-SM map: every CTA chases every other CTA of its cluster in turn, by %smid"
        elif case.op == "dsmem-store":
            what = ("stores into another CTA's shared memory" + (", each warp another CTA" if case.spread else
                                                                  ", the next CTA"))
        else:
            what = ("loads from another CTA's shared memory" + (", each warp another CTA" if case.spread else
                                                               ", the next CTA"))
        return [case.instruction, where, what]

    def figures(self, context) -> list:
        from harness.families.dsmem.figures import figures

        return figures(context)

    def findings(self, context) -> list:
        """Which SMs are far from which through DSMEM, and the GPCs and TPCs it implies (the .map cases)."""
        from harness.families.dsmem.figures import findings

        return findings(context)


def _dsm_text(row: dict) -> dict | str:
    """Distributed shared memory as the papers' text states it (2402.13499 Secs. III-D, IV-E; 2501.12084 Secs.
    7.1-7.3): the cluster-2 and local chases map like the authors' log; the rest, and why."""
    metric, gpu = row["metric"], row["gpu"]
    if metric == "latency_dsm_local":  # the log's local chase (33 at every cluster size)
        return {"case_id": DsmemCase("dsmem-chase", cluster=2, pattern="local").case_id, "metric": "latency_cycles",
                "gpu": gpu}
    if metric == "latency_dsm_remote_cluster2":  # the log's fastest pair at cluster 2
        return {"case_id": DsmemCase("dsmem", cluster=2).case_id, "metric": "latency_cycles", "gpu": gpu}
    if metric == "latency_dsm_remote":
        return ("a rounded statement with no cluster size (\"180 cycles\"): the log's fastest pair per cluster size "
                "is mapped one by one")
    if metric.startswith("latency_dsm_remote_cluster2to16"):
        return "the range of the log's per-cluster figures (clusters 2-16), which are mapped one by one"
    if metric == "latency_sm_to_sm_via_global":
        return ("one SM's store read by another SM through global memory: no case of ours times a store in one SM "
                "seen by a load in another (docs/data-movement.md, \"Not done\")")
    if metric.startswith("latency_reduction_vs"):
        return ("a ratio of two figures (the DSM hop against the L2 latency or the SM-to-SM round trip through "
                "global memory)")
    if metric == "bandwidth_dsm_local_per_sm":
        return ("GB/s per SM through the DSM interface to the block's own shared memory, at a clock not printed, from "
                "50160 blocks of 16 KB of shared memory each: our local chase gives the whole GPU's bandwidth_gbps "
                "with one block of 256-1024 threads per SM, and no per-SM rate at a known clock")
    if metric.startswith("bandwidth_dsm_peak_cluster"):  # the whole GPU's TB/s of a ring copy: wall time, as ours
        # bandwidth_gbps is; compare scales ours to the paper's SMs and states the SM clock ours ran at beside it
        ring = DsmemCase("dsmem-chase", cluster=int(metric.rsplit("cluster", 1)[1]), pattern="ring")
        return {"case_id": ring.case_id, "metric": "bandwidth_gbps", "gpu": gpu}
    if metric == "blocks_launched":
        return "a test parameter (blocks launched), not a measurement"
    if metric.startswith("best_cluster_size"):
        return "an application's (a histogram kernel's) best cluster size: no case of ours runs that kernel"
    return "quoted from NVIDIA's documentation, not measured" if "vendor" in metric else (
        f"a DSM figure ({metric}) with no case of ours")


FAMILY = DsmemFamily()
