"""The layouts family's cases and ids: layouts.tma.<none|sw32|sw64|sw128>.<b16|b8>, a tile that a TMA load
lands under one swizzle mode, read back by ldmatrix and by wgmma (tile.py says where each byte is)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from harness.errors import IllegalShapeError, SpecError
from harness.spec import Case

SWIZZLES = (0, 32, 64, 128)  # the TMA map's and wgmma descriptor's swizzle span in bytes (0: none)
ELEMENTS = {"b16": "f16", "b8": "e4m3"}  # element width -> the type wgmma reads it as (HGMMA, QGMMA)

_ID = re.compile(r"^layouts\.tma\.(?P<swizzle>none|sw\d+)\.(?P<elem>b\d+)$")


@dataclass(frozen=True)
class LayoutCase(Case):
    family: ClassVar[str] = "layouts"
    swizzle: int  # bytes of the swizzle span; 0: none
    elem: str  # b16 or b8

    @property
    def base_id(self) -> str:
        return f"layouts.tma.{self.mode}.{self.elem}"

    @property
    def mode(self) -> str:
        return f"sw{self.swizzle}" if self.swizzle else "none"

    @property
    def element_bytes(self) -> int:
        return int(self.elem[1:]) // 8

    @property
    def dtype(self) -> str:
        return ELEMENTS[self.elem]

    @property
    def trans(self) -> bool:
        """ldmatrix .trans moves 16-bit elements: only a 16-bit tile is read back transposed."""
        return self.elem == "b16"

    def columns(self) -> dict[str, object]:
        return dict(instruction="cp.async.bulk.tensor.2d+ldmatrix+wgmma.mma_async", dtype_a=self.dtype,
                    layout=self.mode)


def cases() -> list[LayoutCase]:
    return [LayoutCase(s, e) for e in ELEMENTS for s in SWIZZLES]


def parse(case_id: str) -> LayoutCase:
    match = _ID.match(case_id)
    if not match:
        raise SpecError(f"cannot parse case id {case_id!r}: expected e.g. 'layouts.tma.sw128.b16' "
                        "(see `bench list --suite layouts-tma`)")
    mode = match["swizzle"]
    case = LayoutCase(0 if mode == "none" else int(mode[2:]), match["elem"])
    check(case)
    return case


def check(case: LayoutCase) -> None:
    if case.swizzle not in SWIZZLES:
        raise IllegalShapeError(f"{case}: TMA and wgmma swizzle 32, 64 or 128 bytes (or none), not {case.swizzle}")
    if case.elem not in ELEMENTS:
        raise IllegalShapeError(f"{case}: elements of {', '.join(ELEMENTS)} (wgmma's f16 and e4m3), not {case.elem}")
