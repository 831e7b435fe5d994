"""The commands a family adds to `bench` (harness/families/base.py, the Family contract's `advisors` and
`measurers`): Advisor (`bench advise NAME`, its AdviceOptions), Measurer (`bench NAME`), and the Advice either
returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable


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
