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


# -- `bench run --gpus`: one library call too (conduct_node; issue 46) ----------------------------------------------

def test_bench_run_gpus_makes_one_library_call_and_only_shows_it(tmp_path, monkeypatch):
    """The CLI parses the options, calls conduct_node once and prints what it returns (each GPU's summary lines,
    then the error line where a run failed); it checks no suite, names no GPU, opens no database and starts no
    process itself."""
    from types import SimpleNamespace

    from harness.orchestration import node, run

    below = []

    def refused(name):
        def called(*args, **kwargs):
            below.append(name)
            raise RuntimeError(f"the CLI called {name} itself")
        return called

    monkeypatch.setattr(run, "plan", refused("plan"))
    monkeypatch.setattr(node, "gpu_indices", refused("gpu_indices"))
    monkeypatch.setattr(node, "run_node", refused("run_node"))
    monkeypatch.setattr(Store, "open", classmethod(lambda cls, *a, **k: refused("Store.open")()))

    def child(index, code, summary):
        return SimpleNamespace(index=index, label=f"GPU {index} abcdef{index:02d}", summary=summary,
                               process=SimpleNamespace(returncode=code))

    children = [child(0, 0, ["GPU 0: NVIDIA H100, 132 SMs, driver 1; 12 cases", "run 1: 12 cases measured"]),
                child(1, 3, ["error: no space left"])]
    calls = []

    def conduct_node(gpus, request, db=None, listener=None):
        calls.append((gpus, request, db))
        return SimpleNamespace(children=children, worst=3, failed=children[1:])

    monkeypatch.setattr(conduct_module, "conduct_node", conduct_node, raising=False)  # the old CLI has none
    db = str(tmp_path / "r.db")
    result = CliRunner().invoke(cli, ["run", "--suite", "wgmma-quick", "--filter", "*n8k16*", "--gpus", "0,1",
                                      "--db", db, "--jobs", "3", "--seed", "5", "--watchdog", "60"])
    assert below == [], result.output
    assert len(calls) == 1, result.output
    gpus, request, given_db = calls[0]
    assert (gpus, given_db) == ("0,1", db)
    assert (request.suite, request.filter, request.seed, request.watchdog_s, request.jobs, request.gpu,
            request.resume) == ("wgmma-quick", "*n8k16*", 5, 60, 3, None, None)
    lines = result.output.strip().splitlines()
    assert "[GPU 0 abcdef00] run 1: 12 cases measured" in lines and "[GPU 1 abcdef01] error: no space left" in lines
    assert not any("132 SMs" in line for line in lines)  # the GPU's own line is its bar's, not the summary's
    assert lines[-1] == "error: 1 of 2 runs failed (GPU 1 abcdef01): their errors are above"
    assert result.exit_code == 3


def test_bench_run_gpus_is_one_call_that_runs_every_gpu(tmp_path, fake_backend, monkeypatch):
    """On two simulated GPUs: the CLI's one call (conduct_node) runs the suite on each, into one database."""
    calls = []
    real = getattr(conduct_module, "conduct_node", None)
    monkeypatch.setattr(conduct_module, "conduct_node", lambda *a, **k: calls.append(a) or real(*a, **k),
                        raising=False)
    monkeypatch.setenv("HOPPER_BENCH_FAKE_GPUS", "2")
    db = tmp_path / "r.db"
    result = CliRunner().invoke(cli, ["run", "--suite", "wgmma-quick", "--filter", "*n8k16*", "--gpus", "all",
                                      "--db", str(db)])
    assert result.exit_code == 0, result.output
    assert len(calls) == 1
    assert "2 GPUs (0, 1): one run each of suite wgmma-quick" in result.output
    runs = Store.open(str(db), read_only=True).query("SELECT id, status FROM runs")
    assert len(runs) == 2 and set(runs.status) == {"complete"}


def test_conduct_node_checks_the_request_before_any_file(tmp_path):
    """A bad suite fails before any GPU is named or file made; a resumed run is not a run on several GPUs."""
    from harness.errors import HarnessError

    db = tmp_path / "r.db"
    with pytest.raises(HarnessError, match="unknown suite 'nope'"):
        conduct_module.conduct_node("all", conduct_module.Request(suite="nope"), str(db))
    assert not db.exists()
    with pytest.raises(ValueError, match="several GPUs"):
        conduct_module.conduct_node("all", conduct_module.Request(resume=1), str(db))
