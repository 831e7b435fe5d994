"""The host link's cases and ids: one copy through the copy engines, host memory to the GPU's or back, or both at once.

    memcpy.<direction>.<memory>.<size>MiB      e.g. memcpy.h2d.pinned.256MiB, memcpy.bidir.pinned.64MiB

    direction   h2d (host to device), d2h (device to host), bidir (both at once, one on each of two streams)
    memory      pinned (page-locked host memory: the copy engines read or write it directly) or pageable (ordinary
                host memory: the driver stages it through a pinned buffer of its own)
    size        the bytes of one copy in MiB, a power of two from 1 to 1024 (per direction; bidir moves twice that)

Every case is an anchor (harness/anchors: a host call, cudaMemcpyAsync, with no template of ours): nothing is
rendered, compiled or SASS-checked for it. The pattern it copies and the check of what arrived: checks.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from harness.anchors import Anchor, AnchorCase
from harness.errors import IllegalShapeError, SpecError

DIRECTIONS = {"h2d": "host to device", "d2h": "device to host", "bidir": "host to device and device to host at once"}
MEMORIES = {"pinned": "page-locked host memory", "pageable": "pageable host memory (staged by the driver)"}
# Sizes the suites measure: 64 MiB is well past the size where a copy's fixed cost (a few microseconds against ~1 ms
# of transfer) stops mattering, and 256 MiB is 4x that (its rate within noise of 64 MiB's says the plateau is reached);
# both are many times the L2 and any staging buffer, so nothing is served from a cache.
SIZES_MIB = (64, 256)
MAX_MIB = 1024
PREFIX = "memcpy."
_ID = re.compile(r"^memcpy\.([a-z0-9]+)\.([a-z]+)\.(\d+)MiB$")

MEMCPY = Anchor("CUDA runtime", "cudaMemcpyAsync",
                "cudaMemcpyAsync through the copy engines on a CUDA stream, timed by CUDA events")


@dataclass(frozen=True)
class HostLinkCase(AnchorCase):
    """One copy of `mib` MiB between host memory (`memory`) and the GPU's, in `direction`."""

    family: ClassVar[str] = "hostlink"
    size_fields: ClassVar[tuple[str, ...]] = ("mib",)  # the GPU tests' sample: each form's smallest and largest

    direction: str
    memory: str
    mib: int

    @property
    def anchor(self) -> Anchor:
        return MEMCPY

    @property
    def nbytes(self) -> int:
        """Bytes of one copy (one direction)."""
        return self.mib << 20

    @property
    def directions(self) -> tuple[str, ...]:
        return ("h2d", "d2h") if self.direction == "bidir" else (self.direction,)

    @property
    def moved(self) -> int:
        """Bytes one call moves over the link, every direction counted."""
        return self.nbytes * len(self.directions)

    @property
    def base_id(self) -> str:
        return f"{PREFIX}{self.direction}.{self.memory}.{self.mib}MiB"

    def columns(self) -> dict[str, object]:
        return {"instruction": MEMCPY.call}


def check(case: HostLinkCase) -> None:
    if case.direction not in DIRECTIONS:
        raise SpecError(f"{case.base_id}: direction {case.direction!r}, expected one of {', '.join(DIRECTIONS)}")
    if case.memory not in MEMORIES:
        raise SpecError(f"{case.base_id}: host memory {case.memory!r}, expected one of {', '.join(MEMORIES)}")
    if not (1 <= case.mib <= MAX_MIB and case.mib & (case.mib - 1) == 0):
        raise IllegalShapeError(f"{case.base_id}: a copy of {case.mib} MiB; sizes are powers of two from 1 to "
                                f"{MAX_MIB} MiB")


def parse(case_id: str) -> HostLinkCase:
    match = _ID.match(case_id)
    if not match:
        raise SpecError(f"cannot parse host-link case id {case_id!r}: expected memcpy.<{'|'.join(DIRECTIONS)}>."
                        f"<{'|'.join(MEMORIES)}>.<size>MiB, e.g. memcpy.h2d.pinned.256MiB")
    case = HostLinkCase(match.group(1), match.group(2), int(match.group(3)))
    check(case)
    return case


def case(direction: str, memory: str, mib: int) -> HostLinkCase:
    made = HostLinkCase(direction, memory, mib)
    check(made)
    return made


def cases() -> list[HostLinkCase]:
    """Every direction and host memory at each suite size."""
    return [case(d, m, s) for m in MEMORIES for d in DIRECTIONS for s in SIZES_MIB]


def everyday() -> list[HostLinkCase]:
    """The suite: pinned memory every direction at both sizes; pageable one way each at the larger size."""
    return ([case(d, "pinned", s) for d in DIRECTIONS for s in SIZES_MIB]
            + [case(d, "pageable", SIZES_MIB[-1]) for d in ("h2d", "d2h")])
