"""What a DSMEM case measures and how (the measurement methods' specs): a chain's latency by chain slope (rank 0
through each partner, in CHAIN_CLUSTERS clusters at once), the streams' and the chases' bandwidth, the ping-pong's
hop and the round trip, the map's latency per pair of SMs."""

from __future__ import annotations

from harness.families.dsmem.cases import DsmemCase
from harness.families.dsmem.kernels import (CHAIN_CLUSTERS, CHASE_ILP, CHASE_THREADS, COPY_THREADS, DSMEM_THREADS,
                                            MAP_LAUNCHES, MAP_STEPS, ROUNDTRIP_REPS, UNROLL, chain_partners,
                                            chain_units)
from harness.measure.methods import Bandwidth, BandwidthPoint, BracketedLatency, ChainSlope, SmMap


def plan(case: DsmemCase, device=None) -> list:
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
