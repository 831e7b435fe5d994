"""The GPU tests' default sample (tests/gpu/sample.py) still reaches everything the full sweep does:
every family and kernel template, every SASS expectation up to the instruction's size, every
measurement method in every mode, with a fifth of the cases or fewer."""

from gpu.sample import expectations, sample
from harness.registry import FAMILIES

ALL = [case for family in FAMILIES.values() for case in family.cases()]
SAMPLE = sample(ALL)


def _expectations(cases) -> set:
    return set().union(*(expectations(case) for case in cases))


def _methods(cases) -> set:
    """(family, method, its mode) of every spec in the plans."""
    found = set()
    for case in cases:
        for spec in FAMILIES[case.family].plan(case):
            mode = (getattr(spec, "whole_gpu", None), bool(getattr(spec, "energy", False)), getattr(spec, "inputs", None),
                    bool(getattr(spec, "idle_ms", 0)), getattr(spec, "metric", None), getattr(spec, "net_metric", None),
                    getattr(spec, "short_body", None) is not None)
            found.add((case.family, type(spec).__name__, mode))
    return found


def test_the_sample_is_small():
    assert len(SAMPLE) <= len(ALL) / 4 and {c.family for c in SAMPLE} == set(FAMILIES)


def test_the_sample_reaches_every_sass_expectation():
    assert _expectations(SAMPLE) == _expectations(ALL)


def test_the_sample_reaches_every_method_in_every_mode():
    assert _methods(SAMPLE) == _methods(ALL)


def test_the_sample_keeps_each_forms_smallest_and_largest_n():
    wgmma = [c.n for c in SAMPLE if c.family == "wgmma" and c.dtype_a == "f16" and c.dtype_acc == "f32"
             and c.operands == "SS" and not c.sparse and c.layout == "K"]
    assert wgmma == [8, 256]
