"""The family registry: every instruction family the harness knows, by name, and the parser of any
family's case id. It sits above the families (it imports each) and below what orchestrates them (run,
compare, report, the CLI), which look families up here and hand them down.

A family is a package under harness/families/ exposing an object of a subclass of Family
(harness/families/base.py). Adding one is a new package, its template in ptx/, and one entry in
FAMILIES here (docs/architecture.md, "Adding a family").

Each family owns its `id_prefixes`: no prefix of one family starts another family's prefix, so at most
one family's prefixes match any id and the order of FAMILIES decides nothing (checked when this module
is imported, and by tests/test_family_contract.py for every case id of every family).
"""

from __future__ import annotations

from dataclasses import replace

from harness.anchors import has_probe
from harness.build.render import render
from harness.errors import SpecError
from harness.families import (attention, banks, dsmem, gemm, hostlink, ladder, layouts, loaders, memory, mma, simt, tma,
                              wgmma)
from harness.families.base import Family
from harness.spec import MAX_CASE_ID, Case, split_fault

FAMILIES: dict[str, Family] = {f.name: f for f in (wgmma.FAMILY, mma.FAMILY, loaders.FAMILY, memory.FAMILY, tma.FAMILY,
                                                 dsmem.FAMILY, gemm.FAMILY, simt.FAMILY, attention.FAMILY,
                                                 ladder.FAMILY, banks.FAMILY, layouts.FAMILY,
                                                 hostlink.FAMILY)}


def overlapping_prefixes(families) -> list[tuple[str, str, str, str]]:
    """(family, prefix, other family, its prefix) wherever one family's id prefix starts another's: an
    id both could spell."""
    owned = [(f.name, prefix) for f in families for prefix in f.id_prefixes]
    return [(a, p, b, q) for a, p in owned for b, q in owned if a != b and q.startswith(p)]


def _owners(families) -> dict[str, Family]:
    """{id prefix: the one family that owns it}; raises where two families' prefixes overlap."""
    if clashes := overlapping_prefixes(families):
        raise RuntimeError("family id prefixes overlap: " + "; ".join(
            f"{a} {p!r} starts {b} {q!r}" for a, p, b, q in clashes) + " (each id prefix is one family's)")
    return {prefix: f for f in families for prefix in f.id_prefixes}


OWNERS = _owners(FAMILIES.values())


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
    owner = next((family for prefix, family in OWNERS.items() if base.startswith(prefix)), None)
    try:
        if owner is not None:  # the only family whose prefixes match (they do not overlap)
            case = owner.parse(base)
            return replace(case, fault=fault) if fault else case
        examples = "; ".join(f"{f.name}: {f.example_id!r}" for f in FAMILIES.values())
        raise SpecError(f"cannot parse case id {case_id!r}: no family spells it (e.g. {examples}; see `bench list`)")
    except SpecError as exc:
        close = did_you_mean(base)
        if close is None:
            raise
        # the same kind of error (an illegal shape stays one), with the suggestion
        raise type(exc)(f"{case_id!r}: did you mean {close!r}? ({exc.args[0] if exc.args else exc})") from None


def did_you_mean(case_id: str) -> str | None:
    """The id of a case of any family closest to a misspelled `case_id` (None: none is close)."""
    import difflib

    known = {case.case_id for family in FAMILIES.values() for case in family.cases()}
    close = difflib.get_close_matches(case_id, known, n=1, cutoff=0.85)
    return close[0] if close else None


def probe_source(case: Case):
    """The probe source of `case`: its family's template, filled (harness/build/render.py). An anchor has none
    (harness/anchors: a library call): SpecError."""
    if not has_probe(case):
        raise SpecError(f"{case.case_id} is a library call ({case.anchor.description}): it has no probe source")
    return render(case, family_of(case))
