"""The commands of the families' models: `bench model` (predict from a datasheet, or score on a run) and
`bench advise` (one command per advisor a family offers, some also `bench NAME`)."""

from __future__ import annotations

import functools
import inspect
import itertools

import click
import pandas as pd

from harness import output
from harness.paper import PAPER_GPU
from harness.cli.app import Finite, RUN_ID, DB_HELP, table_options, print_frame, say, cli, open_store


@cli.command()
@click.option("--gpu", default=PAPER_GPU, show_default=True, help="a GPU of gpu_specs.csv (H100 SXM5, H800 PCIe, H20, ...)")
@click.option("--clock", type=Finite(100, 5000), metavar="MHZ", default=None,
              help="SM clock in MHz for the predicted TFLOPS (default: the datasheet's boost clock)")
@click.option("--run", "run_id", default=None, type=RUN_ID,
              help="score every family's model on this run: fitted to another run (out of sample), its parameters "
                   "and how well they predict this run")
@click.option("--fit-run", "fit_run_id", default=None, type=RUN_ID, metavar="RUN_ID",
              help="with --run: the run to fit the models to (default: the nearest other run of the same GPU "
                   "model holding the family's cases, else of another GPU model)")
@click.option("--in-sample", is_flag=True, help="with --run: fit the models to the run itself and score them on it "
                                                "(how well they fit, not how well they predict)")
@click.option("--residuals", is_flag=True, help="with --run, every measurement beside the model's value")
@click.option("--db", default=None, help=DB_HELP)
@table_options
def model(gpu, clock, run_id, fit_run_id, in_sample, residuals, db, fmt, wide):
    """Predict from a GPU's datasheet parameters (each family whose model can), or score every family's
    model on a run: its parameters, and each measurement beside the model's value (residuals).

    With --run the misses are out of sample: each model is fitted to another run (the nearest of the same
    GPU model holding the family's cases, else of another GPU model; --fit-run names one) and predicts this
    run. --in-sample fits and scores on the run itself. Every family's heading says which it is; a model that
    carries no parameters to another run, or a family no other run holds, is scored in sample and says why.

    \b
    Examples:
      bench model --gpu H20
      bench model --gpu H800 --clock 1560
      bench model --run 4
      bench model --run 4 --residuals
      bench model --run 133 --in-sample
      bench model --run 80 --fit-run 76
    """
    _check_model_options(run_id, fit_run_id, in_sample, residuals)
    if run_id is None:
        _datasheet_predictions(gpu, clock, fmt, wide)
        return
    from harness.analysis.models import score_run

    store = open_store(db)
    if fit_run_id is not None:
        store.run_info(fit_run_id)  # StoreError naming the valid runs if there is no such run
    for family, scored in score_run(store, run_id, fit_run_id=fit_run_id, in_sample=in_sample).items():
        report = scored.report
        rows = _in_natural_order(report.residuals)
        if fmt != "table":
            click.echo(f"{family}: {scored.basis}")
            print_frame(report.parameters, fmt, wide)
            if residuals:
                print_frame(rows, fmt, wide)
            continue
        _model_summary(family, report.parameters, rows, wide, scored.basis, scored.label)
        if residuals and len(rows):
            print_frame(_readable_residuals(rows), fmt, wide,
                        first=("case_id", "metric", "measured", "fitted", "residual", "relative"),
                        keep=("case_id", "metric", "measured", "fitted", "relative"))


def _check_model_options(run_id, fit_run_id, in_sample: bool, residuals: bool) -> None:
    """`bench model`'s options that do not go together: one clear line each."""
    given = [f"--{name}" for name in ("gpu", "clock")
             if click.get_current_context().get_parameter_source(name) != click.core.ParameterSource.DEFAULT]
    if run_id is not None and given:  # a fit takes its GPU and clocks from the run's measurements
        raise click.UsageError(f"{' and '.join(given)} and --run do not go together: --run fits the model to "
                               "the run's own GPU and clocks; --gpu/--clock predict from a datasheet")
    if residuals and run_id is None:
        raise click.UsageError("--residuals needs --run (the residuals of a fit to a run)")
    if fit_run_id is not None and run_id is None:
        raise click.UsageError("--fit-run needs --run (the run whose measurements the other run's fit predicts)")
    if in_sample and (run_id is None or fit_run_id is not None):
        raise click.UsageError("--in-sample needs --run and no --fit-run (it fits the models to --run itself)")


def _datasheet_predictions(gpu: str, clock, fmt: str, wide: bool) -> None:
    """Every family's prediction from the GPU's datasheet (those whose model makes one), a line and a table each."""
    from harness.registry import FAMILIES

    tables = [(name, found) for name, f in FAMILIES.items()
              if f.model is not None and (found := f.model.datasheet_table(gpu, clock)) is not None]
    for name, (line, table) in tables:
        say(f"{name}: {line}" if len(tables) > 1 else line)
        print_frame(table, fmt, wide)


def _in_natural_order(rows: pd.DataFrame) -> pd.DataFrame:
    """The residuals by case id, m64n8 before m64n104 (numbers as numbers), indexed from 0."""
    from harness.analysis.run_verdicts import natural_key

    if "case_id" in rows and len(rows):
        rows = rows.iloc[sorted(range(len(rows)), key=lambda i: natural_key(str(rows.case_id.iloc[i])))]
    return rows.reset_index(drop=True)


def _readable_residuals(rows: pd.DataFrame) -> pd.DataFrame:
    """The residuals as a person reads them: a fraction of a per cent, not -1.0120e-05."""
    shown = rows.copy()
    if "relative" in shown:
        shown["relative"] = [f"{100 * v:+.3f} %" if v == v else "" for v in shown.relative]
    for column in ("measured", "fitted", "residual"):
        if column in shown:
            shown[column] = [output.readable(v, 6) if v == v else "" for v in shown[column]]
    return shown


def _model_summary(family: str, parameters: pd.DataFrame, residuals: pd.DataFrame, wide: bool, basis: str,
                   label: str) -> None:
    """A family's model on a terminal: a heading (with what every fit shares, e.g. the GPU) and the basis (out of
    sample: the run fitted and the run scored; or in sample, and why), the fitted parameters (every one of them:
    one row a fit, or, where that is too wide, one row a parameter), and how well the model predicts: the median
    and the worst relative residual, labelled out of sample or in sample."""
    constant = [c for c in parameters.columns if len(parameters) > 1 and parameters[c].nunique(dropna=False) == 1
                and not pd.api.types.is_numeric_dtype(parameters[c])]
    shared = ", ".join(str(parameters[c].iloc[0]) for c in constant
                       if parameters[c].iloc[0] is not None and parameters[c].iloc[0] == parameters[c].iloc[0])
    click.echo(output.visible(f"{family}" + (f" ({shared})" if shared else "") + ":"))
    say(basis)
    table = parameters.drop(columns=constant)
    numbers = [c for c in table.columns if pd.api.types.is_numeric_dtype(table[c])]
    text = [c for c in table.columns if c not in numbers]
    whole = output.text_table(table, wide=True) if len(table) else None  # every column at its full width
    too_wide = whole is not None and not wide and max(map(len, whole.text.splitlines())) > output.terminal_width()
    if too_wide and 1 <= len(table) <= 6 and numbers:  # one row a parameter, one column a fit
        # the text columns ahead of the first number name a fit (gpu, types); a text value after it (mma's latency,
        # "10.22 + 3.437/cycle") is a parameter, a row like the others, never part of the heading (issue 46, item 6)
        names = list(itertools.takewhile(lambda c: c in text, table.columns))
        rows = [c for c in table.columns if c not in names]
        labels = [" ".join(str(v) for v in row if v is not None and v == v) or f"fit {i + 1}"
                  for i, row in enumerate(table[names].itertuples(index=False))] if names else \
            [f"fit {i + 1}" for i in range(len(table))]
        flipped = pd.DataFrame({"parameter": rows,
                                **{label: [_parameter_value(table[c].iloc[i]) for c in rows]
                                   for i, label in enumerate(output.unique_columns(labels))}})
        print_frame(flipped, "table", wide, keep=list(flipped.columns))
    elif len(table):
        print_frame(table, "table", wide, keep=list(table.columns))
    if "relative" in residuals and residuals.relative.notna().any():
        _misses(residuals, label)
    elif len(residuals):
        say(f"{len(residuals)} measurements beside the fit: --residuals lists them")


def _parameter_value(value) -> str:
    """A fitted parameter as the flipped table shows it: a number readable, a text as it is, nothing as blank."""
    if value is None or value != value:
        return ""
    if isinstance(value, str):
        return value
    return output.readable(float(value), 6)


def _misses(residuals: pd.DataFrame, label: str) -> None:
    """The median and the worst relative miss, per model where the rows name several, over the rows the
    model predicts (a `predicts` column False marks a row whose value is an input the model was given, e.g.
    a roofline: counted apart, never in the misses)."""
    predicts = residuals.predicts.astype(bool) if "predicts" in residuals else pd.Series(True, index=residuals.index)
    counted = residuals[predicts & residuals.relative.notna()]
    groups = (list(counted.groupby("model", sort=False)) if "model" in counted and counted.model.nunique() > 1
              else [(None, counted)])
    for name, rows in groups:
        if rows.empty:
            continue
        own = "in_sample" in rows and rows.in_sample.fillna(False).astype(bool).all()  # fitted to this run itself
        relative = rows.relative.abs()
        worst = rows.loc[relative.idxmax()]
        where = ", ".join(str(worst[c]) for c in ("case_id", "metric", "launch", "model")
                          if c in worst and worst[c] == worst[c] and not (c == "model" and name is not None))
        say(f"{'in sample' if own else label}, " + (f"{name}: " if name is not None else "") + f"{len(rows)} measurements: median miss "
            f"{100 * relative.median():.3g} %, worst {100 * relative.max():.3g} %" + (f" ({where})" if where else ""))
    left = int((~predicts).sum())
    if left:
        say(f"{left} more at an input the model was given (e.g. the roofline): not counted; --residuals lists each")
    else:
        say("--residuals lists each")


class AdvisorGroup(click.Group):
    """A group whose commands are the families' advisors, made when first asked for (so that other
    commands never import the families for them)."""

    @functools.cached_property
    def advisors(self) -> dict[str, click.Command]:
        from harness.registry import FAMILIES

        return {advisor.name: advice_command(family, advisor)
                for family in FAMILIES.values() for advisor in family.advisors}

    @property
    def shortcuts(self) -> dict[str, click.Command]:
        """The advisors that are also `bench NAME` (Advisor.shortcut), and the families' measurers (`bench gemm`:
        harness/cli/measurers.py)."""
        from harness.cli.measurers import measurer_commands

        return {**{name: command for name, command in self.advisors.items() if command.shortcut},
                **measurer_commands()}

    def list_commands(self, ctx):
        return sorted(self.advisors)

    def get_command(self, ctx, name):
        return self.advisors.get(name)


@cli.group(cls=AdvisorGroup)
def advise():
    """Instruction-choice advice from a family's model (one command per advisor a family offers).

    \b
    Example:
      bench advise swapab --m 16 --n 64 --k 16 --gpu H20
    """


def advice_command(family, advisor) -> click.Command:
    """`bench advise NAME` from a family's Advisor (harness/families/base.py): its options, and --gpu,
    --run and --db, which choose the model's parameters."""

    def run_advisor(gpu, run_id, db, fmt, wide, **values):
        from harness.families.base import Advice

        if gpu and run_id is not None:
            raise click.UsageError("give --gpu or --run, not both")
        fit = None
        if run_id is not None:
            from harness.analysis.models import fit_run

            fits = fit_run(open_store(db), run_id)
            if family.name not in fits:
                raise click.UsageError(f"run {run_id} has no {family.name} measurements its model fits")
            fit = fits[family.name]
        advice = advisor.advise(values, fit, gpu)
        if not isinstance(advice, Advice):  # lines
            if fmt != "table":
                raise click.UsageError(f"`{advisor.name}` prints lines, not a table: --format table only")
            for line in advice:
                click.echo(output.visible(line))
            return
        prose = fmt in ("table", "markdown")  # csv and json: the table alone on stdout, the prose on stderr
        for line in advice.lead:
            say(line, err=not prose)
        print_frame(advice.table, fmt, wide, keep=advice.keep)
        for line in advice.notes:
            say(line, err=not prose)

    options = [click.Option([f"--{o.name}", o.name], help=o.help,
                            type=click.Choice(o.choices) if o.choices else click.IntRange(o.low, o.high),
                            # click 8.3 counts default=None as a default: a required option passes none
                            **({"required": True} if o.default is None else {"default": o.default,
                                                                              "show_default": True}))
               for o in advisor.options]
    options += [click.Option(["--gpu"], default=None, help="predict with this GPU's datasheet parameters"),
                click.Option(["--run", "run_id"], default=None, type=RUN_ID,
                             help="predict with the parameters fitted to this run"),
                click.Option(["--db"], default=None, help=DB_HELP)]
    options += [click.Option(["--format", "fmt"], type=click.Choice(output.FORMATS), default="table", show_default=True,
                             help="table: fitted to the terminal; csv, json, markdown: every column, whole (an "
                                  "advisor that prints lines takes table only)"),
                click.Option(["--wide"], is_flag=True, help="a table keeps every column, however wide")]
    command = click.Command(advisor.name, callback=run_advisor, params=options, help=inspect.cleandoc(advisor.help))
    command.shortcut = advisor.shortcut
    return command
