"""Maps of the chip without a GPU: the SmMap rows decoded, the L2's partitions and the SMs' sides found in
synthetic matrices with known answers, GPC groups and TPC pairs found in synthetic DSMEM pairs, the probes'
inputs and checks, the clock reads where the kernels' SASS must have them, and the `maps` suite run on the
simulated GPU into a report and a site."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from harness.families.dsmem import maps as dsmem_maps
from harness.families.memory import CHUNK_WORDS, MAP_LINES, chase, map_ring
from harness.families.memory import maps as l2_maps
from harness.measure.methods import MAP_ROW_HEAD, SmMap, map_samples
from harness.registry import FAMILIES, parse_case_id


# -- the method's rows -----------------------------------------------------------------------------------

def _row(sm: int, overhead: int, pairs) -> list[int]:
    return [sm, overhead] + [w for pair in pairs for w in pair]


def test_map_rows_by_sm_keep_whole_rows_in_launch_order_less_the_bracket():
    spec = SmMap("latency_cycles", "k", 32, targets=3, iters=3, launches=2)
    launch0 = np.array([_row(7, 10, [(0, 110), (1, 120), (2, 130)]), _row(3, 5, [(0, 15), (1, 25), (2, 35)])])
    launch1 = np.array([_row(7, 10, [(0, 111), (1, 121), (2, 131)]), _row(3, 5, [(0, 16), (1, 26), (2, 36)])])
    found = map_samples(spec, [launch0.ravel(), launch1.ravel()])
    assert list(found) == [(3, None), (7, None)]
    assert found[(7, None)].tolist() == [100, 110, 120, 101, 111, 121]
    assert found[(3, None)].reshape(-1, 3)[:, 0].tolist() == [10, 11]
    assert spec.row_words == MAP_ROW_HEAD + 6


def test_map_rows_by_target_are_per_pair_and_per_step():
    spec = SmMap("latency_cycles", "k", 32, targets=2, iters=4, launches=2, steps=4, by_target=True)
    launch0 = np.array([_row(1, 0, [(2, 800), (5, 840)]), _row(2, 0, [(5, 820), (1, 804)])])
    launch1 = np.array([_row(1, 0, [(2, 808), (9, 900)])])
    found = map_samples(spec, [launch0, launch1])
    assert found[(1, 2)].tolist() == [200, 202] and found[(1, 9)].tolist() == [225]
    assert found[(2, 1)].tolist() == [201] and set(found) == {(1, 2), (1, 5), (1, 9), (2, 5), (2, 1)}
    assert SmMap("m", "k", 32, 1, 1, 1, grid_multiple=16).blocks(132) == 128


# -- the L2 map -------------------------------------------------------------------------------------------

def _l2(sides: np.ndarray, parts: np.ndarray, near=260.0, far=420.0, launches=4, seed=0, base=None) -> dict:
    """Per SM samples (launch by launch, every line): near where the line's partition is the SM's side."""
    rng = np.random.default_rng(seed)
    base = np.zeros(sides.size) if base is None else base
    per_sm = {}
    for s, side in enumerate(sides):
        cells = np.where(parts == side, near, far) + base[s]
        per_sm[int(100 + s)] = (cells[None, :] + rng.normal(0, 6, (launches, parts.size))).ravel()
    return per_sm


def test_l2_partitions_and_each_sms_near_side_are_found():
    rng = np.random.default_rng(1)
    sides = np.array([0] * 30 + [1] * 36)
    rng.shuffle(sides)
    parts = rng.integers(0, 2, MAP_LINES)
    found = l2_maps.l2_map(_l2(sides, parts, base=rng.normal(0, 8, sides.size)), MAP_LINES)
    assert found.split
    # the naming is fixed by the first SM's fastest line: compare up to it
    same = (found.partition == parts).all() or (found.partition == 1 - parts).all()
    assert same
    table = found.per_sm()
    flip = found.partition[0] != parts[0]
    assert (table.near.values == (sides ^ flip)).all()
    assert table["near cycles"].between(220, 300).all() and table["far cycles"].between(380, 460).all()
    assert (table["far - near"] - 160).abs().max() < 10  # the base of each SM cancels
    text = l2_maps.describe("GPU", found)
    assert "two L2 partitions" in text and "near partition" in text and "(30)" in text and "(36)" in text


def test_lines_split_even_where_every_sm_sees_the_same_far_lines():
    parts = np.array([0, 1] * (MAP_LINES // 2))
    found = l2_maps.l2_map(_l2(np.zeros(20, dtype=int), parts), MAP_LINES)
    assert found.split and ((found.partition == parts).all() or (found.partition == 1 - parts).all())
    assert (found.per_sm().near == found.per_sm().near.iloc[0]).all()


def test_no_split_where_the_lines_differ_by_noise_alone():
    found = l2_maps.l2_map(_l2(np.zeros(40, dtype=int), np.zeros(MAP_LINES, dtype=int)), MAP_LINES)
    assert not found.split and not found.partition.any()
    assert "no near/far split" in l2_maps.describe("GPU", found)


def test_sm_ranges_read_as_runs():
    assert l2_maps.ranges([5, 0, 1, 2, 7, 8, 10]) == "0-2, 5, 7-8, 10"


# -- the DSMEM map ---------------------------------------------------------------------------------------

def _pairs(gpcs: list[list[int]], tpc=190.0, gpc=205.0, far_sm: int | None = None) -> dsmem_maps.Pairs:
    """Every ordered pair within each GPC (cluster 16), and TPC pairs 2k, 2k + 1 (cluster 2), 4 samples each."""
    rng = np.random.default_rng(2)
    rows = []
    for members in gpcs:
        for a in members:
            for b in members:
                if a == b:
                    continue
                value = tpc if a // 2 == b // 2 else gpc
                value += 12.0 if far_sm in (a, b) and a // 2 != b // 2 else 0.0  # far from all but its TPC
                rows.append((16, a, b, value + rng.normal(0, 0.3, 4)))
                if a // 2 == b // 2:
                    rows.append((2, a, b, value + rng.normal(0, 0.3, 4)))
    return dsmem_maps.Pairs(pd.DataFrame(rows, columns=["cluster", "sm", "peer", "samples"]))


def test_gpc_groups_are_the_sms_that_shared_clusters():
    gpcs = [list(range(0, 16)), list(range(16, 34)), list(range(34, 48))]
    assert dsmem_maps.groups(_pairs(gpcs)) == [list(range(16, 34)), list(range(0, 16)), list(range(34, 48))]


def test_tpc_pairs_are_mutual_nearest_and_far_sms_are_named():
    gpcs = [list(range(0, 16)), list(range(16, 32))]
    pairs = _pairs(gpcs, far_sm=21)
    sms, cycles = dsmem_maps.matrix(pairs)
    found = dsmem_maps.tpcs(sms, cycles)
    assert sorted((a, b) for a, b, _, _ in found) == [(k, k + 1) for k in range(0, 32, 2)]
    assert all(abs(cycles - 190) < 1 and next_nearest > 204 for _, _, cycles, next_nearest in found)
    table = dsmem_maps.per_sm(pairs)
    assert table[table["above the group"] >= dsmem_maps.FAR_CYCLES].sm.tolist() == [21]
    text = " ".join(dsmem_maps.describe("GPU", pairs))
    assert "2 groups" in text and "16 pairs" in text and "SM 21 (+" in text and "2: 190 / 190 / 190 (100%)" in text
    shares = dsmem_maps.by_cluster(pairs, found).tpc
    assert shares[2] == 1.0 and shares[16] == pytest.approx(32 / (2 * 16 * 15))


def test_no_tpc_where_no_pair_stands_out():
    pairs = _pairs([list(range(0, 8))], tpc=205.0)
    sms, cycles = dsmem_maps.matrix(pairs)
    assert dsmem_maps.tpcs(sms, cycles) == []
    text = " ".join(dsmem_maps.describe("GPU", pairs))
    assert "latency shows no TPC structure: 0 pairs of its 8 SMs" in text and "within a TPC" not in text


def test_a_few_stand_out_pairs_are_no_tpc_structure():
    """Runs 94/95 found one mutual-nearest pair among 132 SMs: a map says TPCs only when such pairs cover a
    quarter of its SMs at least (here 2 pairs of 32 SMs, an eighth)."""
    pairs = _pairs([list(range(0, 32))], tpc=205.0)
    frame = pairs.frame.copy()
    near = frame.apply(lambda r: {r.sm, r.peer} in ({0, 1}, {2, 3}), axis=1)
    frame.loc[near, "samples"] = frame.loc[near, "samples"].map(lambda s: s - 15.0)
    text = " ".join(dsmem_maps.describe("GPU", dsmem_maps.Pairs(frame)))
    assert "latency shows no TPC structure: 2 pairs of its 32 SMs" in text and "(TPCs, as latency sees them)" not in text


# -- the probes ---------------------------------------------------------------------------------------------

def test_the_l2_maps_walk_is_one_cycle_of_its_lines_and_its_check_expects_it():
    words = map_ring(np.random.default_rng(4))
    seen, word = [], 0
    for _ in range(MAP_LINES):
        seen.append(word)
        word = int(words[word])
    assert word == 0 and len(set(seen)) == MAP_LINES and all(w % CHUNK_WORDS == 0 for w in seen)
    assert max(seen) * 4 > (4 << 20)  # spread over the region, not packed at its start
    case = parse_case_id("ld.global.cg.u32.map.l2")
    family = FAMILIES["memory"]
    inputs = family.inputs(case, np.random.default_rng(4))
    (check,) = family.checks(case, inputs)
    assert 0 < check.iters < MAP_LINES and check.expected[0] == chase(words, 0, check.iters) != 0


@pytest.mark.parametrize("cluster", [2, 4, 8, 16])
def test_the_dsmem_maps_check_expects_every_cta_on_the_walks_word(cluster):
    case = parse_case_id(f"ld.shared::cluster.u32.cluster{cluster}.map")
    family = FAMILIES["dsmem"]
    inputs = family.inputs(case, np.random.default_rng(0))
    (check,) = family.checks(case, inputs)
    ring = inputs.values["ring"]
    assert check.grid == cluster and (check.expected == chase(ring, 0, check.iters)).all()
    (spec,) = family.plan(case)
    assert spec.by_target and spec.targets == cluster - 1 and spec.grid_multiple == cluster


def _sass(case_id: str, kernel: str) -> list[str]:
    from harness.build.compile import compile_probe
    from harness.build.sass import disassemble
    from harness.registry import probe_source

    build = compile_probe(probe_source(parse_case_id(case_id)))
    assert build.spill_bytes() == 0
    return [i.split()[0] if not i.startswith("@") else i.split()[1] for i in disassemble(build.cubin_path)[kernel]]


def test_the_l2_maps_bracket_holds_the_load_and_the_store_alone():
    ops = _sass("ld.global.cg.u32.map.l2", "probe_map")
    timed = [i for i in range(len(ops) - 3) if ops[i + 1].startswith("LDG") and ops[i] == "CS2R"]
    assert len(timed) == 1, ops
    i = timed[0]
    assert ops[i:i + 4] == ["CS2R", "LDG.E.STRONG.GPU", "STS", "CS2R.32"] or ops[i:i + 4] == [
        "CS2R", "LDG.E.STRONG.GPU", "STS", "CS2R"], ops[i - 2:i + 6]
    empty = [j for j in range(len(ops) - 2) if ops[j] == "CS2R" and ops[j + 1] == "STS" and ops[j + 2] == "CS2R"]
    assert len(empty) == 1  # the empty bracket: the same clock reads and store, no load


def test_the_dsmem_maps_clock_reads_hold_the_chain_alone():
    ops = _sass("ld.shared::cluster.u32.cluster4.map", "probe_dsmem_map")
    clocks = [i for i, op in enumerate(ops) if op == "CS2R"]
    assert len(clocks) == 2, ops
    inside = ops[clocks[0] + 1:clocks[1]]
    assert inside.count("LD.E") == 4 and not any(op.startswith(("STS", "STG", "LDS", "LDG")) for op in inside)
    before = ops[:clocks[0]]
    # the peer's %smid is loaded, and stored (which waits for it), before the first clock read
    assert before[-1] == "STS" or "STS" in before[before.index("LD.E"):], before[-8:]


# -- the L2 by SM through TMA -----------------------------------------------------------------------------

TMA_MAP = "cp.async.bulk.shared::cluster.global.128B.map.l2"


def test_the_tma_map_walks_the_l2_maps_lines_and_its_check_expects_numpys_line():
    from harness.families.tma import maps as tma_maps

    case = parse_case_id(TMA_MAP)
    family = FAMILIES["tma"]
    assert case.family == "tma" and case.l2map and case.box_bytes == 128 and case.case_id == TMA_MAP
    # the same seed gives the same ring as the plain-load map: the lines line up
    ours = family.inputs(case, np.random.default_rng(7)).values["words"]
    theirs = FAMILIES["memory"].inputs(parse_case_id("ld.global.cg.u32.map.l2"), np.random.default_rng(7)).values["words"]
    assert (ours == theirs).all()
    (check,) = family.checks(case, family.inputs(case, np.random.default_rng(7)))
    assert check.kernel == "probe_tmamap" and check.grid == 1 and 0 < check.iters < MAP_LINES
    last = chase(ours, 0, check.iters - 1)
    line = ours[last // 32 * 32:last // 32 * 32 + 32]
    assert (check.expected[:32] == line).all() and line[last % 32] == check.expected[32] == chase(ours, 0, check.iters)
    assert check.expected.size == family.output_words(case) == 33
    (spec,) = family.plan(case)
    assert isinstance(spec, SmMap) and spec.kernel == "probe_tmamap" and spec.targets == MAP_LINES
    assert spec.launches == tma_maps.MAP_LAUNCHES == 16 and spec.launch["map"] == "l2" and not spec.by_target


def test_the_tma_map_case_is_its_own_and_refuses_other_sizes():
    from harness.errors import IllegalShapeError
    from harness.suites import suite_cases

    with pytest.raises(IllegalShapeError):
        parse_case_id("cp.async.bulk.shared::cluster.global.256B.map.l2")
    assert [c.case_id for c in suite_cases("maps-tma")] == [TMA_MAP]
    assert not parse_case_id("cp.async.bulk.shared::cluster.global.8192B").l2map


def test_tma_near_and_far_are_found_by_its_own_split_and_by_the_loads_partition():
    from harness.families.tma import maps as tma_maps

    rng = np.random.default_rng(3)
    sides = np.array([0] * 40 + [1] * 26)
    parts = rng.integers(0, 2, MAP_LINES)
    loads = l2_maps.l2_map(_l2(sides, parts, near=263, far=293, seed=1), MAP_LINES)
    tma = l2_maps.l2_map(_l2(sides, parts, near=520, far=550, seed=2), MAP_LINES)
    found = tma_maps.TmaMap(tma, loads)
    assert tma.split and found.agreement() == 1.0
    table = found.per_sm()
    assert (table["TMA near"] - 520).abs().max() < 10 and (table["TMA far"] - 550).abs().max() < 10
    assert (table["TMA near (loads' partition)"] - table["TMA near"]).abs().max() < 1e-9
    assert (table["TMA - load, near"] - 257).abs().max() < 12
    text = " ".join(tma_maps.describe("GPU", found))
    assert "two groups" in text and "TMA near 520, far 550" in text and "100% of the lines" in text
    alone = tma_maps.TmaMap(tma, None)
    assert "TMA near" in alone.per_sm() and "load near" not in alone.per_sm()
    assert "No plain-load map" in " ".join(tma_maps.describe("GPU", alone))


def test_tma_without_a_split_is_said_and_still_read_by_the_loads_partition():
    from harness.families.tma import maps as tma_maps

    sides = np.array([0] * 20 + [1] * 20)
    parts = np.array([0, 1] * (MAP_LINES // 2))
    loads = l2_maps.l2_map(_l2(sides, parts, near=263, far=293), MAP_LINES)
    flat = l2_maps.l2_map(_l2(sides, np.zeros(MAP_LINES, dtype=int), near=500, far=500, seed=5), MAP_LINES)
    found = tma_maps.TmaMap(flat, loads)
    assert not flat.split and found.agreement() is None
    text = " ".join(tma_maps.describe("GPU", found))
    assert "no near/far split" in text and "By the plain loads' partition" in text
    assert (found.per_sm()["TMA far (loads' partition)"] - found.per_sm()["TMA near (loads' partition)"]).abs().max() < 5


def test_the_tma_maps_clock_reads_hold_the_copy_and_the_wait_alone():
    ops = _sass(TMA_MAP, "probe_tmamap")
    copies = [i for i, op in enumerate(ops) if op.startswith("UBLKCP")]
    assert len(copies) == 1, ops
    c = copies[0]
    before = max(i for i in range(c) if ops[i] == "CS2R")
    after = min(i for i in range(c, len(ops)) if ops[i] == "CS2R")
    inside = ops[before + 1:after]
    # the barrier armed before the first clock read, in the same block (no branch, barrier or memory access
    # between: ptxas 13.0 schedules the line's address arithmetic after the arrive, 13.5 before it); nothing
    # between the clocks but the copy, its wait, and the predicates and registers that issue it from one lane
    armed = max(i for i in range(before) if ops[i] == "SYNCS.ARRIVE.TRANS64")
    assert not [op for op in ops[armed + 1:before] if op.startswith(
        ("LD", "ST", "SYNCS", "ATOM", "RED", "MEMBAR", "FENCE", "BRA", "BAR", "CS2R"))], ops[armed:before + 1]
    assert "SYNCS.PHASECHK.TRANS64.TRYWAIT" in inside, inside
    memory = [op for op in inside if op.startswith(("LD", "ST", "SYNCS.ARRIVE", "ATOM", "RED", "MEMBAR", "FENCE"))]
    assert memory == [], inside
    # the next line's word is read from the copy after the second clock read
    assert "LDS" in ops[after:after + 12]
    assert [op for op in ops if op.startswith("LDG")] == ["LDG.E.STRONG.GPU"]  # the warm walk


# -- end to end, simulated ----------------------------------------------------------------------------------

def test_the_maps_suite_runs_on_the_simulated_gpu_into_a_report_and_a_site(tmp_path, monkeypatch, shared_cache):
    from harness.analysis import report, site
    from harness.db.store import Store
    from harness.orchestration.run import RunPlan, execute
    from harness.orchestration.worker import Worker
    from harness.suites import suite_cases

    monkeypatch.setenv("HOPPER_BENCH_BACKEND", "fake")
    cases = suite_cases("maps")
    assert {c.case_id for c in cases} == {"ld.global.cg.u32.map.l2", "ld.global.cg.u32.pairs.l2", TMA_MAP} | {
        f"ld.shared::cluster.u32.cluster{c}.map" for c in (2, 4, 8, 16)}
    db = str(tmp_path / "maps.db")
    with Worker(0) as worker:
        worker.start()
        outcome = execute(RunPlan("maps", None, cases), db, worker)
    assert outcome.status == "complete" and all(r.valid for r in outcome.results)
    store = Store.open(db, read_only=True)
    l2 = store.query("SELECT launch FROM results WHERE case_id = 'ld.global.cg.u32.map.l2'")
    assert len(l2) == 132
    tma = store.query(f"SELECT launch FROM results WHERE case_id = '{TMA_MAP}'")
    assert len(tma) == 132
    written = report.build(store, None, tmp_path / "reports")
    text = next((tmp_path / "reports").glob("*/report.md")).read_text()
    assert "SMs 0-67 (68) are near partition 0 (260 cycles) and far from partition 1 (420)" in text
    assert "memory_l2_map.png" in text and "dsmem_sm_map.png" in text and "groups that shared clusters" in text
    assert "tma_l2_map.png" in text and "TMA: the L2 by SM" in text and "By the plain loads' partition" in text
    # the pairs: the simulated chip's halves are its GPCs 0-3 (SMs 0-67) and 4-7, far across them
    # (harness/orchestration/fakegpu.py): the sides found are those, with no conflict, the L2 map's split
    assert "memory_l2_pairs.png" in text
    assert "side 0 SMs 0-67 (68), side 1 SMs 68-131 (64); 0 of " in text
    assert "against the L2 map's near partition per SM (its split of the own lines): 132 of 132 SMs" in text
    assert "against the DSMEM map's" in text and "lie wholly on one side" in text
    built = site.build(store, tmp_path / "site")
    assert "Which SMs are far from which half of the L2?" in built.sections
    assert "Which SMs are far from which, through distributed shared memory?" in built.sections
    assert "What does a TMA copy take from each L2 partition, from every SM?" in built.sections
    assert "Which SMs find the L2 lines that other SMs brought in far?" in built.sections
    assert written is not None


def test_the_memory_familys_l2_ring_is_the_shared_maps_region():
    """The plain-load map walks the memory family's 8 MiB L2 ring; the shared ring (harness/l2lines.py) must be
    that region in the same chunks, or the two maps' line j would be other memory."""
    from harness import l2lines
    from harness.families import memory

    assert l2lines.REGION_BYTES == memory.RING_BYTES["l2"] and l2lines.CHUNK_WORDS == memory.CHUNK_WORDS
    assert memory.MAP_LINES == l2lines.LINES
