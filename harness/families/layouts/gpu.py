"""The layouts family's GPU resources (Family.attach): the TMA map over the tile at the start of the probe's own
input buffer (a row-major ROWS x W matrix), boxes of C bytes x ROWS rows under the case's swizzle, passed by
value after the common four arguments. Runs in the worker process, on the GPU only."""

from __future__ import annotations

from harness import tensormaps
from harness.families.base import Attachment
import harness.families.layouts.tile as tile
from harness.families.layouts.cases import LayoutCase


def attach(case: LayoutCase, probe, device) -> Attachment:
    e = case.element_bytes
    tensor_map = tensormaps.matrix(str(case), e, probe.inputs.data.ptr, tile.ROWS, tile.cols(case), tile.ROWS,
                                   tile.chunk_bytes(case) // e, e, case.swizzle or None)
    return Attachment(extra_args=(tensor_map,))  # a one-element structured array: passed by value
