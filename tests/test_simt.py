"""The SIMT family on the CPU: each chain's reference and tolerance (an implementation within the PTX ISA's
stated error passes, a chain one step short fails), the exact steps against hand-worked values, and the
id grammar's errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

from harness import dtypes
from harness.errors import IllegalShapeError, SpecError
from harness.families.simt import CHAINS, FAMILY, expected_chain
from harness.families.simt import ops
from harness.measure.validate import compare
from harness.registry import parse_case_id

CASES = [case for case in FAMILY.cases() if type(case).__name__ == "SimtCase"]  # the chains (overlap: below)
FLOAT_CASES = [case for case in CASES if case.op.stages]


def _round(fmt, values):
    return dtypes.round_to({"f32": "f32", "f16": "f16", "bf16": "bf16"}[fmt], values)


def _faithful(case, inputs, steps, rng, scale=0.9):
    """The chain as a worst-case-but-legal GPU computes it: every instruction's result off the exact one by up to
    `scale` x the error the PTX ISA allows it (random sign; scale > 1: always away from the exact chain, the
    worst a wrong instruction could do), then rounded to the format, step after step."""
    x, c, c2 = (inputs.values[name] for name in ("x", "c", "c2"))
    y = x  # the exact chain
    for _ in range(steps):
        for stage in case.op.stages:
            exact, y = stage.f(x, c, c2), stage.f(y, c, c2)
            allowed = stage.error(np.abs(exact), case.op.fmt) - 0.5 * ops.ulp(case.op.fmt, exact)  # less its rounding
            away = np.where(exact >= y, 1.0, -1.0)  # the direction that takes x further from the exact chain
            sign = rng.choice([-1.0, 1.0], exact.shape) if scale <= 1 else away
            x = _round(case.op.fmt, exact + scale * allowed * sign)
    return x


@pytest.mark.parametrize("case", FLOAT_CASES, ids=str)
def test_a_result_within_the_stated_error_passes_and_one_step_short_fails(case):
    rng = np.random.default_rng(3)
    inputs = FAMILY.inputs(case, rng)
    expected, tolerance = expected_chain(case, inputs, CHAINS.unroll)
    assert np.isfinite(expected).all() and (tolerance > 0).all()
    for seed in range(3):
        got = _faithful(case, inputs, CHAINS.unroll, np.random.default_rng(seed))
        assert compare(got, expected, tolerance).ok, compare(got, expected, tolerance).message
    # lg2's step, 2^log2(x), is the identity; bf16 tanh's stated error (2^-8 absolute a step) is wider than what a
    # step still changes after 15 (x <- tanh(x) creeps to 0): neither can tell a chain one step short
    if case.instruction_ptx not in ("lg2.approx.ftz.f32", "tanh.approx.bf16x2"):
        short = _faithful(case, inputs, CHAINS.unroll - 1, np.random.default_rng(0))
        assert not compare(short, expected, tolerance).ok
    if case.op.stages[0].error(np.array(1.0), case.op.fmt) > 2 * ops.ulp(case.op.fmt, np.array(1.0)):
        # an approximate instruction four times as wrong as the ISA allows, every step away from the truth, fails
        wrong = _faithful(case, inputs, CHAINS.unroll, np.random.default_rng(0), scale=4.0)
        assert not compare(wrong, expected, tolerance).ok


@pytest.mark.parametrize("case", [c for c in CASES if c.op.step], ids=str)
def test_an_exact_chain_one_step_short_or_a_wrong_convert_fails(case):
    inputs = FAMILY.inputs(case, np.random.default_rng(3))
    expected, tolerance = expected_chain(case, inputs, CHAINS.unroll)
    assert (tolerance == 0).all()
    if case.instruction_ptx.startswith("cvt."):
        # A convert's chain reaches its fixed point in a step or two (its packed result read back as f32 is then
        # converted to itself); what tells a wrong convert is the fixed point: with the halves swapped it fails.
        words = inputs.values["x"].astype(np.uint32)
        for _ in range(CHAINS.unroll):
            words = case.op.step(words, inputs.values["c"], inputs.values["c2"])
            words = (words >> 16) | (words << 16)
        wrong = FAMILY.decode(case, words.ravel())
    else:
        wrong, _ = expected_chain(case, inputs, CHAINS.unroll - 1)
    assert not compare(wrong, expected, tolerance).ok


def test_every_chain_kernel_writes_each_slot_from_its_chain():
    case = parse_case_id("simt.fma.rn.f32")
    inputs = FAMILY.inputs(case, np.random.default_rng(0))
    checks = FAMILY.checks(case, inputs)
    assert [c.kernel for c in checks] == ["probe_chain_ilp1", "probe_chain_ilp8", "probe_chain_ilp1_short",
                                          "probe_chain_ilp8_short"]
    one, eight = checks[0].expected, checks[1].expected
    assert (one == one[0]).all() and len({tuple(row) for row in eight}) == 8


def test_exact_steps_against_hand_worked_values():
    words = np.arange(32, dtype=np.uint32)
    assert list(ops._shfl_bfly(words, None, None)[:4]) == [1, 0, 3, 2]
    assert list(ops._shfl_idx(words, (words + 1) % 32, None)[-2:]) == [31, 0]
    assert int(ops._prmt(np.array([0x11223344], dtype=np.uint32), None, None)[0]) == 0x11442233  # bytes 1, 2, 0, 3
    one, two = np.float32(1.0).view(np.uint32), np.float32(2.0).view(np.uint32)
    packed = ops._cvt_x2("bf16")(np.array([one]), np.array([two]), None)
    assert int(packed[0]) == 0x3F804000  # cvt.rn.bf16x2.f32 d, a = 1.0 (upper), b = 2.0 (lower)
    pairs = ops._cvt_f16x2_from_e4m3x2(np.array([0x4038_0000], dtype=np.uint32), None, None)
    assert int(pairs[0]) == 0x4000_3C00  # e4m3 0x38 = 1.0 (low), 0x40 = 2.0 (high) -> f16 1.0, 2.0


@pytest.mark.parametrize("fmt, value, code", [
    ("e4m3", 1.0, 0x38), ("e4m3", 1.0625, 0x38), ("e4m3", 1.1875, 0x3A), ("e4m3", 448.0, 0x7E),
    ("e4m3", 1000.0, 0x7E), ("e4m3", -1000.0, 0xFE), ("e4m3", 2.0 ** -10, 0x00), ("e5m2", 1.0, 0x3C),
    ("e5m2", 1e6, 0x7B), ("e5m2", -1.25, 0xBD)])
def test_fp8_rounds_to_nearest_even_and_saturates(fmt, value, code):
    """OCP fp8 codes: e4m3 1.0 = 0x38, its largest finite 448 = 0x7E; e5m2 1.0 = 0x3C, largest 57344 = 0x7B;
    ties go to the even code (1.0625 between 1.0 and 1.125; 1.1875 between 1.125 and 1.25)."""
    assert int(ops.fp8_bits(fmt, np.array([value]))[0]) == code


@pytest.mark.parametrize("case_id, error", [
    ("simt.fma.rn.f64", "times fma as fma.rn.f32, fma.rn.f16x2, fma.rn.bf16x2"),
    ("simt.popc.b32", "has no 'popc'"),
    ("simt.FMA", "expected 'simt.' and a PTX instruction"),
])
def test_an_instruction_the_family_does_not_time_is_refused_with_what_it_does(case_id, error):
    with pytest.raises((IllegalShapeError, SpecError), match=error):
        case = parse_case_id(case_id)
        FAMILY.check(case)


def test_suites_hold_every_case_once():
    suites = FAMILY.suites()
    assert len(suites["simt"].make()) == len(CASES) == len({c.case_id for c in CASES})
    assert len(suites["simt-overlap"].make()) == (3 + 2 + 2) * 6 + 5
    with_tma = 2 * 6 + 5 + 1  # SS at two N (RS is not timed beside TMA), + the TMA loads alone
    assert len(suites["simt-overlap-tma"].make()) == 2 * with_tma - 1  # and each case without TMA but the loads alone
    assert {c.case_id for c in suites["simt-overlap-tma"].make() if not c.tma} <= {c.case_id for c in suites["simt-overlap"].make()}
    assert len(FAMILY.cases()) - len(CASES) == (3 + 2 + 2) * 6 + 5 + with_tma
    assert {c.case_id for c in suites["simt-mufu"].make()} == {c.case_id for c in CASES if c.op.sass[0][0].startswith("MUFU")}


def test_the_site_finding_divides_the_tensor_cores_scores_by_mufus_exps():
    """4096 dense f16 FLOP a cycle per SM at 4 d FLOP a score is 16 scores a cycle at d = 64: all of MUFU's 16
    exps; a sparse wgmma row (twice the rate) must not count."""
    import pandas as pd
    from types import SimpleNamespace

    from harness.families.simt.figures import findings

    def row(case_id, family, metric, value, dtype=None, sparse=False):
        return dict(gpu_name="H", case_id=case_id, family=family, metric=metric, value=value, dtype_a=dtype,
                    is_sparse=sparse)

    latest = pd.DataFrame([row("simt.ex2.approx.ftz.f32", "simt", "sm_throughput", 16.0),
                           row("simt.ex2.approx.ftz.f32", "simt", "latency_cycles", 17.0),
                           row("w1", "wgmma", "sm_throughput", 4096.0, "f16"),
                           row("w2", "wgmma", "sm_throughput", 8192.0, "f16", sparse=True)])
    (heading, _, table), = findings(SimpleNamespace(latest=latest))
    assert table["f16 d=64: exps of MUFU"].iloc[0] == 1.0 and table["f16 d=128: exps of MUFU"].iloc[0] == 0.5
    assert "e4m3 d=64: exps of MUFU" not in table  # no fp8 wgmma measured on this GPU


@pytest.mark.parametrize("case", [c for c in CASES if c.instruction_ptx != "shfl.sync.bfly.b32"], ids=str)
def test_a_kernel_that_ran_no_step_fails(case):
    """Every chain but shfl.bfly's (a swap: period 2, guarded by its SASS check alone) is somewhere else after one
    checked body than where it started, so a kernel that wrote its start values back fails validation."""
    inputs = FAMILY.inputs(case, np.random.default_rng(3))
    expected, tolerance = expected_chain(case, inputs, CHAINS.unroll)
    start, _ = expected_chain(case, inputs, 0)
    assert not compare(start, expected, tolerance).ok


OVERLAP = [c for c in FAMILY.cases() if type(c).__name__ == "OverlapCase"]


@pytest.mark.parametrize("op", sorted({c.op for c in OVERLAP if c.op}))
def test_the_untimed_side_of_an_overlap_probe_is_at_its_fixed_point(op):
    """The side that runs until the other is done takes an unknown number of steps (at least 256): its checked
    value must be the same after 256 steps as after any more, within the tolerance."""
    case = parse_case_id(f"simt.overlap.{op}.m64n64k16")
    inputs = FAMILY.inputs(case, np.random.default_rng(5))
    chain = parse_case_id(f"simt.{op}")
    at, tolerance = expected_chain(chain, inputs, 256)
    for more in (16, 16 * 37, 16 * 1001):
        later, _ = expected_chain(chain, inputs, 256 + more)
        assert compare(later, at, tolerance).ok, (op, more)


def test_an_overlap_probe_that_skipped_a_wgmma_or_ran_k8_fails():
    case = parse_case_id("simt.overlap.ex2.approx.ftz.f32.m64n128k16")
    inputs = FAMILY.inputs(case, np.random.default_rng(0))
    check = next(c for c in FAMILY.checks(case, inputs) if c.kernel == "probe_overlap_wgmma")
    chains, _ = expected_chain(parse_case_id("simt.ex2.approx.ftz.f32"), inputs, 16 * 16)
    words = np.zeros(FAMILY.output_words(case), dtype=np.uint32)
    d_words = 128 * 64
    words[d_words] = 64  # the count the kernel reports
    words[d_words + 1:] = np.asarray(chains, dtype=np.float32).view(np.uint32).ravel()
    for per_wgmma, ok in ((16.0, True), (8.0, False)):  # k = 16, or k = 8: half of each product
        words[:d_words] = np.float32(per_wgmma * 64).view(np.uint32)
        assert compare(FAMILY.decode(case, words), check.expected, np.broadcast_to(check.tolerance, check.expected.shape)).ok == ok
    words[:d_words] = np.float32(16.0 * 63).view(np.uint32)  # one wgmma fewer than counted
    assert not compare(FAMILY.decode(case, words), check.expected, check.tolerance).ok


def test_overlap_ids_round_trip_and_refuse_what_is_not_probed():
    assert {c.case_id for c in OVERLAP} >= {"simt.overlap.none.m64n256k16", "simt.overlap.fma.rn.f32.alone",
                                            "simt.overlap.ex2.approx.ftz.f32.m64n64k16.RS",
                                            "simt.overlap.none.m64n256k32.e4m3"}
    for case in OVERLAP:
        assert parse_case_id(case.case_id) == case
    with pytest.raises(IllegalShapeError, match="N in 64, 128, 256"):
        FAMILY.check(parse_case_id("simt.overlap.fma.rn.f32.m64n96k16"))
    with pytest.raises(IllegalShapeError, match="f16.RS wgmma with N in 64, 256"):
        FAMILY.check(parse_case_id("simt.overlap.fma.rn.f32.m64n128k16.RS"))
    with pytest.raises(IllegalShapeError, match="K is 32 for e4m3"):
        parse_case_id("simt.overlap.fma.rn.f32.m64n64k16.e4m3")
    with pytest.raises(IllegalShapeError, match="run ex2.approx.ftz.f32, fma.rn.f32"):
        FAMILY.check(parse_case_id("simt.overlap.tanh.approx.f32.m64n64k16"))
    with pytest.raises(IllegalShapeError, match="nothing to time"):
        FAMILY.check(parse_case_id("simt.overlap.none.alone"))


@pytest.mark.parametrize("op", sorted({c.op for c in OVERLAP if c.op}))
def test_an_overlap_probe_reads_the_same_chain_inputs_as_the_chain_probe(op):
    """Warpgroup 1 reads x, c and c2 as the chain kernels do: the buffer is the chain case's (the converts' c made
    positive), never the values cast to integers."""
    overlap = FAMILY.inputs(parse_case_id(f"simt.overlap.{op}.alone"), np.random.default_rng(7))
    chain = FAMILY.inputs(parse_case_id(f"simt.{op}"), np.random.default_rng(7))
    words, same = overlap.buffer.view(np.uint32), chain.buffer.view(np.uint32)
    if op.startswith("cvt."):
        assert (words[256:288] == (same[256:288] & 0x7FFFFFFF)).all() and (words[:256] == same[:256]).all()
    else:
        assert (words == same).all()


def test_tma_overlap_ids_round_trip_and_refuse_what_is_not_probed():
    ids = {c.case_id for c in FAMILY.suites()["simt-overlap-tma"].make() if c.tma}
    assert {"simt.overlap.none.alone.tma", "simt.overlap.fma.rn.f32.m64n64k16.tma",
            "simt.overlap.ex2.approx.ftz.f32.alone.tma", "simt.overlap.none.m64n256k16.tma"} <= ids
    for case_id in ids:
        assert parse_case_id(case_id).case_id == case_id
    assert parse_case_id("simt.overlap.none.alone.tma").roles == ("tma",)
    assert parse_case_id("simt.overlap.fma.rn.f32.m64n64k16.tma").roles == ("wgmma", "simt", "tma")
    for bad in ("simt.overlap.fma.rn.f32.m64n128k16.tma", "simt.overlap.fma.rn.f32.m64n64k32.e4m3.tma"):
        with pytest.raises(IllegalShapeError):
            FAMILY.check(parse_case_id(bad))


def _ring_output(case, loads, ring_loads=None):
    """An output buffer whose producer record says `loads` and whose ring holds what `ring_loads` loads leave."""
    from harness.families.simt import overlap

    words = np.zeros(FAMILY.output_words(case), dtype=np.uint32)
    start = overlap.tma_offset(case)
    words[start] = loads
    words[start + 1:] = overlap.ring_expected(loads if ring_loads is None else ring_loads)
    return words


def test_the_tma_ring_check_knows_which_box_each_slot_holds():
    from harness.families.simt import overlap

    # after 64 loads slot 0 last held load 60 (box 60), slot 3 load 63; after 1030 loads slot 1 held load 1029,
    # box 1029 - 1024 = 5; word j of box b is source word 2048 b + j = (index x 0x9E3779B1 + 0x7F4A7C15) mod 2^32
    word = lambda index: (index * 0x9E3779B1 + 0x7F4A7C15) % 2 ** 32
    ring = overlap.ring_expected(64)
    assert ring[0] == word(60 * 2048) and ring[3 * 2048 + 7] == word(63 * 2048 + 7)
    assert overlap.ring_expected(1030)[2048 + 5] == word(5 * 2048 + 5)
    assert overlap.ring_expected(3) is None  # a slot never loaded

    case = parse_case_id("simt.overlap.none.alone.tma")
    check = FAMILY.checks(case, FAMILY.inputs(case, np.random.default_rng(1)))[0]
    ok = lambda words: compare(FAMILY.decode(case, words), check.expected, check.tolerance).ok
    assert ok(_ring_output(case, 64)) and ok(_ring_output(case, 1030))
    assert not ok(_ring_output(case, 64, ring_loads=63))  # slot 3's last load had not landed
    shifted = _ring_output(case, 64)
    shifted[overlap.tma_offset(case) + 1:] = np.roll(shifted[overlap.tma_offset(case) + 1:], 1)  # a word misplaced
    assert not ok(shifted)
    assert not ok(_ring_output(case, 2, ring_loads=64))  # fewer loads than slots


def test_a_tma_overlap_probe_checks_the_ring_whichever_side_it_times():
    case = parse_case_id("simt.overlap.fma.rn.f32.m64n64k16.tma")
    checks = FAMILY.checks(case, FAMILY.inputs(case, np.random.default_rng(2)))
    assert [c.kernel for c in checks] == ["probe_overlap_wgmma", "probe_overlap_simt", "probe_overlap_tma"]
    assert all(c.threads == 288 and c.timing_words == 6 * 5 for c in checks)
    ring = 4 * 64 * 32
    assert all(c.expected.size == 128 * 32 + 8 * 32 + ring and (c.expected[-ring:] == 1).all() for c in checks)
    plan = FAMILY.plan(case)
    assert [json.loads(json.dumps(s.launch))["role"] for s in plan] == ["wgmma", "simt", "tma"]
    assert plan[2].launch["bytes"] == 8192 and all(s.units == 6 for s in plan)


def test_the_report_sets_each_tma_case_beside_its_counterpart():
    import pandas as pd

    from harness.families.simt.figures import _overlap_sections

    rows = [("simt.overlap.none.m64n64k16", "wgmma", 32.0), ("simt.overlap.fma.rn.f32.alone", "simt", 1.1),
            ("simt.overlap.fma.rn.f32.m64n64k16", "wgmma", 42.5), ("simt.overlap.fma.rn.f32.m64n64k16", "simt", 1.3),
            ("simt.overlap.fma.rn.f32.m64n64k16.tma", "wgmma", 45.0), ("simt.overlap.fma.rn.f32.m64n64k16.tma", "simt", 1.4),
            ("simt.overlap.fma.rn.f32.m64n64k16.tma", "tma", 256.0), ("simt.overlap.none.alone.tma", "tma", 128.0)]
    frame = pd.DataFrame([{"case_id": c, "metric": "issue_interval_cycles", "launch": json.dumps({"role": r}),
                           "value": v} for c, r, v in rows])
    sections = _overlap_sections(frame)
    heading, text, table = sections[-1]
    assert heading == "Beside the tensor cores, with TMA loads in flight" and "(alone: 64.0)" in text[0]  # 8192 / 128
    row = table[table.wgmma == "m64n64k16"].iloc[0]
    assert (row["wgmma cycles"], row["wgmma cycles, TMA"], row["instruction cycles"], row["instruction cycles, TMA"],
            row["TMA B/cycle"]) == (42.5, 45.0, 1.3, 1.4, 32.0)
    kept = sections[0][2]  # the matrix without TMA is the TMA cases' counterparts' alone
    assert kept.loc[kept.instruction == "fma.rn.f32", "m64n64k16: wgmma kept"].item() == round(32 / 42.5, 3)
