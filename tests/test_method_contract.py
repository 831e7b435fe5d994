"""The method contract (harness/measure/methods/base.py::Method, docs/architecture.md "Methods"): a method is one
module behind one interface, and `run` and the simulated GPU dispatch on the spec's declared method. A method
this file plugs in below is measured and simulated with no edit to either; neither names a method."""

import inspect
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from harness.measure import methods
from harness.measure.launch import Launch
from harness.measure.measurement import Metric, Work
from harness.measure.methods.base import Method, MethodSpec, declare
from harness.measure.telemetry import NullSampler
from harness.measure.timing import TimingPolicy
from harness.orchestration import fakegpu

ROOT = Path(__file__).resolve().parent.parent


# -- a method of this file's own: launches a kernel `launches` times and stores its elapsed times -------------------
@dataclass(frozen=True)
class Tally(MethodSpec):
    kernel: str
    launches: int
    launch: dict

    def declares(self, work: Work) -> list[tuple[str, str]]:
        return [("tally_ms", "ms")]


@declare
class TallyMethod(Method):
    spec = Tally

    def measure(self, spec: Tally, ctx) -> list[Metric]:
        times = [ctx.probe.run(spec.kernel, ctx.sm_count, 32, 1, 0).elapsed_ms for _ in range(spec.launches)]
        return [Metric("tally_ms", "ms", np.asarray(times), dict(spec.launch), notes="tallied")]

    def simulate(self, spec: Tally, sim) -> list:
        return [("tally_ms", "ms", sim.interval * spec.launches, spec.launch)]


class Timed:
    """A launcher whose n-th launch takes n ms."""

    def __init__(self):
        self.launches = []

    def max_threads(self, kernel):
        return 1024

    def run(self, kernel, grid, block, iters, timing_words):
        self.launches.append((kernel, grid))
        return Launch(np.zeros(1, dtype=np.uint32), np.zeros(0, dtype=np.int64), float(len(self.launches)))


def test_a_method_plugged_in_through_the_interface_is_measured_by_run():
    probe = Timed()
    ctx = methods.Context(probe, 3, TimingPolicy(), NullSampler(), Work(1, "FLOP"), None)
    (metric,) = methods.run(Tally("k", 4, {"n": 4}), ctx)
    assert (metric.name, metric.unit, metric.launch, metric.notes) == ("tally_ms", "ms", {"n": 4}, "tallied")
    assert metric.samples.tolist() == [1.0, 2.0, 3.0, 4.0] and probe.launches == [("k", 3)] * 4


def test_a_method_plugged_in_through_the_interface_is_answered_by_the_simulated_gpu(monkeypatch):
    """A family whose plan holds the new method beside a ChainSlope: the simulated GPU stores both, each its
    method's answer with the noise it adds (the interval is the family's work over its peak: 4096 / 512)."""
    family = SimpleNamespace(model=None, work=lambda case: Work(4096, "FLOP"), peak=lambda case: 512.0,
                             plan=lambda case, device: [Tally("k", 5, {"n": 5}),
                                                        methods.ChainSlope("latency_cycles", "k", 32)])
    monkeypatch.setattr(fakegpu, "family_of", lambda case: family)
    case = SimpleNamespace(case_id="tally.test")
    result = fakegpu.synthetic_result(case, None, np.random.default_rng(0))
    assert [(m.name, m.unit, m.launch) for m in result.metrics] == [("tally_ms", "ms", {"n": 5}),
                                                                    ("latency_cycles", "cycles", {})]
    tally, chain = result.metrics
    assert tally.samples.size == 7 and np.allclose(tally.samples, 8.0 * 5, rtol=1e-3)
    assert np.allclose(chain.samples, 2 * 8.0, rtol=1e-3)  # a dependent chain: twice the interval
    assert {m.notes for m in result.metrics} == {"simulated: not a measurement"}


def test_a_spec_no_method_declares_is_refused_with_its_name():
    @dataclass(frozen=True)
    class Stray:
        kernel: str

    with pytest.raises(TypeError, match="Stray is not a method spec"):
        methods.run(Stray("k"), None)


def test_a_method_must_give_measure_and_simulate_and_a_spec_has_one_method():
    @dataclass(frozen=True)
    class Half(MethodSpec):
        def declares(self, work):
            return []

    class NoSimulation(Method):
        spec = Half

        def measure(self, spec, ctx):
            return []

    with pytest.raises(TypeError, match="abstract"):
        declare(NoSimulation)

    class Again(TallyMethod):
        spec = Tally

    with pytest.raises(TypeError, match="Tally already declares TallyMethod"):
        declare(Again)
    assert type(Tally.method) is TallyMethod


def test_every_spec_the_package_exports_declares_its_own_module_s_method():
    """The seven methods, each a module of the package whose Method binds the spec it defines."""
    specs = {name: value for name, value in vars(methods).items()
             if inspect.isclass(value) and issubclass(value, MethodSpec) and value is not MethodSpec}
    assert set(specs) == {"ChainSlope", "BracketedLatency", "OccupancySweep", "Bandwidth", "WholeKernel", "SmMap",
                          "HostCall"}
    for name, spec in specs.items():
        method = methods.method_of(object.__new__(spec))
        assert type(method).__module__ == spec.__module__ and method.spec is spec, name


def test_the_shared_stages_name_no_method():
    """Dispatch reads the spec's method: the runner and the simulated GPU name no spec class (an isinstance ladder
    or a table of them would), and the package's dispatch names none either."""
    names = [cls.spec.__name__ for cls in Method.__subclasses__() if cls.__module__.startswith("harness.")]
    assert len(names) == 7
    for path in ("harness/orchestration/runner.py", "harness/orchestration/fakegpu.py",
                 "harness/measure/methods/base.py"):
        text = (ROOT / path).read_text()
        assert [name for name in names if name in text] == [], path
