"""The L2's near and far hits by pair of SMs, without a GPU: the two sides found in synthetic pair matrices with a
planted answer (and the planted wrong pairs found as its conflicts), the exact 1-D k-means against every cut tried
by hand, the pools' clusters the method stores, the probe's lines (who reads which, the sums its check expects,
computed here from the kernel's description), its SASS (each timed load bracketed alone), and Table 4's rows."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from harness.measure.methods import MAP_ROW_HEAD, SmMap, map_launches
from harness.registry import FAMILIES, parse_case_id
from harness.smgroups import agreement, components, sides_of_groups, two_sides
from harness.stats import kmeans_1d

MEMORY = FAMILIES["memory"]
PAIRS = "ld.global.cg.u32.pairs.l2"


# -- the exact two-means ----------------------------------------------------------------------------------

def test_two_means_is_the_best_cut_tried_by_hand():
    rng = np.random.default_rng(4)
    for _ in range(20):
        x = np.concatenate([rng.normal(260, 20, rng.integers(1, 40)), rng.normal(410, 30, rng.integers(1, 40))])
        order = np.sort(x)
        best = min(range(1, x.size), key=lambda i: ((order[:i] - order[:i].mean()) ** 2).sum()
                   + ((order[i:] - order[i:].mean()) ** 2).sum())
        found = kmeans_1d(x, 2)
        assert sorted(found.centres) == pytest.approx([order[:best].mean(), order[best:].mean()])
        assert (found.labels == 1).sum() == x.size - best
    assert kmeans_1d([5.0, 5.0, 5.0], 2).centres.tolist() == [5.0]  # one value: one cluster
    with pytest.raises(ValueError):
        kmeans_1d([1.0, 2.0], 3)


# -- the two sides ----------------------------------------------------------------------------------------

def _pairs(side: np.ndarray, fast=258.0, slow=414.0, noise=12.0, missing=0.3, seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    n = side.size
    cycles = np.where(side[:, None] != side[None, :], slow, fast) + rng.normal(0, noise, (n, n))
    cycles[rng.random((n, n)) < missing] = np.nan
    return cycles


@pytest.mark.parametrize("seed", range(5))
def test_a_planted_split_of_the_sms_is_found_from_a_partial_noisy_matrix(seed):
    rng = np.random.default_rng(seed)
    side = rng.integers(0, 2, 132)
    side[0] = 0  # the finder names the first SM's side 0
    sms = np.arange(132) * 2 + 1  # ids need not be positions
    found = two_sides(sms, _pairs(side, seed=seed))
    assert found.split and found.side.tolist() == side.tolist() and not found.conflicts
    assert found.fast == pytest.approx(258, abs=3) and found.slow == pytest.approx(414, abs=3)
    assert found.of()[int(sms[5])] == side[5]


def test_the_pairs_that_disagree_with_the_split_are_its_conflicts():
    side = np.array([0] * 10 + [1] * 12)
    cycles = _pairs(side, missing=0.0, seed=3)
    planted = [(2, 15), (14, 3), (7, 8)]  # two across the sides made fast, one within a side made slow
    cycles[2, 15] = cycles[14, 3] = 258.0
    cycles[7, 8] = 414.0
    found = two_sides(np.arange(22), cycles)
    assert found.side.tolist() == side.tolist()
    assert sorted((a, b) for a, b, _ in found.conflicts) == sorted(planted)
    assert found.pairs == 22 * 21


def test_one_class_of_pairs_is_no_split():
    cycles = _pairs(np.zeros(40, dtype=int), seed=1)
    found = two_sides(np.arange(40), cycles)
    assert not found.split and not found.side.any()


def test_groups_agreement_and_sides_of_groups():
    assert components([(1, 2), (3, 4), (2, 5), (9, 9)]) == [[1, 2, 5], [3, 4], [9]]
    a = {0: 0, 1: 0, 2: 1, 3: 1}
    assert agreement(a, {0: 1, 1: 1, 2: 0, 3: 0}) == (4, 4)  # the same split, named the other way
    assert agreement(a, {0: 0, 1: 1, 2: 1, 7: 0}) == (2, 3)
    assert sides_of_groups(a, [[0, 1], [1, 2, 8]]) == [(0, 2, 0), (1, 1, 1)]


# -- the method's pools -----------------------------------------------------------------------------------

def test_pools_split_the_pooled_targets_into_clusters():
    spec = SmMap("latency_cycles", "k", 32, targets=3, iters=1, launches=1, by_target=True,
                 launch={"map": "x"}, target_key="owner", pools=(("hits", 0, 99, 2), ("misses", -1, -1, 2)))
    rows = [np.array([[1, 0, 2, 260, 3, 410, -1, 600], [2, 0, 1, 262, 3, 258, -1, 750],
                      [3, 10, 1, 420, 2, 424, -1, 610]])]
    found = {tuple(sorted(l.items())): v.tolist() for l, v in map_launches(spec, rows)}
    assert found[(("map", "x"), ("owner", 3), ("sm", 1))] == [410]
    assert sorted(found[(("cluster", 0), ("map", "x"), ("pool", "hits"))]) == [258, 260, 262]
    assert sorted(found[(("cluster", 1), ("map", "x"), ("pool", "hits"))]) == [410, 410, 414]
    assert found[(("cluster", 0), ("map", "x"), ("pool", "misses"))] == [600, 600]
    assert found[(("cluster", 1), ("map", "x"), ("pool", "misses"))] == [750]


# -- the probe --------------------------------------------------------------------------------------------

def test_the_pairs_id_round_trips_and_is_in_the_maps_suite():
    from harness.suites import suite_cases

    case = parse_case_id(PAIRS)
    assert case.case_id == PAIRS and case.family == "memory"
    assert PAIRS in {c.case_id for c in suite_cases("maps")}
    assert PAIRS not in {c.case_id for c in suite_cases("memory")}


def _owner(k: int, b: int, t: int, n: int) -> int:
    """ptx/memory.cu.in KIND 3, step 4, as written there."""
    return (b + 1 + (k * 16 + t) % (n - 1)) % n


@pytest.mark.parametrize("n", [4, 114, 132])
def test_every_line_an_sm_brought_in_is_read_first_by_one_other_sm(n):
    from harness.families.memory import pair_owner

    for k in (0, 5):
        readers: dict[tuple[int, int], list[int]] = {}
        for b, t in itertools.product(range(n), range(16)):
            o = pair_owner(k, b, t, n)
            assert o == _owner(k, b, t, n) and o != b
            readers.setdefault((o, t), []).append(b)
        assert all(len(r) == 1 for r in readers.values()) and len(readers) == 16 * n


@pytest.mark.parametrize("n", [114, 132])
def test_the_launches_cover_every_ordered_pair_of_blocks_twice(n):
    from harness.families.memory import PAIR_LAUNCHES

    seen = {}
    for k, b, t in itertools.product(range(2, 2 + PAIR_LAUNCHES), range(n), range(16)):
        key = (b, _owner(k, b, t, n))
        seen[key] = seen.get(key, 0) + 1
    assert len(seen) == n * (n - 1) and min(seen.values()) >= 2


def test_the_check_expects_each_blocks_sum_of_the_words_it_loads():
    """Words at the byte offsets the kernel's comment gives: slab 0, stripe 8 KiB a block, slots 256 B."""
    case = parse_case_id(PAIRS)
    inputs = MEMORY.inputs(case, np.random.default_rng(2))
    words = inputs.values["words"]
    (check,) = MEMORY.checks(case, inputs)
    assert check.grid == 4 and check.timing_words == 4 * (MAP_ROW_HEAD + 2 * 34)
    for b in range(4):
        offsets = list(range(0, (2 << 20) + 1, 64 << 10))  # the TLB words, the next slab's first too
        offsets += [b * 8192 + 256 * (1 + i) for i in range(17)]  # its own lines
        offsets += [_owner(0, b, t, 4) * 8192 + 256 * (1 + t) for t in range(16)]  # the others'
        offsets += [b * 8192 + 256 * 17]  # its own last line again
        assert check.expected[b] == sum(int(words[o // 4]) for o in offsets) % 2 ** 32
    assert MEMORY.decode(case, np.arange(10)).tolist() == [0, 1, 2, 3]


def test_each_timed_load_is_bracketed_alone_by_the_clock():
    """clock, LDG.E.STRONG.GPU (ld.global.cg), STS of the loaded register, clock: for the misses, the other SMs'
    lines and the own line (three brackets); nothing else loads from global memory between two clock reads."""
    from harness.build import sass
    from harness.build.compile import compile_probe
    from harness.build.render import render

    case = parse_case_id(PAIRS)
    build = compile_probe(render(case, MEMORY))
    assert sass.check(build, MEMORY.sass_expectation(case)).ok
    ops = sass.disassemble(build.cubin_path)["probe_pairs"]
    clocks = [i for i, op in enumerate(ops) if "SR_CLOCKLO" in op]
    brackets = [ops[a + 1:b] for a, b in zip(clocks[::2], clocks[1::2])]
    timed = [body for body in brackets if any(op.startswith("LDG") for op in body)]
    assert len(timed) == 3 and len(brackets) == 4  # and the empty bracket: a shared store alone
    for body in timed:
        assert [op.split()[0] for op in body] == ["LDG.E.STRONG.GPU", "STS"], body
        loaded = body[0].split()[1].rstrip(",")
        assert body[1].endswith(loaded)  # the store waits for the loaded word


@pytest.mark.parametrize("metric,pool,cluster", [("near_hit", "hits", 0), ("far_hit", "hits", 1),
                                                  ("near_miss", "misses", 0), ("far_miss", "misses", 1)])
def test_table_4s_figures_map_to_the_pairs_clusters(metric, pool, cluster):
    row = {"paper": "2501.12084v1", "table_or_figure": "Table 4 (latency, fine-grained P-chase)", "metric": f"latency_l2_cache_{metric}",
           "instruction": "fine-grained p-chase (uniform 32-byte stride)", "gpu": "H800 PCIe", "notes": ""}
    found = MEMORY.paper_row(row)
    assert found == {"case_id": PAIRS, "metric": "latency_cycles",
                     "launch": {"map": "l2pairs", "pool": pool, "cluster": cluster}}
    assert MEMORY.explain(PAIRS, "latency_cycles", 300.0, 258.0, found["launch"]).accounts is False


def test_the_pairs_analysis_reads_the_planted_sides_and_clusters():
    from harness.families.memory.pairs import describe, pair_map

    rng = np.random.default_rng(8)
    side = np.array([0] * 6 + [1] * 6)
    per_key = {}
    for s, o in itertools.product(range(12), range(12)):
        if s != o:
            per_key[(s, o)] = (414.0 if side[s] != side[o] else 258.0) + rng.normal(0, 5, 2)
    for s in range(12):
        per_key[(s, -1)] = np.array([556.0, 744.0, 560.0, 740.0]) + rng.normal(0, 3, 4)
        per_key[(s, -2)] = np.array([262.0])
    found = pair_map(per_key)
    table = found.clusters().set_index("cluster")
    assert table.loc["near hit", "centre"] == pytest.approx(258, abs=3)
    assert table.loc["far hit", "centre"] == pytest.approx(414, abs=3)
    assert table.loc["near miss", "centre"] == pytest.approx(558, abs=3)
    assert table.loc["far miss", "centre"] == pytest.approx(742, abs=3)
    assert table.loc["own line again", "n"] == 12
    text = describe("G", found, near_partition={s: int(side[s]) for s in range(12)}, groups=[[0, 1, 2], [5, 6]])
    assert "side 0 SMs 0-5 (6), side 1 SMs 6-11 (6); 0 of 132 pairs conflict" in text[1]
    assert "12 of 12 SMs on matching sides (the same split)" in text[2]
    assert "1 lie wholly on one side, the rest are split: group 1 (1 + 1)" in text[3]


def test_the_measured_paragraph_in_docs_comes_from_run_140():
    """docs/data-movement.md's figures of run 140: the four pooled clusters and the own line, the far/near ratio
    against Table 4's, and how many pairs the two sides explain (the analysis the report runs)."""
    import json
    from pathlib import Path

    import harness
    from harness.smgroups import two_sides

    root = Path(__file__).resolve().parents[1]
    if not (root / "results.db").exists():
        pytest.skip("no shipped results.db in this checkout")
    rows = harness.results(str(root / "results.db"), run_id=140, metric="latency_cycles")
    launch = [json.loads(x) if isinstance(x, str) else x for x in rows.launch]
    pool = {(l["pool"], l["cluster"]): v for l, v in zip(launch, rows.value) if "pool" in l}
    text = " ".join((root / "docs" / "data-movement.md").read_text().split())
    near, far = pool[("hits", 0)], pool[("hits", 1)]
    assert (f"near hit {near:.0f} cycles, far hit {far:.0f}, near miss {pool[('misses', 0)]:.0f}, far miss "
            f"{pool[('misses', 1)]:.0f}, a line the SM brought itself {pool[('own', 0)]:.0f}") in text
    assert f"The far hit is {far / near:.2f} x the near hit, where Table 4 has 414.1 / 258 = {414.1 / 258:.2f} x" in text
    pairs = {(l["sm"], l["owner"]): v for l, v in zip(launch, rows.value) if "owner" in l and l["owner"] >= 0}
    sms = sorted({s for s, _ in pairs} | {o for _, o in pairs})
    index = {s: i for i, s in enumerate(sms)}
    matrix = np.full((len(sms), len(sms)), np.nan)
    for (s, o), v in pairs.items():
        matrix[index[s], index[o]] = v
    found = two_sides(sms, matrix)
    total = int(np.isfinite(matrix).sum())
    assert f"explains {total - len(found.conflicts)} of the {total} pairs; {len(found.conflicts)} conflict" in text


def test_table_4s_centres_are_set_beside_ours_in_words_and_in_a_figure(tmp_path):
    """The report's and the site's Table 4 section: the planted clusters' centres beside Table 4's four (from the
    shipped references), the far-over-near ratio of each, and the histogram drawn (not a bar chart)."""

    from harness.db.store import Store
    from harness.families.memory.figures import _clusters_figure, table4_figures, table4_sentence
    from harness.families.memory.pairs import pair_map
    from harness.published import shipped

    table4 = table4_figures(Store.open(str(tmp_path / "r.db"), create=True, references=shipped()))
    assert table4 == {"near hit": 258.0, "far hit": 414.1, "near miss": 555.5, "far miss": 743.7}
    rng = np.random.default_rng(3)
    per_key = {(s, o): np.array([300.0 if (s < 4) == (o < 4) else 480.0]) + rng.normal(0, 2, 3)
               for s, o in itertools.product(range(8), range(8)) if s != o}
    per_key.update({(s, -1): np.array([600.0, 800.0]) for s in range(8)})
    found = pair_map(per_key)
    line = table4_sentence("G", found.clusters(), table4)
    assert line.startswith("G: near hit 300 (258), far hit 480 (414), near miss 600 (556), far miss 800 (744) cycles")
    assert line.endswith(f"far over near hit 1.60 x ({414.1 / 258:.2f} x).")
    assert table4_sentence("G", found.clusters(), {}).endswith("far over near hit 1.60 x.")
    path = _clusters_figure({"G": found}, table4, tmp_path, "t4.png")
    assert path.exists()
