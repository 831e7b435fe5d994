"""Maps of the chip on the GPU (the `maps` suite): each probe validates, lands one block per SM, and its
numbers are latencies of the level it names. Run with -s to see what each map found (the sentences the
report and the site print)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from harness.build.compile import compile_probe
from harness.measure.device import open_device
from harness.orchestration.runner import RunSettings, measure_case
from harness.registry import parse_case_id, probe_source

pytestmark = pytest.mark.gpu
GPC_MOST_SMS = 18  # GH100: 9 TPCs of 2 SMs per GPC (NVIDIA H100 Tensor Core GPU Architecture whitepaper)


@pytest.fixture(scope="module")
def device():
    return open_device(0)


def _measure(case_id: str, device):
    case = parse_case_id(case_id)
    result = measure_case(case, compile_probe(probe_source(case)), device, RunSettings())
    assert result.valid, (case_id, result.error)
    return result


def test_the_l2_map_reaches_every_sm_once_a_launch_and_reads_l2_latencies(device):
    from harness.families.memory import MAP_LAUNCHES, MAP_LINES
    from harness.families.memory.maps import describe, l2_map

    result = _measure("ld.global.cg.u32.map.l2", device)
    per_sm = {m.launch["sm"]: m.samples for m in result.metrics}
    # one block per SM: every SM once per launch (a block more on one SM would leave another without)
    assert len(per_sm) == device.sm_count, sorted(per_sm)
    assert all(v.size == MAP_LAUNCHES * MAP_LINES for v in per_sm.values())
    everything = np.concatenate(list(per_sm.values()))
    # an L2 hit, net of the bracket: above an L1 hit (~40), below an HBM access (~700)
    assert 150 < np.median(everything) < 600, np.percentile(everything, [1, 50, 99])
    assert np.percentile(everything, 99) < 2000
    found = l2_map(per_sm, MAP_LINES)
    from harness.db.distributions import describe as spread

    print("\n" + describe(device.name, found))
    print("every load:", spread(everything))
    print("per line, from the first SM:", np.sort(found.cycles[0]).round(0).tolist())
    print(found.per_sm().describe().round(1).to_string())


@pytest.mark.parametrize("cluster", [2, 4, 8, 16])
def test_the_dsmem_map_pairs_distinct_sms_at_dsmem_latency(device, cluster):
    from harness.families.dsmem import MAP_LAUNCHES
    from harness.families.dsmem.maps import Pairs, describe, groups

    result = _measure(f"ld.shared::cluster.u32.cluster{cluster}.map", device)
    rows = pd.DataFrame([{"cluster": cluster, "sm": m.launch["sm"], "peer": m.launch["peer"], "samples": m.samples}
                         for m in result.metrics])
    assert (rows.sm != rows.peer).all(), "two CTAs of a cluster on one SM: the map's shared memory should forbid it"
    blocks = device.sm_count // cluster * cluster
    # every chasing CTA's rows: (cluster - 1) partners x the launches, over whichever pairs the clusters landed on
    assert rows.samples.map(len).sum() == blocks * (cluster - 1) * MAP_LAUNCHES
    medians = rows.samples.map(np.median)
    # a hop through DSMEM: the dsmem chain reads 184-219 cycles at every cluster size (docs/data-movement.md)
    assert medians.between(120, 400).all(), medians.describe()
    pairs = Pairs(rows)
    assert max(len(g) for g in groups(pairs)) <= GPC_MOST_SMS
    print("\n" + "\n".join(describe(device.name, pairs)))


def test_the_tma_map_reaches_every_sm_and_splits_the_l2_maps_lines(device):
    """The TMA counterpart of the L2 map: the same lines (the same seed), one block per SM, a 128-byte bulk copy
    timed from its issue to the barrier's completion; its near/far split, and its near latency against the plain
    load's of the same SMs and lines (run in the same test: the plain-load map first)."""
    from harness.db.distributions import describe as spread
    from harness.families.memory import MAP_LINES
    from harness.families.memory.maps import l2_map
    from harness.families.tma.maps import MAP_LAUNCHES, TmaMap, describe

    loads = l2_map({m.launch["sm"]: m.samples for m in _measure("ld.global.cg.u32.map.l2", device).metrics}, MAP_LINES)
    result = _measure("cp.async.bulk.shared::cluster.global.128B.map.l2", device)
    per_sm = {m.launch["sm"]: m.samples for m in result.metrics}
    # one block per SM: every SM once per launch, every line of every launch
    assert len(per_sm) == device.sm_count, sorted(per_sm)
    assert all(v.size == MAP_LAUNCHES * MAP_LINES for v in per_sm.values())
    everything = np.concatenate(list(per_sm.values()))
    # a 128-byte copy from the L2, issue to completion seen: above a plain L2 load's ~260, below an HBM access's
    assert 200 < np.median(everything) < 1200, np.percentile(everything, [1, 50, 99])
    found = TmaMap(l2_map(per_sm, MAP_LINES), loads)
    print("\n" + "\n".join(describe(device.name, found)))
    print("every copy:", spread(everything))
    table = found.per_sm()
    print(table.describe().round(1).to_string())
    assert found.tma.split, "the TMA copies show no near/far split of the L2 map's lines"
    assert loads.split, "the plain loads show no near/far split (the L2 map's own test says more)"
    # the copy goes through the same L2 partitions as the load, and cannot beat it by more than the clock reads'
    # rounding: near TMA latency (by the loads' partition) is not below the plain load's near latency
    near = table["TMA near (loads' partition)"].median()
    assert near > table["load near"].median() - 5, (near, table["load near"].median())
    print("TMA samples' split agrees with the loads' on", found.agreement(), "of the lines")


def test_the_l2_pairs_time_each_sms_first_access_to_lines_other_sms_brought_in(device):
    """ld.global.cg.u32.pairs.l2: one block per SM, a launch's grid ordered by a counter in global memory; every SM's
    misses, its first accesses to 16 other SMs' lines a launch, its own line again. Checks what the probe must give
    whatever the chip's structure: every SM, no wait past its limit, pairs of distinct SMs covering the chip, a miss
    slower than a hit on a line the SM read itself, the pooled clusters. Prints the clusters (Table 4's), the sides
    and their conflicts, and the sides against the L2 map's near partition (measured in the same test)."""
    from harness.families.memory import MAP_LINES, PAIR_LAUNCHES, PAIR_TARGETS
    from harness.families.memory.maps import l2_map
    from harness.families.memory.pairs import describe, pair_map

    loads = l2_map({m.launch["sm"]: m.samples for m in _measure("ld.global.cg.u32.map.l2", device).metrics}, MAP_LINES)
    result = _measure("ld.global.cg.u32.pairs.l2", device)
    per_key = {(m.launch["sm"], m.launch["owner"]): m.samples for m in result.metrics if "owner" in m.launch}
    pools = {(m.launch["pool"], m.launch["cluster"]): m.samples for m in result.metrics if "pool" in m.launch}
    n = device.sm_count
    sms = {s for s, _ in per_key}
    assert len(sms) == n, sorted(sms)
    assert not [k for k in per_key if k[1] == -3], "a block waited past its limit: the grid was not all resident"
    for s in sms:  # every launch: its 17 misses and its own line again
        assert per_key[(s, -1)].size == PAIR_LAUNCHES * (PAIR_TARGETS + 1)
        assert per_key[(s, -2)].size == PAIR_LAUNCHES
    pairs = [k for k in per_key if k[1] >= 0]
    assert all(s != o for s, o in pairs)
    # 16 x 18 offsets a block cover every other block at least twice; the blocks' SMs may move between launches
    assert len(pairs) >= 0.9 * n * (n - 1), len(pairs)
    assert sum(per_key[k].size for k in pairs) == n * PAIR_TARGETS * PAIR_LAUNCHES
    hits = np.concatenate([per_key[k] for k in pairs])
    misses = np.concatenate([per_key[(s, -1)] for s in sms])
    own = np.concatenate([per_key[(s, -2)] for s in sms])
    # an L2 hit net of the bracket is ~260 (the map's); a miss goes to HBM (the chase: ~690)
    assert 150 < np.median(own) < 600, np.percentile(own, [1, 50, 99])
    assert np.median(misses) > np.median(own) + 100, (np.median(misses), np.median(own))
    assert 150 < np.median(hits) < np.median(misses), (np.median(hits), np.median(misses))
    assert set(pools) >= {("hits", 0), ("hits", 1), ("misses", 0), ("misses", 1), ("own", 0)}
    assert sum(v.size for (p, _), v in pools.items() if p == "hits") == hits.size
    found = pair_map(per_key)
    near = {int(r.sm): int(r.near) for r in loads.per_sm().itertuples()} if loads.split else None
    print("\n" + "\n".join(describe(device.name, found, near)))
    print(found.clusters().round(1).to_string())
    print("hits percentiles 1/10/50/90/99:", np.percentile(hits, [1, 10, 50, 90, 99]).round(0).tolist())
    print("misses percentiles 1/10/50/90/99:", np.percentile(misses, [1, 10, 50, 90, 99]).round(0).tolist())
    print("conflicts (first 20):", found.sides.conflicts[:20])
