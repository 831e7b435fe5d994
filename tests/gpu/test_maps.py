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
