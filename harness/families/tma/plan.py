"""What a TMA case measures and how (the measurement methods' specs): a copy's latency from L2, from HBM and
prefetched, bracketed by the same sequence without it; its bandwidth at every (stages, blocks per SM) point that fits;
the baselines' bandwidth; the barrier sequence's latency."""

from __future__ import annotations

import harness.families.tma.maps as _maps
from harness.families.tma.cases import COPY_OPS, STORE_OPS, TmaCase, _tile
from harness.families.tma.kernels import (BASELINE_BLOCKS_PER_SM, BASELINE_THREADS, COPY_THREADS, LATENCY_REPS,
                                          PREFETCH_WAIT, UNROLL, prefetches)
from harness.families.tma.layout import stream_points
from harness.measure.methods import Bandwidth, BandwidthPoint, BracketedLatency


def plan(case: TmaCase, device=None) -> list:
    if case.l2map:
        return _maps.plan(case)
    c = case.cluster
    if case.op in COPY_OPS:
        stores = case.op in STORE_OPS
        what = "the bulk group's wait_group 0" if stores else "its mbarrier's completion"
        empty = ("commit_group + wait_group 0 without a store" if stores else
                 "arrive.expect_tx of 0 bytes + try_wait without a copy")
        # the map's first use in a launch against later ones: in global memory, and by value beside it
        first_use = case.gmap or case == _tile(2, (64, 64))
        # A store's bulk group completes once the SM has sent the tile out: 29 + bytes / 32 cycles on an H100
        # and an H200 alike, the SM draining 32 B/cycle, not a round trip to the L2 (issue 34 item 8): named so.
        # A load's latency_cycles runs from a clock read just before the copy issues (the barrier armed,
        # the cluster synchronised) to its completion seen, less two clock reads timed in the same launch;
        # the whole sequence less the same sequence without the copy (another launch) is what the copy
        # adds to it, latency_added_cycles: the empty sequence's wait overlaps the copy (issue 34 item 11).
        loads = dict(net_metric="latency_added_cycles", issue_stamps=True)
        latency = [BracketedLatency("probe_latency", "probe_latency_empty", COPY_THREADS, empty,
                                    launch={"source": "L2"}, reps=LATENCY_REPS, grid=c, first_use=first_use,
                                    **(dict(net_metric="store_drain_cycles") if stores else loads))]
        if not stores:
            latency.append(BracketedLatency("probe_latency_cold", "probe_latency_empty", COPY_THREADS, empty,
                                            launch={"source": "HBM"}, reps=LATENCY_REPS, grid=c, **loads))
        if prefetches(case):
            latency.append(BracketedLatency("probe_latency_prefetched", "probe_latency_empty", COPY_THREADS,
                                            empty + f"; the tile prefetched to the L2 {PREFETCH_WAIT} cycles before",
                                            launch={"source": "prefetched"}, reps=LATENCY_REPS, **loads))
        delivered = case.box_bytes * (c if case.multicast else 1)
        points = tuple(BandwidthPoint(f"probe_stream_k{k}", b, COPY_THREADS, delivered,
                                      {"stages": k, "blocks_per_sm": b}) for k, b in stream_points(case))
        note = (f"one warp per block, lane 0 issuing; {what}" + (f"; bytes landed in shared memory, {c} per byte read"
                                                   if case.multicast else ""))
        return latency + [Bandwidth(points, grid_multiple=c, notes=note)]
    if case.op in ("read", "cp.async", "ld+st"):
        points = tuple(BandwidthPoint("probe_stream_baseline", b, BASELINE_THREADS,
                                      BASELINE_THREADS * UNROLL * 16, {"blocks_per_sm": b})
                       for b in BASELINE_BLOCKS_PER_SM)
        return [Bandwidth(points, notes=f"{BASELINE_THREADS} threads per block, {UNROLL} x 16 B each per "
                                        "iteration")]
    return [BracketedLatency("probe_barrier", "probe_barrier_empty", COPY_THREADS, "the two clock reads",
                             launch={}, reps=LATENCY_REPS)]
