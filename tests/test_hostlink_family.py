"""The host-link family (harness/families/hostlink, issue 45): ids parse and bad ones are refused in one line, the
copy check fails a corrupted copy, the seed chapter's 64 GB/s host link maps to our copy with a verdict, the suite
lists, and HostCall times a host call from its events."""

import numpy as np
import pytest

from harness import published, seed_chapter
from harness.errors import SpecError
from harness.families.hostlink import FAMILY, payload_ceiling
from harness.families.hostlink.cases import HostLinkCase, cases, parse
from harness.families.hostlink.checks import SEEDS, expected, mismatches, outcome, pattern
from harness.measure.validate import compare
from harness.registry import parse_case_id
from harness.suites import SUITES, suite_cases


def test_ids_parse_and_round_trip():
    for case in cases():
        assert parse_case_id(case.case_id) == case and case.family == "hostlink"
    case = parse_case_id("memcpy.bidir.pageable.4MiB")
    assert (case.direction, case.memory, case.mib, case.moved) == ("bidir", "pageable", 4, 8 << 20)


@pytest.mark.parametrize("bad", ["memcpy.h2d.pinned.3MiB", "memcpy.h2d.pinned.2048MiB", "memcpy.x2y.pinned.64MiB",
                                 "memcpy.h2d.unified.64MiB", "memcpy.h2d.pinned.64", "memcpy.h2d.pinned.0MiB"])
def test_bad_ids_are_refused_in_one_line(bad):
    with pytest.raises(SpecError) as refused:  # the family's grammar (parse_case_id adds a did-you-mean over all ids)
        FAMILY.parse(bad)
    assert "\n" not in str(refused.value) and bad.split(".")[1] in str(refused.value)


def test_the_pattern_has_no_two_equal_words():
    words = pattern(1 << 16, SEEDS["h2d"])
    assert words.dtype == np.uint32 and np.unique(words).size == words.size
    assert not np.array_equal(words, pattern(1 << 16, SEEDS["d2h"]))


@pytest.mark.parametrize("corrupt", ["dropped", "repeated", "shifted", "one word", "unwritten"])
def test_a_corrupted_copy_fails_the_check(corrupt):
    sent = pattern(1 << 16, SEEDS["h2d"])
    received = sent.copy()
    chunk = 4096 // 4  # a 4 KiB chunk
    if corrupt == "dropped":  # a chunk never arrived: what follows moved up
        received[chunk:-chunk] = sent[2 * chunk:]
    elif corrupt == "repeated":  # a chunk arrived twice, in place of the next
        received[2 * chunk:3 * chunk] = sent[chunk:2 * chunk]
    elif corrupt == "shifted":
        received[5:] = sent[:-5]
    elif corrupt == "one word":
        received[12345] ^= 1
    else:
        received[-chunk:] = 0xFFFFFFFF
    differing, first = mismatches(sent, received)
    assert differing > 0 and first > 0 and sent[first - 1] != received[first - 1]
    want = expected(sent.size)
    got = outcome(sent.size, {"h2d": (differing, first)}).astype(np.float64)
    assert not compare(got, want, np.zeros_like(want)).ok
    assert compare(outcome(sent.size, {"h2d": mismatches(sent, sent.copy())}).astype(np.float64), want,
                   np.zeros_like(want)).ok


def test_checks_launch_the_call_and_expect_every_word_compared():
    case = parse("memcpy.bidir.pinned.64MiB")
    (check,) = FAMILY.checks(case, FAMILY.inputs(case, np.random.default_rng(0)))
    assert check.kernel == "library" and check.iters == 0 and check.expected[0] == 2 * (64 << 20) // 4
    assert not check.expected[1:].any()
    poison = FAMILY.decode(case, np.full(FAMILY.output_words(case), 0xFFFFFFFF, dtype=np.uint32))
    assert not compare(poison, check.expected, np.zeros(5)).ok


def test_the_plan_is_a_host_call_of_bytes_moved():
    from harness.measure.methods import HostCall

    case = parse("memcpy.bidir.pinned.256MiB")
    (spec,) = FAMILY.plan(case, None)
    assert isinstance(spec, HostCall) and spec.kernel == "library"
    assert spec.declares(FAMILY.work(case)) == [("bandwidth_gbps", "GB/s")]
    assert FAMILY.work(case).amount == 2 * (256 << 20) and FAMILY.work(case).unit == "B"


def test_host_call_rates_are_work_over_event_time():
    """HostCall on a stand-in probe whose every call takes 2 ms: 1 MB a call is 0.5 GB/s, with no clock claimed."""
    from harness.measure.measurement import Work
    from harness.measure.methods import Context, HostCall, run
    from harness.measure.telemetry import NullSampler
    from harness.measure.timing import TimingPolicy

    class Probe:
        calls = []

        def run(self, kernel, grid, block, iters, words, repeat=1, graph=False):
            from harness.measure.launch import Launch

            self.calls.append((kernel, repeat))
            return Launch(np.zeros(1, np.uint32), np.zeros(1, np.int64), 2.0 * repeat, 1e-5)

    probe = Probe()
    ctx = Context(probe, 132, TimingPolicy(warmup=1, min_samples=3, max_samples=3), NullSampler(), Work(1e6, "B"), None)
    (metric,) = run(HostCall("library", launch={"direction": "h2d"}, round_ms=10.0), ctx)
    assert metric.name == "bandwidth_gbps" and metric.sm_clock_mhz is None and metric.launch == {"direction": "h2d"}
    assert np.allclose(metric.samples, 0.5) and len(metric.samples) == 3
    assert {kernel for kernel, _ in probe.calls} == {"library"} and probe.calls[-1][1] == 5  # 10 ms of 2 ms calls


def test_the_seed_host_link_is_mapped_with_what_it_means():
    (ref,) = [r for r in published.load() if r.source == seed_chapter.SOURCE and r.unit == "GB/s" and r.value == 64.0]
    assert ref.case_id == "memcpy.h2d.pinned.256MiB" and ref.metric == "bandwidth_gbps" and ref.unmapped_reason is None
    assert "raw rate" in ref.notes and f"{payload_ceiling():.1f} GB/s" in ref.notes
    assert "bandwidth_pcie" not in seed_chapter.REASONS
    assert ref.case_id in {c.case_id for c in suite_cases("hostlink")}


def test_the_gap_to_64_gbps_is_explained_only_where_the_protocol_accounts_for_it():
    case = "memcpy.h2d.pinned.256MiB"
    assert 55 < payload_ceiling() < 58 and payload_ceiling(8) == pytest.approx(payload_ceiling() / 2)
    assert FAMILY.explain(case, "bandwidth_gbps", 53.0, 64.0, {}).accounts
    assert not FAMILY.explain(case, "bandwidth_gbps", 25.0, 64.0, {}).accounts  # a Gen4 or x8 link: not explained
    assert FAMILY.explain(case, "bandwidth_gbps", 60.0, 64.0, {}) is None  # above the ceiling: no excuse
    assert FAMILY.explain(case, "bandwidth_gbps", 70.0, 64.0, {}) is None


def test_the_suite_lists_and_is_small():
    assert "hostlink" in SUITES and "hostlink-full" in SUITES
    chosen = suite_cases("hostlink")
    assert all(isinstance(c, HostLinkCase) for c in chosen) and len(chosen) == 8
    assert {c.direction for c in chosen} == {"h2d", "d2h", "bidir"} and {c.memory for c in chosen} == {"pinned",
                                                                                                       "pageable"}
    assert sum(c.moved for c in chosen) < 4 << 30  # a few seconds of copies at ~50 GB/s, before the samples' repeats
