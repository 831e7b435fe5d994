"""The seed CuTe chapter's worked examples (harness/db/data/references/seed_cute_layouts.csv): our case and metric
for each claim the banks family measures, or, for a claim of layout algebra (an offset, an index, a swizzle's
unit), the layout library's own answer and whether the chapter's holds. The banks family's `paper_row` maps the
chapter's rows through it, as the memory family maps the architecture chapter's (harness/published.py).

A claim row's `metric` names the claim (CLAIMS); its `value` is what the chapter states. The two bank claims are
figures in B/cycle/SM: "conflict-free" for one ldmatrix.x1 of the rows the chapter checks is 128 B a cycle an SM
(8 rows x 16 B in one bank cycle), which `bench compare` judges against the measurement of that case."""

from __future__ import annotations

from harness.layouts import Layout, crd2idx, make_layout, row_major, zipped_divide
from harness.swizzles import Swizzle, in_bytes

SOURCE = "seed-cute-layouts"
FILE = "seed_cute_layouts.csv"


def _swizzle_unit_bytes(swizzle: Swizzle, element_bytes: int) -> int:
    """Bytes of the smallest unit the swizzle moves (2^M elements, on offsets of `element_bytes`)."""
    return 1 << in_bytes(swizzle, element_bytes).base


# claim -> (what the library computes, how the chapter writes it)
CLAIMS = {
    "offset_row_major_2_3": (lambda: Layout((4, 8), (8, 1))(2, 3), "(4,8):(8,1) at (2,3)"),
    "offset_nested_1_0_3": (lambda: Layout((4, (2, 4)), (8, (4, 1)))(1, (0, 3)), "(4,(2,4)):(8,(4,1)) at (1,(0,3))"),
    "index_of_1_1_2": (lambda: crd2idx((1, (1, 2)), (3, (2, 3)), make_layout((3, (2, 3))).stride),
                       "crd2idx((1,(1,2)), shape (3,(2,3)))"),
    "default_stride_offset_0_1": (lambda: make_layout((4, 8))(0, 1),
                                  "make_layout(make_shape(4,8)) at (0,1): the chapter says stride (8,1)"),
    "tiles_of_divide_4x8_by_2x4": (lambda: zipped_divide(row_major(4, 8), (2, 4)).mode(1).size,
                                   "tiled_divide((4,8):(8,1), (2,4)): the chapter's ((2,4),(2,2))"),
    "swizzle_unit_bytes_343_f16": (lambda: _swizzle_unit_bytes(Swizzle(3, 4, 3), 2),
                                   "Swizzle<3,4,3> on the f16 tile (128,64):(64,1): its table's 2^M = 16 bytes"),
    "swizzle_unit_bytes_333_f16": (lambda: _swizzle_unit_bytes(Swizzle(3, 3, 3), 2),
                                   "Swizzle<3,3,3> on the f16 tile (64,32):(32,1): its table's 2^M = 8 bytes"),
}

BANK_CASES = {
    "bank_check_sw343_f16": "banks.ldmatrix.x1.sw128.f16elem",  # its composition on f16 elements, rows 0-7
    "bank_check_sw343_fp8": "banks.ldmatrix.x1.sw128",  # on 1-byte elements element offsets are bytes
}


def counterpart(row: dict) -> dict | str:
    """Our case and metric of a bank claim, or the layout library's verdict on an algebra claim (a reason)."""
    metric = row["metric"]
    if metric in BANK_CASES:
        return {"case_id": BANK_CASES[metric], "metric": "sm_throughput"}
    if metric not in CLAIMS:
        return f"a claim ({metric}) the layout library does not check"
    compute, what = CLAIMS[metric]
    ours, stated = compute(), float(row["value"])
    verdict = "holds" if ours == stated else f"does not hold: the layout library gives {ours}, not {stated:g}"
    return (f"layout algebra, not a measurement: {what}; checked by harness/layouts.py against CuTe's documented "
            f"definitions: {verdict}")
