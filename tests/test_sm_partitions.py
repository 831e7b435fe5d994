"""The three partitions of the SMs compared within one run (issue 45, section 4): the L2 map's near/far halves, the
far-hit sides of the L2 pairs, the DSMEM map's GPC groups. The agreement measures against published values; then
runs built in a temporary database from synthetic map rows (a chip of 8 GPCs whose halves, sides and GPCs are
planted), into the report's sections on them (one test through the whole report): partitions that agree, ones that
do not, and a run that lacks a map."""

from __future__ import annotations

import numpy as np
import pytest

from harness.smgroups import agreement_of, contingency, group_labels

# A simulated chip: 8 GPCs of 16 or 18 SMs (132), TPCs of two SMs
GPC_SMS = (16, 18, 16, 18, 16, 16, 16, 16)
STARTS = np.concatenate([[0], np.cumsum(GPC_SMS)])
SM_COUNT = int(STARTS[-1])


def gpc(sm: int) -> int:
    return int(np.searchsorted(STARTS[1:], sm, side="right"))


def labels(values) -> dict[int, int]:
    return dict(enumerate(values))


# -- the measures ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("a, b, rand, adjusted", [
    # scikit-learn's documentation of rand_score and adjusted_rand_score (its worked examples)
    ([0, 0, 1, 1], [0, 0, 1, 2], 0.83, 0.57),
    ([0, 0, 1, 1], [1, 1, 0, 0], 1.0, 1.0),
    ([0, 0, 1, 2], [0, 0, 1, 1], 0.83, 0.57),
    ([0, 0, 0, 0], [0, 1, 2, 3], 0.0, 0.0),
    # by hand: 6 SMs; 15 pairs, 2 together in both, 6 together in a, 3 in b: Rand (15 + 4 - 6 - 3) / 15;
    # expected together 6 x 3 / 15 = 1.2, ARI (2 - 1.2) / ((6 + 3) / 2 - 1.2)
    ([0, 0, 0, 1, 1, 1], [0, 0, 1, 1, 2, 2], 10 / 15, 0.8 / 3.3),
])
def test_the_rand_index_and_its_adjusted_form_match_published_values(a, b, rand, adjusted):
    found = agreement_of(labels(a), labels(b))
    assert found.rand == pytest.approx(rand, abs=0.005) and found.adjusted == pytest.approx(adjusted, abs=0.005)
    assert found.same == (adjusted == 1.0)


def test_chance_is_what_independent_partitions_of_those_sizes_agree_on():
    """Two halves of 64 SMs each, drawn independently many times: the fraction of pairs they agree on averages the
    `chance` the measure reports, and their adjusted index averages 0."""
    rng = np.random.default_rng(0)
    base = np.repeat([0, 1], 64)
    draws = [agreement_of(labels(base), labels(rng.permutation(base))) for _ in range(300)]
    assert np.mean([d.rand for d in draws]) == pytest.approx(draws[0].chance, abs=0.005)
    assert np.mean([d.adjusted for d in draws]) == pytest.approx(0.0, abs=0.01)
    together = 2 * (64 * 63 / 2) / (128 * 127 / 2)  # of the pairs, those one partition puts together
    assert draws[0].chance == pytest.approx(together ** 2 + (1 - together) ** 2)


def test_the_contingency_table_counts_the_common_sms_and_refinement_is_read_off_it():
    gpcs = {s: gpc(s) for s in range(SM_COUNT)}
    halves = {s: int(gpc(s) >= 4) for s in range(SM_COUNT)}
    rows, cols, table = contingency(gpcs, halves)
    assert rows == list(range(8)) and cols == [0, 1] and table.sum() == SM_COUNT
    assert table[:, 0].tolist() == [16, 18, 16, 18, 0, 0, 0, 0]
    found = agreement_of(gpcs, halves)
    assert found.refines(0) and not found.refines(1) and not found.same
    split = {s: int(s >= 60) for s in range(SM_COUNT)}  # cuts GPC 3 (SMs 50-67): 10 and 8
    assert agreement_of(gpcs, split).split_groups(0) == [(3, [10, 8])]
    # an SM one partition does not label is left out of the table
    assert agreement_of({0: 0, 1: 0, 2: 1}, {0: 0, 1: 0, 3: 1}).sms == 2
    assert group_labels([[4, 5], [1]]) == {4: 0, 5: 0, 1: 1}


# -- runs in a temporary database, through the report -----------------------------------------------------------------

def _rows(spec, half, side, rng) -> np.ndarray:
    """One launch's rows as the map kernels write them (methods.SmMap), on the planted chip: the L2 map's line j in
    partition j mod 2, 264 cycles from an SM's near half and 293 from the other; the pairs' hits 258 cycles within a
    side and 414 across; the DSMEM map's clusters packed into GPCs, a hop 190 cycles within a TPC and 205 beyond."""
    from harness.measure.methods import MAP_ROW_HEAD

    blocks = spec.blocks(SM_COUNT)
    rows = np.zeros((blocks, spec.row_words), dtype=np.int64)
    c = spec.grid_multiple
    placed = [int(STARTS[g]) + i for g, n in enumerate(GPC_SMS) for i in range(n // c * c)]
    for b in range(blocks):
        sm = placed[b % len(placed)] if spec.by_target else b % SM_COUNT
        rows[b, 0] = sm
        for j in range(spec.targets):
            if spec.by_target and c == 1:
                peer = placed[(b + 1 + j) % len(placed)]
                cycles = 414.0 if side(sm) != side(peer) else 258.0
            elif spec.by_target:
                peer = placed[(b // c * c + (b % c + 1 + j) % c) % len(placed)]
                cycles = (190.0 if peer // 2 == sm // 2 else 205.0) * spec.steps
            else:
                peer, cycles = j, 264.0 if j % 2 == half(sm) else 293.0
            rows[b, MAP_ROW_HEAD + 2 * j:MAP_ROW_HEAD + 2 * j + 2] = (peer, cycles + rng.integers(0, 3))
    return rows


def _run(store, suite: str, half, side, seed=0) -> int:
    """A run of `suite`'s map cases with the planted chip's rows (what the map methods store from a GPU's)."""
    from helpers import fake_device

    from harness.provenance import Provenance

    prov = Provenance(f"bench run --suite {suite}", "testhost", "abc123", False, "0.1.0", "3.12", "14.2", "13.0")
    run_id = store.start_run(fake_device(), prov, suite, None)
    _run_into(store, run_id, suite, half, side, seed)
    store.finish_run(run_id, "complete")
    return run_id


def _run_into(store, run_id: int, suite: str, half, side, seed=0) -> int:
    """`suite`'s map cases stored into run `run_id`."""
    from helpers import fake_device

    from harness.build.sass import SassCheck
    from harness.measure import methods
    from harness.measure.measurement import CaseResult, Metric
    from harness.registry import family_of
    from harness.suites import suite_cases

    rng = np.random.default_rng(seed)
    device = fake_device()
    for case in suite_cases(suite):
        metrics = []
        for spec in family_of(case).plan(case, device):
            rows = [_rows(spec, half, side, rng) for _ in range(2)]
            metrics += [Metric(spec.metric, "cycles", values, launch, sm_clock_mhz=1755.0)
                        for launch, values in methods.map_launches(spec, rows)]
        store.record_case(run_id, CaseResult(case, None, SassCheck(True, "synthetic"), True, None, 0.0, "synthetic",
                                             metrics))
    return run_id


def _report(store, run_id, tmp_path) -> str:
    from harness.analysis import report

    root = tmp_path / f"reports{run_id}"
    report.build(store, run_id, root)
    return next(root.glob("*/report.md")).read_text()


def _sections(store, run_id, tmp_path) -> str:
    """The report's partition sections of one run, as text (their titles and lines; the report prints the same:
    test_partitions_that_agree_are_called_the_same... reads them through the whole report)."""
    from types import SimpleNamespace

    from harness.families.memory.figures import partition_sections

    ctx = SimpleNamespace(store=store, directory=tmp_path)
    frame = store.query(f"SELECT * FROM results WHERE run_id = {run_id}")
    return "\n".join(f"{title}\n" + "\n".join(lines) for title, lines, _ in partition_sections(ctx, frame))


def _store(tmp_path):
    from harness.db.store import Store
    from harness.published import shipped

    return Store.open(str(tmp_path / "r.db"), create=True, references=shipped())


def test_the_suite_runs_the_three_maps_and_nothing_else():
    from harness.suites import suite_cases

    ids = {c.case_id for c in suite_cases("maps-sides")}
    assert ids == {"ld.global.cg.u32.map.l2", "ld.global.cg.u32.pairs.l2"} | {
        f"ld.shared::cluster.u32.cluster{c}.map" for c in (2, 4, 8, 16)}
    assert ids <= {c.case_id for c in suite_cases("maps")}


def test_partitions_that_agree_are_called_the_same_and_the_sides_unions_of_gpcs(tmp_path):
    """Halves and sides both the GPCs 0-3 against 4-7: the same partition, each a union of GPC groups."""
    store = _store(tmp_path)
    low = lambda sm: int(gpc(sm) >= 4)
    run_id = _run(store, "maps-sides", low, low)
    text = _report(store, run_id, tmp_path)
    assert f"The partitions of the SMs compared (NVIDIA H100 80GB HBM3, run {run_id})" in text
    assert "lacks" not in text
    assert ("the L2 map's near/far split of the SMs is the far-hit sides: the same partition of the 132 SMs "
            "(adjusted Rand index 1.00; the two agree on 100.0% of the SM pairs, 50.0% by chance)") in text
    # the DSMEM map's groups: the 8 GPCs, and the two SMs of GPCs 1 and 3 beyond 16 that only clusters of 2 reach
    assert "the halves are unions of GPC groups: each of the 10 groups lies wholly on one half" in text
    assert "the sides are unions of GPC groups: each of the 10 groups lies wholly on one side" in text
    assert "Contingency: far-hit sides x GPC groups" in text and "| side 0 | 16 | 16 | 16 | 16 | 0 | 0 | 0 | 0 | 2 | 2 |" in text


def test_partitions_that_differ_are_called_different_and_the_straddling_gpc_named(tmp_path):
    """Halves GPCs 0-3 against 4-7; sides SMs 0-59 against 60-131, a cut through GPC 3 (SMs 50-67)."""
    store = _store(tmp_path)
    run_id = _run(store, "maps-sides", lambda sm: int(gpc(sm) >= 4), lambda sm: int(sm >= 60))
    text = _sections(store, run_id, tmp_path)
    assert "the L2 map's near/far split of the SMs is not the far-hit sides: 8 of the 132 SMs would have to change " \
           "side" in text
    # GPC 3's group is its 16 SMs that clusters of 16 hold (50-65): 10 on side 0, 6 on side 1
    assert "the sides are not unions of GPC groups: 1 of the 10 groups straddle them (group 3: 10 + 6 SMs" in text
    assert "the halves are unions of GPC groups" in text


def test_sides_across_the_halves_agree_no_better_than_chance(tmp_path):
    """Sides by the parity of the GPC, halves GPCs 0-3 against 4-7: an adjusted index near 0, both unions of GPCs."""
    from harness.families.memory.pairs import HALVES, SIDES, compared, gpc_groups, load, partitions
    from harness.families.memory.maps import load as load_l2

    store = _store(tmp_path)
    run_id = _run(store, "maps-sides", lambda sm: int(gpc(sm) >= 4), lambda sm: gpc(sm) % 2)
    frame = store.query(f"SELECT * FROM results WHERE run_id = {run_id}")
    gpu = frame.gpu_name.iloc[0]
    parts = partitions(load_l2(store, frame)[gpu], load(store, frame)[gpu], gpc_groups(store, frame)[gpu])
    found = {(a, b): f for a, b, f in compared(parts)}
    halves_sides = found[(HALVES, SIDES)]
    assert abs(halves_sides.adjusted) < 0.05 and halves_sides.rand == pytest.approx(halves_sides.chance, abs=0.02)
    assert all(f.refines(1) for (a, b), f in found.items() if b != SIDES)  # GPC groups inside halves and sides
    text = _sections(store, run_id, tmp_path)
    moved = min(sum(gpc(s) % 2 != int(gpc(s) >= 4) for s in range(SM_COUNT)),
                sum(gpc(s) % 2 == int(gpc(s) >= 4) for s in range(SM_COUNT)))
    assert f"is not the far-hit sides: {moved} of the 132 SMs would have to change side" in text


def test_maps_of_two_runs_are_never_compared(tmp_path):
    """The L2 maps in one run, the DSMEM map in another (SM ids are per physical GPU): the report of each says what
    its run lacks and compares nothing."""
    store = _store(tmp_path)
    low = lambda sm: int(gpc(sm) >= 4)
    first = _run(store, "maps-l2pairs", low, low)
    second = _run(store, "maps-dsmem", low, low, seed=1)
    text = _sections(store, first, tmp_path)
    assert f"Not compared. Run {first} lacks the L2 map's near/far split of the SMs (each SM's near partition); the " \
           "DSMEM map's GPC groups (SMs that shared a cluster, transitively) (a map not run" in text
    assert "The partitions of the SMs compared" not in text
    assert "The partitions of the SMs compared" not in _sections(store, second, tmp_path)


def test_a_run_with_two_of_the_maps_compares_those_two_and_names_the_third(tmp_path):
    """The L2 map and the DSMEM map in one run (as runs 94-100 hold them), no pairs: the halves against the GPC
    groups, and the line saying the sides are missing."""
    store = _store(tmp_path)
    low = lambda sm: int(gpc(sm) >= 4)
    run_id = _run(store, "maps-l2", low, low)
    from harness.suites import suite_cases

    assert suite_cases("maps-dsmem")  # the same run: both suites' cases stored under one run id
    frame_run = _run_into(store, run_id, "maps-dsmem", low, low)
    text = _sections(store, frame_run, tmp_path)
    assert f"The partitions of the SMs compared (NVIDIA H100 80GB HBM3, run {run_id})" in text
    assert "the halves are unions of GPC groups: each of the 10 groups lies wholly on one half" in text
    assert f"Run {run_id} lacks the far-hit sides" in text and "far-hit sides x" not in text


def test_the_pairs_sentences_hold_the_sides_against_maps_of_their_own_run_only(tmp_path):
    """The site reads the newest rows of each GPU, which may come from several runs: the pairs' sides are held
    against the L2 map and the GPC groups of the pairs' own run, never another's."""
    from types import SimpleNamespace

    from harness.families.memory.figures import pair_sections

    store = _store(tmp_path)
    low = lambda sm: int(gpc(sm) >= 4)
    pairs_run = _run(store, "maps-l2pairs", low, low)
    _run(store, "maps-l2", low, low, seed=1)
    _run(store, "maps-dsmem", low, low, seed=2)
    ctx = SimpleNamespace(store=store, directory=tmp_path)
    both = store.query("SELECT * FROM results")
    text = " ".join(line for _, lines, _ in pair_sections(ctx, both) for line in lines)
    assert "two sides explain which pairs are slow" in text
    assert "against the L2 map's near partition" not in text and "against the DSMEM map's" not in text
    from harness.families.memory.figures import partition_sections

    text = " ".join(line for _, lines, _ in partition_sections(ctx, both) for line in lines)
    assert f"Not compared. Run {pairs_run} lacks" in text and "the far-hit sides: the same partition" not in text
    together = _run(store, "maps-sides", low, low, seed=3)
    text = " ".join(line for _, lines, _ in pair_sections(ctx, store.query(f"SELECT * FROM results WHERE run_id = "
                                                                           f"{together}")) for line in lines)
    assert "against the L2 map's near partition per SM (its split of the own lines): 132 of 132 SMs" in text
