"""The Method contract: what every measurement method declares, once (docs/architecture.md, "Methods").

A method is a subclass of `Method` below, bound to its spec class by `declare`:

    question                                    member
    what a family's plan asks for               spec: a frozen dataclass deriving from MethodSpec, whose
                                                declares(work) names the (metric, unit) pairs it stores
    how it times a validated probe              measure(spec, context) -> list[Metric]
    how the simulated GPU answers it            simulate(spec, simulation) -> rows (metric, unit, values, launch)

`run` and `simulate` dispatch on the spec's declared method (`spec.method`, set by `declare`): neither names
a method, so a new one is a new module under harness/measure/methods/ (imported by the package's
__init__, or by whoever uses it), with no edit here, in the runner or in the simulated GPU.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar, Protocol

import numpy as np

from harness.measure.measurement import Metric, Work
from harness.measure.timing import TimingPolicy


class Launcher(Protocol):
    """What a method needs of a loaded probe (harness/measure/launch.py LoadedProbe; its `period`, the launches
    before its arguments repeat, is optional: 1 where a launcher has none)."""

    def run(self, kernel: str, grid: int, block: int, iters: int, timing_words: int): ...
    def max_threads(self, kernel: str) -> int: ...


@dataclass
class Context:
    probe: Launcher
    sm_count: int
    policy: TimingPolicy
    sampler: object  # harness.measure.telemetry Sampler or NullSampler
    work: Work
    peak: float | None  # work per cycle per SM at full rate (None: no published peak)
    # Load and validate inputs of another distribution (None: the case's own); returns its description.
    use_inputs: object = None


@dataclass(frozen=True)
class Simulation:
    """What the simulated GPU (harness/orchestration/fakegpu.py) tells a method about the case and the chip it
    pretends to be: the family's work and peak, its SMs, clock and board power, and `interval`, a plausible
    issue interval (cycles per instruction) from the family's model. The simulated GPU adds the noise."""

    work: Work
    peak: float | None
    sm_count: int
    clock_mhz: float
    power_w: float
    interval: float


# A simulated answer: (metric, unit, value, launch). A value that is a number stands for 7 samples around it; an
# array is the samples themselves (one each).
Row = tuple[str, str, "float | np.ndarray", dict]


class MethodSpec(ABC):
    """What every spec gives the shared stages: the metrics it stores, and (class-wide) its Method."""

    method: ClassVar["Method"]  # set by `declare` on the method's class

    @abstractmethod
    def declares(self, work: Work) -> list[tuple[str, str]]:
        """The (metric, unit) pairs this spec stores for a family whose instruction does `work`."""


class Method(ABC):
    """One way to time a validated probe. Subclass it, name the spec class it answers (`spec`), give
    `measure` and `simulate`, and bind it with `@declare`."""

    spec: ClassVar[type[MethodSpec]]

    @abstractmethod
    def measure(self, spec: MethodSpec, ctx: Context) -> list[Metric]:
        """The metrics of one spec, each taken inside a telemetry window whose state it carries."""

    @abstractmethod
    def simulate(self, spec: MethodSpec, sim: Simulation) -> list[Row]:
        """What the simulated GPU stores for the spec: synthetic values, never a measurement. Every metric the
        spec declares (with the launches `measure` would give it)."""


def declare(method: type[Method]) -> type[Method]:
    """Bind `method` to its spec class (a class decorator): every spec of that class now declares it."""
    if not (isinstance(method.spec, type) and issubclass(method.spec, MethodSpec)):
        raise TypeError(f"{method.__name__}.spec must be a MethodSpec subclass, not {method.spec!r}")
    if "method" in vars(method.spec):
        raise TypeError(f"{method.spec.__name__} already declares {type(method.spec.method).__name__}")
    method.spec.method = method()  # refuses a method that leaves out `measure` or `simulate`
    return method


def method_of(spec) -> Method:
    """The method a spec declares (a TypeError naming it where it declares none)."""
    method = getattr(type(spec), "method", None)
    if not isinstance(method, Method):
        raise TypeError(f"{type(spec).__name__} is not a method spec: no Method declares it")
    return method


def run(spec: MethodSpec, ctx: Context) -> list[Metric]:
    """The metrics of one spec; each is taken inside a telemetry window, whose state it carries."""
    return method_of(spec).measure(spec, ctx)


def simulate(spec: MethodSpec, sim: Simulation) -> list[Row]:
    """The simulated GPU's noiseless answer to one spec."""
    return method_of(spec).simulate(spec, sim)


def throughput_unit(work: Work) -> str:
    return {"FLOP": "TFLOPS", "OP": "TOPS"}.get(work.unit, f"T{work.unit}/s")
