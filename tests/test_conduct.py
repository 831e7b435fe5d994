"""`bench run` is one library call (harness/orchestration/conduct.py; issue 46, item 8): the CLI makes it once, and
per case the run looks the family up once, asks for its plan once and runs its check once, handing each answer
down (to the compiler, the worker and a fault's result) instead of asking again. On the simulated GPU."""

from collections import Counter

import numpy as np
import pytest
from click.testing import CliRunner

from harness import registry
from harness.cli import cli
from harness.db.store import Store
from harness.orchestration import conduct as conduct_module
from harness.orchestration.fakegpu import FakeBackend, simulated_device
from harness.orchestration.runner import RunSettings, case_plan

# f16 wgmma at N=8 (a probe each) and the quick GEMM suite: a pipeline probe and cuBLAS (an anchor, no probe)
RUNS = [("wgmma-quick", "*n8k16*"), ("gemm-quick", None)]


@pytest.fixture
def fake_backend(monkeypatch, shared_cache):
    monkeypatch.setenv("HOPPER_BENCH_BACKEND", "fake")


def _counting(monkeypatch, families):
    """Counters of what this process asks per case: registry lookups (every family_of goes through
    registry.get), each family's plan and check, by case id."""
    asked = {"lookup": Counter(), "plan": Counter(), "check": Counter()}
    get = registry.get

    def counted_get(name):
        asked["lookup"][name] += 1
        return get(name)

    monkeypatch.setattr(registry, "get", counted_get)
    for family in families:
        for member in ("plan", "check"):
            real = getattr(family, member)

            def counted(case, *args, _real=real, _member=member, **kwargs):
                asked[_member][case.case_id] += 1
                return _real(case, *args, **kwargs)

            monkeypatch.setattr(family, member, counted)
    return asked


@pytest.mark.parametrize("suite,filter_", RUNS)
def test_bench_run_asks_once_per_case(tmp_path, fake_backend, monkeypatch, suite, filter_):
    from harness.orchestration.run import plan

    cases = plan(suite, filter_).cases
    families = {registry.family_of(c) for c in cases}
    calls = []
    real_conduct = conduct_module.conduct
    monkeypatch.setattr(conduct_module, "conduct", lambda *a, **k: calls.append(a) or real_conduct(*a, **k))
    asked = _counting(monkeypatch, families)
    args = ["run", "--suite", suite, "--db", str(tmp_path / "r.db")] + (["--filter", filter_] if filter_ else [])
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert len(calls) == 1  # the CLI's one library call
    ids = [c.case_id for c in cases]
    assert any(not registry.has_probe(c) for c in cases) or suite != "gemm-quick"  # an anchor among them
    by_family = Counter(c.family for c in cases)
    assert dict(asked["lookup"]) == dict(by_family)  # one lookup per case, in this process
    assert dict(asked["plan"]) == {i: 1 for i in ids}
    assert dict(asked["check"]) == {i: 1 for i in ids}
    stored = Store.open(str(tmp_path / "r.db")).query("SELECT DISTINCT case_id FROM results")
    assert sorted(stored.case_id) == sorted(ids)


def test_the_simulated_gpu_measures_from_the_plan_it_is_sent(monkeypatch):
    """The worker's side: given the case's plan, the simulated GPU does not ask for it again, and looks the
    family up once."""
    case = registry.parse_case_id("cublas.f16.2048x2048x2048")
    family = registry.family_of(case)
    planned = case_plan(case, family, simulated_device())
    asked = _counting(monkeypatch, [family])
    backend = FakeBackend(RunSettings())
    backend.open(0)
    result = backend.measure(case, None, planned)
    assert result.valid and {(m.name, m.unit) for m in result.metrics} == set(planned.declared)
    assert asked["plan"][case.case_id] == 0 and sum(asked["lookup"].values()) == 1


def test_a_fault_declares_the_metrics_of_the_plan_it_was_sent(tmp_path, fake_backend, monkeypatch):
    """A case the worker faults on is stored with the metrics its plan declares, from the plan the run asked for
    once (the parent does not ask again)."""
    from harness.orchestration.run import plan

    run_plan = plan("faults", "*+trap")
    asked = _counting(monkeypatch, {registry.family_of(c) for c in run_plan.cases})
    result = CliRunner().invoke(cli, ["run", "--suite", "faults", "--filter", "*+trap", "--db", str(tmp_path / "r.db"),
                                      "--watchdog", "5"])
    assert result.exit_code == 0, result.output
    assert "1 faults" in result.output
    assert dict(asked["plan"]) == {c.case_id: 1 for c in run_plan.cases}
    rows = Store.open(str(tmp_path / "r.db")).query("SELECT metric, status FROM results")
    assert set(rows.status) == {"fault"} and len(rows) == len(case_plan(
        run_plan.cases[0], registry.family_of(run_plan.cases[0]), simulated_device()).declared)
