"""The banks family's cases and ids: banks.<ld|st>.b<16|32|64|128>.<layout> and
banks.<ldmatrix|stmatrix>.x<1|2|4>[.trans].<layout> (the layouts: patterns.py)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from harness.errors import IllegalShapeError, SpecError
import harness.families.banks.patterns as patterns
from harness.smembanks import wavefronts
from harness.spec import Case

WIDTHS = (16, 32, 64, 128)  # bits a lane of ld/st.shared
NUMS = (1, 2, 4)

_ID = re.compile(r"^banks\.(?:(?P<op>ld|st)\.b(?P<width>\d+)|(?P<mop>ldmatrix|stmatrix)\.x(?P<num>\d+)"
                 r"(?P<trans>\.trans)?)\.(?P<layout>[a-z0-9.]+)$")


@dataclass(frozen=True)
class BankCase(Case):
    family: ClassVar[str] = "banks"
    # The GPU tests' sample (tests/gpu/sample.py) takes the first and last layout of each instruction: the
    # layout is data to the probe, not code (tests/gpu/test_banks.py validates every one).
    size_fields: ClassVar[tuple[str, ...]] = ("layout",)
    op: str  # ld, st, ldmatrix, stmatrix
    layout: str  # a name of patterns.py
    width: int = 128  # bits a lane (ldmatrix/stmatrix: a row is 128 bits)
    num: int = 1  # matrices (ldmatrix/stmatrix)
    trans: bool = False

    @property
    def matrix(self) -> bool:
        return self.op in ("ldmatrix", "stmatrix")

    @property
    def store(self) -> bool:
        return self.op in ("st", "stmatrix")

    @property
    def base_id(self) -> str:
        if self.matrix:
            return f"banks.{self.op}.x{self.num}{'.trans' if self.trans else ''}.{self.layout}"
        return f"banks.{self.op}.b{self.width}.{self.layout}"

    @property
    def access_bytes(self) -> int:
        return 16 if self.matrix else self.width // 8

    @property
    def lanes(self) -> int:
        """Lanes whose addresses the instruction uses: ldmatrix's 8 rows a matrix, else all 32."""
        return 8 * self.num if self.matrix else 32

    @property
    def ptx(self) -> str:
        if self.matrix:
            return f"{self.op}.sync.aligned.m8n8.x{self.num}{'.trans' if self.trans else ''}.shared.b16"
        vector = {64: ".v2", 128: ".v4"}.get(self.width, "")
        kind = "u16" if self.width == 16 else "u32"
        return f"{self.op}.shared{vector}.{kind}"

    @property
    def regs(self) -> int:
        return self.num if self.matrix else max(1, self.width // 32)

    def addresses(self) -> np.ndarray:
        """(32,) byte offsets each lane supplies (lanes past `lanes` repeat the first: unused)."""
        rows = patterns.addresses(self.layout, self.access_bytes)
        return rows[np.arange(32) % self.lanes]

    def wavefronts(self) -> int:
        return wavefronts(self.addresses()[:self.lanes], self.access_bytes)

    def columns(self) -> dict[str, object]:
        return dict(instruction=self.ptx, dtype_a="b16" if self.matrix else f"b{self.width}", layout=self.layout)


def _ops() -> list[tuple[str, int, int, bool]]:
    """(op, width, num, trans) of every instruction probed."""
    plain = [(op, w, 1, False) for op in ("ld", "st") for w in WIDTHS]
    matrix = [(op, 128, n, t) for op in ("ldmatrix", "stmatrix") for n, t in ((1, False), (2, False), (4, False),
                                                                           (4, True))]
    return plain + matrix


def cases() -> list[BankCase]:
    return [BankCase(op, name, width, num, trans) for op, width, num, trans in _ops()
            for name in patterns.names(16 if op in ("ldmatrix", "stmatrix") else width // 8)]


def parse(case_id: str) -> BankCase:
    match = _ID.match(case_id)
    if not match:
        raise SpecError(f"cannot parse case id {case_id!r}: expected e.g. 'banks.ld.b128.sw128' or "
                        "'banks.ldmatrix.x4.trans.way2' (see `bench list --suite banks`)")
    if match["mop"]:
        case = BankCase(match["mop"], match["layout"], 128, int(match["num"]), bool(match["trans"]))
    else:
        if match["trans"]:
            raise SpecError(f"{case_id!r}: .trans is ldmatrix/stmatrix's")
        case = BankCase(match["op"], match["layout"], int(match["width"]))
    check(case)
    return case


def check(case: BankCase) -> None:
    if case.matrix and case.num not in NUMS:
        raise IllegalShapeError(f"{case}: {case.op} moves x1, x2 or x4 matrices, not x{case.num}")
    if not case.matrix and case.width not in WIDTHS:
        raise IllegalShapeError(f"{case}: ld/st.shared of {case.width} bits a lane: expected one of "
                                f"{', '.join(map(str, WIDTHS))}")
    if case.layout not in patterns.names(case.access_bytes):
        raise SpecError(f"{case}: no layout {case.layout!r} for {case.access_bytes}-byte accesses; expected one of "
                        f"{', '.join(patterns.names(case.access_bytes))}")
