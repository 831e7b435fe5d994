"""Named suites, gathered from every family (Family.suites), and glob filters on case ids."""

from __future__ import annotations

from fnmatch import fnmatchcase

from harness.errors import SpecError
from harness.registry import FAMILIES
from harness.families.base import Suite
from harness.spec import Case


def all_suites() -> dict[str, Suite]:
    suites: dict[str, Suite] = {}
    for family in FAMILIES.values():
        for name, suite in family.suites().items():
            if name in suites:
                raise SpecError(f"suite {name!r} is declared by two families")
            suites[name] = suite
    return suites


# Suites made of the family suites that name them in Suite.part_of, across families (in registry order).
COMPOSED = {"tensor": "every tensor-core case",
            "tma": "TMA and clusters (the runs of record's data-movement suite)",
            "maps": "maps of the chip: the L2 and distributed shared memory by SM",
            "maps-sides": "the three partitions of the SMs in one run, for the report to compare them (SM ids are "
                          "numbered per physical GPU): the L2 map's halves, the far-hit sides, the DSMEM map's GPC "
                          "groups"}


def _composed(parts: list[Suite]):
    return lambda: [case for part in parts for case in part.make()]


def with_composed(suites: dict[str, Suite]) -> dict[str, Suite]:
    for name, description in COMPOSED.items():
        parts = {key: suite for key, suite in suites.items() if name in suite.part_of}
        suites[name] = Suite(f"{description}: {', '.join(parts)}", _composed(list(parts.values())))
    return suites


SUITES = with_composed(all_suites())


def suite_cases(name: str) -> list[Case]:
    try:
        return SUITES[name].make()
    except KeyError:
        import difflib

        close = difflib.get_close_matches(str(name), list(SUITES), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise SpecError(f"unknown suite {name!r}{hint}: expected one of {', '.join(SUITES)}") from None


def select(cases: list[Case], pattern: str | None) -> list[Case]:
    """Cases whose id matches any of the comma-separated globs in `pattern` (all if None)."""
    if not pattern:
        return list(cases)
    globs = [g.strip() for g in pattern.split(",") if g.strip()]
    chosen = [c for c in cases if any(fnmatchcase(c.case_id, g) for g in globs)]
    if not chosen:
        raise SpecError(f"filter {pattern!r} matches none of the {len(cases)} cases "
                        "(globs match case ids, e.g. '*m64n128k16*' or '*.bf16.bf16.RS'; see `bench list`)")
    return chosen
