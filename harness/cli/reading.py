"""The commands that read the database: `bench runs`, `sql`, `compare`, `model`, `advise`,
`references` and `fleet`."""

from __future__ import annotations

import functools
import inspect
import sys

import click
import pandas as pd

from harness import output
from harness.paper import DEFAULT_TOLERANCE, PAPER_GPU
from harness.cli.app import (
    Finite, RUN_ID, DB_HELP, EXIT_DIFFERENCES, COMPARE_COLUMNS, table_options, print_frame, say, cli, open_store,
)


@cli.command()
@click.option("--db", default=None, help=DB_HELP)
@table_options
def runs(db, fmt, wide):
    """List the stored runs, newest last.

    \b
    Example:
      bench runs --format markdown
    """
    frame = open_store(db).runs()
    if fmt == "table":
        frame["started_at"] = pd.to_datetime(frame.started_at, format="mixed")
    print_frame(frame, fmt, wide, first=("run", "started_at", "status", "gpu", "suite", "cases", "invalid",
                                         "faults", "resumes", "git_commit", "filter"))


@cli.command(context_settings={"ignore_unknown_options": True})
@click.argument("query")
@click.option("--db", default=None, help=DB_HELP)
@table_options
@click.option("--write", is_flag=True, help="allow the statement to change the database")
@click.option("--max-rows", default=10_000, show_default=True, type=click.IntRange(0, 2**63 - 1),
              help="print at most this many rows (0: all; csv and json stream, a table holds its rows)")
@click.option("--timeout", default=600, show_default=True, type=Finite(0, 86400), metavar="SECONDS",
              help="stop the statement after this long (0: no limit)")
def sql(query, db, fmt, wide, write, max_rows, timeout):
    """Run one SQL statement on the results database (views: results). Read-only unless --write.

    Exactly one statement runs, on SQLite and on PostgreSQL. Rows are streamed: csv and json are
    written as they come, so any result fits in memory; --max-rows bounds what is printed (a note on
    stderr says when rows were left). Ctrl-C stops a running statement.

    \b
    Examples:
      bench sql "SELECT case_id, value FROM results WHERE metric='issue_interval_cycles'"
      bench sql "SELECT gpu_name, n, value FROM results WHERE metric='throughput_tflops'" --format csv
      bench sql "SELECT * FROM measurement_rows" --format csv --max-rows 0 > all.csv
      bench sql --write "UPDATE runs SET status='interrupted' WHERE id=7"
    """
    if not query.strip():
        raise click.BadParameter("is empty: give one SQL statement", param_hint="QUERY")
    if "\x00" in query:
        raise click.BadParameter("contains a NUL character", param_hint="QUERY")
    from harness.db.connections import only_comments

    if only_comments(query):
        raise click.BadParameter("holds only comments: give one SQL statement", param_hint="QUERY")
    store = open_store(db, write=write, upgrade=False)
    with store.stream(query, write=write, timeout_s=timeout or None) as rows:
        if write and not rows.columns:
            count = rows.rowcount if rows.rowcount is not None and rows.rowcount >= 0 else 0
            message = f"{count} row{'s' if count != 1 else ''} changed"
        else:
            if not rows.columns:
                list(rows.chunks)
            # color=True: click would strip what looks like ANSI codes from values into a file or pipe
            # (csv and json keep every value whole); on a terminal write_rows writes them out itself
            written, more = output.write_rows(rows.columns, rows.chunks, fmt, max_rows or None,
                                              functools.partial(click.echo, color=True),
                                              lambda frame: print_frame(frame, fmt, wide, keep=whole_columns(frame)),
                                              terminal=sys.stdout.isatty())
            message = None
    if message:
        click.echo(message)
    elif more:
        click.echo(f"note: stopped after {written} rows (--max-rows {max_rows}); the statement has more: "
                   "narrow it, or pass --max-rows 0 with --format csv", err=True)


def whole_columns(frame) -> list[str]:
    """The columns of `bench sql`'s answer a terminal table folds but never cuts (issue 46, item 5): those whose
    every value is one word of at most MAX_WORD characters (case ids, GPU names without spaces, hashes), so that an
    id stays whole; prose is still cut at output.TABLE_CELL."""
    kept = []
    for name in frame.columns:
        values = frame[name].dropna()
        if len(values) and all(isinstance(v, str) and " " not in v and len(v) <= MAX_WORD for v in values):
            kept.append(name)
    return kept


MAX_WORD = 160  # characters: longer than any case id (spec.MAX_CASE_ID, 128)


@cli.command()
@click.option("--run", "run_id", default=None, type=RUN_ID, help="run to compare (default: the newest complete run)")
@click.option("--against", default="paper", show_default=True, metavar="paper|model|RUN_ID",
              help="the paper's H800 figures, the model's predictions, or another run")
@click.option("--metric", default=None, help="only this metric (e.g. issue_interval_cycles)")
@click.option("--disagreements", is_flag=True, help="only the rows that disagree (or differ from the other run)")
@click.option("--all", "every_row", is_flag=True,
              help="every row (default: the summary and the rows that differ, at most a screen of them)")
@click.option("--gate-energy", is_flag=True,
              help="a power or energy difference from the other run fails too (default: reported, exit 0)")
@click.option("--include-flagged", is_flag=True, help="keep measurements taken while throttled or shared")
@click.option("--exit-zero", is_flag=True, help="exit 0 even where rows differ (default: exit 3, for CI)")
@click.option("--gate-models", is_flag=True,
              help="against a run of another GPU model, a slower row fails too (default: reported, exit 0)")
@click.option("--tolerance", default=DEFAULT_TOLERANCE, show_default=True, type=Finite(0, 10),
              help="relative difference allowed on top of the measurement's spread")
@click.option("--db", default=None, help=DB_HELP)
@table_options
def compare(run_id, against, metric, disagreements, every_row, gate_energy, include_flagged, exit_zero, gate_models,
            tolerance, db, fmt, wide):
    """Compare a run with the paper, the model, or another run: one row per case and metric.

    Cycle metrics compare directly; TFLOPS compare per cycle per SM (ours by the SM clock measured in
    the kernel, the paper's by the clock it printed, else the clock its figure implies), and the
    note names the reason of every verdict but "agrees". Run against run says "same" when the
    difference is within the noise of either; power and energy say "more energy" or "less energy"
    (power is not speed). --disagreements keeps the rows that differ beyond the noise and have no
    reason given (DISAGREES, slower, faster, more or less energy).

    \b
    A table leads with the summary (both sides, the count of each verdict), then the rows that
    differ, at most a screen of them; --all prints every row. Other formats give every row (the
    summary on stderr). Exit status: 0 when no row is DISAGREES (against the paper or the model) or
    slower (against a run of the same GPU model; more energy too with --gate-energy); 3 when one is, so a
    CI job can gate on it (--exit-zero: 0 regardless); 4 when two runs share no case and metric. Two
    runs of different GPU models differ because the boards do: the comparison says so first and
    exits 0 on slower rows unless --gate-models.

    \b
    Examples:
      bench compare
      bench compare --run 5 --against 4 --disagreements
      bench compare --against model --metric issue_interval_cycles --format markdown
    """
    from harness.analysis.compare import BadArgument, comparison, parse_against, run_label

    try:
        parse_against(against)  # before the database is opened
        store = open_store(db)
        result = comparison(store, run_id, against, metric, disagreements, include_flagged, tolerance, gate_energy)
    except BadArgument as exc:
        raise click.BadParameter(str(exc), param_hint=f"--{exc.parameter}") from None
    if result.no_model:
        click.echo("note: no model prediction for this run (its GPU has no row in gpu_specs.csv, or its "
                   "families have no model): the model columns are empty", err=True)
    other = f"run {result.against} ({run_label(store, result.against)})" if isinstance(result.against, int) else \
        (_figures_of(result.frame) if against == "paper" else "the model")
    boards = _gpu_models(store, result.run_id, result.against) if isinstance(result.against, int) else None
    if boards:
        click.echo(f"note: run {result.run_id} is of an {boards[0]} and run {result.against} of an {boards[1]}: a "
                   "difference is the boards', not a regression" + ("" if gate_models else
                   "; slower rows are reported, not failed (--gate-models fails on them)"), err=True)
    side = f"run {result.run_id} ({run_label(store, result.run_id)})"
    if fmt != "table":
        print_frame(result.frame, fmt, wide)
        counts = ", ".join(f"{n} {verdict}" for verdict, n in result.counts().items()) or "no rows"
        click.echo(f"{side} against {other}: {counts}", err=True)
    else:
        _compare_table(result, f"{side}\nagainst {other}", disagreements or every_row, wide, gate_energy,
                       gate_speed=gate_models or not boards)
    if against == "paper" and _nothing_published(result):
        say(_what_to_ask(store, result.run_id))
    if result.failed and not exit_zero and (gate_models or not boards or _fails_beyond_speed(result)):
        sys.exit(EXIT_DIFFERENCES)


def in_the_papers_unit(frame):
    """Rows whose paper figure is in another unit than ours (a latency we count in cycles, the paper in ns) show
    our value as compared, in the paper's unit, so that a row has one unit (issue 46, item 3); `--format csv` keeps
    both (`value`, `unit`; `comparable`, `paper_unit`)."""
    if not {"comparable", "paper_unit", "unit", "value"} <= set(frame.columns):
        return frame
    other = frame.paper_unit.notna() & (frame.paper_unit != "") & (frame.paper_unit != frame.unit) \
        & frame.comparable.notna()
    if not other.any():
        return frame
    frame = frame.copy()
    frame.loc[other, "value"] = frame.loc[other, "comparable"]
    frame.loc[other, "unit"] = frame.loc[other, "paper_unit"]
    return frame


def _nothing_published(result) -> bool:
    """Every row of a comparison with the paper is "no paper figure" (issue 46, item 2: a fresh clone's first
    answer was 363 of them, for the newest run, a GEMM run)."""
    from harness import verdicts

    counts = result.counts()
    return len(counts) > 0 and set(counts.index) == {verdicts.NO_PAPER_FIGURE}


def _what_to_ask(store, run_id: int) -> str:
    """What to compare instead: the newest run with a published counterpart, the model, another run."""
    newest = store.query("SELECT MAX(run_id) AS run FROM results WHERE case_id IN "
                         "(SELECT case_id FROM reference_figures WHERE case_id IS NOT NULL)").run.iloc[0]
    where = (f"the newest run with some is run {int(newest)}: `bench compare --run {int(newest)}`; "
             if newest == newest and newest is not None else "")
    return (f"note: no case of run {run_id} has a published figure; {where}or ask run {run_id} against the model "
            f"(`bench compare --run {run_id} --against model`) or another run (`--against RUN`)")


def _gpu_models(store, run_id: int, other: int) -> tuple[str, str] | None:
    """The two runs' GPU models where they differ (None: the same model)."""
    first, second = store.run_info(run_id).gpu_name, store.run_info(other).gpu_name
    return (first, second) if first != second else None


def _fails_beyond_speed(result) -> bool:
    """A failing row that is not "slower" (more energy under --gate-energy): across GPU models it still fails."""
    from harness import verdicts

    return result.failing > int((result.frame[result.column] == verdicts.SLOWER).sum())


def _figures_of(frame) -> str:
    """Whose published figures a comparison holds: the papers' (H800 PCIe) and, for a run of another GPU model,
    the figures stated for that model (the seed documents' H100 SXM)."""
    gpus = sorted(set(frame["paper_gpu"].dropna())) if "paper_gpu" in frame else []
    others = [g for g in gpus if g != PAPER_GPU]
    return f"the paper ({PAPER_GPU})" + (f" and the figures stated for the {', '.join(others)}" if others else "")


def _compare_table(result, sides: str, every: bool, wide: bool, gate_energy: bool, gate_speed: bool = True) -> None:
    """`bench compare` on a terminal: the summary (both sides, one line per verdict, those that fail
    first), the rows that differ (performance, then power and energy) and, with `every`, the rest;
    without it, at most a screen (the terminal's height) in all."""
    import shutil

    from harness import verdicts

    frame = result.frame
    kind = result.against if result.against in COMPARE_COLUMNS else "run"
    if kind == "paper":
        frame = in_the_papers_unit(frame)
    first = COMPARE_COLUMNS[kind]
    names = {"paper_ratio": "ratio"} if kind == "paper" else \
        {"model_ratio": "ratio", "model_verdict": "verdict"} if kind == "model" else {}
    frame = frame.rename(columns=names)  # short headers: a narrow table keeps its columns
    first = tuple(names.get(c, c) for c in first)
    keep = ("case_id", "metric", "value", "paper", "model", "other", "ratio", "verdict")
    order = [*verdicts.FAILING, verdicts.FASTER, verdicts.MORE_ENERGY, verdicts.LESS_ENERGY, verdicts.EXPLAINED,
             verdicts.PAPER_CLOCK_DOUBTFUL, verdicts.CLOCK_NOT_PRINTED, verdicts.AGREES, verdicts.SAME,
             verdicts.FOR_CONTEXT, verdicts.NO_PAPER_FIGURE]
    counts = frame.verdict.replace("", "no model").value_counts()
    ranked = sorted(counts.items(), key=lambda item: (order.index(item[0]) if item[0] in order else len(order),
                                                      -item[1]))
    lines = sides.splitlines()
    for verdict, n in ranked:
        gloss = ""
        if verdict == verdicts.SLOWER and not gate_speed:
            gloss = " (another GPU model: reported, gating only with --gate-models)"
        elif verdict in verdicts.FAILING:
            gloss = " (fails: exit 3)"
        elif verdict == verdicts.MORE_ENERGY:
            gloss = " (fails: exit 3)" if gate_energy else " (power is not speed: --gate-energy gates on it)"
        lines.append(f"  {n:>5} {verdict}{gloss}")
    if not ranked:
        lines.append("  no rows")
    click.echo("\n".join(lines))

    performance = frame[frame.verdict.isin(verdicts.FAILING + (verdicts.FASTER,))]
    energy = frame[frame.verdict.isin((verdicts.MORE_ENERGY, verdicts.LESS_ENERGY))]
    rest = frame[~frame.index.isin(performance.index) & ~frame.index.isin(energy.index)]
    energy_heading = "power and energy (they follow the board, its power limit and its inputs): " + \
                     ("reported, gating only with --gate-energy" if not gate_energy else "gating (--gate-energy)")
    sections = [(performance, "rows that differ:"), (energy, energy_heading)]
    if every:
        sections.append((rest, "the other rows:"))
    # the screen less the summary, and three lines after the rows: "... more such rows", a blank and the count
    budget = max(shutil.get_terminal_size((80, 24)).lines, 24) - len(lines) - 3
    left_out = 0 if every else len(rest)
    for rows, heading in sections:
        if rows.empty:
            continue
        shown = len(rows)
        while True:
            text, hidden = _rendered(rows.iloc[:shown], heading, first, keep, wide)
            if every or shown <= 1 or len(text.splitlines()) <= budget:
                break
            shown = max(1, shown * budget // max(len(text.splitlines()), 1) if shown > 8 else shown - 1)
        budget -= len(text.splitlines())
        click.echo(text, color=True)
        if hidden:
            click.echo(f"note: {len(hidden)} more column{'s' if len(hidden) > 1 else ''} ({', '.join(hidden)}): "
                       "--wide shows them", err=True)
        if shown < len(rows):
            click.echo(f"... {len(rows) - shown} more such rows: --disagreements shows every one")
    if performance.empty and energy.empty:
        click.echo("\nno row differs beyond the noise")
    if left_out:
        kinds = ", ".join(f"{n} {v}" for v, n in ranked
                          if v not in verdicts.DIFFERING) or f"{left_out}"
        click.echo("")
        say(f"{left_out} rows that do not differ ({kinds}): --all shows them")


def _rendered(rows, heading: str, first, keep, wide: bool) -> tuple[str, list[str]]:
    table = output.render(rows.reset_index(drop=True), "table", first, wide, keep=keep, below="note",
                          color=sys.stdout.isatty() and "NO_COLOR" not in __import__("os").environ)
    import textwrap

    heading = textwrap.fill(heading, width=output.terminal_width(), subsequent_indent="  ")
    return "\n".join(["", heading, table.text]), table.hidden


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
    if run_id is None:
        from harness.registry import FAMILIES

        tables = [(name, found) for name, f in FAMILIES.items()
                  if f.model is not None and (found := f.model.datasheet_table(gpu, clock)) is not None]
        for name, (line, table) in tables:
            say(f"{name}: {line}" if len(tables) > 1 else line)
            print_frame(table, fmt, wide)
        return
    from harness.analysis.run_verdicts import natural_key
    from harness.analysis.models import score_run

    store = open_store(db)
    if fit_run_id is not None:
        store.run_info(fit_run_id)  # StoreError naming the valid runs if there is no such run
    for family, scored in score_run(store, run_id, fit_run_id=fit_run_id, in_sample=in_sample).items():
        report = scored.report
        rows = report.residuals
        if "case_id" in rows and len(rows):  # m64n8 before m64n104: numbers as numbers
            rows = rows.iloc[sorted(range(len(rows)), key=lambda i: natural_key(str(rows.case_id.iloc[i])))]
        rows = rows.reset_index(drop=True)
        if fmt != "table":
            click.echo(f"{family}: {scored.basis}")
            print_frame(report.parameters, fmt, wide)
            if residuals:
                print_frame(rows, fmt, wide)
            continue
        _model_summary(family, report.parameters, rows, wide, scored.basis, scored.label)
        if residuals and len(rows):
            shown = rows.copy()
            if "relative" in shown:  # a person reads a fraction of a per cent, not -1.0120e-05
                shown["relative"] = [f"{100 * v:+.3f} %" if v == v else "" for v in shown.relative]
            for column in ("measured", "fitted", "residual"):
                if column in shown:
                    shown[column] = [output.readable(v, 6) if v == v else "" for v in shown[column]]
            print_frame(shown, fmt, wide, first=("case_id", "metric", "measured", "fitted", "residual", "relative"),
                        keep=("case_id", "metric", "measured", "fitted", "relative"))


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
    click.echo(f"{family}" + (f" ({shared})" if shared else "") + ":")
    say(basis)
    table = parameters.drop(columns=constant)
    numbers = [c for c in table.columns if pd.api.types.is_numeric_dtype(table[c])]
    text = [c for c in table.columns if c not in numbers]
    whole = output.text_table(table, wide=True) if len(table) else None  # every column at its full width
    too_wide = whole is not None and not wide and max(map(len, whole.text.splitlines())) > output.terminal_width()
    if too_wide and 1 <= len(table) <= 6 and numbers:  # one row a parameter, one column a fit
        labels = [" ".join(str(v) for v in row) or f"fit {i + 1}"
                  for i, row in enumerate(table[text].itertuples(index=False))] if text else \
            [f"fit {i + 1}" for i in range(len(table))]
        flipped = pd.DataFrame({"parameter": numbers,
                                **{label: [output.readable(float(table[c].iloc[i]), 6)
                                           if table[c].iloc[i] == table[c].iloc[i] else "" for c in numbers]
                                   for i, label in enumerate(output.unique_columns(labels))}})
        print_frame(flipped, "table", wide, keep=list(flipped.columns))
    elif len(table):
        print_frame(table, "table", wide, keep=list(table.columns))
    if "relative" in residuals and residuals.relative.notna().any():
        _misses(residuals, label)
    elif len(residuals):
        say(f"{len(residuals)} measurements beside the fit: --residuals lists them")


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
                click.echo(line)
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


@cli.command()
@click.option("--unmapped", is_flag=True, help="the figures that map to none of our cases or metrics, and why")
@click.option("--all", "every_row", is_flag=True,
              help="with --unmapped, every figure (default: a table, the count of each reason first)")
@click.option("--db", default=None, help=DB_HELP)
@table_options
def references(unmapped, every_row, db, fmt, wide):
    """The published figures shipped with the harness (paper tables, the article's, datasheets).

    \b
    Examples:
      bench references
      bench references --unmapped
      bench references --unmapped --all --format csv
    """
    store = open_store(db)
    if not unmapped:
        frame = store.query("SELECT source, gpu_name, metric, COUNT(*) AS figures, COUNT(also_in) AS also_printed_elsewhere "
                            "FROM reference_values GROUP BY source, gpu_name, metric ORDER BY source, gpu_name")
        print_frame(frame, fmt, wide, first=("source", "gpu_name", "metric", "figures"))
        return
    frame = store.query("SELECT source, source_table, gpu, metric AS mapped_metric, value, unit, unmapped_reason "
                        "FROM reference_figures WHERE case_id IS NULL ORDER BY id")
    if fmt != "table":  # a program gets every figure, whole
        print_frame(frame, fmt, wide)
        return
    # a figure in the unit a person reads: "108 SMs", not a column of mixed magnitudes in exponents
    frame["figure"] = [f"{output.readable(v)} {u or ''}".strip() if v == v else (u or "")
                       for v, u in zip(frame.value, frame.unit)]
    frame["reason"] = frame.unmapped_reason.fillna("").map(lambda r: " ".join(r.split()))
    import re

    # one line a kind of reason: the shapes a reason quotes ('block 8x8; 1 blocks/SM') differ figure by figure
    kind = frame.reason.map(lambda r: re.sub(r"'[^']*'", "'...'", r))
    short = frame.source.map(lambda s: "authors' repo" if s.startswith("repo ") else s)
    summary = (pd.DataFrame({"reason": kind, "source": short}).groupby("reason", sort=False)
               .agg(figures=("source", "size"), sources=("source", lambda s: ", ".join(sorted(set(s)))))
               .reset_index().sort_values("figures", ascending=False, kind="stable"))
    say(f"{len(frame)} published figures map to no case or metric of ours; the reasons, most figures first:")
    print_frame(summary[["figures", "reason", "sources"]], fmt, wide, keep=("figures", "reason"), cut=0)
    if every_row:
        click.echo("")
        print_frame(frame[["source_table", "figure", "reason", "source", "gpu", "mapped_metric"]], fmt, wide,
                    keep=("source_table", "figure", "reason"), cut=0)
    else:
        click.echo("(--all lists every figure with its table; --format csv gives them whole)", err=True)


@cli.command()
@click.option("--case", "case_glob", default=None, help="comma-separated globs on the case id (default: every case)")
@click.option("--metric", default=None, help="only this metric (or sm_clock_mhz, each GPU's measured clock)")
@click.option("--tolerance", default=DEFAULT_TOLERANCE, show_default=True, type=Finite(0, 10),
              help="relative difference allowed on top of the noise (as bench compare's)")
@click.option("--all", "every_row", is_flag=True,
              help="every case side by side on every GPU (default: only the rows where a GPU stands apart)")
@click.option("--db", default=None, help=DB_HELP)
@table_options
def fleet(case_glob, metric, tolerance, every_row, db, fmt, wide):
    """The GPUs in the database side by side: first the GPUs that stand apart from their siblings (same
    model, same harness commit) by more than the noise, then the rows where one does (--all: every
    row). Time-based metrics compare per cycle (divided by the clock measured in the kernel); the
    clock is a row of its own. GPUs are named as `bench runs` names them.

    \b
    Examples:
      bench fleet
      bench fleet --metric issue_interval_cycles --all
      bench fleet --case '*m64n256k16*' --db postgresql+psycopg://bench@db/fleet
    """
    from harness.analysis.fleet import table

    rows, outliers = table(open_store(db), case_glob, metric, tolerance)
    if fmt != "table":
        print_frame(rows if every_row else rows[rows.outlier], fmt)
        return
    gpus = rows.groupby(["gpu", "git_commit"]).agg(rows=("case_id", "size"), rows_apart=("outlier", "sum")).reset_index()
    say(f"{rows.gpu.nunique()} GPUs, {len(rows)} rows; siblings share a model and a harness commit")
    for row in outliers.itertuples(index=False):
        say(f"outlier: {row.gpu}: {row.rows_apart} of {row.of_rows} rows apart; most on {row.worst_case} "
            f"{row.worst_metric} ({row.worst_difference:+.1%} against its siblings' median)")
    if outliers.empty:
        say("no GPU stands apart from its siblings (a GPU needs at least 2 siblings of its model and commit)")
    print_frame(gpus, fmt, wide)
    shown = rows if every_row else rows[rows.outlier]
    if shown.empty:
        return
    side = shown.pivot_table(index=["case_id", "metric", "launch"], columns="gpu", values="value", aggfunc="first")
    apart = rows[rows.outlier].groupby(["case_id", "metric", "launch"]).gpu.agg(lambda g: ", ".join(sorted(g)))
    side = side.join(apart.rename("apart"), how="left").reset_index()
    click.echo("")
    print_frame(side, fmt, wide, first=("case_id", "metric", "launch", "apart"))
    if not every_row:
        click.echo("(the rows where a GPU stands apart; --all shows every row)", err=True)


@cli.command()
@click.option("--run", "run_id", default=None, type=RUN_ID, help="the run (default: the newest)")
@click.option("--family", default=None, help="one family's cases (default: every case of the run)")
@click.option("--db", default=None, help=DB_HELP)
@table_options
def export(run_id, family, db, fmt, wide):
    """A run's results one row per case: its configuration as columns (the case's own fields, parsed from its
    id: for a GEMM tile, stages, cluster, schedule, dtype, ...), then each metric's value as a column, `metric`
    or `metric {launch}` where a case measures one several ways. For spreadsheets and pandas: --format csv|json.

    \b
    Examples:
      bench export --run 126 --family gemm --format csv > fp8.csv
      bench export --run 122 --family attention --format json
    """
    from harness.db.frames import results
    from harness.errors import SpecError
    from harness.registry import parse_case_id

    store = open_store(db)
    runs = store.runs()
    if runs.empty:
        raise click.UsageError("the database holds no runs")
    run_id = int(runs.run.max()) if run_id is None else run_id
    if run_id not in set(runs.run.astype(int)):
        raise click.UsageError(f"no run {run_id} (runs {int(runs.run.min())}..{int(runs.run.max())})")
    frame = results(store, run_id=run_id)
    families = sorted(frame.family.dropna().unique())
    if family is not None:
        if family not in families:
            raise click.UsageError(f"run {run_id} has no {family} cases (it has: {', '.join(families) or 'none'})")
        frame = frame[frame.family == family]
    frame = frame[frame.value.notna()]
    if frame.empty:
        raise click.UsageError(f"run {run_id} holds no measured values" + (f" of {family}" if family else ""))
    # a metric a case measures several ways (a TMA latency from L2 and from HBM) gets a column per way, named
    # by its launch's keys; else the metric's name alone
    several = set(frame.groupby(["case_id", "metric"]).launch_key.nunique().loc[lambda n: n > 1]
                  .index.get_level_values("metric"))
    frame = frame.assign(column=[m if m not in several or not launch else
                                 f"{m} [{', '.join(f'{k}={v}' for k, v in sorted(launch.items()))}]"
                                 for m, launch in zip(frame.metric, frame.launch)])
    values = frame.pivot_table(index="case_id", columns="column", values="value", aggfunc="first", sort=False)
    fields = {}
    for case_id in values.index:
        try:
            fields[case_id] = {k: v for k, v in parse_case_id(case_id).params().items() if k != "case_id"}
        except SpecError:  # an id of an older harness: its values, no fields
            fields[case_id] = {}
    names = list(dict.fromkeys(name for case in fields.values() for name in case))  # every field, then metrics
    table = pd.DataFrame([{"case_id": case_id, **{n: fields[case_id].get(n) for n in names},
                           **measured.dropna().to_dict()} for case_id, measured in values.iterrows()])
    print_frame(table, fmt, wide, keep=("case_id",))
