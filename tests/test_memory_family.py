"""The memory family without a GPU: ids, the rings it chases, and the expectations its checks hold
(each computed here by walking or summing the words directly, not through the family's helpers)."""

import numpy as np
import pytest

from harness.errors import IllegalShapeError, SpecError
from harness.registry import FAMILIES
from harness.families.memory import CHUNK_WORDS, MemoryCase, chase, ring, stream_sums
from harness.registry import parse_case_id

MEMORY = FAMILIES["memory"]


def test_ids_round_trip_and_name_their_family():
    for case in MEMORY.cases():
        assert parse_case_id(case.case_id) == case
        assert case.family == "memory"
    assert parse_case_id("ld.global.v4.u32").family == "tma"  # the read roofline stays the TMA family's
    assert parse_case_id("ld.global.u64.pchase.l1") == MemoryCase("pchase", "l1", True)


@pytest.mark.parametrize("case_id,message", [
    ("ld.global.cg.u32.pchase.l1", "ld.global.ca reads l1"),
    ("ld.global.ca.u32.pchase.hbm", "ld.global.cg l2"),
    ("ld.shared.u32.stream", "no family spells it"),
    ("ld.global.ca.v4.u32.pchase.l1", "a chase loads u32"),
    ("ld.global.u64.pchase.l2", "the plain L1 chase"),
    ("ld.global.u32.pchase.l1", "cannot parse"),
    ("ld.global.cg.v4.u32.stream.hbm", "read baseline"),
])
def test_illegal_ids_say_why(case_id, message):
    with pytest.raises((IllegalShapeError, SpecError), match=message):
        parse_case_id(case_id)


def test_a_ring_is_one_cycle_through_every_chunk():
    words = ring(512, np.random.default_rng(3))
    seen, word = set(), 0
    for _ in range(512):
        assert word % CHUNK_WORDS == 0 and word not in seen
        seen.add(word)
        word = int(words[word])
    assert word == 0 and len(seen) == 512
    assert not words[np.arange(words.size) % CHUNK_WORDS != 0].any()  # the other words of a chunk are zero


def test_chase_checks_expect_the_walk():
    case = parse_case_id("ld.global.cg.u32.pchase.hbm")
    inputs = MEMORY.inputs(case, np.random.default_rng(0))
    words = inputs.values["words"]
    chain, each = MEMORY.checks(case, inputs)
    word = 0
    for _ in range(chain.iters):
        word = int(words[word])
    assert chain.expected[0] == word
    word = CHUNK_WORDS  # probe_each's first launch starts a chunk off the chain's (ptx/memory.cu.in)
    for _ in range(each.iters):
        word = int(words[word])
    assert each.expected[0] == word == chase(words, CHUNK_WORDS, each.iters)


def test_stream_sums_are_each_threads_words():
    words = np.arange(4 * 64, dtype=np.uint32) * 7 + 1
    threads, iters = 8, 2
    expected = []
    for x in range(threads):
        total = 0
        for step in range(iters * 4):
            total += int(words[4 * ((x + step * threads) % 64):][:4].sum())
        expected.append(total % 2**32)
    assert stream_sums(words, threads, iters).tolist() == expected


def test_plans_declare_the_paper_metrics():
    l2 = parse_case_id("ld.global.cg.u32.pchase.l2")
    launches = [(m, s.launch) for s in MEMORY.plan(l2) for m, _ in s.declares(MEMORY.work(l2))]
    assert ("latency_cycles", {"timed": "chain"}) in launches and ("latency_cycles", {"timed": "each access"}) in launches
    assert MEMORY.headline("latency_cycles") == {"timed": "chain"}
    shared = parse_case_id("ld.shared.v4.u32.stream")
    assert MEMORY.peak(shared) == 128 and MEMORY.work(shared).amount == 512  # a warp's 16-byte loads


def test_the_shared_pointer_chase_has_no_address_arithmetic_between_its_loads():
    """ld.shared.u32.ptrchase loads the next address itself; its SASS guard (nothing but the loads between
    them) fails on the index chase, whose every step adds the word to the ring's base (issue 34, item 7)."""
    from harness.build import sass
    from harness.build.compile import compile_probe
    from harness.build.render import render

    family = FAMILIES["memory"]
    pointer, index = family.parse("ld.shared.u32.ptrchase"), family.parse("ld.shared.u32.pchase")
    guard = family.sass_expectation(pointer)
    assert sass.check(compile_probe(render(pointer, family)), guard).ok
    assert not sass.check(compile_probe(render(index, family)), guard).ok
    assert family.template_params(pointer)["ring_words"] == family.template_params(index)["ring_words"]
