"""The Family contract: every question the shared stages ask about an instruction family.

A family is one object, an instance of a subclass of `Family` below (docs/architecture.md, "Families as
plug-ins" and "Adding a family"). The shared stages (build, measure, db, analysis) call it and never
branch on its name; a new family is a new package under harness/families/, its template in ptx/, and
one line in the registry (harness/registry.py).

`Family` declares every member a stage may ask for, once. The required ones a family must give (a
family class that leaves a required method out cannot be made; tests/test_family_contract.py checks
the attributes); the optional hooks have a default here that means "this family has none", so the
stages call them without asking first. A family's public members are this contract's and no others
(its helpers are private or module functions).

    question                              member
    which cases, which suites, ids        cases(), suites(), parse(id), check(case), id_prefixes, example_id
    the probe source                      template, template_params(case)  (not asked of an anchor case,
    what the SASS must show               sass_expectation(case)            a library call: harness/anchors)
    correctness                           inputs(case, rng), checks(case, inputs), decode(case, words),
                                          output_words(case)
    what to measure and how               plan(case, device) -> method specs (harness/measure/methods/),
                                          work(case), peak(case), headline(metric)
    what people read                      name, description, describe(case) (bench show)
    optional hooks (default)              model (None), advisors (()), measurers (()),
                                          attach(case, probe, device) -> Attachment (nothing),
                                          figures(context) ([]), findings(context) ([]),
                                          paper_case(figure) (None), paper_row(row) (None),
                                          explain(case_id, metric, value, paper, launch) (None), roofline_cases (()),
                                          paper_statistic(case_id, metric, launch) (None)
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from harness.measure.launch import NOTHING_ATTACHED, Attachment  # noqa: F401  (a family names them from here)
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
    also: tuple[str, ...] = ()  # other opcodes that count as this instruction (HFMA2.MMA: an HFMA2 on another pipe)


@dataclass(frozen=True)
class InFlight:
    """What one kernel's SASS must issue under a wgmma: at least `count` instructions starting with `mnemonic` between
    the closing instruction (`gsb0`) of a wgmma group that holds `group` (e.g. '.tnspB') and the WARPGROUP.DEPBAR that
    retires it, in the kernel's instruction order (an overlap that ptxas may undo by moving a wait)."""

    mnemonic: str
    group: str
    count: int


@dataclass(frozen=True)
class SassExpectation:
    kernels: tuple[tuple[str, KernelExpectation], ...]  # (kernel, what it must hold); a kernel may recur
    executes: str  # what really runs per PTX instruction, e.g. "HMMA.16816.F32" or "F2FP + 2x HMMA.16816.F32"
    emulated: bool = False  # no native instruction: the rate is not a tensor-core rate
    invalidating_notes: tuple[str, ...] = ()  # ptxas note codes (e.g. C7510) that invalidate the case
    spill_kernels: tuple[str, ...] = ()  # kernels that must not spill
    in_flight: tuple[tuple[str, InFlight], ...] = ()  # (kernel, what it must issue under a wgmma)


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
class Reason:
    """Why a measurement differs from its published figure (Family.explain), shown where the row is.
    `accounts`: the cause accounts for the difference (the verdict is "explained"); False: a known
    cause that does not close the gap by itself (the row stays DISAGREES, with this as its reason)."""

    text: str
    accounts: bool = True


def known_cause(causes: dict[tuple[str, str], str], case_id: str, metric: str) -> Reason | None:
    """The cause in `causes` ({(case-id prefix, metric): text}) of the longest prefix that starts
    `case_id`, for `metric`: a Reason that does not close the gap by itself (accounts=False)."""
    found = [(len(prefix), text) for (prefix, m), text in causes.items() if m == metric and case_id.startswith(prefix)]
    return Reason(max(found)[1], accounts=False) if found else None


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
class Advice:
    """What an advisor may return instead of lines: the answer first (`lead`, a few lines of prose), then a
    table (`--format table|csv|json|markdown`: csv and json print the table alone, the prose going to stderr),
    and `notes` after it. `keep`: columns a fitted table never leaves out."""

    lead: tuple[str, ...]
    table: object  # a pandas DataFrame
    notes: tuple[str, ...] = ()
    keep: tuple[str, ...] = ()


@dataclass(frozen=True)
class Advisor:
    """`bench advise NAME`: instruction-choice advice from a family's model. The command adds --gpu (the
    datasheet's parameters), --run (the parameters fitted to a run) and --db to `options`, and prints
    what `advise(values, fit, gpu)` returns (lines, or an Advice: its answer, a table, notes): `values` by
    option name, `fit` the family model's fit report for --run (else None), `gpu` --gpu's name (else None).
    A `shortcut` advisor is also `bench NAME` (one no command of the CLI's own is called)."""

    name: str
    help: str  # the command's help: a summary line, then examples
    options: tuple[AdviceOption, ...]
    advise: Callable[[dict, object, "str | None"], "list[str] | Advice"] = field(repr=False)
    shortcut: bool = False  # also a top-level command, `bench NAME`


@dataclass(frozen=True)
class Measurer:
    """`bench NAME`: cases a family chooses for the GPU at hand, measured in one run and read back. The command adds
    --fit-run, --gpu, --db, --jobs, --seed, --watchdog, --format and --wide to `options` (click options of its
    own), then: `prepare(values)` checks them before anything is opened (SpecError: one line); once the GPU is
    known, `plan(state, device, fit)` gives the run's label and cases (`fit`: the family model's fit to --fit-run,
    else None); the run is conducted as `bench run` conducts a suite; `report(state, results, fit)` gives an
    Advice (the answer, a table, notes)."""

    name: str
    help: str  # the command's help: a summary line, then examples
    options: tuple = ()  # click.Option objects
    prepare: Callable[[dict], object] = field(default=None, repr=False)
    plan: Callable[[object, object, object], "tuple[str, list]"] = field(default=None, repr=False)
    report: Callable[[object, list, object], Advice] = field(default=None, repr=False)


def residual_frame(rows: list[dict]):
    """A fit report's rows (each with `measured` and `fitted`) as a frame with their residual and relative miss: what
    a model's `residuals` returns where its report keeps rows."""
    import pandas as pd

    frame = pd.DataFrame(rows)
    if not frame.empty:
        frame["residual"] = frame.measured - frame.fitted
        frame["relative"] = frame.measured / frame.fitted - 1
    return frame


class FamilyModel(ABC):
    """A family's model (`Family.model`): fitted to a run's measurements, it predicts them (`bench model
    --run`, `bench compare`). `fit` is required; the optional members return None where a model has no such
    thing (no datasheet prior, no prediction of a metric, no transfer, no datasheet table)."""

    def prior(self, gpu: str):
        """The model's parameters for a GPU from its datasheet (a GPU's name as NVML or gpu_specs.csv spells it),
        before any run is fitted: what `predict` takes. Callers: compare's `model_predictions` (each row's
        prediction beside its measurement) and the simulated GPU (`synthetic_interval`, with "H100 SXM5"). None
        (the default): no prior, or none for this GPU."""
        return None

    def predict(self, case, metric: str, params) -> float | None:
        """What the model predicts for `case`'s `metric` (in the metric's own unit, a headline value) with
        `params` (a prior's, or a fit's; None: there are none, and a model may fall back on its own). None (the
        default): no prediction for this case or metric (compare shows NaN; the simulated GPU then takes the
        work at the family's peak rate)."""
        return None

    @abstractmethod
    def fit(self, frame, gpu: str, source: str):
        """The model fitted to a run's rows of this family (None where they hold nothing it fits): a report
        whose `residuals` frame `bench model` prints."""

    def transfer(self, fitted, frame, gpu: str, source: str):
        """This run's rows predicted with the parameters of `fitted` (the report of a fit to another run):
        `bench model --run B` (out of sample, analysis/models.py::score_run) and `--fit-run A`. A residual row
        whose parameters the report fits to this run itself says so (`in_sample`: True); `bench model` labels
        it in sample. None: the model carries no parameters to another run."""
        return None

    def datasheet_table(self, gpu: str, clock_mhz: float | None = None):
        """(a line, a table): the model's prediction from a GPU's datasheet (`bench model --gpu`), or None."""
        return None


class Family(ABC):
    """The contract of an instruction family. Subclass it; give every required member (the abstract
    methods and the five class attributes); override an optional hook only where the family has one."""

    # -- required: what the family is and which ids it owns ---------------------------------------
    name: str  # the family's name: the registry's key and the `family` of its cases in the database
    description: str  # one line for `bench list` and the docs
    id_prefixes: tuple[str, ...]  # the case-id prefixes this family owns; no other family's may start
    #                               with one of them, or be the start of one (harness/registry.py)
    example_id: str  # one id of this family, for error messages
    template: str  # the probe template's file name under ptx/

    # -- required: cases and suites ----------------------------------------------------------------
    @abstractmethod
    def cases(self) -> list[Case]:
        """Every case of the family (`bench list`)."""

    @abstractmethod
    def suites(self) -> dict[str, "Suite"]:
        """The family's named suites (harness/suites.py gathers them; a name is one family's)."""

    @abstractmethod
    def parse(self, case_id: str) -> Case:
        """The case of a canonical id starting with one of `id_prefixes`; SpecError if it names none."""

    @abstractmethod
    def check(self, case: Case) -> None:
        """Raise IllegalShapeError (or SpecError) where the PTX ISA does not allow `case`."""

    # -- required: the probe and its SASS ----------------------------------------------------------
    @abstractmethod
    def template_params(self, case: Case) -> dict[str, object]:
        """The values `template` is filled with (harness/build/render.py)."""

    @abstractmethod
    def sass_expectation(self, case: Case) -> SassExpectation:
        """What each kernel's SASS must hold (harness/build/sass.py checks it)."""

    # -- required: correctness -----------------------------------------------------------------------
    @abstractmethod
    def inputs(self, case: Case, rng: np.random.Generator) -> Inputs:
        """The probe's input buffer and the exact values its checks use. A family whose plan asks for
        another input distribution (a spec's `inputs`) also takes it: inputs(case, rng, pattern)."""

    @abstractmethod
    def checks(self, case: Case, inputs: Inputs) -> list[Check]:
        """The validation launches and what each must output."""

    @abstractmethod
    def decode(self, case: Case, words: np.ndarray) -> np.ndarray:
        """The output buffer's 32-bit words as the values a check compares."""

    @abstractmethod
    def output_words(self, case: Case) -> int:
        """The output buffer's size in 32-bit words."""

    # -- required: what to measure -----------------------------------------------------------------
    @abstractmethod
    def plan(self, case: Case, device) -> list:
        """The method specs to run (harness/measure/methods/: each declares its Method)."""

    @abstractmethod
    def work(self, case: Case) -> Work:
        """What one instruction does: FLOP, OP or bytes, and its unit."""

    @abstractmethod
    def peak(self, case: Case) -> float | None:
        """The work per SM per cycle at the datasheet's peak, or None where there is none."""

    @abstractmethod
    def headline(self, metric: str) -> dict | None:
        """The launch whose value stands for a case where `metric` has several; None: the best of them."""

    @abstractmethod
    def describe(self, case: Case) -> list[str]:
        """Lines that say what the case is (`bench show`)."""

    # -- optional hooks: the defaults mean "none" ----------------------------------------------------
    model: "FamilyModel | None" = None
    """An analytical model (a FamilyModel), or None: prior(gpu), predict(case, metric, params) and fit(frame, gpu,
    source) (compare, `bench model --run`, the simulated GPU), and datasheet_table(gpu, clock) for `bench model
    --gpu`. A family usually makes it a property that imports its model lazily."""

    advisors: tuple[Advisor, ...] = ()
    """`bench advise NAME`: instruction-choice advice from the family's model (Advisor)."""

    measurers: tuple[Measurer, ...] = ()
    """`bench NAME`: cases the family chooses for the GPU at hand, measured in one run (Measurer)."""

    roofline_cases: tuple[str, ...] = ()
    """Plain readers from HBM (case ids) whose best bandwidth in a run is that run's read roofline: compare
    derives `roofline_fraction` of every bandwidth of the family from the best of them (any launch)."""

    def attach(self, case: Case, probe, device) -> Attachment:
        """The family's GPU resources, after the probe is loaded and before any launch (the probe's input and output
        buffers, `probe.inputs` and `probe.out`, are there to point at): an Attachment of extra kernel arguments,
        each kernel's dynamic shared memory, the buffers they point into, a cluster size set at launch time, and host
        kernels (a library call, a verification, which may launch the probe's own kernels through `probe.enqueue`).
        The runner hands it to the probe (`probe.attach`). Default: nothing."""
        return NOTHING_ATTACHED

    def figures(self, context) -> list:
        """Report sections, [(heading, paragraphs, Path | DataFrame | None)]. Default: none."""
        return []

    def findings(self, context) -> list:
        """The family's question answered from the newest measurements (the results site's first
        sections, a report's first summary bullets), as figures() returns sections. Default: none."""
        return []

    def paper_case(self, figure: "PaperFigure") -> tuple[str, str] | None:
        """A published tensor-core figure's counterpart: (case id, metric), or None: not ours (the
        default)."""
        return None

    def paper_row(self, row: dict) -> dict | str | None:
        """A published data-movement row's counterpart: our case, metric, value in our units and the
        launch the figure is of (a dict), or a string saying why there is none; None: not ours (the
        default)."""
        return None

    def paper_statistic(self, case_id: str, metric: str, launch: dict | None = None) -> tuple | None:
        """The statistic of our samples that is like the papers' figure, where it is not the median:
        ("minimum", n) says the samples are n units (placements) measured at once, repeated launch after
        launch (unit i is sample i mod n), and the paper reports its fastest: compare takes the minimum
        over our n units and counts n of them; ("median", n) their median. A third element names the
        units ("placements" by default). `launch`: the measurement's (a run of another version may have
        measured other units). None (the default): the median of every sample."""
        return None

    def explain(self, case_id: str, metric: str, value: float, paper: float, launch: dict) -> "Reason | None":
        """Why a measurement (`value`, in the run's own unit, of the launch `launch`) differs from its
        published figure (`paper`), where the family knows (a Reason); None (the default): no reason known."""
        return None


# The contract by name (tests/test_family_contract.py holds the class above to these).
REQUIRED = ("name", "description", "id_prefixes", "example_id", "template", "cases", "suites", "parse", "check",
            "template_params", "sass_expectation", "inputs", "checks", "decode", "output_words", "plan", "work",
            "peak", "headline", "describe")
HOOKS = ("model", "advisors", "measurers", "roofline_cases", "attach", "figures", "findings", "paper_case", "paper_row",
         "paper_statistic", "explain")


def overrides(family: Family, hook: str) -> bool:
    """Does `family` give `hook` itself, rather than inherit the default? (The reference digest hashes
    the source of the mapping hooks a family gives: harness/published.py.)"""
    if hook not in HOOKS:
        raise ValueError(f"{hook!r} is not an optional hook of Family")
    return hook in vars(family) or any(hook in vars(klass) for klass in type(family).__mro__
                                       if klass not in (Family, ABC, object))


@dataclass(frozen=True)
class Suite:
    description: str
    make: Callable[[], list[Case]] = field(repr=False)
    part_of: tuple[str, ...] = ()  # composed suites (harness/suites.py COMPOSED) this suite belongs to
