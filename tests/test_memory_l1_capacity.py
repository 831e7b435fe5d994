"""Issue 45: the L1's capacity from a footprint sweep of the L1 chase (ld.global.ca.u32.pchase.l1.footprint<KiB>k, suite
memory-l1-capacity), without a GPU: the ids, the rings, the carve-out the chase is launched at, the probes' SASS, the
estimator on a KiB curve, the seed chapter's 256 KB of L1 and shared memory mapped to it."""

import dataclasses
import json
import sys
import types
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from harness.errors import IllegalShapeError, SpecError
from harness.families.memory import CHUNK_WORDS, chase
from harness.families.memory.cases import SWEEP_KIB, SWEEP_MIB
from harness.families.memory.kernels import L1_CARVEOUT
from harness.families.memory.capacity import L1_METRIC, METRIC, RISE, capacity, capacity_case
from harness.registry import FAMILIES, parse_case_id
from harness.suites import suite_cases

MEMORY = FAMILIES["memory"]
SUITE = "memory-l1-capacity"
L1, L2 = 39.7, 270.0  # the memory suite's L1 and L2 chases (cycles)


def test_the_suite_sweeps_the_kib_footprints_and_every_id_round_trips():
    cases = suite_cases(SUITE)
    assert [c.footprint_kib for c in cases] == list(SWEEP_KIB) == sorted(set(SWEEP_KIB))
    for case in cases:
        assert parse_case_id(case.case_id) == case and case.case_id.endswith(f".footprint{case.footprint_kib}k")
        assert case.region_bytes == case.footprint_bytes == case.footprint_kib << 10 and case.space == "global.ca"
        assert case.footprint_mib == 0 and case.level == "l1" and not case.weak
    assert capacity_case("l1") == cases[-1].case_id and capacity_case() == capacity_case("l2")
    # a knee anywhere from 96 to 256 KiB falls between two footprints at most 32 KiB apart, 16 from 192 to 256
    for knee in range(96, 257, 8):
        assert any(a <= knee <= b and b - a <= (16 if knee >= 192 else 32) for a, b in zip(SWEEP_KIB, SWEEP_KIB[1:]))
    assert SWEEP_KIB[-1] >= 2 * 256  # past the SM's whole 256 KiB: the curve closes
    # the L2's sweep is untouched
    assert [c.footprint_mib for c in suite_cases("memory-l2-capacity")] == list(SWEEP_MIB)


@pytest.mark.parametrize("case_id,message", [
    ("ld.global.ca.u32.pchase.l1.footprint0k", "whole number of KiB from 1 to 4096"),
    ("ld.global.ca.u32.pchase.l1.footprint4097k", "whole number of KiB from 1 to 4096"),
    ("ld.global.ca.u32.pchase.l1.footprint064k", "without leading zeros"),
    ("ld.global.cg.u32.pchase.l2.footprint64k", "the L1 chase's in KiB"),
    ("ld.global.u64.pchase.l1.footprint64k", "the L1 chase's in KiB"),
    ("ld.global.ca.v4.u32.stream.l1.footprint64k", "the L1 chase's in KiB"),
    ("ld.shared.u32.pchase.footprint64k", "the L1 chase's in KiB"),
    ("ld.global.ca.u32.pchase.l1.footprint64", "cannot parse"),
    ("ld.global.ca.u32.pchase.l1.footprint64kib", "cannot parse"),
])
def test_bad_kib_footprints_are_refused_in_one_line(case_id, message):
    with pytest.raises((IllegalShapeError, SpecError), match=message) as refused:
        parse_case_id(case_id)
    assert "\n" not in str(refused.value)


def test_a_case_with_both_footprints_is_refused():
    from harness.families.memory.cases import MemoryCase, check

    with pytest.raises(IllegalShapeError, match="a footprint is the L2 chase's"):
        check(MemoryCase("pchase", "l1", footprint_mib=1, footprint_kib=64))


@pytest.mark.parametrize("kib", [1, SWEEP_KIB[0], 208, SWEEP_KIB[-1]])
def test_a_kib_ring_is_a_permutation_of_its_chunks_in_one_cycle(kib):
    """The successor map is a permutation of the footprint's chunks, and one cycle (the walk from word 0 visits every
    chunk once and returns)."""
    case = parse_case_id(f"ld.global.ca.u32.pchase.l1.footprint{kib}k")
    words = MEMORY.inputs(case, np.random.default_rng(kib)).values["words"]
    chunks = (kib << 10) // 64
    assert words.size == chunks * CHUNK_WORDS and not words.reshape(-1, CHUNK_WORDS)[:, 1:].any()
    nxt = words[::CHUNK_WORDS]
    assert not (nxt % CHUNK_WORDS).any()
    nxt = nxt // CHUNK_WORDS
    assert np.array_equal(np.sort(nxt), np.arange(chunks))
    word, steps = 0, 0
    while True:
        word, steps = int(words[word]), steps + 1
        if word == 0:
            break
    assert steps == chunks


def test_the_l1_chase_warms_its_ring_from_one_block_and_checks_the_walk():
    case = parse_case_id("ld.global.ca.u32.pchase.l1.footprint192k")
    inputs = MEMORY.inputs(case, np.random.default_rng(0))
    (check,) = MEMORY.checks(case, inputs)
    assert check.kernel == "probe_chain" and check.expected[0] == chase(inputs.values["words"], 0, check.iters)
    params = MEMORY.template_params(case)
    assert params["warm"] == "true" and params["space"] == 1 and params["ring_words"] == (192 << 10) // 4
    assert params["launch_step"] and params["launch_step"] % CHUNK_WORDS == 0
    assert MEMORY.template_params(parse_case_id("ld.global.ca.u32.pchase.l1"))["warm"] == "false"
    (spec,) = MEMORY.plan(case)
    assert spec.kernel == "probe_chain" and spec.grid == 1 and spec.threads == check.threads  # one block: one SM
    assert spec.launch == {"timed": "chain"} and "carve-out" in spec.notes
    assert MEMORY.within_sm(case)  # the L1 is the SM's: an H200 run meets the H100 SXM5's figure


def test_the_l1_chase_is_launched_at_the_carve_out_preference_zero(monkeypatch):
    """The family's attachment asks for the largest L1 (Attachment.shared_carveout), and the probe sets it on the
    module's function once, as it takes the attachment; the L2's sweep and the plain L1 chase ask for none."""
    from harness.measure.launch import NOTHING_ATTACHED, Attachment, LoadedProbe

    fake = types.SimpleNamespace(uint32=np.uint32, ndarray=lambda *a: types.SimpleNamespace(fill=lambda v: None))
    monkeypatch.setitem(sys.modules, "cupy", fake)
    functions = {}

    class Module:
        def get_global(self, name):
            return name

        def get_function(self, name):
            return functions.setdefault(name, types.SimpleNamespace())

    probe = object.__new__(LoadedProbe)
    probe.attached, probe.module = NOTHING_ATTACHED, Module()
    attachment = MEMORY.attach(parse_case_id("ld.global.ca.u32.pchase.l1.footprint256k"), probe, None)
    assert L1_CARVEOUT == 0 and attachment.shared_carveout == {"probe_chain": 0}
    probe.attach(attachment)
    assert functions["probe_chain"].preferred_shared_memory_carveout == 0
    for other in ("ld.global.cg.u32.pchase.l2.footprint8m", "ld.global.ca.u32.pchase.l1"):
        assert MEMORY.attach(parse_case_id(other), probe, None).shared_carveout == {}
    with pytest.raises(ValueError, match="percentage"):
        Attachment(shared_carveout={"probe_chain": 101})


@pytest.mark.parametrize("kib", [SWEEP_KIB[0], 224, SWEEP_KIB[-1]])
def test_l1_footprint_cases_compile_for_sm90a_and_pass_their_sass_check(kib):
    """The warm pass's loads are the chase's own ld.global.ca (LDG.E.STRONG.SM): 8 of them, then the chase's 16."""
    from harness.build import sass
    from harness.build.compile import compile_probe
    from harness.build.render import render

    case = parse_case_id(f"ld.global.ca.u32.pchase.l1.footprint{kib}k")
    found = sass.check(compile_probe(render(case, MEMORY)), MEMORY.sass_expectation(case))
    assert found.ok, found.note
    assert "24 x LDG.E.STRONG.SM" in found.note


# -- the estimator in KiB --------------------------------------------------------------------------------------------

K = np.array(SWEEP_KIB, dtype=float)


def test_a_kib_step_gives_the_knee_within_its_bracket():
    found = capacity(K, np.where(K <= 224, L1, L2), unit="KiB")
    assert (found.below, found.above, found.unit) == (224, 240, "KiB") and 224 < found.size < 240
    assert found.size == pytest.approx(224 + 16 * RISE * L1 / (L2 - L1))
    assert found.resolution == pytest.approx(8 / found.size)


def test_the_random_replacement_curve_in_kib_crosses_just_past_the_capacity():
    c = 248.0  # 256 KiB less the smallest shared-memory carve-out (8 KiB)
    found = capacity(K, L1 + (L2 - L1) * np.clip(1 - c / K, 0, None), unit="KiB")
    expected = c / (1 - RISE * L1 / (L2 - L1))
    assert found.below <= expected <= found.above and found.size == pytest.approx(expected, rel=0.02)
    assert c < found.size < 1.03 * c


def test_a_kib_curve_without_a_knee_or_a_plateau_is_refused_in_kib():
    with pytest.raises(SpecError, match="no knee: the latency at 512 KiB"):
        capacity(K, np.full(K.size, L1), unit="KiB")
    # an L1 of some 40 KiB (a carve-out far larger than asked for): the rise comes within the plateau's footprints
    with pytest.raises(SpecError, match="before 64 KiB"):
        capacity(K, np.where(K <= 32, L1, L2), unit="KiB")


# -- the derived figure and the seed chapter ------------------------------------------------------------------------

def _sweep_rows(knee_kib: float, gpu: str = "NVIDIA H200") -> pd.DataFrame:
    cases = suite_cases(SUITE) + suite_cases("memory-l2-capacity")
    return pd.DataFrame({"run_id": 1, "measurement_id": np.arange(len(cases)), "gpu_name": gpu, "sm_count": 132,
                         "family": "memory", "case_id": [c.case_id for c in cases], "metric": "latency_cycles",
                         "launch": json.dumps({"timed": "chain"}, separators=(",", ":")),
                         "value": [(L1 if c.footprint_kib <= knee_kib else L2) if c.footprint_kib else
                                   (L2 if c.footprint_mib <= 24 else 600.0) for c in cases],
                         "spread": 0.001, "n_samples": 40, "unit": "cycles"})


def test_compare_derives_both_capacities_from_their_sweeps():
    from harness.analysis.run_rows import with_derived

    frame = with_derived(_sweep_rows(224))
    (l1,) = frame[frame.metric == L1_METRIC].itertuples()
    assert l1.case_id == capacity_case("l1") and l1.unit == "KiB" and 224 < l1.value < 240
    assert l1.n_samples == len(SWEEP_KIB) and l1.derived_uncertainty == pytest.approx(8 / l1.value)
    (l2,) = frame[frame.metric == METRIC].itertuples()  # the L2's, as before, beside it
    assert l2.case_id == capacity_case("l2") and l2.unit == "MiB" and 24 < l2.value < 28
    assert not (with_derived(_sweep_rows(10_000)).metric == L1_METRIC).any()  # no knee: no figure


def test_bench_compare_gives_the_chapters_l1_and_shared_a_verdict_naming_the_carve_out(tmp_path):
    """A run of the L1 sweep on an H200 (its knee at 224 KiB) in a fresh database: the seed chapter's 256 KB (an H100
    SXM5's) is no longer unmapped, and against_paper pairs the derived capacity with it (the L1 is inside the SM, and
    the H200's SM is the H100 SXM5's) and judges it, the carve-out the cause beside a disagreement."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from helpers import fake_device, fake_result

    from harness import published, seed_chapter
    from harness.analysis.paper_verdicts import against_paper
    from harness.db.store import Store
    from harness.measure.measurement import Metric
    from harness.provenance import Provenance
    from harness.published import shipped

    (ref,) = [r for r in published.load() if r.source == seed_chapter.SOURCE and r.case_id == capacity_case("l1")]
    assert ref.metric == L1_METRIC and ref.value == 256.0 and ref.unit == "KiB" and "carve-out" in ref.notes
    assert not [r for r in published.unmapped() if r.source == seed_chapter.SOURCE and r.value == 256.0
                and "L1 and shared" in (r.notes or "")]

    store = Store.open(str(tmp_path / "sweep.db"), create=True, references=shipped())
    prov = Provenance("bench run --suite memory-l1-capacity", "testhost", "abc123", False, "0.1.0", "3.12", None,
                      "13.0")
    device = dataclasses.replace(fake_device(), name="NVIDIA H200", l2_bytes=60 << 20)
    run_id = store.start_run(device, prov, SUITE, None)
    for case in suite_cases(SUITE):
        result = fake_result(case.case_id, 1.0)
        value = L1 if case.footprint_kib <= 224 else L2
        result.metrics = [Metric("latency_cycles", "cycles", np.array([value, value, value * 1.001, value]),
                                 {"timed": "chain"}, sm_clock_mhz=1980.0)]
        store.record_case(run_id, result)
    store.finish_run(run_id, "complete")
    frame = against_paper(store, run_id)
    (row,) = frame[(frame.metric == L1_METRIC) & frame.paper.notna()].itertuples()
    assert row.case_id == capacity_case("l1") and 224 < row.value < 240 and row.paper == 256.0
    assert row.verdict == "DISAGREES" and "carve-out" in row.note
    store.close()
