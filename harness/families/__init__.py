"""Instruction families: a registry from family name to the module that knows its cases.

Each family module provides the same contract (see families/wgmma.py):
    cases()                    every case it implements
    check(case)                raise SpecError/IllegalShapeError for cases it cannot run
    template_name, template_params(case)
    make_inputs(case, rng)     -> ProbeInputs
    decode_output(case, words) -> the result matrix (float64)
    tolerance(case, inputs)    -> per-element absolute tolerance
    flops(case)                work per instruction
"""

from __future__ import annotations

from types import ModuleType

from harness.errors import SpecError
from harness.families import wgmma

FAMILIES: dict[str, ModuleType] = {"wgmma": wgmma}


def family_of(case) -> ModuleType:
    try:
        return FAMILIES[case.family]
    except KeyError:
        raise SpecError(f"unknown family {case.family!r}: expected one of {', '.join(FAMILIES)}") from None
