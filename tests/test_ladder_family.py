"""The GEMM ladder family on the CPU: ids, the checks' expectations from NumPy, the measured problem's bound against
what a right and a wrong C show, and the model's bounds against the arithmetic of the tiles."""

from __future__ import annotations

import numpy as np
import pytest

from harness.errors import IllegalShapeError, SpecError
from harness.families.ladder.cases import ORDER, parse
from harness.families.ladder.model import FFMA_FLOPS_PER_CYCLE, LadderModel, bound, bounds
from harness.families.ladder.problem import bound as tolerance
from harness.registry import FAMILIES, parse_case_id

FAMILY = FAMILIES["ladder"]


def test_every_step_at_every_size_round_trips():
    ids = [c.case_id for c in FAMILY.cases()]
    assert len(ids) == len(set(ids)) == 3 * len(ORDER)
    assert [parse_case_id(i).case_id for i in ids] == ids
    assert parse("ladder.wmma.f16.2048x1024x512").dtype == "f16"


@pytest.mark.parametrize("bad", ["ladder.naive.f16.1024x1024x1024",  # the SIMT steps are f32
                                 "ladder.wmma.f32.1024x1024x1024",
                                 "ladder.tiled.f32.1024x1024x1024",  # no such step
                                 "ladder.reg-tiled.f32.1000x1024x1024",  # not whole 128-row tiles
                                 "ladder.naive.f32.1024x1024x1000",  # K not a multiple of 32
                                 "ladder.naive.f32.1024x1024"])
def test_bad_ids_are_refused_in_one_line(bad):
    with pytest.raises((SpecError, IllegalShapeError)) as refused:
        parse_case_id(bad)
    assert "\n" not in str(refused.value)


def test_the_check_problem_expects_numpys_product_bit_for_bit_and_one_wrong_element_fails():
    from harness.measure.validate import compare

    for step in ("naive", "mma-ldmatrix"):
        case = parse(f"ladder.{step}.{'f32' if step == 'naive' else 'f16'}.1024x1024x1024")
        inputs = FAMILY.inputs(case, np.random.default_rng(3))
        check = FAMILY.checks(case, inputs)[0]
        a, b = inputs.values["A"], inputs.values["B"]
        product = (a @ b.T).astype(np.float32).view(np.uint32).ravel().astype(np.float64)
        assert np.array_equal(check.expected, product) and check.tolerance == 0.0
        wrong = product.copy()
        wrong[1234] = np.float64(np.float32(np.float32(wrong[1234].astype(np.uint32).view(np.float32)) + 1)
                                 .view(np.uint32))
        assert compare(product, check.expected, np.zeros_like(product)).ok
        assert not compare(wrong, check.expected, np.zeros_like(product)).ok


def _sequential_f32(a, b):
    """C by one f32 FMA after another along K (np.float32 rounding each step): what the f32 steps do."""
    acc = np.zeros((a.shape[0], b.shape[0]), dtype=np.float32)
    for k in range(a.shape[1]):
        acc = (acc.astype(np.float64) + np.outer(a[:, k], b[:, k]).astype(np.float64)).astype(np.float32)
    return acc.astype(np.float64)


@pytest.mark.parametrize("k", [1024, 4096])
def test_the_measured_bound_passes_a_right_c_and_fails_a_dropped_k_step(k):
    """Normal inputs: C summed in f32 step by step lies within the FFMA bound; the same C with one k16 step left
    out (a k-block dropped), or with two columns swapped (a tile misplaced), does not, for most elements."""
    rng = np.random.default_rng(k)
    a = rng.standard_normal((48, k)).astype(np.float32)
    b = rng.standard_normal((40, k)).astype(np.float32)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    exact, abs_sum = a64 @ b64.T, np.abs(a64) @ np.abs(b64).T
    for unit in ("FFMA", "HMMA"):
        limit = tolerance(np, abs_sum, k, unit)
        assert (np.abs(_sequential_f32(a, b) - exact) <= limit).all() if unit == "FFMA" else True
        dropped = exact - a64[:, 16:32] @ b64[:, 16:32].T
        assert (np.abs(dropped - exact) > limit).mean() > 0.5, unit
        swapped = exact[:, ::-1]
        assert (np.abs(swapped - exact) > limit).mean() > 0.9, unit


def test_the_ffma_bound_is_the_classical_one_doubled():
    """K roundings of 2^-24 each, doubled: K x 2^-23 x sum |a b|."""
    assert tolerance(np, np.array([1.0]), 4096, "FFMA")[0] == pytest.approx(4096 * 2.0 ** -23)
    assert tolerance(np, np.array([1.0]), 4096, "HMMA")[0] == pytest.approx(4096 * 2.0 ** -22)


def test_the_model_bounds_each_step_by_its_tiles():
    """The steps' bounds rise up the ladder; the SIMT steps never above the FFMA peak (256 FLOP a cycle per SM),
    the register-tiled one issue-bound at 64 FFMA of every 68 instructions; the naive one by its 18 wavefronts a k."""
    params = LadderModel().prior("H100 SXM5")
    values = {step: bound(parse(f"ladder.{step}.{'f16' if step in ('wmma', 'mma-ldmatrix') else 'f32'}"
                                f".4096x4096x4096"), params) for step in ORDER if step != "cublas"}
    assert values["naive"][0] == pytest.approx(64 / 18 * 127.9 / 128)
    assert values["reg-tiled"] == (pytest.approx(FFMA_FLOPS_PER_CYCLE * 64 / 68), "issue")
    assert values["naive"][0] < values["smem-tiled"][0] < values["reg-tiled"][0] < values["mma-ldmatrix"][0]
    assert all(v <= FFMA_FLOPS_PER_CYCLE for s, (v, _) in values.items() if s in ("naive", "smem-tiled", "reg-tiled"))
    assert bounds(parse("ladder.cublas.f32.4096x4096x4096"), params) == {}
    case = parse("ladder.smem-tiled.f32.4096x4096x4096")
    assert LadderModel().predict(case, "peak_fraction", params) == pytest.approx(values["smem-tiled"][0] / 256)
    line, table = LadderModel().datasheet_table("H100 SXM5")
    assert "H100" in line and list(table.step) == [s for s in ORDER if s != "cublas"]


def test_the_plan_times_each_step_beside_cublas_and_the_library_alone():
    from harness.measure.methods import WholeKernel

    (spec,) = FAMILY.plan(parse("ladder.reg-tiled.f32.4096x4096x4096"))
    assert isinstance(spec, WholeKernel) and spec.anchor == "library" and spec.grid == 32 * 32 and spec.threads == 256
    (library,) = FAMILY.plan(parse("ladder.cublas.f32.4096x4096x4096"))
    assert library.anchor is None and not library.records
