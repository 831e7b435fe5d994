"""A tight A box (`.tighta`, issue 44: decode shapes): where M is below the tile's rows the TMA box of A is M rows, so
no zero-filled row is loaded (runs 208-209: at the same N, K and grid a 64-row tile's k-block took 1.4-1.7 x as long
at M = 16, rows 16-63 zero-filled by the copy, as at M = 64). On the CPU: the dimension, its refusals, the check
problem it needs and what the template is given; the GPU sample validates gemm-skinny's tight cases."""

import pytest

from harness.errors import SpecError
from harness.families.gemm.ids import parse
from harness.families.gemm.problem import check_problem
from harness.families.gemm.suite_cases import skinny
from harness.families.gemm.template import template_params
from harness.families.pipeline import GROUP

DECODE = "gemm.f16.16x4096x4096.tile64x64x64.s7.wg1.cluster1.persistent-grouped.tmastore.splitk2"


def test_tight_a_is_a_suffix_and_the_box_is_m_rows():
    tight = parse(DECODE + ".tighta")
    assert tight.tight_a and tight.case_id == DECODE + ".tighta" and tight.params()["tight_a"] is True
    assert tight.a_box_rows == 16 and template_params(tight)["a_box_rows"] == 16
    plain = parse(DECODE)
    assert plain.a_box_rows == 64 and "tight_a" not in plain.params()  # the cases stored before the field
    assert template_params(plain)["a_box_rows"] == 64  # LOADED_BYTES == STAGE_BYTES: the same kernel as before


@pytest.mark.parametrize("case_id, why", [
    ("gemm.f16.64x4096x4096.tile64x64x64.s7.wg1.cluster1.persistent-grouped.tmastore.splitk2.tighta", "below the tile"),
    ("gemm.f16.128x4096x4096.tile64x64x64.s7.wg1.cluster1.persistent-grouped.tmastore.tighta", "below the tile"),
    ("gemm.f16.16x4096x4096.tile64x64x64.s7.wg1.cluster1.persistent-hilbert.tmastore.tighta", "Hilbert"),
    ("gemm.f16.16x4096x4096.tile64x64x64.s7.wg1.cluster1.persistent-grouped.regs.tighta", "TMA-store epilogue"),
])
def test_a_tight_box_is_refused_where_rows_of_whole_tiles_would_need_the_full_one(case_id, why):
    with pytest.raises(SpecError, match=why):
        parse(case_id)


def test_the_check_problem_is_one_row_of_partial_tiles_with_more_items_than_a_group():
    m, n, k = check_problem(parse(DECODE + ".tighta"))
    assert m == 16 and n // 64 > GROUP  # every tile partial, as the measured problem's; the grouped walk wraps a group
    assert check_problem(parse(DECODE))[0] == (GROUP + 1) * 64 - 48  # the full box's: 8 whole rows of tiles, one partial


def test_gemm_skinny_measures_each_m_below_a_tile_with_and_without_the_tight_box():
    cases = skinny()
    tight = [c for c in cases if getattr(c, "tight_a", False)]
    assert tight and all(c.m < c.bm for c in tight)
    ids = {c.case_id for c in cases}
    assert all(c.case_id.replace(".tighta", "") in ids for c in tight)
