"""The shared-memory layouts the bank-conflict probes access, each built with the layout library
(harness/layouts.py) as a function from lane (or, for ldmatrix/stmatrix, matrix row) to byte offset.

    linear          Layout(32, W): lane l at l x W bytes. Conflict-free.
    way<n>          Layout((P/n, n, 32/P), (W, 128, 128 n)): each phase of P lanes (P = 128 / W, at most
                    32) in n groups, one 128-byte line apart: every bank it uses holds n distinct words, an
                    n-way conflict.
    col<span>       Layout(32, span): lane l reads the start of row l of a tile whose rows are `span` bytes
                    (a column of a row-major tile, no swizzle).
    sw<span>        Swizzle<log2(span/16), 4, 3> o Layout(32, span), on bytes: the same column of the same
                    tile under the PTX swizzle mode of that span (32B, 64B, 128B).
    epi, epi.sw128  Layout((4, 8), (W, 128)), plain and under Swizzle<3,4,3>: an epilogue's store of an
                    accumulator fragment (lane l holds a W-byte pair of row l / 4, columns 2 (l % 4) and + 1, as
                    mma.sync's and wgmma's accumulators) into a row-major tile of 128-byte rows; 32- and 64-bit
                    accesses (an f16x2 or an f32 pair) only.
    sw128.f16elem   2 x (Swizzle<3,4,3> o Layout(32, 64)), on f16 element offsets: the 128-byte-row tile
                    of 16-bit elements swizzled the way the seed chapter writes it (its SmemLayoutA_343).
                    On bytes this is Swizzle<3,5,3>, not the 128B mode's Swizzle<3,4,3>, which on f16
                    elements is Swizzle<3,3,3>: the chapter's own bank check of column 0 (rows 0-7 in eight
                    banks) is the question this layout puts to the hardware.
"""

from __future__ import annotations

import numpy as np

from harness.layouts import Layout
from harness.smembanks import WAVEFRONT_BYTES, phases
from harness.swizzles import SWIZZLE_MODES, Swizzle, Swizzled, in_bytes

SPANS = (32, 64, 128)
WAYS = (2, 4, 8, 16, 32)
CHAPTER = "sw128.f16elem"
EPILOGUE_WIDTHS = (4, 8)  # bytes: an f16x2 or an f32 pair of an accumulator fragment
CHAPTER_SWIZZLE = Swizzle(3, 4, 3)  # on f16 element offsets (the chapter's composition)


def lanes_per_phase(width: int) -> int:
    return len(phases(32, width)[0])


def names(width: int) -> list[str]:
    """Every layout a `width`-byte access (16 for ldmatrix rows) is probed with."""
    per = lanes_per_phase(width)
    epilogue = ["epi", "epi.sw128"] if width in EPILOGUE_WIDTHS else []
    return (["linear"] + [f"way{n}" for n in WAYS if n <= per] + [f"col{s}" for s in SPANS]
            + [f"sw{s}" for s in SPANS] + epilogue + [CHAPTER])


def layout(name: str, width: int):
    """The layout library's object for `name` (a Layout or a Swizzled), in bytes."""
    if name == "linear":
        return Layout(32, width)
    if name.startswith("way"):
        n, per = int(name[3:]), lanes_per_phase(width)
        if n > per:
            raise ValueError(f"{name}: a phase of {width}-byte accesses has {per} lanes")
        return Layout((per // n, n, 32 // per), (width, WAVEFRONT_BYTES, WAVEFRONT_BYTES * n))
    if name.startswith("col"):
        return Layout(32, int(name[3:]))
    if name == CHAPTER:
        return Swizzled(in_bytes(CHAPTER_SWIZZLE, 2), Layout(32, 128))
    if name in ("epi", "epi.sw128"):
        if width not in EPILOGUE_WIDTHS:
            raise ValueError(f"{name}: an accumulator pair is 4 or 8 bytes, not {width}")
        fragment = Layout((4, 8), (width, 128))
        return fragment if name == "epi" else Swizzled(SWIZZLE_MODES[128], fragment)
    if name.startswith("sw"):
        return Swizzled(SWIZZLE_MODES[int(name[2:])], Layout(32, int(name[2:])))
    raise ValueError(f"unknown layout {name!r}")


def addresses(name: str, width: int) -> np.ndarray:
    """(32,) byte offsets, lane by lane."""
    f = layout(name, width)
    return np.array([f(lane) for lane in range(32)], dtype=np.int64)


def explain(name: str, width: int) -> str:
    """The layout as the layout library writes it, and what it is."""
    f = layout(name, width)
    what = {"linear": "contiguous", "epi": "an accumulator fragment's pairs stored into 128-byte rows",
            "col": "a column of a row-major tile, no swizzle",
            "sw": "the same column under the PTX swizzle mode", "way": "an n-way conflict by construction"}
    if name == CHAPTER:
        return (f"{f} on bytes = 2 x ({CHAPTER_SWIZZLE} o 32:64) on f16 elements: the seed chapter's "
                f"composition(Swizzle<3,4,3>, (128,64):(64,1)) indexed per element, column 0")
    key = next(k for k in what if name.startswith(k))
    return f"{f} on bytes: {what[key]}"
