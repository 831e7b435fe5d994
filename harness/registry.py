"""The family registry: every instruction family the harness knows, by name, and the parser of any
family's case id. It sits above the families (it imports each) and below what orchestrates them (run,
compare, report, the CLI), which look families up here and hand them down.

A family is a package under harness/families/ exposing an object that satisfies the Family protocol
of harness/families/base.py. Adding one is a new package and one entry here.
"""

from __future__ import annotations

from dataclasses import replace

from harness.build.render import render
from harness.errors import SpecError
from harness.families import memory, mma, tma, wgmma
from harness.families.base import Family
from harness.spec import MAX_CASE_ID, Case, split_fault

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


def parse_case_id(case_id: str) -> Case:
    """Parse any family's canonical id; raises SpecError naming the expected forms."""
    if len(case_id) > MAX_CASE_ID or not case_id.isascii():
        shown = case_id if len(case_id) <= 60 else case_id[:57] + "..."
        raise SpecError(f"cannot parse case id {shown!r}: case ids are ASCII and at most {MAX_CASE_ID} characters "
                        "(see `bench list`)")
    base, fault = split_fault(case_id)
    for family in FAMILIES.values():
        if base.startswith(family.id_prefixes):
            case = family.parse(base)
            return replace(case, fault=fault) if fault else case
    examples = "; ".join(f"{f.name}: {f.example_id!r}" for f in FAMILIES.values())
    raise SpecError(f"cannot parse case id {case_id!r}: no family spells it (e.g. {examples}; see `bench list`)")


def probe_source(case: Case):
    """The probe source of `case`: its family's template, filled (harness/build/render.py)."""
    return render(case, family_of(case))
