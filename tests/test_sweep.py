"""The CPU sweep's choice of probes (tests/sweep.py): a probe for every SASS expectation always, every other probe
unless the record of a passed full sweep vouches for its source, SASS expectation, compiler and checker; the record
written per family."""

import json
from dataclasses import replace

import pytest

import sweep
from gpu.sample import expectations
from harness.registry import FAMILIES


@pytest.fixture
def tma():
    return FAMILIES["tma"].cases()  # 84 probes, 19 of which hold its SASS expectations between them


def test_with_no_record_every_probe_is_compiled(tma, tmp_path):
    assert sweep.swept(tma, record={}) == tma
    assert sweep.recorded(tmp_path / "none.json") == {}


def test_a_recorded_family_compiles_a_probe_for_each_expectation_alone(tma, tmp_path):
    path = tmp_path / "record.json"
    sweep.write_record("tma", tma, path)
    chosen = sweep.swept(tma, record=sweep.recorded(path))
    assert chosen == sweep.covering(tma) and len(chosen) < len(tma) / 2
    held = [expectations(case) for case in chosen]
    assert set().union(*held) == set().union(*(expectations(case) for case in tma))
    assert all(h - set().union(*held[:i]) for i, h in enumerate(held))  # each chosen adds one none before held
    assert sweep.swept(tma, full=True, record=sweep.recorded(path)) == tma


def test_a_changed_source_or_expectation_is_compiled_again(tma, tmp_path, monkeypatch):
    import harness.registry as registry

    path = tmp_path / "record.json"
    sweep.write_record("tma", tma, path)
    outside = [case for case in tma if case not in sweep.covering(tma)]
    changed, expected = outside[0], outside[-1]
    render, expect = registry.probe_source, FAMILIES["tma"].sass_expectation

    def edited(case):
        source = render(case)
        if case == changed:  # one comment more: a new text, so a new build
            return type(source)(**{**source.__dict__, "text": source.text + "\n// edited\n"})
        return source

    monkeypatch.setattr(registry, "probe_source", edited)
    monkeypatch.setattr(FAMILIES["tma"], "sass_expectation", 
                        lambda case: expect(case) if case != expected else replace(expect(case), kernels=()))
    chosen = sweep.swept(tma, record=sweep.recorded(path))
    assert chosen == [case for case in tma if case in sweep.covering(tma) or case in (changed, expected)]


def test_another_compiler_or_checker_is_compiled_again(tma, tmp_path, monkeypatch):
    import harness.build.compile as compile_module

    path = tmp_path / "record.json"
    sweep.write_record("tma", tma, path)
    with monkeypatch.context() as patch:
        patch.setattr(compile_module, "nvrtc_version", lambda: "99.9")
        assert sweep.swept(tma, record=sweep.recorded(path)) == tma
    with monkeypatch.context() as patch:
        patch.setattr(sweep, "checker", lambda: "another sass.py")
        assert sweep.swept(tma, record=sweep.recorded(path)) == tma
    assert sweep.swept(tma, record=sweep.recorded(path)) == sweep.covering(tma)


def test_writing_a_family_keeps_the_others(tma, tmp_path):
    path = tmp_path / "record.json"
    loaders = FAMILIES["loaders"].cases()
    sweep.write_record("tma", tma, path)
    sweep.write_record("loaders", loaders, path)
    sweep.write_record("tma", tma[:3], path)  # the family's part replaced: ids it no longer has leave
    stored = json.loads(path.read_text())
    assert sorted(stored["families"]) == ["loaders", "tma"] and len(stored["families"]["tma"]) == 3
    assert set(sweep.recorded(path)) == {c.case_id for c in tma[:3] + loaders}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["record.json"]  # no temporary or lock file left


def test_the_shipped_record_names_only_cases_of_the_tree():
    """Its ids are cases the families declare (a stale id would be harmless but untidy), every family's."""
    ids = {case.case_id for family in FAMILIES.values() for case in family.cases()}
    families = json.loads(sweep.RECORD.read_text())["families"]
    assert set().union(*(set(cases) for cases in families.values())) <= ids
