"""The Family protocol: every question the shared stages ask about an instruction family.

A family is one object (docs/architecture.md, "Families as plug-ins"). The shared stages (build,
measure, db, analysis) call it and never branch on its name; a new family is a new package under
harness/families/ plus one line in the registry (harness/registry.py).

    question                              member
    which cases, which suites, ids        cases(), suites(), parse(id), check(case), id_prefixes
    the probe source                      template, template_params(case)
    what the SASS must show               sass_expectation(case)
    correctness                           inputs(case, rng), checks(case, inputs), decode(case, words),
                                          output_words(case)
    what to measure and how               plan(case, device) -> method specs (harness/measure/methods.py),
                                          work(case), peak(case)
    what people read                      describe(case) (bench show), headline(metric), notes(case)
    optional                              model (an analytical model: prior, predict, fit, and
                                          datasheet_table(gpu, clock) for `bench model --gpu`),
                                          advisors (Advisor: `bench advise NAME`),
                                          figures(context) (report sections),
                                          attach(case, probe, device) (GPU resources: buffers,
                                          tensor maps, shared memory, extra kernel arguments),
                                          paper_case(figure) (a published figure's case id and metric)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Protocol

import numpy as np

from harness.measure.measurement import Work  # noqa: F401  (a family names it from here, with the rest)
from harness.spec import Case


@dataclass(frozen=True)
class Inputs:
    """What a probe reads (`buffer`, copied to the GPU) and what its reference needs (`values`)."""

    buffer: np.ndarray  # uint8
    values: dict[str, np.ndarray]  # the operands as exact float64/int64 arrays (A, B, a tile, ...)
    distribution: str  # how the values were drawn, stored with every measurement


@dataclass(frozen=True)
class Check:
    """One validation launch: kernel `kernel`, one block of `threads` threads, `iters`, a timing buffer
    of `timing_words`; its decoded output must equal `expected` within `tolerance` (absolute)."""

    kernel: str
    threads: int
    iters: int
    timing_words: int
    expected: np.ndarray
    tolerance: np.ndarray | float
    label: str
    grid: int = 1  # blocks (a cluster kernel's cluster size)


@dataclass(frozen=True)
class KernelExpectation:
    """What one kernel's SASS must hold: `count` x an instruction starting with `mnemonic`, and none of
    `forbidden` (prefixes) between the first and the last of them."""

    mnemonic: str
    count: int
    forbidden: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()  # instruction prefixes that share the mnemonic but do not count
    contains: str = ""  # text a counted instruction must also hold (e.g. a call's target routine)


@dataclass(frozen=True)
class SassExpectation:
    kernels: tuple[tuple[str, KernelExpectation], ...]  # (kernel, what it must hold); a kernel may recur
    executes: str  # what really runs per PTX instruction, e.g. "HMMA.16816.F32" or "F2FP + 2x HMMA.16816.F32"
    emulated: bool = False  # no native instruction: the rate is not a tensor-core rate
    invalidating_notes: tuple[str, ...] = ()  # ptxas note codes (e.g. C7510) that invalidate the case
    spill_kernels: tuple[str, ...] = ()  # kernels that must not spill


@dataclass(frozen=True)
class PaperFigure:
    """A published figure as the papers describe it (harness/published.py reads them), for a
    family's optional `paper_case(figure) -> (case_id, metric) | None` to name our counterpart."""

    instruction: str  # as the paper writes it: "wgmma.mma_async", "mma", "mma.sp", ...
    m: int
    n: int
    k: int
    dtype_a: str  # PTX names (f16, e4m3, s8, ...)
    dtype_acc: str
    operands: str | None  # SS or RS (wgmma)
    sparse: bool
    metric: str  # the source's: "latency_cycles" or "throughput" as the papers mean them, or one of ours


@dataclass(frozen=True)
class AdviceOption:
    """One option of an advisor's command, `--name`: an integer in [low, high], or one of `choices`."""

    name: str
    help: str
    low: int = 1
    high: int = 1 << 20
    choices: tuple[str, ...] = ()
    default: object = None  # None: the option is required


@dataclass(frozen=True)
class Advisor:
    """`bench advise NAME`: instruction-choice advice from a family's model. The command adds --gpu (the
    datasheet's parameters), --run (the parameters fitted to a run) and --db to `options`, and prints
    what `advise(values, fit, gpu)` returns: `values` by option name, `fit` the family model's fit
    report for --run (else None), `gpu` --gpu's name (else None)."""

    name: str
    help: str  # the command's help: a summary line, then examples
    options: tuple[AdviceOption, ...]
    advise: Callable[[dict, object, "str | None"], list[str]] = field(repr=False)


class Family(Protocol):
    name: str
    description: str
    id_prefixes: tuple[str, ...]
    example_id: str
    template: str  # file name under ptx/

    def cases(self) -> list[Case]: ...
    def suites(self) -> dict[str, "Suite"]: ...
    def parse(self, case_id: str) -> Case: ...
    def check(self, case: Case) -> None: ...
    def template_params(self, case: Case) -> dict[str, object]: ...
    def sass_expectation(self, case: Case) -> SassExpectation: ...
    def inputs(self, case: Case, rng: np.random.Generator) -> Inputs: ...
    def checks(self, case: Case, inputs: Inputs) -> list[Check]: ...
    def decode(self, case: Case, words: np.ndarray) -> np.ndarray: ...
    def output_words(self, case: Case) -> int: ...
    def plan(self, case: Case, device) -> list: ...
    def work(self, case: Case) -> Work: ...
    def peak(self, case: Case) -> float | None: ...
    def describe(self, case: Case) -> list[str]: ...
    def headline(self, metric: str) -> dict | None: ...


@dataclass(frozen=True)
class Suite:
    description: str
    make: Callable[[], list[Case]] = field(repr=False)
    part_of: tuple[str, ...] = ()  # composed suites (harness/suites.py COMPOSED) this suite belongs to
