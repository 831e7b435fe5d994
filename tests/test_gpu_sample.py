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
    """The first-and-last rule alone misses some (a TMA box small enough for 16 stages in flight); the
    sample adds a case for each, and only for those."""
    first_last = _first_and_last(ALL)
    missed = _expectations(ALL) - _expectations(first_last)
    assert missed and _expectations(SAMPLE) == _expectations(ALL)
    added = [c for c in SAMPLE if c not in first_last]
    assert len(added) <= len(missed)


def test_a_case_with_a_new_expectation_joins_the_sample(monkeypatch):
    """Three cases of one group (sizes 8, 16, 32): the middle one alone holds an expectation; the
    sample is the first, the last, and it."""
    from dataclasses import dataclass

    import gpu.sample as module

    @dataclass(frozen=True)
    class Fake:
        family: str
        n: int
        fault: None = None

    cases = [Fake("x", 8), Fake("x", 16), Fake("x", 32), Fake("x", 64)]
    held = {16: {("x", "k", "NEW")}}
    monkeypatch.setattr(module, "expectations", lambda case: held.get(case.n, {("x", "k", "OLD")}))
    assert [c.n for c in module.sample(cases)] == [8, 16, 64]


def _first_and_last(cases) -> list:
    import dataclasses

    from gpu.sample import SIZE_FIELDS

    groups: dict = {}
    for case in cases:
        key = (type(case).__name__,) + tuple((f.name, getattr(case, f.name)) for f in dataclasses.fields(case)
                                             if f.name not in SIZE_FIELDS)
        groups.setdefault(key, []).append(case)
    return [c for g in groups.values() for c in {id(g[0]): g[0], id(g[-1]): g[-1]}.values()]


def test_the_sample_reaches_every_method_in_every_mode():
    assert _methods(SAMPLE) == _methods(ALL)


def test_the_sample_keeps_each_forms_smallest_and_largest_n():
    wgmma = [c.n for c in SAMPLE if c.family == "wgmma" and c.dtype_a == "f16" and c.dtype_acc == "f32"
             and c.operands == "SS" and not c.sparse and c.layout == "K"]
    assert wgmma == [8, 256]
