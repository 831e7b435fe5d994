"""Named suites: lists of cases, selected further by glob filters on the case id."""

from __future__ import annotations

from dataclasses import replace
from fnmatch import fnmatchcase
from typing import Callable

from harness.errors import SpecError
from harness.families import wgmma
from harness.spec import PLANTED_FAULTS, Case

PAPER_N = (8, 16, 32, 64, 128, 256)  # the N values of the paper's wgmma tables


def _wgmma_quick() -> list[Case]:
    return [c for c in wgmma.cases() if c.n in PAPER_N and c.dtype_a == "f16" and c.dtype_acc == "f32"]


def _faults() -> list[Case]:
    """wgmma-quick with a faulting copy of every fourth case planted after it: the run must store
    each fault against its case and measure every other case (crash isolation self-test)."""
    cases, faults = [], iter(PLANTED_FAULTS)
    for i, case in enumerate(_wgmma_quick()):
        cases.append(case)
        if i % 4 == 1 and (fault := next(faults, None)):
            cases.append(replace(case, fault=fault))
    return cases


SUITES: dict[str, tuple[str, Callable[[], list[Case]]]] = {
    "wgmma": ("dense wgmma m64nNk16: f16 (f32 and f16 accumulate) and bf16, N = 8..256, SS and RS",
              wgmma.cases),
    "wgmma-quick": ("f16 inputs, f32 accumulate, SS and RS, at the paper's N = 8, 16, 32, 64, 128, 256",
                    _wgmma_quick),
    "faults": ("self-test: wgmma-quick with planted faulting probes (trap, out-of-bounds store, endless "
               "loop); expect 3 faults and 12 valid cases", _faults),
}


def suite_cases(name: str) -> list[Case]:
    try:
        _, make = SUITES[name]
    except KeyError:
        raise SpecError(f"unknown suite {name!r}: expected one of {', '.join(SUITES)}") from None
    return make()


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
