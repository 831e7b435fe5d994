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
                                          paper_statistic(case_id, metric, launch) (None),
                                          derived(frame) ([]: figures computed across cases)

The values the members return live beside this module and are named from here too: probes (Inputs, Check,
SassExpectation, ...), references (PaperFigure, Reason), commands (Advisor, Measurer, Advice), models (FamilyModel).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from harness.families.commands import Advice, AdviceOption, Advisor, Measurer  # noqa: F401  (named from here)
from harness.families.models import FamilyModel, residual_frame  # noqa: F401  (named from here)
from harness.families.probes import Check, InFlight, Inputs, KernelExpectation, SassExpectation  # noqa: F401
from harness.families.references import PaperFigure, Reason, known_cause  # noqa: F401  (named from here)
from harness.measure.launch import NOTHING_ATTACHED, Attachment  # noqa: F401  (a family names them from here)
from harness.measure.measurement import Work  # noqa: F401  (a family names it from here, with the rest)
from harness.spec import Case


class Family(ABC):
    """The contract of an instruction family. Subclass it; give every required member (the abstract
    methods and the five class attributes); override an optional hook only where the family has one."""

    # -- required: what the family is and which ids it owns ---------------------------------------
    name: str  # the family's name: the registry's key and the `family` of its cases in the database
    description: str  # one line for `bench list` and the docs
    id_prefixes: tuple[str, ...]  # the case-id prefixes this family owns; no other family's may start
    #                               with one of them, or be the start of one (harness/registry.py)
    example_id: str  # one id of this family, for error messages
    template: str | None  # the probe template's file name under ptx/; None: a family of anchors alone (every case
    #                       an AnchorCase, a host call: harness/anchors), whose template_params is never asked

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

    def derived(self, frame) -> list:
        """Figures compare derives across several of the family's cases in one run (a sweep's knee): DataFrames of
        rows shaped like `frame`'s (the run's valid measurements of this family, every launch), each naming a
        case of the sweep, a metric and its value; a column `derived_uncertainty` (relative) may say how well the
        figure is known. Default: none."""
        return []

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

    def within_sm(self, case: Case) -> bool:
        """Does the case's measurement stay inside one SM (its registers, shared memory, L1 and units), so that a GPU
        with the same SM (gpu_specs.csv sm_of: the H200 SXM's is the H100 SXM5's) measures the same per cycle, and
        meets the figures published for that GPU (harness/analysis/figure_gpus.py)? False (the default): it reaches
        the memory beyond the SM (L2, HBM, another SM), which each board builds its own way."""
        return False

    def explain(self, case_id: str, metric: str, value: float, paper: float, launch: dict) -> "Reason | None":
        """Why a measurement (`value`, in the run's own unit, of the launch `launch`) differs from its
        published figure (`paper`), where the family knows (a Reason); None (the default): no reason known."""
        return None


# The contract by name (tests/test_family_contract.py holds the class above to these).
REQUIRED = ("name", "description", "id_prefixes", "example_id", "template", "cases", "suites", "parse", "check",
            "template_params", "sass_expectation", "inputs", "checks", "decode", "output_words", "plan", "work",
            "peak", "headline", "describe")
HOOKS = ("model", "advisors", "measurers", "roofline_cases", "attach", "figures", "findings", "paper_case", "paper_row",
         "paper_statistic", "explain", "within_sm", "derived")


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
