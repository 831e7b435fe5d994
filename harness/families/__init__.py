"""The family registry: every instruction family the harness knows, by name.

A family is a package under harness/families/ exposing an object that satisfies the Family
protocol of harness/families/base.py. Adding one is a new package and one entry here.
"""

from __future__ import annotations

from harness.errors import SpecError
from harness.families import memory, mma, tma, wgmma
from harness.families.base import Family

# memory before tma: its ids (ld.global.ca..., ld.global.cg...) and tma's read baseline (ld.global.v4.u32)
# share the prefix ld.global, and the first family whose prefixes match parses an id.
FAMILIES: dict[str, Family] = {f.name: f for f in (wgmma.FAMILY, mma.FAMILY, mma.LOADERS, memory.FAMILY, tma.FAMILY)
                               if f is not None}


def get(name: str) -> Family:
    try:
        return FAMILIES[name]
    except KeyError:
        raise SpecError(f"unknown family {name!r}: expected one of {', '.join(FAMILIES)}") from None


def family_of(case) -> Family:
    return get(case.family)
