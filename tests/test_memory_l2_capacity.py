"""Issue 45: the L2's capacity from a footprint sweep of the L2 chase (ld.global.cg.u32.pchase.l2.footprint<MiB>m,
suite memory-l2-capacity), without a GPU: the rings, the ids, the probes' SASS, the estimator on known curves, the
seed chapter's 50 MB mapped to it."""

import json

import numpy as np
import pandas as pd
import pytest

from harness.errors import IllegalShapeError, SpecError
from harness.families.memory import CHUNK_WORDS, chase
from harness.families.memory.cases import SWEEP_MIB
from harness.families.memory.capacity import METRIC, PLATEAU_POINTS, RISE, capacity, capacity_case
from harness.registry import FAMILIES, parse_case_id
from harness.suites import suite_cases

MEMORY = FAMILIES["memory"]
SUITE = "memory-l2-capacity"


def test_the_suite_sweeps_the_footprints_and_every_id_round_trips():
    cases = suite_cases(SUITE)
    assert [c.footprint_mib for c in cases] == list(SWEEP_MIB) == sorted(set(SWEEP_MIB))
    for case in cases:
        assert parse_case_id(case.case_id) == case and case.case_id.endswith(f".footprint{case.footprint_mib}m")
        assert case.region_bytes == case.footprint_mib << 20 and case.space == "global.cg"
    assert capacity_case() in {c.case_id for c in cases}
    # the sweep brackets half the L2 and the whole of it (50 MiB on the H100, 60 on the H200) at 4 MiB
    for knee in (25, 30, 50, 60):
        assert any(a <= knee <= b and b - a <= 4 for a, b in zip(SWEEP_MIB, SWEEP_MIB[1:]))


@pytest.mark.parametrize("case_id,message", [
    ("ld.global.cg.u32.pchase.l2.footprint0m", "whole number of MiB from 1 to 512"),
    ("ld.global.cg.u32.pchase.l2.footprint513m", "whole number of MiB from 1 to 512"),
    ("ld.global.cg.u32.pchase.l2.footprint048m", "without leading zeros"),
    ("ld.global.cg.u32.pchase.hbm.footprint48m", "a footprint is the L2 chase's"),
    ("ld.global.ca.u32.pchase.l1.footprint1m", "a footprint is the L2 chase's"),
    ("ld.global.cg.v4.u32.stream.l2.footprint48m", "a footprint is the L2 chase's"),
    ("ld.global.cg.u32.pchase.l2.footprint48", "cannot parse"),
    ("ld.global.cg.u32.pchase.l2.footprint4.5m", "cannot parse"),
])
def test_bad_footprints_are_refused_in_one_line(case_id, message):
    with pytest.raises((IllegalShapeError, SpecError), match=message) as refused:
        parse_case_id(case_id)
    assert "\n" not in str(refused.value)


def _cycle(words: np.ndarray) -> int:
    """Chunks visited from word 0 until the walk returns to it; fails on a word off a chunk or a chunk twice."""
    chunks = words.size // CHUNK_WORDS
    visited = np.zeros(chunks, dtype=bool)
    word, steps = 0, 0
    while True:
        assert word % CHUNK_WORDS == 0 and not visited[word // CHUNK_WORDS]
        visited[word // CHUNK_WORDS] = True
        word, steps = int(words[word]), steps + 1
        if word == 0:
            break
    assert visited.all()
    return steps


@pytest.mark.parametrize("mib", [SWEEP_MIB[0], 1])
def test_a_rings_footprint_is_one_cycle_through_every_chunk(mib):
    """The walk from word 0 visits every 64-byte chunk of the footprint exactly once and returns (a single cycle)."""
    case = parse_case_id(f"ld.global.cg.u32.pchase.l2.footprint{mib}m")
    words = MEMORY.inputs(case, np.random.default_rng(mib)).values["words"]
    assert words.size * 4 == mib << 20
    assert _cycle(words) == (mib << 20) // (4 * CHUNK_WORDS)


# Footprints whose rings are built and checked whole (a 128 MiB ring's 2 M chunks take seconds to build and walk on
# a CPU; the ring is one function of the chunk count, ptx/memory.cu.in reads it the same at every footprint)
CHECKED_MIB = [mib for mib in SWEEP_MIB if mib <= 32] + [48]


@pytest.mark.parametrize("mib", CHECKED_MIB)
def test_a_footprints_ring_is_a_permutation_of_its_chunks_in_one_cycle(mib):
    """The successor map is a permutation of the footprint's chunks (each the next of exactly one), and one cycle:
    by pointer doubling, the least chunk of every chunk's orbit is chunk 0."""
    case = parse_case_id(f"ld.global.cg.u32.pchase.l2.footprint{mib}m")
    words = MEMORY.inputs(case, np.random.default_rng(mib)).values["words"]
    chunks = (mib << 20) // 64
    assert words.size == chunks * CHUNK_WORDS and not words.reshape(-1, CHUNK_WORDS)[:, 1:].any()  # others zero
    nxt = words[::CHUNK_WORDS]
    assert not (nxt % CHUNK_WORDS).any()
    nxt = (nxt // CHUNK_WORDS).astype(np.int32)
    assert np.array_equal(np.bincount(nxt, minlength=chunks), np.ones(chunks, dtype=np.int64))  # a permutation
    least, jump = np.arange(chunks, dtype=np.int32), nxt
    for _ in range(int(chunks - 1).bit_length()):
        least, jump = np.minimum(least, least[jump]), jump[jump]
    assert not least.any(), f"{mib} MiB: more than one cycle"


def test_the_chase_checks_expect_the_walk_after_the_warm_pass():
    case = parse_case_id("ld.global.cg.u32.pchase.l2.footprint8m")
    inputs = MEMORY.inputs(case, np.random.default_rng(0))
    (check,) = MEMORY.checks(case, inputs)
    words = inputs.values["words"]
    word = 0
    for _ in range(check.iters):
        word = int(words[word])
    assert check.kernel == "probe_chain" and check.expected[0] == word == chase(words, 0, check.iters)
    params = MEMORY.template_params(case)
    assert params["warm"] == "true" and params["launch_step"] % CHUNK_WORDS == 0 and params["launch_step"]
    assert MEMORY.template_params(parse_case_id("ld.global.cg.u32.pchase.l2"))["warm"] == "false"
    (spec,) = MEMORY.plan(case)
    assert spec.kernel == "probe_chain" and spec.launch == {"timed": "chain"} and spec.threads == check.threads


@pytest.mark.parametrize("mib", [SWEEP_MIB[0], 48, SWEEP_MIB[-1]])
def test_every_footprint_case_compiles_for_sm90a_and_passes_its_sass_check(mib):
    """The sweep's probes differ only in RING_WORDS: three of them (the ends and the nominal L2) stand for all."""
    from harness.build import sass
    from harness.build.compile import compile_probe
    from harness.build.render import render

    case = parse_case_id(f"ld.global.cg.u32.pchase.l2.footprint{mib}m")
    found = sass.check(compile_probe(render(case, MEMORY)), MEMORY.sass_expectation(case))
    assert found.ok, found.note


# -- the estimator ---------------------------------------------------------------------------------------------------

F = np.array(SWEEP_MIB, dtype=float)
L2, HBM = 270.0, 600.0


def test_a_step_gives_the_knee_within_its_bracket():
    lat = np.where(F <= 24, L2, HBM)
    found = capacity(F, lat)
    assert (found.below_mib, found.above_mib) == (24, 28) and 24 < found.mib < 28
    assert found.mib == pytest.approx(24 + 4 * RISE * L2 / (HBM - L2))  # the linear crossing, from its arithmetic
    assert found.resolution == pytest.approx(2 / found.mib)


def test_a_ramp_gives_its_threshold_crossing():
    lat = L2 * (1 + 0.01 * np.clip(F - 30, 0, None))  # 1 % a MiB past 30 MiB: 10 % at 40 MiB
    found = capacity(F, lat)
    assert found.mib == pytest.approx(40.0) and found.plateau == L2


def test_the_random_replacement_curve_crosses_where_its_arithmetic_says():
    """Beyond C a random chase misses 1 - C/F: the crossing of RISE is at C / (1 - RISE L2 / (HBM - L2))."""
    c = 50.0
    lat = L2 + (HBM - L2) * np.clip(1 - c / F, 0, None)
    expected = c / (1 - RISE * L2 / (HBM - L2))
    found = capacity(F, lat)
    assert found.below_mib <= expected <= found.above_mib
    assert found.mib == pytest.approx(expected, rel=0.03)  # linear between two points of a 1/F curve


def test_noise_moves_the_estimate_less_than_the_sweeps_spacing():
    rng = np.random.default_rng(7)
    clean = capacity(F, np.where(F <= 48, L2, HBM)).mib
    for _ in range(20):
        noisy = np.where(F <= 48, L2, HBM) * (1 + rng.normal(0, 0.01, F.size))
        assert abs(capacity(F, noisy).mib - clean) < 1.0
    order = rng.permutation(F.size)  # the order the rows come in does not matter
    assert capacity(F[order], np.where(F <= 48, L2, HBM)[order]).mib == pytest.approx(clean)


@pytest.mark.parametrize("lat,message", [
    (np.full(F.size, L2), "no knee"),
    (L2 * (1 + 0.02 * np.sin(F)), "no knee"),  # noise of 2 %, nothing rose
    (np.where(F >= 16, HBM, L2), "no plateau"),  # rises within the plateau's footprints
    (np.where((F >= 24) & (F <= 32), HBM, L2), "no knee"),  # a bump that falls back is noise, not a knee
])
def test_a_curve_without_a_knee_is_refused(lat, message):
    with pytest.raises(SpecError, match=message) as refused:
        capacity(F, lat)
    assert "\n" not in str(refused.value)


def test_too_few_or_repeated_footprints_are_refused():
    with pytest.raises(SpecError, match="at least"):
        capacity(F[:PLATEAU_POINTS + 1], np.full(PLATEAU_POINTS + 1, L2))
    with pytest.raises(SpecError, match="distinct"):
        capacity([8, 8, 16, 32, 64], [L2, L2, L2, HBM, HBM])


# -- the derived figure and the seed chapter ------------------------------------------------------------------------

def _sweep_rows(knee_mib: float, gpu: str = "NVIDIA H100 80GB HBM3") -> pd.DataFrame:
    cases = suite_cases(SUITE)
    return pd.DataFrame({"run_id": 1, "measurement_id": np.arange(len(cases)), "gpu_name": gpu, "sm_count": 132,
                         "family": "memory", "case_id": [c.case_id for c in cases], "metric": "latency_cycles",
                         "launch": json.dumps({"timed": "chain"}, separators=(",", ":")),
                         "value": [L2 if c.footprint_mib <= knee_mib else HBM for c in cases], "spread": 0.001,
                         "n_samples": 40, "unit": "cycles"})


def test_compare_derives_the_capacity_from_the_sweep():
    from harness.analysis.run_rows import with_derived

    frame = with_derived(_sweep_rows(24))
    (row,) = frame[frame.metric == METRIC].itertuples()
    assert row.case_id == capacity_case() and row.unit == "MiB" and 24 < row.value < 28
    assert row.derived_uncertainty == pytest.approx(2 / row.value) and row.n_samples == len(SWEEP_MIB)
    flat = with_derived(_sweep_rows(1000))  # no knee: no figure, and nothing raised
    assert not (flat.metric == METRIC).any()


def test_the_seed_chapters_l2_is_mapped_to_the_capacity_and_gets_a_verdict():
    from harness import published, seed_chapter
    from harness.analysis.pairing import paper_rows
    from harness.analysis.run_rows import with_derived

    (ref,) = [r for r in published.load() if r.source == seed_chapter.SOURCE and r.table == "§1.2 spec box"
              and r.case_id == capacity_case()]
    assert ref.metric == METRIC and ref.value == 50.0 and ref.unit == "MiB"
    assert not [r for r in published.unmapped() if r.source == seed_chapter.SOURCE and r.value == 50.0]
    figures = pd.DataFrame([{"case_id": ref.case_id, "metric": ref.metric, "paper": ref.value, "paper_unit": ref.unit,
                             "paper_inputs": "", "paper_table": ref.table, "paper_clock_mhz": np.nan,
                             "paper_gpu": ref.gpu, "paper_notes": ref.notes, "paper_launch": None}])
    paired = paper_rows(with_derived(_sweep_rows(48)), figures)
    (row,) = paired[paired.paper.notna()].itertuples()
    assert row.metric == METRIC and 48 < row.value < 52 and row.paper == 50.0


def test_bench_compare_gives_the_chapters_l2_a_verdict(tmp_path):
    """A run of the sweep (its knee at 24 MiB: half of the L2) in a fresh database: against_paper (bench compare)
    pairs the derived capacity with the chapter's 50 MiB and judges it, the cause beside a disagreement."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from helpers import fake_device, fake_result

    from harness.analysis.paper_verdicts import against_paper
    from harness.db.store import Store
    from harness.measure.measurement import Metric
    from harness.provenance import Provenance
    from harness.published import shipped

    store = Store.open(str(tmp_path / "sweep.db"), create=True, references=shipped())
    prov = Provenance("bench run --suite memory-l2-capacity", "testhost", "abc123", False, "0.1.0", "3.12", None,
                      "13.0")
    run_id = store.start_run(fake_device(), prov, SUITE, None)
    for case in suite_cases(SUITE):
        result = fake_result(case.case_id, 1.0)
        value = L2 if case.footprint_mib <= 24 else HBM
        result.metrics = [Metric("latency_cycles", "cycles", np.array([value, value, value * 1.001, value]),
                                 {"timed": "chain"}, sm_clock_mhz=1980.0)]
        store.record_case(run_id, result)
    store.finish_run(run_id, "complete")
    frame = against_paper(store, run_id)
    (row,) = frame[(frame.metric == METRIC) & frame.paper.notna()].itertuples()
    assert row.case_id == capacity_case() and 24 < row.value < 28 and row.paper == 50.0
    assert row.verdict == "DISAGREES" and "partitions" in row.note
    store.close()
